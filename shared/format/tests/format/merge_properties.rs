//! Property: for random rows, random splits into tasks and random persist points,
//! merge(persist(index(part_i))) holds the same rows, aggregates, dictionaries and bitmaps
//! as the index of all rows built in one go; with rollup on and off, nulls and multi-values.

use crate::common::{check_bitmaps, comparable, merge_all, Comparable};
use proptest::prelude::*;
use sluice_format::index::{IncrementalIndex, IndexConfig};
use sluice_format::input::RecordParser;
use sluice_format::merge::{merge, MergeOptions};
use sluice_format::row::{DimValue, Row};
use sluice_format::segment::Segment;
use sluice_format::spec::load_spec_value;
use sluice_format::time::Interval;
use sluice_format::value::Value;

fn config(rollup: bool, query_granularity: &str) -> (IndexConfig, RecordParser) {
    let spec = load_spec_value(serde_json::json!({
        "type": "kafka",
        "spec": {
            "dataSchema": {
                "dataSource": "p",
                "timestampSpec": {"column": "t", "format": "millis"},
                "dimensionsSpec": {"dimensions": ["s", {"name": "m", "type": "string", "multiValueHandling": "SORTED_ARRAY"}, {"name": "n", "type": "long"}, {"name": "f", "type": "double"}]},
                "metricsSpec": [
                    {"type": "count", "name": "count"},
                    {"type": "longSum", "name": "sum", "fieldName": "x"},
                    {"type": "doubleSum", "name": "dsum", "fieldName": "y"},
                    {"type": "longMin", "name": "min", "fieldName": "x"},
                    {"type": "longMax", "name": "max", "fieldName": "x"},
                    {"type": "longFirst", "name": "first", "fieldName": "x"},
                    {"type": "stringLast", "name": "last", "fieldName": "z"},
                    {"type": "HLLSketchBuild", "name": "uniq", "fieldName": "z", "lgK": 10}
                ],
                "granularitySpec": {"segmentGranularity": "hour", "queryGranularity": query_granularity, "rollup": rollup}
            },
            "ioConfig": {"topic": "p", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "b"}}
        }
    }))
    .expect("spec")
    .spec;
    (IndexConfig::from_spec(&spec), RecordParser::new(&spec).expect("parser"))
}

fn word() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c", "dd", "é", "zz", "0"]).prop_map(str::to_string)
}

fn string_dim() -> impl Strategy<Value = DimValue> {
    prop_oneof![2 => Just(DimValue::Null), 5 => word().prop_map(DimValue::Str)]
}

fn multi_dim() -> impl Strategy<Value = DimValue> {
    prop_oneof![
        1 => Just(DimValue::Null),
        2 => word().prop_map(DimValue::Str),
        2 => prop::collection::vec(word(), 2..4).prop_map(|mut v| { v.sort(); DimValue::Multi(v) }),
    ]
}

fn row() -> impl Strategy<Value = Row> {
    let dims = (string_dim(), multi_dim(), prop::option::of(-3i64..3), prop::option::of(-2i32..2));
    let metrics = (prop::option::of(-50i64..50), prop::option::of(-8i32..8), prop::option::of(word()));
    (0i64..180_000, dims, metrics).prop_map(|(t, (s, m, n, f), (x, y, z))| Row {
        time: 1_600_000_000_000 / 3_600_000 * 3_600_000 + t,
        dims: vec![
            s,
            m,
            n.map(DimValue::Long).unwrap_or(DimValue::Null),
            f.map(|v| DimValue::Double(v as f64 * 0.5)).unwrap_or(DimValue::Null),
        ],
        metrics: vec![
            Value::Null,
            x.map(Value::Long).unwrap_or(Value::Null),
            y.map(|v| Value::Double(v as f64)).unwrap_or(Value::Null),
            x.map(Value::Long).unwrap_or(Value::Null),
            x.map(Value::Long).unwrap_or(Value::Null),
            x.map(Value::Long).unwrap_or(Value::Null),
            z.clone().map(Value::String).unwrap_or(Value::Null),
            z.map(Value::String).unwrap_or(Value::Null),
        ],
    })
}

