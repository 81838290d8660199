//! Joins and lookups on a small datasource whose answers can be worked out by hand: a join
//! datasource with inline rows or a lookup on its right, LEFT and INNER, keys computed from
//! expressions, the `lookup()` expression, and the refusals that name what is not supported.

use serde_json::{json, Value};
use sluice_format::lookup::{KeyedTable, Lookups};
use sluice_query::{execute, parse_query, QueryError, QuerySegment};
use std::sync::{Arc, OnceLock};

const RECORDS: &[&str] = &[
    r#"{"ts":"2020-01-01T00:10:00Z","country":"FR","n":1}"#,
    r#"{"ts":"2020-01-01T00:20:00Z","country":"FR","n":2}"#,
    r#"{"ts":"2020-01-01T02:30:00Z","country":"NO","n":3}"#,
    r#"{"ts":"2020-01-01T02:40:00Z","country":null,"n":4}"#,
    r#"{"ts":"2020-01-02T05:00:00Z","country":"PE","n":5}"#,
    r#"{"ts":"2020-01-02T06:00:00Z","country":"XX","n":6}"#,
];

fn segments() -> &'static [QuerySegment] {
    static SEGMENTS: OnceLock<Vec<QuerySegment>> = OnceLock::new();
    SEGMENTS.get_or_init(|| {
        let spec = json!({"type": "kafka", "spec": {
            "dataSchema": {
                "dataSource": "t",
                "timestampSpec": {"column": "ts", "format": "iso"},
                "dimensionsSpec": {"dimensions": ["country"]},
                "metricsSpec": [{"type": "longSum", "name": "n", "fieldName": "n"}],
                "granularitySpec": {"segmentGranularity": "day", "queryGranularity": "none", "rollup": false}
            },
            "ioConfig": {"topic": "t", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "x:9092"}}
        }});
        crate::query_segments(&spec, RECORDS.iter().map(|r| r.as_bytes()))
    })
}

fn countries() -> Value {
    json!({"type": "inline", "columnNames": ["code", "name", "population"],
           "rows": [["FR", "France", 68], ["NO", "Norway", 5], ["PE", "Peru", 34], ["JP", "Japan", 125]]})
}

fn lookups() -> Arc<Lookups> {
    let names = [("FR", "France"), ("NO", "Norway"), ("PE", "Peru")];
    let table = KeyedTable::lookup("country_names", "v1", names.map(|(k, v)| (k.to_string(), v.to_string())));
    Arc::new(Lookups::from([("country_names".to_string(), table)]))
}

fn run(query: Value) -> Result<Value, QueryError> {
    let mut q = parse_query(&query.to_string())?;
    q.bind_lookups(lookups());
    execute(&q, segments())
}

fn join(right: Value, condition: &str, kind: &str) -> Value {
    json!({"type": "join", "left": "t", "right": right, "rightPrefix": "j.", "condition": condition, "joinType": kind})
}

/// `{group: sum of n}` from a groupBy answer keyed by `key`.
fn sums(answer: &Value, key: &str) -> Vec<(Value, i64)> {
    let mut out: Vec<(Value, i64)> = answer
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| (r["event"][key].clone(), r["event"]["n"].as_i64().expect("n")))
        .collect();
    out.sort_by_key(|(k, _)| k.to_string());
    out
}

fn group_by(source: Value, dimension: &str) -> Value {
    json!({"queryType": "groupBy", "dataSource": source, "intervals": "2020-01-01/2020-01-03", "granularity": "all",
           "dimensions": [dimension], "aggregations": [{"type": "longSum", "name": "n", "fieldName": "n"}]})
}

#[test]
fn a_left_join_keeps_every_left_row_and_nulls_the_unmatched() {
    let answer = run(group_by(join(countries(), "\"country\" == \"j.code\"", "LEFT"), "j.name")).expect("runs");
    let expected = vec![(json!("France"), 3), (json!("Norway"), 3), (json!("Peru"), 5), (Value::Null, 10)];
    let mut expected = expected;
    expected.sort_by_key(|(k, _)| k.to_string());
    assert_eq!(sums(&answer, "j.name"), expected);
}

