//! Druid's JSON functions over nested values: `json_value`, `json_query`, `json_object`,
//! `parse_json`, `try_parse_json`, `to_json_string`, `json_keys` and `json_paths`. A string
//! argument reads as a JSON string, a multi-value list as an array.

use super::JsonFunction;
use crate::json_path::{self, JsonPath, JsonPathError};
use crate::value::Value;
use std::sync::Arc;

/// The document a value stands for, borrowed when it is one. A string holding a JSON object
/// or array (as string dimensions keep nested input) reads as that document.
fn document(v: &Value) -> std::borrow::Cow<'_, serde_json::Value> {
    match v {
        Value::Json(doc) => std::borrow::Cow::Borrowed(&**doc),
        Value::String(s) if s.starts_with(['{', '[']) && s.len() <= crate::value::MAX_VALUE_BYTES => {
            std::borrow::Cow::Owned(serde_json::from_str(s).unwrap_or_else(|_| v.to_json()))
        }
        other => std::borrow::Cow::Owned(other.to_json()),
    }
}

/// `json_value(v, path[, cast])`: the literal at `path` as a string (or cast), else null.
pub fn json_value(v: &Value, path: &JsonPath, cast: Option<super::CastType>) -> Value {
    let text = path.get(&document(v)).and_then(json_path::literal_text);
    let v = text.map_or(Value::Null, Value::String);
    match cast {
        Some(to) => to.apply(v),
        None => v,
    }
}

/// `f` over its evaluated arguments.
pub fn eval(f: &JsonFunction, args: &[Value]) -> Value {
    let arg = |i: usize| args.get(i).unwrap_or(&Value::Null);
    match f {
        JsonFunction::Value(path, cast) => json_value(arg(0), path, *cast),
        JsonFunction::Query(path) => path.get(&document(arg(0))).cloned().map_or(Value::Null, Value::json),
        JsonFunction::Object => {
            let mut object = serde_json::Map::new();
            for pair in args.chunks(2) {
                let Some(key) = pair[0].as_str() else { return Value::Null };
                object.insert(key.into_owned(), pair.get(1).map_or(serde_json::Value::Null, Value::to_json));
            }
            let object = serde_json::Value::Object(object);
            // Past the longest value a row may hold, the result is null, as `concat`'s is.
            if object.to_string().len() > crate::value::MAX_VALUE_BYTES {
                return Value::Null;
            }
            Value::Json(Arc::new(object))
        }
        JsonFunction::Parse => match arg(0) {
            Value::String(s) if s.len() <= crate::value::MAX_VALUE_BYTES => {
                serde_json::from_str(s).map_or(Value::Null, Value::json)
            }
            Value::String(_) => Value::Null,
            other => Value::json(other.to_json()),
        },
        JsonFunction::ToString => match arg(0) {
            Value::Null => Value::Null,
            v => Value::String(v.to_json().to_string()),
        },
        JsonFunction::Keys(path) => json_path::keys(&document(arg(0)), path)
            .map_or(Value::Null, |keys| Value::Array(keys.into_iter().map(Value::String).collect())),
        JsonFunction::Paths => match arg(0) {
            Value::Null => Value::Null,
            v => Value::Array(json_path::paths(&document(v)).into_iter().map(Value::String).collect()),
        },
    }
}

/// Why a JSON function's path argument could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathArgError {
    /// The argument is not a string literal.
    #[error("needs a JSON path literal")]
    NotLiteral,
    /// The literal is not a valid path.
    #[error(transparent)]
    Path(#[from] JsonPathError),
}

/// The path a JSON function names in its argument `i`, parsed once.
pub fn path(text: Option<&str>) -> Result<JsonPath, PathArgError> {
    Ok(JsonPath::parse(text.ok_or(PathArgError::NotLiteral)?)?)
}

#[cfg(test)]
mod tests {
    use super::super::evaluate;
    use crate::value::Value;

    fn run(text: &str, row: &[Value]) -> Value {
        evaluate(text, &["doc", "s"], row, 0).expect(text)
    }

    #[test]
    fn json_functions_read_and_build_documents() {
        let doc = Value::json(serde_json::json!({"a": {"b": 42, "c": [1.5, "x"]}, "d": true}));
        let row = [doc, Value::String("{\"x\":\"y\"}".into())];
        let cases = [
            ("json_value(doc, '$.a.b')", Value::String("42".into())),
            ("json_value(doc, '$.a.b', 'LONG')", Value::Long(42)),
            ("json_value(doc, '$.a.c[0]', 'DOUBLE')", Value::Double(1.5)),
            ("json_value(doc, '$.a')", Value::Null),
            ("json_value(doc, '$.d')", Value::String("true".into())),
            ("to_json_string(json_query(doc, '$.a.c'))", Value::String("[1.5,\"x\"]".into())),
            ("to_json_string(s)", Value::String("\"{\\\"x\\\":\\\"y\\\"}\"".into())),
            ("to_json_string(parse_json(s))", Value::String("{\"x\":\"y\"}".into())),
            ("try_parse_json('{')", Value::Null),
            (
                "to_json_string(json_object('k', json_value(doc, '$.a.b', 'LONG'), 'n', s))",
                Value::String("{\"k\":42,\"n\":\"{\\\"x\\\":\\\"y\\\"}\"}".into()),
            ),
            ("json_value(s, '$.x')", Value::String("y".into())),
            ("json_keys(doc, '$.a')", Value::Array(vec![Value::String("b".into()), Value::String("c".into())])),
            ("array_length(json_paths(doc))", Value::Long(4)),
        ];
        for (text, expected) in cases {
            assert_eq!(run(text, &row), expected, "{text}");
        }
        assert!(evaluate("json_value(doc, 'a.b')", &["doc"], &row, 0).is_err(), "a path must start with $");
    }
}
