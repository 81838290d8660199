//! Multi-value string functions on Druid's own example (`docs/querying/sql-functions.md`, the
//! `mvd-example` rows: `tags` of `["t1","t2","t3"]`, `["t3","t4","t5"]`, `["t5","t6","t7"]` and
//! none), each query giving the answer Druid's reference documents.

use serde_json::{json, Value};
use sluice_sql::{run_sql, MemorySegments, SqlRequest};
use std::sync::OnceLock;

const RECORDS: [&str; 4] = [
    r#"{"timestamp": "2011-01-12T00:00:00.000Z", "label": "row1", "tags": ["t1","t2","t3"]}"#,
    r#"{"timestamp": "2011-01-13T00:00:00.000Z", "label": "row2", "tags": ["t3","t4","t5"]}"#,
    r#"{"timestamp": "2011-01-14T00:00:00.000Z", "label": "row3", "tags": ["t5","t6","t7"]}"#,
    r#"{"timestamp": "2011-01-14T00:00:00.000Z", "label": "row4", "tags": []}"#,
];

fn example() -> &'static MemorySegments {
    static SOURCE: OnceLock<MemorySegments> = OnceLock::new();
    SOURCE.get_or_init(|| {
        let spec = json!({"type": "kafka", "spec": {
            "dataSchema": {
                "dataSource": "mvd-example",
                "timestampSpec": {"column": "timestamp", "format": "iso"},
                "dimensionsSpec": {"dimensions": ["label", "tags"]},
                "metricsSpec": [{"type": "count", "name": "count"}],
                "granularitySpec": {"segmentGranularity": "day", "queryGranularity": "none", "rollup": false}
            },
            "ioConfig": {"topic": "t", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "x:9092"}}
        }});
        let spec = sluice_format::spec::load_spec(&spec.to_string()).expect("spec").spec;
        super::memory_source("mvd-example", &spec, RECORDS.iter().map(|r| r.as_bytes()))
    })
}

/// The one column of `text`'s rows.
fn column(text: &str) -> Vec<Value> {
    let rows = super::runtime().block_on(run_sql(example(), &SqlRequest::new(text)));
    let rows = rows.unwrap_or_else(|e| panic!("{text}: {e}")).rows;
    rows.into_iter().map(|mut r| r.pop().expect("a column")).collect()
}

#[test]
fn each_function_gives_druids_documented_answer() {
    let from = "FROM \"mvd-example\"";
    let t = |v: &[&str]| json!(v);
    assert_eq!(column(&format!("SELECT MV_APPEND(tags, label) {from} LIMIT 1")), [t(&["t1", "t2", "t3", "row1"])]);
    assert_eq!(column(&format!("SELECT MV_PREPEND(label, tags) {from} LIMIT 1")), [t(&["row1", "t1", "t2", "t3"])]);
    assert_eq!(
        column(&format!("SELECT MV_CONCAT(tags, tags) {from} LIMIT 1")),
        [t(&["t1", "t2", "t3", "t1", "t2", "t3"])]
    );
    assert_eq!(column(&format!("SELECT MV_LENGTH(tags) {from} LIMIT 1")), [json!(3)]);
    let four = |v: [Value; 4]| v.to_vec();
    assert_eq!(
        column(&format!("SELECT MV_CONTAINS(tags, 't3') {from}")),
        four([json!(true), json!(true), json!(false), json!(false)])
    );
    assert_eq!(
        column(&format!("SELECT MV_OVERLAP(tags, 't3') {from}")),
        four([json!(true), json!(true), json!(false), json!(false)])
    );
    assert_eq!(
        column(&format!("SELECT MV_OFFSET(tags, 2) {from}")),
        four([json!("t3"), json!("t5"), json!("t7"), Value::Null])
    );
    assert_eq!(
        column(&format!("SELECT MV_ORDINAL(tags, 3) {from}")),
        four([json!("t3"), json!("t5"), json!("t7"), Value::Null])
    );
    assert_eq!(
        column(&format!("SELECT MV_OFFSET_OF(tags, 't3') {from}")),
        four([json!(2), json!(0), Value::Null, Value::Null])
    );
    assert_eq!(
        column(&format!("SELECT MV_ORDINAL_OF(tags, 't3') {from}")),
        four([json!(3), json!(1), Value::Null, Value::Null])
    );
    assert_eq!(
        column(&format!("SELECT MV_SLICE(tags, 1, 3) {from}")),
        four([t(&["t2", "t3"]), t(&["t4", "t5"]), t(&["t6", "t7"]), Value::Null])
    );
    assert_eq!(column(&format!("SELECT MV_TO_STRING(tags, ' ') {from} LIMIT 1")), [json!("t1 t2 t3")]);
    assert_eq!(column("SELECT STRING_TO_MV('123 Rose Lane', '\\s+')"), [t(&["123", "Rose", "Lane"])]);
    let e = super::runtime()
        .block_on(run_sql(example(), &SqlRequest::new(format!("SELECT MV_TO_ARRAY(tags) {from}"))))
        .expect_err("refused")
        .to_string();
    assert!(e.contains("MV_TO_ARRAY (ARRAY values are not built"), "{e}");
}

#[test]
fn grouping_by_a_function_of_a_multi_value_column() {
    let rows = super::runtime()
        .block_on(run_sql(
            example(),
            &SqlRequest::new("SELECT MV_LENGTH(tags) AS n, COUNT(*) FROM \"mvd-example\" GROUP BY 1 ORDER BY 1"),
        ))
        .expect("runs")
        .rows;
    assert_eq!(rows, vec![vec![Value::Null, json!(1)], vec![json!(3), json!(3)]]);
    let refused = super::runtime()
        .block_on(run_sql(
            example(),
            &SqlRequest::new("SELECT MV_APPEND(tags, 'x') AS a, COUNT(*) FROM \"mvd-example\" GROUP BY 1"),
        ))
        .expect_err("refused")
        .to_string();
    assert!(refused.contains("grouping by a list an MV_ function builds"), "{refused}");
}