fn sorted(mut rows: Vec<Comparable>) -> Vec<Comparable> {
    rows.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    rows
}

fn check(rows: Vec<Row>, tasks: Vec<usize>, persist_every: usize, max_rows: u64, rollup: bool, granularity: &str) {
    let (config, parser) = config(rollup, granularity);
    let plan = parser.dimensions().to_vec();
    let interval =
        Interval::new(rows[0].time / 3_600_000 * 3_600_000, rows[0].time / 3_600_000 * 3_600_000 + 3_600_000);
    let mut whole = IncrementalIndex::new(config.clone(), interval);
    rows.iter().for_each(|r| whole.add(r.clone(), &plan));
    let whole_bytes = whole.persist(Default::default()).expect("persist");
    let expected = Segment::from_bytes("whole", whole_bytes.clone()).expect("open");
    // One hydrant merged alone gives back its bytes: the merger publishes such a hydrant as is.
    let alone = merge(
        std::slice::from_ref(&expected),
        &MergeOptions { max_rows_per_segment: u64::MAX, compression: Default::default() },
    )
    .expect("merge one");
    assert!(alone.len() == 1 && alone[0] == whole_bytes, "the merge of one hydrant differs from it");

    // Split rows into tasks at random points; each task persists every `persist_every` rows.
    let mut hydrants = Vec::new();
    let mut start = 0usize;
    for (t, &len) in tasks.iter().chain(std::iter::once(&usize::MAX)).enumerate() {
        let end = start.saturating_add(len).min(rows.len());
        let mut index = IncrementalIndex::new(config.clone(), interval);
        for (i, r) in rows[start..end].iter().enumerate() {
            index.add(r.clone(), &plan);
            if (i + 1) % persist_every == 0 {
                let done = std::mem::replace(&mut index, IncrementalIndex::new(config.clone(), interval));
                hydrants.push(
                    Segment::from_bytes(&format!("h{t}-{i}"), done.persist(Default::default()).expect("persist"))
                        .expect("open"),
                );
            }
        }
        if !index.is_empty() {
            hydrants.push(
                Segment::from_bytes(&format!("h{t}-end"), index.persist(Default::default()).expect("persist"))
                    .expect("open"),
            );
        }
        start = end;
        if start >= rows.len() {
            break;
        }
    }
    let merged = merge_all(&hydrants, max_rows);
    let mut actual = Vec::new();
    for (i, seg) in merged.iter().enumerate() {
        check_bitmaps(seg);
        assert!(seg.num_rows() as u64 <= max_rows);
        assert!(i + 1 == merged.len() || seg.num_rows() as u64 == max_rows, "only the last shard may be short");
        actual.extend(comparable(seg));
    }
    check_bitmaps(&expected);
    let expected_rows = comparable(&expected);
    if rollup {
        assert_eq!(actual, expected_rows, "rolled-up rows in order");
    } else {
        assert_eq!(sorted(actual), sorted(expected_rows), "same multiset of rows");
    }
    // Dictionaries: the union over shards equals the dictionary built in one go.
    for dim in ["s", "m"] {
        let mut union: Vec<String> = merged.iter().flat_map(|s| s.dictionary(dim).expect("dict")).collect();
        union.sort();
        union.dedup();
        assert_eq!(union, expected.dictionary(dim).expect("dict"), "dictionary of {dim}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn merge_of_hydrants_equals_one_index(
        rows in prop::collection::vec(row(), 1..300),
        tasks in prop::collection::vec(1usize..120, 0..4),
        persist_every in 1usize..80,
        max_rows in prop_oneof![Just(5_000_000u64), 3u64..60],
        rollup in any::<bool>(),
        granularity in prop::sample::select(vec!["none", "second", "minute"]),
    ) {
        check(rows, tasks, persist_every, max_rows, rollup, granularity);
    }
}
