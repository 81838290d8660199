//! Theta and quantiles sketches: Druid's theta tutorial (its rows, its rollup spec with a
//! `thetaSketch` metric, its queries as native JSON) and quantiles within their rank error.

use crate::theta_tutorial;
use serde_json::{json, Value};
use sluice_query::{execute, parse_query, QuerySegment};
use std::sync::OnceLock;

/// The tutorial's datasource.
fn tutorial() -> &'static [QuerySegment] {
    static SEGMENTS: OnceLock<Vec<QuerySegment>> = OnceLock::new();
    SEGMENTS.get_or_init(|| {
        let spec: Value = serde_json::from_str(theta_tutorial::SPEC).expect("spec JSON");
        crate::query_segments(&spec, theta_tutorial::records().iter().map(|r| r.as_bytes()))
    })
}

fn query(segments: &[QuerySegment], mut q: Value) -> Value {
    q["dataSource"] = json!("ts_tutorial");
    q["intervals"] = json!(["2022-05-01/2022-06-01"]);
    execute(&parse_query(&q.to_string()).expect("query parses"), segments).expect("query runs")
}

fn theta(name: &str, filter: Option<Value>) -> Value {
    let agg = json!({"type": "thetaSketch", "name": name, "fieldName": "theta_uid"});
    match filter {
        Some(f) => json!({"type": "filtered", "name": name, "filter": f, "aggregator": agg}),
        None => agg,
    }
}

fn episode(e: &str) -> Value {
    json!({"type": "and", "fields": [{"type": "selector", "dimension": "show", "value": "Bridgerton"},
        {"type": "selector", "dimension": "episode", "value": e}]})
}

#[test]
fn the_tutorials_rollup_keeps_twelve_rows_with_their_distinct_users() {
    let rows: usize = tutorial().iter().map(|s| s.segment.num_rows()).sum();
    assert_eq!(rows, 12, "day x show x episode");
    let got = query(
        tutorial(),
        json!({"queryType": "groupBy", "granularity": "all",
        "dimensions": ["show"], "aggregations": [theta("users", None), {"type": "longSum", "name": "views", "fieldName": "count"}]}),
    );
    let by_show: Vec<(Value, Value, Value)> = got
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| (r["event"]["show"].clone(), r["event"]["users"].clone(), r["event"]["views"].clone()))
        .collect();
    assert_eq!(
        by_show,
        [(json!("Bridgerton"), json!(5.0), json!(9)), (json!("Game of Thrones"), json!(3.0), json!(10))],
        "Bridgerton: alice, bob, carol, dan, erin; Game of Thrones: alice, bob, erin"
    );
}

#[test]
fn the_tutorials_set_operations_give_its_answers() {
    let field = |n: &str| json!({"type": "fieldAccess", "fieldName": n});
    let op = |func: &str| json!({"type": "thetaSketchSetOp", "name": func, "func": func, "fields": [field("e1"), field("e2")]});
    let estimate =
        |func: &str| json!({"type": "thetaSketchEstimate", "name": format!("{func}_users"), "field": op(func)});
    let got = query(
        tutorial(),
        json!({"queryType": "timeseries", "granularity": "all",
        "aggregations": [theta("e1", Some(episode("S1E1"))), theta("e2", Some(episode("S1E2")))],
        "postAggregations": [estimate("INTERSECT"), estimate("UNION"), estimate("NOT"), op("UNION"),
            {"type": "thetaSketchEstimate", "name": "again", "field": field("UNION")}]}),
    );
    let r = &got[0]["result"];
    // S1E1: alice, bob, carol, dan; S1E2: carol, erin.
    assert_eq!((&r["e1"], &r["e2"]), (&json!(4.0), &json!(2.0)));
    assert_eq!((&r["INTERSECT_users"], &r["UNION_users"], &r["NOT_users"]), (&json!(1.0), &json!(5.0), &json!(3.0)));
    assert!(r["UNION"].as_str().is_some_and(|s| s.len() > 8), "a set operation's sketch, base64: {r}");
    assert_eq!(r["again"], json!(5.0), "a later post-aggregator reads an earlier set operation");
}

