//! Query features on a small hand-made datasource whose answers can be worked out by hand:
//! virtual columns, first/last and sketch aggregators, multi-value dimensions, topN orderings,
//! having and limitSpec details, scan orders and formats, empty-bucket filling.

use serde_json::{json, Value};
use sluice_query::{execute, execute_within, parse_query, QueryError, QuerySegment};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const RECORDS: &[&str] = &[
    r#"{"ts":"2020-01-01T00:10:00Z","city":"Paris","tags":["a","b"],"n":1,"v":1.5,"user":"u1"}"#,
    r#"{"ts":"2020-01-01T00:20:00Z","city":"Paris","tags":["b"],"n":2,"v":2.5,"user":"u2"}"#,
    r#"{"ts":"2020-01-01T02:30:00Z","city":"Oslo","tags":[],"n":3,"v":null,"user":"u1"}"#,
    r#"{"ts":"2020-01-01T02:40:00Z","city":null,"tags":["c"],"n":4,"v":4.0,"user":"u3"}"#,
    r#"{"ts":"2020-01-02T05:00:00Z","city":"Lima","tags":["a"],"n":5,"v":5.5,"user":"u2"}"#,
    r#"{"ts":"2020-01-02T06:00:00Z","city":"Oslo","tags":["a","c"],"n":6,"v":6.0,"user":"u4"}"#,
];

fn segments() -> &'static [QuerySegment] {
    static SEGMENTS: OnceLock<Vec<QuerySegment>> = OnceLock::new();
    SEGMENTS.get_or_init(|| build(true))
}

/// The same rows with `city` and `tags` written without bitmaps (`createBitmapIndex: false`).
fn segments_without_bitmaps() -> &'static [QuerySegment] {
    static SEGMENTS: OnceLock<Vec<QuerySegment>> = OnceLock::new();
    SEGMENTS.get_or_init(|| build(false))
}

fn build(bitmaps: bool) -> Vec<QuerySegment> {
    let segments = build_from(RECORDS.iter().map(|r| r.as_bytes()), bitmaps);
    let rows: usize = segments.iter().map(|s| s.segment.num_rows()).sum();
    assert_eq!(rows, 6);
    segments
}

fn build_from<'r>(records: impl Iterator<Item = &'r [u8]>, bitmaps: bool) -> Vec<QuerySegment> {
    {
        let dims = if bitmaps {
            json!(["city", "tags", {"name": "n", "type": "long"}])
        } else {
            json!([{"name": "city", "createBitmapIndex": false}, {"name": "tags", "createBitmapIndex": false},
                   {"name": "n", "type": "long"}])
        };
        let spec = json!({"type": "kafka", "spec": {
            "dataSchema": {
                "dataSource": "t",
                "timestampSpec": {"column": "ts", "format": "iso"},
                "dimensionsSpec": {"dimensions": dims},
                "metricsSpec": [
                    {"type": "count", "name": "count"},
                    {"type": "doubleSum", "name": "v", "fieldName": "v"},
                    {"type": "HLLSketchBuild", "name": "users", "fieldName": "user"},
                    {"type": "stringLast", "name": "lastUser", "fieldName": "user"}
                ],
                "granularitySpec": {"segmentGranularity": "day", "queryGranularity": "none", "rollup": false}
            },
            "ioConfig": {"topic": "t", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "x:9092"}}
        }});
        crate::query_segments(&spec, records)
    }
}

fn query(text: Value) -> Value {
    let mut q = text;
    q["dataSource"] = json!("t");
    if q.get("intervals").is_none() {
        q["intervals"] = json!(["2020-01-01/2020-01-03"]);
    }
    execute(&parse_query(&q.to_string()).expect("query parses"), segments()).expect("query runs")
}

