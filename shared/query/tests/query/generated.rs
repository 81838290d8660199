//! Generated rows and timeseries, topN and groupBy queries over them, for the property tests
//! that split a query's segments (threads, batches, workers) and expect the single-pass answer.

use proptest::prelude::*;
use serde_json::{json, Value};

/// One generated row: minute, city, tags, n, v, user.
pub type Row = (u32, Option<u8>, Vec<u8>, i64, f64, u8);

/// The JSON records of `rows`.
pub fn records(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .map(|(minute, city, tags, n, v, user)| {
            let ts = 1_577_836_800_000i64 + i64::from(*minute) * 60_000;
            let city = city.map(|c| ["Paris", "Oslo", "Lima", "Rome", "Kyiv"][c as usize % 5]);
            let tags: Vec<String> = tags.iter().map(|t| format!("t{}", t % 4)).collect();
            json!({"ts": ts, "city": city, "tags": tags, "n": n, "v": v, "user": format!("u{user}")}).to_string()
        })
        .collect()
}

/// The spec the rows are indexed with: segments of one hour each over two days.
pub fn spec() -> Value {
    json!({"type": "kafka", "spec": {
        "dataSchema": {
            "dataSource": "t",
            "timestampSpec": {"column": "ts", "format": "millis"},
            "dimensionsSpec": {"dimensions": ["city", "tags", {"name": "n", "type": "long"}, "user"]},
            "metricsSpec": [{"type": "count", "name": "count"}, {"type": "doubleSum", "name": "v", "fieldName": "v"}],
            "granularitySpec": {"segmentGranularity": "hour", "queryGranularity": "none", "rollup": false}
        },
        "ioConfig": {"topic": "t", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "x:9092"}}
    }})
}

pub fn row() -> impl Strategy<Value = Row> {
    (
        0u32..2 * 24 * 60,
        prop::option::weighted(0.9, any::<u8>()),
        prop::collection::vec(any::<u8>(), 0..3),
        -50i64..50,
        prop_oneof![(-1e3f64..1e3), Just(0.1), (-1e12f64..1e12)],
        0u8..40,
    )
}

pub fn query() -> impl Strategy<Value = Value> {
    let aggregations = prop::sample::subsequence(
        vec![
            json!({"type": "count", "name": "rows"}),
            json!({"type": "longSum", "name": "nsum", "fieldName": "n"}),
            json!({"type": "doubleSum", "name": "vs", "fieldName": "v"}),
            json!({"type": "floatSum", "name": "fs", "fieldName": "v"}),
            json!({"type": "doubleMin", "name": "vmin", "fieldName": "v"}),
            json!({"type": "longMax", "name": "nmax", "fieldName": "n"}),
            json!({"type": "stringFirst", "name": "first", "fieldName": "user"}),
            json!({"type": "HLLSketchBuild", "name": "users", "fieldName": "user", "round": true}),
            json!({"type": "filtered", "filter": {"type": "selector", "dimension": "city", "value": "Oslo"},
                   "aggregator": {"type": "doubleSum", "name": "osloV", "fieldName": "v"}}),
        ],
        1..5,
    );
    let filter = prop_oneof![
        Just(Value::Null),
        Just(json!({"type": "selector", "dimension": "city", "value": "Paris"})),
        Just(json!({"type": "bound", "dimension": "n", "lower": "0", "ordering": "numeric"})),
        Just(json!({"type": "in", "dimension": "tags", "values": ["t1", "t2"]})),
    ];
    let granularity = prop::sample::select(vec!["all", "hour", "day"]);
    let dims = prop::sample::subsequence(vec!["city", "tags", "n"], 1..3);
    (aggregations, filter, granularity, dims, 0usize..3, 1usize..6).prop_map(
        |(aggregations, filter, granularity, dims, kind, threshold)| {
            let first = &aggregations[0];
            let metric = first["name"].as_str().or(first["aggregator"]["name"].as_str()).unwrap_or("rows").to_string();
            let mut q = match kind {
                0 => json!({"queryType": "timeseries"}),
                1 => json!({"queryType": "topN", "dimension": dims[0], "metric": metric, "threshold": threshold}),
                _ => json!({"queryType": "groupBy", "dimensions": dims}),
            };
            q["dataSource"] = json!("t");
            q["intervals"] = json!(["2020-01-01T00:30:00Z/2020-01-02T20:00:00Z"]);
            q["granularity"] = json!(granularity);
            q["aggregations"] = json!(aggregations);
            if !filter.is_null() {
                q["filter"] = filter;
            }
            q
        },
    )
}