#[test]
fn an_unfinalized_sketch_is_its_base64_serialization_and_bad_post_aggregators_are_named() {
    let got = query(
        tutorial(),
        json!({"queryType": "timeseries", "granularity": "all",
        "aggregations": [{"type": "thetaSketch", "name": "s", "fieldName": "theta_uid", "shouldFinalize": false}]}),
    );
    let text = got[0]["result"]["s"].as_str().expect("base64");
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD.decode(text).expect("base64");
    let sketch = sluice_format::sketches::Theta::from_bytes(&bytes, 14).expect("a theta sketch");
    assert_eq!(sketch.estimate(), 5.0);
    for (post, expected) in [
        (
            json!({"type": "thetaSketchSetOp", "name": "x", "func": "XOR", "fields": [{"type": "fieldAccess", "fieldName": "s"}, {"type": "fieldAccess", "fieldName": "s"}]}),
            "XOR",
        ),
        (
            json!({"type": "thetaSketchSetOp", "name": "x", "func": "UNION", "fields": [{"type": "fieldAccess", "fieldName": "s"}]}),
            "2 to 1000",
        ),
        (
            json!({"type": "quantilesDoublesSketchToQuantile", "name": "x", "fraction": 1.5, "field": {"type": "fieldAccess", "fieldName": "s"}}),
            "between 0 and 1",
        ),
        (
            json!({"type": "thetaSketchEstimate", "name": "x", "field": {"type": "fieldAccess", "fieldName": "nothing"}}),
            "nothing",
        ),
        (
            json!({"type": "quantilesDoublesSketchToQuantiles", "name": "x", "fractions": vec![0.5; 10_001],
                "field": {"type": "fieldAccess", "fieldName": "s"}}),
            "at most 10000",
        ),
    ] {
        let q = json!({"queryType": "timeseries", "dataSource": "ts_tutorial", "intervals": ["2022-05-01/2022-06-01"],
            "granularity": "all", "aggregations": [theta("s", None)], "postAggregations": [post]});
        let e = parse_query(&q.to_string()).and_then(|q| execute(&q, tutorial())).expect_err("refused");
        assert!(e.to_string().contains(expected), "{e}");
    }
}

/// 20,000 latencies 1..=20,000 ms in a shuffled order over two days, with a quantiles sketch
/// metric rolled up by hour and the raw value kept as a dimension.
fn latencies() -> &'static [QuerySegment] {
    static SEGMENTS: OnceLock<Vec<QuerySegment>> = OnceLock::new();
    SEGMENTS.get_or_init(|| {
        let spec = json!({"type": "kafka", "spec": {
            "dataSchema": {
                "dataSource": "ts_tutorial",
                "timestampSpec": {"column": "t", "format": "millis"},
                "dimensionsSpec": {"dimensions": [{"name": "ms", "type": "long"}]},
                "metricsSpec": [{"type": "quantilesDoublesSketch", "name": "latency", "fieldName": "ms"}],
                "granularitySpec": {"queryGranularity": "hour", "rollup": true, "segmentGranularity": "day"}
            },
            "ioConfig": {"topic": "t", "consumerProperties": {"bootstrap.servers": "x:9092"}, "inputFormat": {"type": "json"}}
        }});
        let start = 1_651_363_200_000i64; // 2022-05-01
        let records: Vec<String> = (0..20_000u64)
            .map(|i| {
                let ms = (i * 7_919) % 20_000 + 1;
                format!(r#"{{"t": {}, "ms": {ms}}}"#, start + (i as i64 % 48) * 3_600_000)
            })
            .collect();
        crate::query_segments(&spec, records.iter().map(|r| r.as_bytes()))
    })
}

#[test]
fn quantiles_from_rolled_up_sketches_and_from_raw_values_are_within_the_rank_error() {
    let post = |field: &str| {
        json!([{"type": "quantilesDoublesSketchToQuantiles", "name": format!("{field}_q"), "fractions": [0.5, 0.95, 0.99],
                "field": {"type": "fieldAccess", "fieldName": field}},
               {"type": "quantilesDoublesSketchToRank", "name": format!("{field}_rank"), "value": 10_000.5,
                "field": {"type": "fieldAccess", "fieldName": field}},
               {"type": "quantilesDoublesSketchToCDF", "name": format!("{field}_cdf"), "splitPoints": [5_000.5, 15_000.5],
                "field": {"type": "fieldAccess", "fieldName": field}},
               {"type": "quantilesDoublesSketchToHistogram", "name": format!("{field}_hist"), "splitPoints": [10_000.5],
                "field": {"type": "fieldAccess", "fieldName": field}}])
    };
    let mut posts = post("merged").as_array().expect("posts").clone();
    posts.extend(post("built").as_array().expect("posts").iter().cloned());
    let got = query(
        latencies(),
        json!({"queryType": "timeseries", "granularity": "all",
        "aggregations": [{"type": "quantilesDoublesSketch", "name": "merged", "fieldName": "latency"},
                         {"type": "quantilesDoublesSketch", "name": "built", "fieldName": "ms", "k": 256}],
        "postAggregations": posts}),
    );
    let r = &got[0]["result"];
    // The rank error of Druid's k=128 quantiles sketch, about 1.7% (DataSketches).
    let within = |got: &Value, exact: f64, scale: f64| {
        let g = got.as_f64().expect("a number");
        assert!((g - exact).abs() / scale <= 0.017, "{g} vs {exact}: {r}");
    };
    for field in ["merged", "built"] {
        assert_eq!(r[field], json!(20_000), "a quantiles sketch finalizes to its count");
        let q = &r[format!("{field}_q")];
        for (i, exact) in [10_000.0, 19_000.0, 19_800.0].into_iter().enumerate() {
            within(&q[i], exact, 20_000.0);
        }
        within(&r[format!("{field}_rank")], 0.5, 1.0);
        let cdf = &r[format!("{field}_cdf")];
        within(&cdf[0], 0.25, 1.0);
        within(&cdf[1], 0.75, 1.0);
        let hist = &r[format!("{field}_hist")];
        within(&hist[0], 10_000.0, 20_000.0);
        within(&hist[1], 10_000.0, 20_000.0);
    }
}

