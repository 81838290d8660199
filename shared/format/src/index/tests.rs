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
