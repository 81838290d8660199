//! Nested JSON against flat columns on Druid's Wikipedia sample (39,244 rows, one segment per
//! day): each record's fields nested into one document (`{"geo": {"country", "city"},
//! "edit": {"page", "added", "user": {"name", "robot"}}}`), and the same question (rows and
//! lines added per country of edits by people, not robots) asked three ways: of the flat
//! columns (the peer: what a `flattenSpec` builds), of a `json` column through `nested-field`
//! paths (read from the paths' own columns), and of the documents kept as JSON text in a
//! string column (what was possible before `json` columns: every document parsed). The bytes
//! each layout stores are printed beside.
#![allow(missing_docs)]

#[path = "../../format/tests/common/mod.rs"]
mod common;
mod support;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use sluice_query::{execute, parse_query, QuerySegment};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn segments(lines: &[String], dimensions: Value) -> Vec<QuerySegment> {
    let spec = json!({"type": "kafka", "spec": {
        "dataSchema": {"dataSource": "wikipedia", "timestampSpec": {"column": "time", "format": "iso"},
            "dimensionsSpec": {"dimensions": dimensions},
            "granularitySpec": {"segmentGranularity": "day", "queryGranularity": "none", "rollup": false}},
        "ioConfig": {"topic": "t", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "x:9092"}}}});
    support::segments(&sluice_format::spec::load_spec(&spec.to_string()).expect("spec").spec, lines)
}

/// A sample record with its fields nested, kept beside them.
fn nested(line: &str, as_text: bool) -> String {
    let r: Value = serde_json::from_str(line).expect("JSON");
    let doc = json!({"geo": {"country": r["countryName"], "city": r["cityName"]},
        "edit": {"page": r["page"], "added": r["added"], "user": {"name": r["user"], "robot": r["isRobot"]}}});
    let doc = if as_text { Value::String(doc.to_string()) } else { doc };
    json!({"time": r["time"], "countryName": r["countryName"], "isRobot": r["isRobot"], "added": r["added"],
        "cityName": r["cityName"], "page": r["page"], "user": r["user"], "doc": doc})
    .to_string()
}

fn query(dimension: &str, robot: &str, added: &str, virtuals: Value) -> Value {
    json!({"queryType": "groupBy", "dataSource": "wikipedia", "intervals": "2015-09-01/2015-10-01", "granularity": "all",
        "virtualColumns": virtuals, "dimensions": [dimension],
        "filter": {"type": "selector", "dimension": robot, "value": "false"},
        "aggregations": [{"type": "count", "name": "rows"}, {"type": "longSum", "name": "added", "fieldName": added}]})
}

fn stored_bytes(segments: &[QuerySegment], columns: &dyn Fn(&str) -> bool) -> u64 {
    let mut total = 0;
    for s in segments {
        for c in s.segment.directory().columns.iter().filter(|c| columns(&c.name)) {
            total += c.parts.values().map(|p| p.length).sum::<u64>();
        }
    }
    total
}

fn nested_columns(c: &mut Criterion) {
    let lines = common::wikipedia_lines();
    let flat_dims = json!(["countryName", "cityName", "page", "user", "isRobot", {"name": "added", "type": "long"}]);
    let flat = segments(&lines, flat_dims);
    let json_lines: Vec<String> = lines.iter().map(|l| nested(l, false)).collect();
    let documents = segments(&json_lines, json!([{"type": "json", "name": "doc"}]));
    let text_lines: Vec<String> = lines.iter().map(|l| nested(l, true)).collect();
    let text = segments(&text_lines, json!(["doc"]));

    let field = |name: &str, path: &str, ty: &str| json!({"type": "nested-field", "columnName": "doc", "outputName": name, "path": path, "expectedType": ty});
    let parsed = |name: &str, path: &str, ty: &str| json!({"type": "expression", "name": name, "expression": format!("json_value(doc, '{path}', '{ty}')"), "outputType": ty});
    let paths = [
        ("country", "$.geo.country", "STRING"),
        ("robot", "$.edit.user.robot", "STRING"),
        ("added", "$.edit.added", "LONG"),
    ];
    let virtuals =
        |make: &dyn Fn(&str, &str, &str) -> Value| Value::Array(paths.iter().map(|(n, p, t)| make(n, p, t)).collect());
    let cases = [
        ("flat columns (peer)", &flat, query("countryName", "isRobot", "added", json!([]))),
        ("json column: nested-field paths", &documents, query("country", "robot", "added", virtuals(&field))),
        ("JSON text in a string column: json_value", &text, query("country", "robot", "added", virtuals(&parsed))),
    ];
    let answers: Vec<Value> = cases
        .iter()
        .map(|(_, s, q)| {
            let mut rows = execute(&parse_query(&q.to_string()).expect("parses"), s).expect("runs");
            for r in rows.as_array_mut().expect("rows") {
                let e = &mut r["event"];
                let key = e.get("countryName").or_else(|| e.get("country")).cloned().unwrap_or(Value::Null);
                *e = json!({"k": key, "rows": e["rows"], "added": e["added"]});
            }
            rows
        })
        .collect();
    assert!(answers.iter().all(|a| *a == answers[0]), "the three layouts answer alike");
    let flat_bytes = stored_bytes(&flat, &|n| n != "__time" && n != "count");
    let json_bytes = stored_bytes(&documents, &|n| n.starts_with("doc"));
    let text_bytes = stored_bytes(&text, &|n| n == "doc");
    println!(
        "stored bytes: flat columns {flat_bytes}, json column (documents + paths) {json_bytes}, JSON text {text_bytes}"
    );

    let mut g = c.benchmark_group("nested");
    g.sample_size(20);
    for (name, segments, q) in cases {
        let q = parse_query(&q.to_string()).expect("parses");
        g.bench_function(name, |b| b.iter(|| execute(&q, segments).expect("runs")));
    }
    g.finish();
}

criterion_group!(benches, nested_columns);
criterion_main!(benches);
