//! Answers compared with Druid's documented examples (`druid_api/*.json`, taken from Druid's
//! API reference), field by field: every field of the example is in the answer with the same
//! JSON type (a `null` in the example takes any value); an array's items each have the shape of
//! the example's first; where an object's keys are data (partitions, task groups, task ids,
//! supervisor ids), each of the answer's entries has the shape of the example's first. Fields
//! of the answer that the example lacks are Sluice's own, beside Druid's, and allowed.

use serde_json::Value;

/// A documented example: its entry in `druid_api/index.json` and its body.
pub struct Example {
    /// `GET`, `POST` or `DELETE`.
    pub method: String,
    /// The route with `{supervisorId}`, `{taskId}` and `{dataSourceName}` placeholders.
    pub route: String,
    /// The query string of the documented request.
    pub query: String,
    /// The documented request body, if any.
    pub body: Option<Value>,
    /// The fixture file.
    pub file: String,
    /// The documented answer.
    pub answer: Value,
}

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cli/druid_api");

/// Every documented example, in the reference's order.
pub fn examples() -> Vec<Example> {
    let read = |name: &str| -> Value {
        let text = std::fs::read_to_string(format!("{DIR}/{name}")).unwrap_or_else(|e| panic!("{name}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let index = read("index.json");
    let text = |e: &Value, k: &str| e[k].as_str().unwrap_or_default().to_string();
    index
        .as_array()
        .expect("an index")
        .iter()
        .map(|e| Example {
            method: text(e, "method"),
            route: text(e, "route"),
            query: text(e, "query"),
            body: Some(e["body"].clone()).filter(|b| !b.is_null()),
            file: text(e, "file"),
            answer: read(&text(e, "file")),
        })
        .collect()
}

/// The example answered by `file`.
pub fn example(file: &str) -> Example {
    examples().into_iter().find(|e| e.file == file).unwrap_or_else(|| panic!("no example {file}"))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Where `ours` lacks a field of `example` or gives it another type, as `path: what`;
/// `keyed` lists the paths (`/payload/latestOffsets`, `*` for an array's items, `%` for a
/// key that is data) whose keys are data.
pub fn differences(example: &Value, ours: &Value, keyed: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    walk(example, ours, "", keyed, &mut out);
    out
}

fn walk(example: &Value, ours: &Value, at: &str, keyed: &[&str], out: &mut Vec<String>) {
    if example.is_null() {
        return;
    }
    if kind(example) != kind(ours) {
        out.push(format!("{at}: Druid's is a {}, ours a {} ({ours})", kind(example), kind(ours)));
        return;
    }
    match (example, ours) {
        (Value::Object(documented), Value::Object(answered)) if keyed.contains(&at) => {
            if let Some(first) = documented.values().next() {
                for v in answered.values() {
                    walk(first, v, &format!("{at}/%"), keyed, out);
                }
            }
        }
        (Value::Object(documented), Value::Object(answered)) => {
            for (k, v) in documented {
                match answered.get(k) {
                    Some(ours) => walk(v, ours, &format!("{at}/{k}"), keyed, out),
                    None => out.push(format!("{at}/{k}: missing")),
                }
            }
        }
        (Value::Array(documented), Value::Array(answered)) => {
            if let Some(first) = documented.first() {
                for v in answered {
                    walk(first, v, &format!("{at}/*"), keyed, out);
                }
            }
        }
        _ => {}
    }
}

/// Where `ours` differs from `example` in value (fields `ours` adds are allowed).
pub fn value_differences(example: &Value, ours: &Value, at: &str, out: &mut Vec<String>) {
    match (example, ours) {
        (Value::Object(documented), Value::Object(answered)) => {
            for (k, v) in documented {
                match answered.get(k) {
                    Some(ours) => value_differences(v, ours, &format!("{at}/{k}"), out),
                    None => out.push(format!("{at}/{k}: missing")),
                }
            }
        }
        (Value::Array(documented), Value::Array(answered)) if documented.len() == answered.len() => {
            for (i, (d, a)) in documented.iter().zip(answered).enumerate() {
                value_differences(d, a, &format!("{at}/{i}"), out);
            }
        }
        _ if example != ours => out.push(format!("{at}: Druid's {example}, ours {ours}")),
        _ => {}
    }
}

#[test]
fn a_missing_field_a_wrong_type_and_a_keyed_entry_are_each_found() {
    let example = serde_json::json!({"a": 1, "b": "x", "c": null, "offsets": {"0": 5}, "list": [{"id": "t"}]});
    let ours = serde_json::json!({"a": "1", "c": 3, "offsets": {"7": "five"}, "list": [{"id": "u"}, {}], "extra": 1});
    let mut found = differences(&example, &ours, &["/offsets"]);
    found.sort();
    assert_eq!(
        found,
        [
            "/a: Druid's is a number, ours a string (\"1\")",
            "/b: missing",
            "/list/*/id: missing",
            "/offsets/%: Druid's is a number, ours a string (\"five\")"
        ]
    );
    let mut values = Vec::new();
    value_differences(&serde_json::json!({"a": [1, 2]}), &serde_json::json!({"a": [1, 3], "b": 0}), "", &mut values);
    assert_eq!(values, ["/a/1: Druid's 2, ours 3"]);
}
