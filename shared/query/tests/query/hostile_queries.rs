//! Queries built to crash or hang the engine get a clear error instead: nesting deep enough to
//! overflow a recursive parser, and granularities whose arithmetic overflows. Each runs on a
//! thread of its own with a deadline, so a hang fails the test instead of stalling the run.

use crate::query_tutorials::wikipedia;
use serde_json::json;
use sluice_query::{execute, parse_query};
use std::sync::mpsc;
use std::time::Duration;

/// The error `query` fails with on the sample, within 30 seconds, on a thread with the 2 MiB
/// stack of a runtime worker.
fn error_of(query: String) -> String {
    let segments = wikipedia();
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let outcome = parse_query(&query).and_then(|q| execute(&q, segments));
            let _ = tx.send(outcome.map(|v| v.to_string()).map_err(|e| e.to_string()));
        })
        .expect("thread");
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(Ok(answer)) => panic!("the query was answered: {:.200}", answer),
        Ok(Err(error)) => error,
        Err(e) => panic!("no answer in 30 s: {e}"),
    }
}

fn timeseries(extra: serde_json::Value) -> String {
    let mut q = json!({
        "queryType": "timeseries", "dataSource": "wikipedia", "intervals": ["2015-09-12/2015-09-13"],
        "granularity": "all", "aggregations": [{"type": "count", "name": "n"}]
    });
    for (k, v) in extra.as_object().expect("object") {
        q[k] = v.clone();
    }
    q.to_string()
}

#[test]
fn deeply_nested_expressions_are_refused_by_name() {
    let n = 100_000;
    for expression in [format!("{}1{}", "(".repeat(n), ")".repeat(n)), vec!["1"; n].join("+")] {
        let virtuals = json!([{"type": "expression", "name": "v", "expression": expression}]);
        let e = error_of(timeseries(
            json!({"virtualColumns": virtuals, "filter": {"type": "selector", "dimension": "v", "value": "1"}}),
        ));
        assert!(e.contains("nested deeper than 200 levels") && e.len() < 1_000, "{:.300}", e);
    }
}

#[test]
fn deeply_nested_filters_are_refused_by_name() {
    let mut filter = json!({"type": "selector", "dimension": "page", "value": "x"}).to_string();
    for _ in 0..100_000 {
        filter = format!(r#"{{"type":"not","field":{filter}}}"#);
    }
    let query = timeseries(json!({})).replacen('{', &format!(r#"{{"filter":{filter},"#), 1);
    let e = error_of(query);
    assert!(e.contains("recursion limit"), "{:.300}", e);
}

#[test]
fn granularities_past_ten_thousand_years_are_refused() {
    for period in ["P300000Y", "P99999999999999999999D", "PT9223372036854775807S"] {
        let e = error_of(timeseries(json!({"granularity": {"type": "period", "period": period}})));
        assert!(e.contains("longer than 10,000 years"), "{period}: {e}");
    }
}

#[test]
fn the_longest_granularity_fills_its_one_bucket() {
    let q = timeseries(json!({"granularity": {"type": "period", "period": "P10000Y"}}));
    let answer = execute(&parse_query(&q).expect("query"), wikipedia()).expect("answer");
    assert_eq!(answer.as_array().map(Vec::len), Some(1), "{answer}");
    assert_eq!(answer[0]["result"]["n"], 39_244);
}

#[test]
fn second_buckets_times_many_aggregators_are_refused_before_they_are_built() {
    // 86,400 one-second buckets in the day times 100 aggregators: 8.64M values (the seconds
    // that hold rows, fewer than 39,244, pass the aggregation's own bound).
    let aggregations: Vec<_> = (0..100).map(|i| json!({"type": "count", "name": format!("n{i}")})).collect();
    let granularity = json!({"type": "period", "period": "PT1S", "timeZone": "America/New_York"});
    let e = error_of(timeseries(json!({"granularity": granularity, "aggregations": aggregations})));
    assert!(e.contains("5000000 values (buckets times aggregators)"), "{e}");
}

fn scan(extra: serde_json::Value) -> String {
    let mut q = json!({"queryType": "scan", "dataSource": "wikipedia", "intervals": ["2015-09-12/2015-09-13"]});
    for (k, v) in extra.as_object().expect("object") {
        q[k] = v.clone();
    }
    q.to_string()
}

#[test]
fn scans_naming_too_many_columns_or_one_twice_are_refused_by_name() {
    let columns: Vec<String> = (0..100_000).map(|i| format!("c{i}")).collect();
    let e = error_of(scan(json!({"columns": columns, "limit": 10})));
    assert!(e.contains("columns: 100000 columns: a scan reads at most 10000"), "{e}");
    let e = error_of(scan(json!({"columns": ["page", "added", "page"]})));
    assert!(e.contains("columns[2]: \"page\" is listed twice"), "{e}");
    // Columns the data lacks still read as nulls.
    let q = scan(json!({"columns": ["page", "nowhere"], "limit": 1}));
    let answer = execute(&parse_query(&q).expect("query"), wikipedia()).expect("answer");
    assert_eq!(answer[0]["events"][0]["nowhere"], serde_json::Value::Null, "{answer}");
}

#[test]
fn scans_past_their_bytes_are_refused_naming_the_bound() {
    // The day's rows are about 20 MB as JSON: a context may lower the bound, not raise it.
    let e = error_of(scan(json!({"context": {"maxScatterGatherBytes": 1_000_000}})));
    assert!(e.contains("passes 1000000 bytes (context.maxScatterGatherBytes)") && e.contains("offset to page"), "{e}");
    let e = error_of(scan(json!({"order": "descending", "context": {"maxScatterGatherBytes": "1000000"}})));
    assert!(e.contains("passes 1000000 bytes"), "{e}");
    let e = error_of(scan(json!({"context": {"maxScatterGatherBytes": u64::MAX}})));
    assert!(e.contains("context.maxScatterGatherBytes: over this server's maximum"), "{e}");
}
