//! Partials merge into the single-pass answer: for random segments and random timeseries,
//! topN and groupBy queries, the answer is the same bits with 1, 2 or 4 threads, and the same
//! when the segments are split into k batches (1..8) whose partials merge in any order, as a
//! broker merges its workers'.

use proptest::prelude::*;
use serde_json::{json, Value};
use sluice_query::engine::Aggregated;
use sluice_query::{execute, finish, parse_query, partial, Partial, Query, QuerySegment};

use crate::generated::{query, records, row, spec, Row};

/// Segments of one hour each over two days, from `rows`.
fn segments(rows: &[Row]) -> Vec<QuerySegment> {
    let records = records(rows);
    crate::query_segments(&spec(), records.iter().map(|r| r.as_bytes()))
}

fn on_threads(n: usize, query: &Query, segments: &[QuerySegment]) -> Value {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build().expect("thread pool");
    pool.install(|| execute(query, segments)).expect("query runs")
}

/// The answer from `k` contiguous batches of the segments, their partials merged in `order`.
fn from_batches(query: &Query, segments: &[QuerySegment], k: usize, reverse: bool) -> Value {
    let size = segments.len().div_ceil(k).max(1);
    let mut partials: Vec<_> =
        segments.chunks(size).map(|batch| partial(query, batch).expect("partial").expect("a partial")).collect();
    if reverse {
        partials.reverse();
    }
    let mut merged = partials.pop().unwrap_or_else(|| partial(query, &[]).expect("empty").expect("a partial"));
    for p in partials {
        merged.absorb(p).expect("merges");
    }
    finish(query, merged).expect("finishes")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn threads_and_batches_give_the_single_pass_answer(
        rows in prop::collection::vec(row(), 1..400),
        text in query(),
        k in 1usize..=8,
        reverse in any::<bool>(),
    ) {
        let segments = segments(&rows);
        let query = parse_query(&text.to_string()).expect("query parses");
        let one = on_threads(1, &query, &segments);
        prop_assert!(one.as_array().is_some_and(|a| !a.is_empty()) || text["filter"] != Value::Null, "{text}: {one}");
        prop_assert_eq!(&on_threads(2, &query, &segments), &one, "2 threads: {}", text);
        prop_assert_eq!(&on_threads(4, &query, &segments), &one, "4 threads: {}", text);
        prop_assert_eq!(&from_batches(&query, &segments, k, reverse), &one, "{} batches: {}", k, text);
    }
}

