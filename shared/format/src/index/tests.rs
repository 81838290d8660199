//! Unit tests of the incremental index: rollup, dictionaries, bitmaps and persists.

use super::*;
use crate::input::{Parsed, RecordParser};
use crate::segment::Segment;
use crate::spec::load_spec;

fn index_records(spec_json: &str, records: &[&str]) -> (IncrementalIndex, RecordParser) {
    let spec = load_spec(spec_json).expect("spec").spec;
    let mut parser = RecordParser::new(&spec).expect("parser");
    let config = IndexConfig::from_spec(&spec);
    let mut index: Option<IncrementalIndex> = None;
    let mut out = Vec::new();
    for r in records {
        out.clear();
        parser.parse_record(r.as_bytes(), &mut out);
        for o in out.drain(..) {
            let Ok(Parsed::Row { row, .. }) = o else { panic!("{o:?}") };
            let chunk = config.segment_granularity.bucket(row.time);
            let idx = index.get_or_insert_with(|| IncrementalIndex::new(config.clone(), chunk));
            idx.add(row, parser.dimensions());
        }
    }
    (index.expect("rows"), parser)
}

const ROLLUP_SPEC: &str = r#"{"type":"kafka","spec":{"dataSchema":{"dataSource":"d",
  "timestampSpec":{"column":"t","format":"millis"},"dimensionsSpec":{"dimensions":[]},
  "metricsSpec":[{"type":"count","name":"n"},{"type":"longSum","name":"s","fieldName":"x"}],
  "granularitySpec":{"segmentGranularity":"all","queryGranularity":"minute","rollup":true}},
  "ioConfig":{"topic":"d","inputFormat":{"type":"json"},"consumerProperties":{"bootstrap.servers":"b"}}}}"#;

#[test]
fn rollup_survives_dimensions_discovered_midway() {
    let (index, _) = index_records(
        ROLLUP_SPEC,
        &[
            r#"{"t": 1000, "a": "x", "x": 1}"#,
            r#"{"t": 2000, "a": "x", "b": "new", "x": 2}"#,
            r#"{"t": 3000, "a": "x", "x": 4}"#,
            r#"{"t": 4000, "a": "x", "b": "new", "x": 8}"#,
        ],
    );
    assert_eq!(index.num_rows(), 2, "(x, null) and (x, new) within one minute");
    let seg = Segment::from_bytes("t", index.persist(Default::default()).expect("persist")).expect("open");
    let rows = seg.read_rows().expect("rows");
    let sums: Vec<_> = rows.iter().map(|r| r.2.clone()).collect();
    assert_eq!(
        sums,
        vec![
            vec![crate::aggregate::MetricCell::Long(Some(2)), crate::aggregate::MetricCell::Long(Some(5))],
            vec![crate::aggregate::MetricCell::Long(Some(2)), crate::aggregate::MetricCell::Long(Some(10))],
        ]
    );
}

#[test]
fn persist_sorts_rows_and_dictionaries() {
    let (index, _) = index_records(
        ROLLUP_SPEC,
        &[
            r#"{"t": 120000, "a": "b", "x": 1}"#,
            r#"{"t": 60000, "a": "c", "x": 1}"#,
            r#"{"t": 60000, "a": "a", "x": 1}"#,
            r#"{"t": 60000, "x": 1}"#,
            r#"{"t": 60000, "a": ["z", "c"], "x": 1}"#,
        ],
    );
    let seg = Segment::from_bytes("t", index.persist(Default::default()).expect("persist")).expect("open");
    assert_eq!(seg.dictionary("a").expect("dict"), vec!["a", "b", "c", "z"]);
    let rows: Vec<(i64, Vec<crate::row::DimValue>)> =
        seg.read_rows().expect("rows").into_iter().map(|r| (r.0, r.1)).collect();
    use crate::row::DimValue::*;
    assert_eq!(
        rows,
        vec![
            (60000, vec![Null]),
            (60000, vec![Str("a".into())]),
            (60000, vec![Str("c".into())]),
            (60000, vec![Multi(vec!["c".into(), "z".into()])]),
            (120000, vec![Str("b".into())]),
        ]
    );
}

#[test]
fn recycled_rows_are_built_in_the_vectors_of_rows_indexed_and_carry_nothing_over() {
    let spec = load_spec(ROLLUP_SPEC).expect("spec").spec;
    let mut parser = RecordParser::new(&spec).expect("parser");
    let config = IndexConfig::from_spec(&spec);
    let mut index = IncrementalIndex::new(config.clone(), config.segment_granularity.bucket(0));
    let (mut out, mut spare) = (Vec::new(), Spare::default());
    let mut parse = |parser: &mut RecordParser, record: &str| {
        parser.parse_record(record.as_bytes(), &mut out);
        match out.pop() {
            Some(Ok(Parsed::Row { row, .. })) => row,
            other => panic!("{other:?}"),
        }
    };
    let first = parse(&mut parser, r#"{"t": 1000, "a": "x", "b": "y", "x": 1}"#);
    let dims_at = first.dims.as_ptr();
    index.add_recycling(first, parser.dimensions(), &mut spare);
    assert_eq!((spare.strings.len(), spare.rows.len()), (2, 1), "both strings and the row's vectors handed back");
    parser.recycle(&mut spare);
    assert!(spare.strings.is_empty() && spare.rows.is_empty(), "taken by the parser");
    // The next row is built in the same vector, with no value of the row before.
    let second = parse(&mut parser, r#"{"t": 120000, "x": 2}"#);
    assert_eq!(second.dims.as_ptr(), dims_at);
    assert_eq!(second.dims, vec![DimValue::Null, DimValue::Null]);
    assert_eq!(second.metrics.len(), 2);
    index.add_recycling(second, parser.dimensions(), &mut spare);
    let seg = Segment::from_bytes("recycled", index.persist(Default::default()).expect("persist")).expect("open");
    let rows: Vec<(i64, Vec<DimValue>)> = seg.read_rows().expect("rows").into_iter().map(|r| (r.0, r.1)).collect();
    let (x, y) = (DimValue::Str("x".into()), DimValue::Str("y".into()));
    assert_eq!(rows, vec![(0, vec![x, y]), (120_000, vec![DimValue::Null, DimValue::Null])]);
}
