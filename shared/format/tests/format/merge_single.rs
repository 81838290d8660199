//! A chunk with one hydrant: the merge of that hydrant alone is the hydrant's own bytes, so the
//! merger may publish the hydrant as the segment without merging (rollup on and off, both
//! compressions of the spec).

use crate::common::{data_path, index_records, wikipedia_lines};
use sluice_format::merge::{merge, merge_into, MergeOptions};
use sluice_format::segment::Segment;
use sluice_format::spec::{load_spec_value, DatasourceSpec};

/// Druid's Wikipedia tutorial spec, as shipped (rollup off) or rolled up by hour with metrics.
pub(crate) fn wikipedia(rollup: bool) -> DatasourceSpec {
    let text = std::fs::read_to_string(data_path("specs/wikipedia-kafka-supervisor.json")).expect("spec");
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("spec JSON");
    if rollup {
        let schema = &mut json["dataSchema"];
        schema["granularitySpec"]["rollup"] = true.into();
        schema["granularitySpec"]["queryGranularity"] = "hour".into();
        schema["metricsSpec"] = serde_json::json!([
            {"type": "count", "name": "edits"},
            {"type": "longSum", "name": "added", "fieldName": "added"},
            {"type": "doubleMax", "name": "maxDelta", "fieldName": "delta"}
        ]);
        let dims = schema["parser"]["parseSpec"]["dimensionsSpec"]["dimensions"].as_array_mut().expect("dimensions");
        dims.retain(|d| d.is_string());
    }
    load_spec_value(json).expect("spec loads").spec
}

#[test]
fn merging_one_hydrant_gives_back_its_bytes() {
    let lines = wikipedia_lines();
    for (name, rollup) in [("rollup off", false), ("rollup on", true)] {
        let spec = wikipedia(rollup);
        let (indexes, counts) = index_records(&spec, lines.iter().map(|l| l.as_bytes()));
        assert!(counts.rows > 0 && !indexes.is_empty(), "{name}: nothing indexed");
        for (chunk, index) in indexes {
            let bytes = index.persist(spec.tuning.index).expect("persist");
            let hydrant = Segment::from_bytes("hydrant", bytes.clone()).expect("open the hydrant");
            let options = MergeOptions { max_rows_per_segment: u64::MAX, compression: spec.tuning.index };
            let merged = merge(&[hydrant], &options).expect("merge");
            assert_eq!(merged.len(), 1, "{name} chunk {chunk}");
            assert!(merged[0] == bytes, "{name} chunk {chunk}: the merge of one hydrant differs from it");
        }
    }
}

/// Compaction to a coarser granularity: the hourly segments of the sample's day merged into
/// the day give the bytes the day's own index gives; a segment outside the day is refused.
#[test]
fn hourly_segments_merged_into_their_day_match_the_day_indexed_whole() {
    let lines = wikipedia_lines();
    let granular = |g: &str| {
        let mut spec = wikipedia(false);
        spec.granularity.segment_granularity = serde_json::from_value(g.into()).expect("granularity");
        spec
    };
    let (hourly, day) = (granular("hour"), granular("day"));
    let persist = |spec: &DatasourceSpec| -> Vec<Segment> {
        let (indexes, _) = index_records(spec, lines.iter().map(|l| l.as_bytes()));
        let bytes = indexes.into_values().map(|index| index.persist(spec.tuning.index).expect("persist"));
        bytes.map(|b| Segment::from_bytes("h", b).expect("open")).collect()
    };
    let segments = persist(&hourly);
    let days = persist(&day);
    assert!(segments.len() > days.len(), "{} hours, {} days", segments.len(), days.len());
    let options = MergeOptions { max_rows_per_segment: u64::MAX, compression: day.tuning.index };
    for whole in &days {
        let d = whole.directory().interval;
        let within: Vec<Segment> =
            segments.iter().filter(|h| d.contains(h.directory().interval.start)).cloned().collect();
        let compacted = merge_into(&within, d, &options).expect("merge into the day");
        assert_eq!(compacted.len(), 1);
        let expected = merge(std::slice::from_ref(whole), &options).expect("merge");
        assert!(compacted[0] == expected[0], "day {d}: the compacted hours differ from the day indexed whole");
    }
    let hour = segments[0].directory().interval;
    let err = merge_into(&segments, hour, &options).expect_err("inputs outside the chunk");
    assert!(err.to_string().contains("is not within"), "{err}");
}