#[test]
fn scan_and_metadata_queries_are_answered_whole() {
    let segments = segments(&[(0, Some(0), vec![], 1, 1.0, 1)]);
    let scan = parse_query(r#"{"queryType":"scan","dataSource":"t","intervals":["2020/2021"]}"#).expect("parses");
    assert!(partial(&scan, &segments).expect("runs").is_none());
}

#[test]
fn a_repeated_query_computes_only_the_segments_new_since_its_last_run() {
    let rows: Vec<_> =
        (0..600u32).map(|i| (i * 4, Some((i % 7) as u8), vec![(i % 3) as u8], i64::from(i), 0.1, 1)).collect();
    let segments = segments(&rows);
    assert!(segments.len() >= 30, "{} segments", segments.len());
    let text = json!({"queryType": "groupBy", "dataSource": "t", "granularity": "hour",
        "intervals": ["2020-01-01/2020-01-03"], "dimensions": ["city"],
        "aggregations": [{"type": "doubleSum", "name": "v", "fieldName": "v"}, {"type": "count", "name": "rows"}]});
    let query = parse_query(&text.to_string()).expect("parses");
    let cache = std::sync::Arc::new(sluice_query::PartialCache::default());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let cached = |segs: &[QuerySegment]| {
        sluice_query::execute_within(&query, segs, deadline, 60_000, Some(&cache)).expect("query runs")
    };
    // The datasource grows: the first run sees two thirds of its segments.
    let old = segments.len() * 2 / 3;
    assert_eq!(cached(&segments[..old]), execute(&query, &segments[..old]).expect("runs"));
    let first = cache.stats();
    assert_eq!((first.hits, first.misses), (0, old as u64));
    assert_eq!(cached(&segments), execute(&query, &segments).expect("runs"), "cached partials give the same answer");
    let second = cache.stats();
    assert_eq!(second.hits - first.hits, old as u64, "every old segment from the cache");
    assert_eq!(second.misses - first.misses, (segments.len() - old) as u64, "only the new ones computed");
    // Another shape of query (a different filter) shares nothing.
    let mut other = text.clone();
    other["filter"] = json!({"type": "selector", "dimension": "city", "value": "Oslo"});
    let other = parse_query(&other.to_string()).expect("parses");
    sluice_query::execute_within(&other, &segments, deadline, 60_000, Some(&cache)).expect("runs");
    assert_eq!(cache.stats().hits, second.hits);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Partials sent through the wire format, as workers send theirs, merge into the same bits.
    #[test]
    fn partials_through_the_wire_give_the_same_answer(
        rows in prop::collection::vec(row(), 1..300),
        text in query(),
        k in 1usize..=8,
    ) {
        let segments = segments(&rows);
        let query = parse_query(&text.to_string()).expect("query parses");
        let want = on_threads(1, &query, &segments);
        let size = segments.len().div_ceil(k).max(1);
        let mut merged: Option<Partial> = None;
        for (i, batch) in segments.chunks(size).enumerate() {
            let Some(Partial::Aggregated(p)) = partial(&query, batch).expect("partial") else { panic!("a partial") };
            let bytes = p.to_bytes().expect("written");
            let read = Aggregated::from_bytes(&bytes, &template(&query), &format!("batch {i}")).expect("read back");
            match merged.as_mut() {
                None => merged = Some(Partial::Aggregated(read)),
                Some(m) => m.absorb(Partial::Aggregated(read)).expect("merges"),
            }
        }
        let merged = merged.unwrap_or_else(|| partial(&query, &[]).expect("empty").expect("a partial"));
        prop_assert_eq!(&finish(&query, merged).expect("finishes"), &want, "{}", text);
    }
}

/// The compiled, empty partial of `query` (a broker's template for reading workers' partials).
fn template(query: &Query) -> Aggregated {
    match partial(query, &[]).expect("runs").expect("a partial") {
        Partial::Aggregated(a) => a.fresh(),
    }
}

#[test]
fn damaged_or_forged_partials_fail_naming_their_source() {
    let rows: Vec<Row> = (0..50u32).map(|i| (i * 30, Some((i % 5) as u8), vec![], i64::from(i), 0.5, 1)).collect();
    let segments = segments(&rows);
    let text = json!({"queryType": "groupBy", "dataSource": "t", "granularity": "all",
        "intervals": ["2020-01-01/2020-01-03"], "dimensions": ["city"],
        "aggregations": [{"type": "doubleSum", "name": "v", "fieldName": "v"},
                         {"type": "HLLSketchBuild", "name": "u", "fieldName": "user"}]});
    let query = parse_query(&text.to_string()).expect("parses");
    let Some(Partial::Aggregated(p)) = partial(&query, &segments).expect("runs") else { panic!("a partial") };
    let bytes = p.to_bytes().expect("written");
    let compiled = template(&query);
    let read =
        |b: &[u8]| Aggregated::from_bytes(b, &compiled, "worker 3").map(|_| ()).expect_err("refused").to_string();
    assert!(read(&bytes[..bytes.len() / 2]).contains("partial from worker 3: not a partial"));
    assert!(read(b"\xff\xff\xff").contains("worker 3"));
    // Another query's template (one aggregator fewer) refuses it.
    let fewer = json!({"queryType": "groupBy", "dataSource": "t", "granularity": "all",
        "intervals": ["2020-01-01/2020-01-03"], "dimensions": ["city"],
        "aggregations": [{"type": "doubleSum", "name": "v", "fieldName": "v"}]});
    let other = template(&parse_query(&fewer.to_string()).expect("parses"));
    let err = Aggregated::from_bytes(&bytes, &other, "worker 3").map(|_| ()).expect_err("refused").to_string();
    assert!(err.contains("2 aggregators (expected 1)"), "{err}");
    // A group id past its dimension's values, forged by rewriting the CBOR value.
    let mut value: ciborium::Value = ciborium::from_reader(&bytes[..]).expect("cbor");
    let keys = value.as_map_mut().expect("map").iter_mut().find(|(k, _)| k.as_text() == Some("keys")).expect("keys");
    keys.1.as_array_mut().expect("array")[0] = ciborium::Value::Integer(999.into());
    let mut forged = Vec::new();
    ciborium::into_writer(&value, &mut forged).expect("cbor");
    assert!(read(&forged).contains("names value 999 of dimension 0"), "{}", read(&forged));
    // A sum whose exact value is not the one it shows.
    let mut value: ciborium::Value = ciborium::from_reader(&bytes[..]).expect("cbor");
    let states =
        value.as_map_mut().expect("map").iter_mut().find(|(k, _)| k.as_text() == Some("states")).expect("states");
    let double = states.1.as_array_mut().expect("array")[0].as_map_mut().expect("a state");
    let fields = double[0].1.as_map_mut().expect("double's fields");
    let n = fields.iter().find(|(k, _)| k.as_text() == Some("vals")).map(|(_, v)| v.as_array().expect("vals").len());
    let exact = fields.iter_mut().find(|(k, _)| k.as_text() == Some("exact")).expect("exact");
    let forged_sum = ciborium::Value::Array(vec![ciborium::Value::Float(1e9)]);
    exact.1 = ciborium::Value::Array(vec![forged_sum; n.expect("groups")]);
    let mut forged = Vec::new();
    ciborium::into_writer(&value, &mut forged).expect("cbor");
    assert!(read(&forged).contains("whose exact value is 1000000000"), "{}", read(&forged));
}

#[test]
fn a_partial_of_many_small_elements_is_refused_while_it_is_read() {
    // One-byte zeros, each decoded into eight bytes (or a null into a forty-byte cell): the
    // count of elements stops it, not the count of bytes.
    let n = sluice_query::wire::MAX_PARTIAL_ELEMENTS + 10;
    let cells = ciborium::Value::Array(vec![ciborium::Value::Integer(0.into()); n]);
    let value = ciborium::Value::Map(vec![
        (ciborium::Value::Text("version".into()), ciborium::Value::Integer(1.into())),
        (ciborium::Value::Text("dims".into()), ciborium::Value::Integer(0.into())),
        (ciborium::Value::Text("buckets".into()), cells),
    ]);
    let mut bytes = Vec::new();
    ciborium::into_writer(&value, &mut bytes).expect("cbor");
    let query = parse_query(
        &json!({"queryType": "timeseries", "dataSource": "t", "granularity": "all", "intervals": ["2020/2021"],
                "aggregations": [{"type": "count", "name": "rows"}]})
        .to_string(),
    )
    .expect("parses");
    let err = Aggregated::from_bytes(&bytes, &template(&query), "worker 9").map(|_| ()).expect_err("refused");
    assert!(err.to_string().contains("elements in all"), "{err}");
}

/// Dictionaries past a few thousand values are read in dictionary order before the rows
/// (`SegmentGrouper::prime`): the groups are the ones counted row by row, on any number of
/// threads, single- and multi-valued, with a filter (a bitmap of rows) and without (ranges).
#[test]
fn large_dictionaries_group_as_counted_row_by_row() {
    let cities = ["Paris", "Oslo", "Lima"];
    let (mut records, mut counts) = (Vec::new(), std::collections::BTreeMap::<String, (i64, i64)>::new());
    let mut tag_counts = std::collections::BTreeMap::<String, i64>::new();
    for i in 0..14_000u32 {
        let (user, city) = (format!("u{:05}", (i * 7919) % 6_000), cities[(i / 3) as usize % 3]);
        let tags = [format!("t{}", i % 5_000), format!("t{}", (i + 1) % 5_000)];
        for t in &tags {
            *tag_counts.entry(t.clone()).or_default() += 1;
        }
        let ts = 1_577_836_800_000i64 + i64::from(i % 120) * 60_000;
        records.push(json!({"ts": ts, "city": city, "tags": tags, "n": 1, "v": 1.0, "user": user}).to_string());
        let c = counts.entry(user).or_default();
        c.0 += 1;
        c.1 += i64::from(city == "Paris");
    }
    let segments = crate::query_segments(&spec(), records.iter().map(|r| r.as_bytes()));
    assert_eq!(segments.len(), 2, "two hours");
    let interval = json!(["2020-01-01/2020-01-02"]);
    let top = json!({"queryType": "topN", "dataSource": "t", "intervals": interval, "granularity": "all",
        "filter": {"type": "selector", "dimension": "city", "value": "Paris"},
        "dimension": "user", "metric": "count", "threshold": 3, "aggregations": [{"type": "count", "name": "count"}]});
    let query = parse_query(&top.to_string()).expect("topN");
    let mut want: Vec<(&String, i64)> = counts.iter().map(|(u, c)| (u, c.1)).collect();
    want.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let want: Vec<Value> = want[..3].iter().map(|(u, c)| json!({"count": c, "user": u})).collect();
    for threads in [1, 2] {
        let got = on_threads(threads, &query, &segments);
        assert_eq!(got[0]["result"], json!(want), "{threads} threads");
    }
    let grouped = |dimension: &str| -> std::collections::BTreeMap<String, i64> {
        let q = json!({"queryType": "groupBy", "dataSource": "t", "intervals": interval, "granularity": "all",
            "dimensions": [dimension], "aggregations": [{"type": "count", "name": "count"}]});
        let got = on_threads(2, &parse_query(&q.to_string()).expect("groupBy"), &segments);
        let rows = got.as_array().expect("rows").iter();
        rows.map(|r| {
            (r["event"][dimension].as_str().expect("value").to_string(), r["event"]["count"].as_i64().expect("count"))
        })
        .collect()
    };
    assert_eq!(grouped("user"), counts.iter().map(|(u, c)| (u.clone(), c.0)).collect());
    let distinct = json!({"queryType": "groupBy", "dataSource": "t", "intervals": interval, "granularity": "all",
        "dimensions": ["user"], "aggregations": []});
    let got = on_threads(2, &parse_query(&distinct.to_string()).expect("groupBy"), &segments);
    assert_eq!(got.as_array().map(Vec::len), Some(counts.len()), "no aggregator: the distinct values");
    let got = grouped("tags");
    assert_eq!(got, tag_counts, "each of a row's values counts it once");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// A timeseries of counts and long sums folds each time bucket's run of rows at once; the
    /// same query with an aggregator that cannot (a max) goes row by row: the same buckets and
    /// totals, for any granularity and interval.
    #[test]
    fn time_bucket_runs_sum_as_rows_do(
        rows in prop::collection::vec(row(), 1..400),
        granularity in prop::sample::select(vec![
            json!("minute"), json!("fifteen_minute"), json!("hour"), json!("day"),
            json!({"type": "period", "period": "PT7M"}),
            json!({"type": "period", "period": "PT1H", "timeZone": "Asia/Kolkata"}),
        ]),
        (interval, minutes) in prop::sample::select(vec![
            ("2020-01-01/2020-01-03", 0..2 * 24 * 60),
            ("2020-01-01T03:17:00Z/2020-01-02T05:41:00Z", 3 * 60 + 17..(24 + 5) * 60 + 41),
        ]),
    ) {
        let segments = segments(&rows);
        let aggregations = vec![
            json!({"type": "count", "name": "rows"}),
            json!({"type": "longSum", "name": "nsum", "fieldName": "n"}),
        ];
        let runs = json!({"queryType": "timeseries", "dataSource": "t", "granularity": granularity,
            "intervals": [interval], "aggregations": aggregations});
        let mut by_row = runs.clone();
        by_row["aggregations"].as_array_mut().expect("list").push(json!({"type": "longMax", "name": "nmax", "fieldName": "n"}));
        let runs = on_threads(1, &parse_query(&runs.to_string()).expect("parses"), &segments);
        let by_row = on_threads(1, &parse_query(&by_row.to_string()).expect("parses"), &segments);
        let strip = |v: &Value| -> Vec<(Value, Value, Value)> {
            v.as_array().expect("rows").iter().map(|r| (r["timestamp"].clone(), r["result"]["rows"].clone(), r["result"]["nsum"].clone())).collect()
        };
        // A row at the interval's end is outside it: then no segment has data in it, and both are empty.
        let inside = rows.iter().any(|row| minutes.contains(&row.0));
        prop_assert_eq!(!strip(&runs).is_empty(), inside);
        prop_assert_eq!(strip(&runs), strip(&by_row), "{}", granularity);
    }
}