#[test]
fn virtual_columns_group_filter_and_aggregate() {
    let got = query(json!({"queryType": "groupBy", "granularity": "all",
        "virtualColumns": [{"type": "expression", "name": "big", "expression": "n > 3", "outputType": "LONG"},
                           {"type": "expression", "name": "twice", "expression": "n * 2", "outputType": "LONG"}],
        "dimensions": [{"type": "default", "dimension": "big", "outputName": "big", "outputType": "LONG"}],
        "filter": {"type": "bound", "dimension": "twice", "lower": "4", "ordering": "numeric"},
        "aggregations": [{"type": "longSum", "name": "sum2", "fieldName": "twice"}]}));
    let rows: Vec<(i64, i64)> = got
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| (r["event"]["big"].as_i64().expect("big"), r["event"]["sum2"].as_i64().expect("sum")))
        .collect();
    // n = 2, 3 (twice 4, 6) are small; n = 4, 5, 6 (8, 10, 12) big.
    assert_eq!(rows, vec![(0, 10), (1, 30)]);
}

#[test]
fn first_last_and_sketches() {
    let got = query(json!({"queryType": "timeseries", "granularity": "day",
        "aggregations": [
            {"type": "stringLast", "name": "last", "fieldName": "lastUser"},
            {"type": "stringFirst", "name": "firstCity", "fieldName": "city"},
            {"type": "doubleMax", "name": "vmax", "fieldName": "v"},
            {"type": "HLLSketchMerge", "name": "users", "fieldName": "users", "round": true},
            {"type": "HLLSketchBuild", "name": "cities", "fieldName": "city", "round": true}
        ],
        "postAggregations": [{"type": "arithmetic", "name": "ratio", "fn": "/", "fields": [
            {"type": "fieldAccess", "fieldName": "users"}, {"type": "fieldAccess", "fieldName": "cities"}]}]}));
    assert_eq!(
        got[0]["result"],
        json!({"last": "u3", "firstCity": "Paris", "vmax": 4.0, "users": 3, "cities": 2, "ratio": 1.5})
    );
    assert_eq!(
        got[1]["result"],
        json!({"last": "u4", "firstCity": "Lima", "vmax": 6.0, "users": 2, "cities": 2, "ratio": 1.0})
    );
}

#[test]
fn multi_value_dimensions_count_each_value() {
    let got = query(json!({"queryType": "topN", "granularity": "all", "dimension": "tags", "metric": "count",
        "threshold": 10, "aggregations": [{"type": "count", "name": "count"}]}));
    let pairs: Vec<(Value, i64)> = got[0]["result"]
        .as_array()
        .expect("list")
        .iter()
        .map(|r| (r["tags"].clone(), r["count"].as_i64().expect("n")))
        .collect();
    assert_eq!(pairs, vec![(json!("a"), 3), (json!("b"), 2), (json!("c"), 2), (Value::Null, 1)]);
    // A filter on a multi-value dimension matches rows holding the value.
    let got = query(json!({"queryType": "timeseries", "granularity": "all",
        "filter": {"type": "selector", "dimension": "tags", "value": "c"}, "aggregations": [{"type": "count", "name": "n"}]}));
    assert_eq!(got[0]["result"]["n"], 2);
}

#[test]
fn top_n_orderings() {
    let cities = |metric: Value| {
        let got = query(json!({"queryType": "topN", "granularity": "all", "dimension": "city", "metric": metric,
            "threshold": 2, "aggregations": [{"type": "longSum", "name": "n", "fieldName": "n"}]}));
        got[0]["result"].as_array().expect("list").iter().map(|r| r["city"].clone()).collect::<Vec<_>>()
    };
    // Sums: Paris 3, Oslo 9, null 4, Lima 5.
    assert_eq!(cities(json!("n")), vec![json!("Oslo"), json!("Lima")]);
    assert_eq!(cities(json!({"type": "inverted", "metric": "n"})), vec![json!("Paris"), Value::Null]);
    assert_eq!(cities(json!({"type": "dimension", "ordering": "lexicographic"})), vec![Value::Null, json!("Lima")]);
    assert_eq!(cities(json!({"type": "dimension", "previousStop": "Lima"})), vec![json!("Oslo"), json!("Paris")]);
}

