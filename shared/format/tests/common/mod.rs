//! Helpers shared by the segment engine's tests: index records through the real parser,
//! persist and merge, and read rows back.
#![allow(dead_code)]

pub mod alloc;

use sluice_format::aggregate::MetricCell;
use sluice_format::index::{IncrementalIndex, IndexConfig};
use sluice_format::input::{Parsed, RecordParser};
use sluice_format::merge::{merge, MergeOptions};
use sluice_format::row::DimValue;
use sluice_format::segment::Segment;
use sluice_format::spec::{load_spec, DatasourceSpec};
use std::collections::BTreeMap;

/// A path under the repository's `data/` folder.
pub fn data_path(name: &str) -> String {
    format!("{}/../../data/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Loads a spec file from `data/specs/`.
pub fn spec(name: &str) -> DatasourceSpec {
    let text = std::fs::read_to_string(data_path(&format!("specs/{name}"))).expect("spec file");
    load_spec(&text).expect("spec loads").spec
}

/// Reads the Wikipedia sample's lines.
pub fn wikipedia_lines() -> Vec<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(data_path("wikiticker-2015-09-12-sampled.json.gz")).expect("sample");
    std::io::BufReader::new(flate2::read::GzDecoder::new(file)).lines().map(|l| l.expect("line")).collect()
}

/// Counts of an ingest run.
#[derive(Debug, Default, PartialEq)]
pub struct Counts {
    pub rows: u64,
    pub with_errors: u64,
    pub unparseable: u64,
    pub filtered: u64,
}

/// Parses records and indexes them into one index per time chunk.
pub fn index_records<'a>(
    spec: &DatasourceSpec,
    records: impl IntoIterator<Item = &'a [u8]>,
) -> (BTreeMap<i64, IncrementalIndex>, Counts) {
    let mut parser = RecordParser::new(spec).expect("parser");
    let config = IndexConfig::from_spec(spec);
    let mut indexes = BTreeMap::new();
    let mut counts = Counts::default();
    let mut out = Vec::new();
    for record in records {
        out.clear();
        parser.parse_record(record, &mut out);
        for o in out.drain(..) {
            match o {
                Ok(Parsed::Row { row, errors }) => {
                    counts.rows += 1;
                    counts.with_errors += u64::from(!errors.is_empty());
                    let chunk = config.segment_granularity.bucket(row.time);
                    indexes
                        .entry(chunk.start)
                        .or_insert_with(|| IncrementalIndex::new(config.clone(), chunk))
                        .add(row, parser.dimensions());
                }
                Ok(Parsed::Filtered) => counts.filtered += 1,
                Ok(Parsed::Skipped) => {}
                Err(_) => counts.unparseable += 1,
            }
        }
    }
    (indexes, counts)
}

/// Persists an index and opens the result.
pub fn persist(index: &IncrementalIndex, name: &str) -> Segment {
    Segment::from_bytes(name, index.persist(Default::default()).expect("persist")).expect("open hydrant")
}

/// Merges segments into shards and opens them.
pub fn merge_all(inputs: &[Segment], max_rows: u64) -> Vec<Segment> {
    let out = merge(inputs, &MergeOptions { max_rows_per_segment: max_rows, compression: Default::default() })
        .expect("merge");
    out.into_iter()
        .enumerate()
        .map(|(i, b)| Segment::from_bytes(&format!("merged-{i}"), b).expect("open merged"))
        .collect()
}

/// A row decoded for comparison: sketches become their estimates.
pub type Comparable = (i64, Vec<DimValue>, Vec<String>);

pub fn comparable(seg: &Segment) -> Vec<Comparable> {
    seg.read_rows()
        .expect("rows")
        .into_iter()
        .map(|(t, dims, metrics)| {
            let metrics = metrics
                .iter()
                .map(|m| match m {
                    MetricCell::Sketch(s) => format!("sketch~{:.3}", s.estimate()),
                    other => format!("{other:?}"),
                })
                .collect();
            (t, dims, metrics)
        })
        .collect()
}

/// Checks every string column's bitmaps against its ids: value k's bitmap holds exactly the
/// rows whose ids include k.
pub fn check_bitmaps(seg: &Segment) {
    use sluice_format::segment::{ColumnType, DimBuf, RowBuf, RowCursor};
    let cols: Vec<_> = seg.directory().columns[1..].iter().filter(|c| c.kind != ColumnType::Metric).cloned().collect();
    let mut expected: Vec<BTreeMap<u32, roaring::RoaringBitmap>> = vec![BTreeMap::new(); cols.len()];
    let mut cursor = RowCursor::new(seg).expect("cursor");
    let mut buf = RowBuf::default();
    let mut row = 0u32;
    while cursor.next(&mut buf).expect("row") {
        for (i, d) in buf.dims.iter().enumerate() {
            if let DimBuf::Codes(codes) = d {
                for &c in codes {
                    expected[i].entry(c).or_default().insert(row);
                }
            }
        }
        row += 1;
    }
    for (i, col) in cols.iter().enumerate() {
        if col.kind != ColumnType::String {
            continue;
        }
        let s = seg.string_column(col).expect("string column");
        // A dimension written without bitmaps (createBitmapIndex: false) has none to check.
        let Some(bitmaps) = s.bitmaps.map(|b| b.all().expect("bitmaps")) else { continue };
        for (code, bytes) in bitmaps.iter().enumerate() {
            let actual = seg.bitmap(bytes, &col.name).expect("bitmap");
            let want = expected[i].get(&(code as u32)).cloned().unwrap_or_default();
            assert_eq!(actual, want, "column {} value {code}", col.name);
            assert!(code == 0 || !actual.is_empty(), "column {} keeps unused value {code}", col.name);
        }
    }
}