#[test]
fn an_inner_join_drops_the_unmatched_and_reads_numbers_from_the_right() {
    let query = json!({"queryType": "timeseries", "dataSource": join(countries(), "\"j.code\" == \"country\"", "INNER"),
        "intervals": "2020-01-01/2020-01-03", "granularity": "all",
        "aggregations": [{"type": "longSum", "name": "n", "fieldName": "n"},
                         {"type": "longSum", "name": "people", "fieldName": "j.population"},
                         {"type": "count", "name": "rows"}]});
    let answer = run(query).expect("runs");
    let result = &answer[0]["result"];
    assert_eq!(result["rows"], json!(4), "{answer}");
    assert_eq!(result["n"], json!(11));
    assert_eq!(result["people"], json!(68 + 68 + 5 + 34));
}

#[test]
fn a_key_computed_by_an_expression_joins_and_a_scan_returns_the_right_columns() {
    let right = json!({"type": "inline", "columnNames": ["lower", "name"], "rows": [["fr", "France"], ["pe", "Peru"]]});
    let query = json!({"queryType": "scan", "dataSource": join(right, "lower(\"country\") == \"j.lower\"", "INNER"),
        "intervals": "2020-01-01/2020-01-03", "columns": ["country", "j.name"], "resultFormat": "compactedList"});
    let answer = run(query).expect("runs");
    let rows: Vec<Value> = answer
        .as_array()
        .expect("batches")
        .iter()
        .flat_map(|b| b["events"].as_array().expect("events").clone())
        .collect();
    assert_eq!(rows, vec![json!(["FR", "France"]), json!(["FR", "France"]), json!(["PE", "Peru"])]);
}

#[test]
fn a_lookup_joins_by_its_key_and_the_lookup_expression_reads_it() {
    let via_join = run(group_by(
        join(json!({"type": "lookup", "lookup": "country_names"}), "\"country\" == \"j.k\"", "LEFT"),
        "j.v",
    ))
    .expect("runs");
    let mut via_expression = group_by(json!("t"), "name");
    via_expression["virtualColumns"] =
        json!([{"type": "expression", "name": "name", "expression": "lookup(country, 'country_names')"}]);
    let via_expression = run(via_expression).expect("runs");
    let renamed: Vec<(Value, i64)> = sums(&via_expression, "name");
    assert_eq!(sums(&via_join, "j.v"), renamed);
    assert!(renamed.contains(&(json!("France"), 3)) && renamed.contains(&(Value::Null, 10)), "{renamed:?}");
    let mut replaced = group_by(json!("t"), "name");
    replaced["virtualColumns"] =
        json!([{"type": "expression", "name": "name", "expression": "lookup(country, 'country_names', 'other')"}]);
    assert!(sums(&run(replaced).expect("runs"), "name").contains(&(json!("other"), 10)));
}

#[test]
fn joins_chain_and_a_later_key_may_read_an_earlier_join() {
    let continents = json!({"type": "inline", "columnNames": ["country", "continent"],
                            "rows": [["France", "Europe"], ["Norway", "Europe"], ["Peru", "America"]]});
    let first = join(countries(), "\"country\" == \"j.code\"", "LEFT");
    let chained = json!({"type": "join", "left": first, "right": continents, "rightPrefix": "c.",
                         "condition": "\"j.name\" == \"c.country\"", "joinType": "INNER"});
    let answer = run(group_by(chained, "c.continent")).expect("runs");
    assert_eq!(sums(&answer, "c.continent"), vec![(json!("America"), 5), (json!("Europe"), 6)]);
}

fn refusal(query: Value) -> String {
    run(query).expect_err("refused").to_string()
}