#[test]
fn having_limit_and_offset() {
    let got = query(json!({"queryType": "groupBy", "granularity": "all", "dimensions": ["city"],
        "aggregations": [{"type": "count", "name": "count"}, {"type": "longSum", "name": "n", "fieldName": "n"}],
        "having": {"type": "or", "havingSpecs": [
            {"type": "dimSelector", "dimension": "city", "value": "Lima"},
            {"type": "and", "havingSpecs": [{"type": "greaterThan", "aggregation": "count", "value": 1},
                                             {"type": "not", "havingSpec": {"type": "equalTo", "aggregation": "n", "value": 3}}]}]},
        "limitSpec": {"type": "default", "limit": 5, "offset": 0, "columns": [{"dimension": "n", "direction": "descending"}]}}));
    let cities: Vec<Value> = got.as_array().expect("rows").iter().map(|r| r["event"]["city"].clone()).collect();
    assert_eq!(cities, vec![json!("Oslo"), json!("Lima")]);
    let got = query(json!({"queryType": "groupBy", "granularity": "all", "dimensions": ["city"],
        "aggregations": [{"type": "count", "name": "count"}],
        "limitSpec": {"type": "default", "limit": 2, "offset": 1, "columns": ["city"]}}));
    let cities: Vec<Value> = got.as_array().expect("rows").iter().map(|r| r["event"]["city"].clone()).collect();
    assert_eq!(cities, vec![json!("Lima"), json!("Oslo")]);
}

#[test]
fn scan_orders_formats_and_offsets() {
    let got = query(json!({"queryType": "scan", "columns": ["__time", "n", "tags"], "order": "descending",
        "limit": 3, "offset": 1, "resultFormat": "compactedList"}));
    let events: Vec<Value> =
        got.as_array().expect("batches").iter().flat_map(|b| b["events"].as_array().expect("events").clone()).collect();
    assert_eq!(
        events,
        vec![json!([1577941200000i64, 5, "a"]), json!([1577846400000i64, 4, "c"]), json!([1577845800000i64, 3, null])]
    );
    let got = query(json!({"queryType": "scan", "limit": 1}));
    let first = &got[0]["events"][0];
    assert_eq!(first["tags"], json!(["a", "b"]));
    assert_eq!(got[0]["columns"][0], "__time");
}

#[test]
fn timeseries_fills_empty_buckets_inside_the_data() {
    let got = query(json!({"queryType": "timeseries", "granularity": "hour", "intervals": ["2020-01-01/2020-01-02"],
        "aggregations": [{"type": "count", "name": "n"}, {"type": "doubleSum", "name": "v", "fieldName": "v"}]}));
    let rows: Vec<(String, i64, Value)> = got
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["timestamp"].as_str().expect("ts")[11..13].to_string(),
                r["result"]["n"].as_i64().expect("n"),
                r["result"]["v"].clone(),
            )
        })
        .collect();
    assert_eq!(rows, vec![("00".into(), 2, json!(4.0)), ("01".into(), 0, Value::Null), ("02".into(), 2, json!(4.0))]);
    let got = query(json!({"queryType": "timeseries", "granularity": "hour", "descending": true, "limit": 1,
        "intervals": ["2020-01-01/2020-01-02"], "aggregations": [{"type": "count", "name": "n"}]}));
    assert_eq!(got[0]["timestamp"], "2020-01-01T02:00:00.000Z");
}

#[test]
fn segment_metadata_merges_segments() {
    let got = query(json!({"queryType": "segmentMetadata", "merge": true}));
    assert_eq!(got[0]["numRows"], 6);
    assert_eq!(got[0]["columns"]["tags"]["hasMultipleValues"], true);
    assert_eq!(got[0]["columns"]["city"]["minValue"], "Lima");
    assert_eq!(got[0]["columns"]["city"]["maxValue"], "Paris");
    assert_eq!(got[0]["columns"]["users"]["type"], "COMPLEX<HLLSketchBuild>");
    assert_eq!(got[0]["intervals"].as_array().expect("intervals").len(), 2);
}