#[test]
fn sketch_partials_cross_the_wire_and_merge_as_one_pass_does() {
    use sluice_query::engine::Aggregated;
    use sluice_query::{finish, partial, Partial};
    let text = json!({"queryType": "groupBy", "dataSource": "ts_tutorial", "granularity": "all",
        "intervals": ["2022-05-01/2022-06-01"], "dimensions": [],
        "aggregations": [{"type": "quantilesDoublesSketch", "name": "q", "fieldName": "latency"},
                         {"type": "thetaSketch", "name": "values", "fieldName": "ms", "size": 32768}],
        "postAggregations": [{"type": "quantilesDoublesSketchToQuantiles", "name": "p", "fractions": [0.5, 0.9, 0.99],
                              "field": {"type": "fieldAccess", "fieldName": "q"}}]});
    let query = parse_query(&text.to_string()).expect("parses");
    let segments = latencies();
    let Some(Partial::Aggregated(empty)) = partial(&query, &[]).expect("runs") else { panic!("a partial") };
    let template = empty.fresh();
    let mut merged: Option<Partial> = None;
    for one in segments.chunks(1) {
        let Some(Partial::Aggregated(p)) = partial(&query, one).expect("runs") else { panic!("a partial") };
        let back = Aggregated::from_bytes(&p.to_bytes().expect("written"), &template, "worker").expect("read back");
        match merged.as_mut() {
            None => merged = Some(Partial::Aggregated(back)),
            Some(m) => m.absorb(Partial::Aggregated(back)).expect("merges"),
        }
    }
    let over_the_wire = finish(&query, merged.expect("partials")).expect("finishes");
    let one_pass = execute(&query, segments).expect("runs");
    let (a, b) = (&over_the_wire[0]["event"], &one_pass[0]["event"]);
    assert_eq!((&a["q"], &b["q"]), (&json!(20_000), &json!(20_000)), "every value counted once");
    // 20,000 distinct values in a sketch of 32,768 entries: exact, whatever the merges.
    assert_eq!((&a["values"], &b["values"]), (&json!(20_000.0), &json!(20_000.0)));
    for (i, fraction) in [0.5, 0.9, 0.99].into_iter().enumerate() {
        for (how, got) in [("over the wire", a), ("in one pass", b)] {
            let v = got["p"][i].as_f64().expect("a quantile");
            assert!((v / 20_000.0 - fraction).abs() <= 0.017, "{how}: p{fraction} = {v}");
        }
    }
}

#[test]
fn sketch_estimates_compose_in_arithmetic_and_wrong_inputs_are_refused() {
    let field = |n: &str| json!({"type": "fieldAccess", "fieldName": n});
    let estimate = |inner: Value| json!({"type": "thetaSketchEstimate", "name": "_", "field": inner});
    let intersect =
        json!({"type": "thetaSketchSetOp", "name": "_", "func": "INTERSECT", "fields": [field("e1"), field("e2")]});
    // Retention as Druid users write it: the share of S1E1's viewers who also saw S1E2.
    let got = query(
        tutorial(),
        json!({"queryType": "timeseries", "granularity": "all",
        "aggregations": [theta("e1", Some(episode("S1E1"))), theta("e2", Some(episode("S1E2")))],
        "postAggregations": [{"type": "arithmetic", "name": "retained", "fn": "/",
            "fields": [estimate(intersect), estimate(field("e1"))]}]}),
    );
    assert_eq!(got[0]["result"]["retained"], json!(0.25), "carol of alice, bob, carol, dan");
    let refused = |agg: Value, expected: &str| {
        let q = json!({"queryType": "timeseries", "dataSource": "ts_tutorial", "intervals": ["2022-05-01/2022-06-01"],
            "granularity": "all", "aggregations": [agg]});
        let e = parse_query(&q.to_string()).and_then(|q| execute(&q, tutorial())).expect_err("refused").to_string();
        assert!(e.contains(expected), "{e}");
    };
    refused(json!({"type": "quantilesDoublesSketch", "name": "q", "fieldName": "theta_uid"}), "ThetaSketch column");
    refused(json!({"type": "thetaSketch", "name": "t", "fieldName": "show", "size": 1000}), "power of 2");
    refused(json!({"type": "quantilesDoublesSketch", "name": "q", "fieldName": "count", "k": 100}), "power of 2");
    refused(
        json!({"type": "thetaSketch", "name": "t", "fieldName": "show", "errorBoundsStdDev": 2}),
        "thetaSketchEstimate",
    );
}