#[test]
fn what_is_not_supported_is_refused_by_name() {
    let duplicated = json!({"type": "inline", "columnNames": ["code"], "rows": [["FR"], ["FR"]]});
    let e = refusal(group_by(join(duplicated, "\"country\" == \"j.code\"", "LEFT"), "country"));
    assert!(e.contains("key \"FR\" is held by more than one row"), "{e}");
    let subquery = json!({"type": "query", "query": group_by(json!("t"), "country")});
    let e = refusal(group_by(join(subquery, "\"country\" == \"j.country\"", "LEFT"), "country"));
    assert!(e.contains("right side of type \"query\""), "{e}");
    let e = refusal(group_by(join(countries(), "\"country\" == \"j.code\"", "RIGHT"), "country"));
    assert!(e.contains("joinType RIGHT is not supported"), "{e}");
    let e = refusal(group_by(join(countries(), "\"country\" != \"j.code\"", "LEFT"), "country"));
    assert!(e.contains("expected equalities"), "{e}");
    let e = refusal(group_by(join(countries(), "\"country\" == \"j.nope\"", "LEFT"), "country"));
    assert!(e.contains("no column \"nope\""), "{e}");
    let e =
        refusal(group_by(join(json!({"type": "lookup", "lookup": "absent"}), "\"country\" == \"j.k\"", "LEFT"), "j.v"));
    assert!(e.contains("lookup \"absent\" not found"), "{e}");
    let e = refusal(
        json!({"queryType": "timeBoundary", "dataSource": join(countries(), "\"country\" == \"j.code\"", "LEFT")}),
    );
    assert!(e.contains("join datasource in a timeBoundary query"), "{e}");
}

#[test]
fn virtual_columns_that_read_each_other_are_refused_not_followed_forever() {
    let mut query = group_by(json!("t"), "a");
    query["virtualColumns"] = json!([
        {"type": "expression", "name": "a", "expression": "concat(b, 'x')"},
        {"type": "expression", "name": "b", "expression": "concat(a, 'y')"}
    ]);
    let e = refusal(query);
    assert!(e.contains("reads itself (a -> b -> a)"), "{e}");
}

fn top_n(dimension: Value) -> Value {
    json!({"queryType": "topN", "dataSource": "t", "intervals": "2020-01-01/2020-01-03", "granularity": "all",
           "dimension": dimension, "metric": "n", "threshold": 10,
           "aggregations": [{"type": "longSum", "name": "n", "fieldName": "n"}]})
}

/// `{value: n}` from a topN answer whose dimension is named `c`.
fn ranked(answer: &Value) -> Vec<(Value, i64)> {
    answer[0]["result"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| (r["c"].clone(), r["n"].as_i64().expect("n")))
        .collect()
}

#[test]
fn lookup_dimension_specs_map_values_as_druid_writes_them() {
    // Druid's integration test shape: an extraction dimension with a registered lookup,
    // values the lookup lacks kept.
    let registered = json!({"type": "extraction", "dimension": "country", "outputName": "c",
        "extractionFn": {"type": "registeredLookup", "lookup": "country_names", "retainMissingValue": true}});
    let answer = run(top_n(registered)).expect("runs");
    assert_eq!(
        ranked(&answer),
        vec![(json!("XX"), 6), (json!("Peru"), 5), (Value::Null, 4), (json!("France"), 3), (json!("Norway"), 3)]
    );
    let inline = json!({"type": "lookup", "dimension": "country", "outputName": "c",
        "lookup": {"type": "map", "map": {"FR": "France"}}, "replaceMissingValueWith": "other"});
    assert_eq!(ranked(&run(top_n(inline)).expect("runs")), vec![(json!("other"), 18), (json!("France"), 3)]);
    let mut grouped = group_by(json!("t"), "c");
    grouped["dimensions"] =
        json!([{"type": "lookup", "dimension": "country", "outputName": "c", "name": "country_names"}]);
    let mut expected = vec![(json!("France"), 3), (json!("Norway"), 3), (json!("Peru"), 5), (Value::Null, 10)];
    expected.sort_by_key(|(k, _)| k.to_string());
    assert_eq!(sums(&run(grouped).expect("runs"), "c"), expected);
    let both = json!({"type": "lookup", "dimension": "country", "name": "country_names",
                      "retainMissingValue": true, "replaceMissingValueWith": "x"});
    assert!(refusal(top_n(both)).contains("cannot both be set"));
    let script = json!({"type": "extraction", "dimension": "country",
        "extractionFn": {"type": "javascript", "function": "function(x) { return x; }"}});
    assert!(refusal(top_n(script)).contains("javascript extraction functions are not supported"));
    // Other extraction functions read the values through them: the first letter here.
    let first = json!({"type": "extraction", "dimension": "country", "outputName": "c",
        "extractionFn": {"type": "substring", "index": 0, "length": 1}});
    let answer = run(top_n(first)).expect("runs");
    assert_eq!(ranked(&answer)[0], (json!("X"), 6));
}