#[test]
fn a_query_past_its_deadline_stops_at_the_next_segment() {
    let aggregations = json!([{"type": "count", "name": "rows"}]);
    for q in [
        json!({"queryType": "timeseries", "granularity": "all", "aggregations": aggregations}),
        json!({"queryType": "topN", "granularity": "all", "dimension": "city", "metric": "rows", "threshold": 2, "aggregations": aggregations}),
        json!({"queryType": "groupBy", "granularity": "all", "dimensions": ["city"], "aggregations": aggregations}),
        json!({"queryType": "scan", "columns": ["city"]}),
        json!({"queryType": "timeBoundary"}),
        json!({"queryType": "segmentMetadata"}),
        json!({"queryType": "dataSourceMetadata"}),
    ] {
        let mut q = q;
        q["dataSource"] = json!("t");
        if q["queryType"] != "dataSourceMetadata" {
            q["intervals"] = json!(["2020-01-01/2020-01-03"]);
        }
        let parsed = parse_query(&q.to_string()).expect("query parses");
        let late = execute_within(&parsed, segments(), Instant::now(), 7, None);
        assert!(matches!(late, Err(QueryError::Timeout(7))), "{}: {late:?}", q["queryType"]);
        let in_time = execute_within(&parsed, segments(), Instant::now() + Duration::from_secs(60), 60_000, None);
        assert_eq!(in_time.expect("in time"), execute(&parsed, segments()).expect("runs"), "{}", q["queryType"]);
    }
}

#[test]
fn dimensions_without_bitmaps_answer_every_filter_alike() {
    let without = segments_without_bitmaps();
    for (with, seg) in segments().iter().zip(without) {
        for name in ["city", "tags"] {
            assert!(
                with.segment.column(name).expect("column").parts.contains_key("bitmaps"),
                "by default {name} has bitmaps"
            );
            assert!(!seg.segment.column(name).expect("column").parts.contains_key("bitmaps"), "{name} has no bitmaps");
        }
    }
    let filters = [
        json!({"type": "selector", "dimension": "city", "value": "Paris"}),
        json!({"type": "selector", "dimension": "city", "value": null}),
        json!({"type": "in", "dimension": "city", "values": ["Oslo", "Lima", null]}),
        json!({"type": "like", "dimension": "city", "pattern": "%s%"}),
        json!({"type": "regex", "dimension": "city", "pattern": "^[OL]"}),
        json!({"type": "null", "column": "city"}),
        json!({"type": "not", "field": {"type": "equals", "column": "city", "matchValueType": "STRING", "matchValue": "Oslo"}}),
        json!({"type": "range", "column": "city", "matchValueType": "STRING", "lower": "M"}),
        json!({"type": "selector", "dimension": "tags", "value": "a"}),
        json!({"type": "in", "dimension": "tags", "values": ["b", "c"]}),
        json!({"type": "null", "column": "tags"}),
        json!({"type": "or", "fields": [{"type": "selector", "dimension": "tags", "value": "c"},
                                        {"type": "selector", "dimension": "city", "value": "Paris"}]}),
    ];
    for filter in filters {
        for q in [
            json!({"queryType": "timeseries", "granularity": "all", "filter": filter,
                   "aggregations": [{"type": "count", "name": "rows"}, {"type": "doubleSum", "name": "v", "fieldName": "v"}]}),
            json!({"queryType": "groupBy", "granularity": "all", "filter": filter, "dimensions": ["city", "tags"],
                   "aggregations": [{"type": "count", "name": "rows"}]}),
            json!({"queryType": "scan", "filter": filter, "columns": ["city", "tags", "n"], "order": "ascending"}),
        ] {
            let mut q = q;
            q["dataSource"] = json!("t");
            q["intervals"] = json!(["2020-01-01/2020-01-03"]);
            let parsed = parse_query(&q.to_string()).expect("query parses");
            let with = execute(&parsed, segments()).expect("with bitmaps");
            let without = execute(&parsed, without).expect("without bitmaps");
            assert_eq!(strip_ids(with), strip_ids(without), "{q}");
        }
    }
    let meta = json!({"queryType": "segmentMetadata", "dataSource": "t", "merge": true});
    let parsed = parse_query(&meta.to_string()).expect("parses");
    let (a, b) = (execute(&parsed, segments()).expect("meta"), execute(&parsed, without).expect("meta"));
    for col in ["city", "tags"] {
        assert_eq!(a[0]["columns"][col]["hasNulls"], b[0]["columns"][col]["hasNulls"], "{col}: {a} {b}");
        assert_eq!(a[0]["columns"][col]["cardinality"], b[0]["columns"][col]["cardinality"], "{col}");
    }
}

