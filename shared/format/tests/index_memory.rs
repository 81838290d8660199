//! The incremental index's memory estimate, which decides when to persist, checked against
//! the bytes really allocated while indexing Druid's Wikipedia sample.

mod common;

use common::alloc;
use sluice_format::index::{IncrementalIndex, IndexConfig};
use sluice_format::input::{Parsed, RecordParser};
use sluice_format::spec::load_spec_value;

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

fn measure(spec_json: serde_json::Value, lines: &[String]) -> (usize, usize, usize) {
    let spec = load_spec_value(spec_json).expect("spec").spec;
    let config = IndexConfig::from_spec(&spec);
    let mut parser = RecordParser::new(&spec).expect("parser");
    let mut out = Vec::with_capacity(4);
    let chunk =
        config.segment_granularity.bucket(sluice_format::time::parse_iso_instant("2015-09-12T00:00:00Z").expect("day"));
    let before = alloc::current();
    let mut index = IncrementalIndex::new(config, chunk);
    for line in lines {
        out.clear();
        parser.parse_record(line.as_bytes(), &mut out);
        for o in out.drain(..) {
            if let Ok(Parsed::Row { row, .. }) = o {
                if chunk.contains(row.time) {
                    index.add(row, parser.dimensions());
                }
            }
        }
    }
    drop(out);
    let actual = alloc::current() - before;
    (index.estimated_bytes(), actual, index.num_rows())
}

fn wikipedia_spec(rollup: bool) -> serde_json::Value {
    let mut spec: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::data_path("specs/wikipedia-kafka-supervisor.json")).expect("spec"),
    )
    .expect("json");
    if rollup {
        spec["dataSchema"]["granularitySpec"]["rollup"] = true.into();
        spec["dataSchema"]["granularitySpec"]["queryGranularity"] = "hour".into();
        spec["dataSchema"]["metricsSpec"] = serde_json::json!([
            {"type": "count", "name": "count"},
            {"type": "longSum", "name": "sum_added", "fieldName": "added"},
            {"type": "stringLast", "name": "last_comment", "fieldName": "comment"},
            {"type": "HLLSketchBuild", "name": "users", "fieldName": "user"}
        ]);
        spec["dataSchema"]["parser"]["parseSpec"]["dimensionsSpec"]["dimensions"] =
            serde_json::json!(["channel", "namespace", "isRobot", "countryName"]);
    }
    spec
}

#[test]
fn estimate_tracks_real_allocation() {
    let lines = common::wikipedia_lines();
    for rollup in [false, true] {
        let (estimate, actual, rows) = measure(wikipedia_spec(rollup), &lines);
        let ratio = estimate as f64 / actual as f64;
        eprintln!(
            "rollup={rollup}: {rows} rows, estimate {estimate} bytes, allocated {actual} bytes, ratio {ratio:.2}"
        );
        assert!(rows > 1000);
        assert!((0.85..1.15).contains(&ratio), "rollup={rollup}: estimate {estimate} vs allocated {actual}");
    }
}