#[test]
fn a_filter_without_bitmaps_finds_rows_across_the_whole_column() {
    // 1,000 rows of one day: "rare" on rows spread over the ids scan's chunks (the first,
    // chunk boundaries, the last), "other" on every seventh, "common" on the rest.
    let city = |i: usize| match i {
        0 | 63 | 64 | 127 | 500 | 999 => "rare",
        i if i % 7 == 0 => "other",
        _ => "common",
    };
    let records: Vec<String> = (0..1_000)
        .map(|i| {
            format!(
                r#"{{"ts":"2020-01-01T00:00:{:02}.{:03}Z","city":"{}","tags":["t{}"],"n":{i},"v":1,"user":"u"}}"#,
                i / 1000,
                i % 1000,
                city(i),
                i % 3
            )
        })
        .collect();
    let with = build_from(records.iter().map(|r| r.as_bytes()), true);
    let without = build_from(records.iter().map(|r| r.as_bytes()), false);
    for (filter, expected) in [
        (json!({"type": "selector", "dimension": "city", "value": "rare"}), vec![0i64, 63, 64, 127, 500, 999]),
        (
            json!({"type": "in", "dimension": "city", "values": ["rare", "other"]}),
            (0..1_000).filter(|&i| city(i) != "common").map(|i| i as i64).collect(),
        ),
    ] {
        let q = json!({"queryType": "scan", "dataSource": "t", "intervals": ["2020-01-01/2020-01-03"],
                       "filter": filter, "columns": ["n"], "order": "ascending", "resultFormat": "compactedList"});
        let parsed = parse_query(&q.to_string()).expect("query parses");
        let rows = |segments: &[QuerySegment]| -> Vec<i64> {
            let answer = execute(&parsed, segments).expect("runs");
            let batches = answer.as_array().expect("batches").iter();
            batches
                .flat_map(|b| {
                    b["events"]
                        .as_array()
                        .expect("events")
                        .iter()
                        .map(|e| e[0].as_i64().expect("n"))
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        assert_eq!(rows(&without), expected, "{filter}");
        assert_eq!(rows(&with), expected, "{filter}");
    }
}

/// An answer without segment ids and sizes (which differ between the two layouts).
fn strip_ids(mut v: Value) -> Value {
    if let Some(items) = v.as_array_mut() {
        for item in items {
            if let Some(o) = item.as_object_mut() {
                o.remove("segmentId");
            }
        }
    }
    v
}

#[test]
fn a_groupby_naming_two_columns_alike_is_refused() {
    let text = json!({"queryType": "groupBy", "dataSource": "t", "granularity": "all",
        "intervals": ["2020-01-01/2020-01-03"], "dimensions": ["n"],
        "aggregations": [{"type": "longSum", "name": "n", "fieldName": "n"}]});
    let err = execute(&parse_query(&text.to_string()).expect("parses"), segments()).expect_err("refused");
    assert!(err.to_string().contains("duplicate output name \"n\""), "{err}");
}
