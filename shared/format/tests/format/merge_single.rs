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

/// `createBitmapIndex: false`: the dimension's parts carry no bitmaps through persist, a merge
/// of such hydrants and the merge-of-one shortcut; merged with a segment that has them, the
/// bitmaps are rebuilt; the rows are the same either way.
#[test]
fn dimensions_without_bitmaps_stay_without_through_merges() {
    let lines: Vec<String> = wikipedia_lines().into_iter().take(4_000).collect();
    let with = wikipedia(false);
    let mut without = with.clone();
    for d in without.dimensions.iter_mut().filter(|d| d.name == "page" || d.name == "user") {
        d.create_bitmap_index = Some(false);
    }
    let hydrants = |spec: &DatasourceSpec| -> Vec<Segment> {
        let (indexes, _) = index_records(spec, lines.iter().map(|l| l.as_bytes()));
        let (_, index) = indexes.into_iter().max_by_key(|(_, i)| i.num_rows()).expect("a chunk");
        vec![Segment::from_bytes("h", index.persist(spec.tuning.index).expect("persist")).expect("open")]
    };
    let options = MergeOptions { max_rows_per_segment: u64::MAX, compression: with.tuning.index };
    let (a, b) = (hydrants(&with), hydrants(&without));
    let parts = |seg: &Segment, name: &str| seg.column(name).expect("column").parts.contains_key("bitmaps");
    assert!(parts(&a[0], "page") && !parts(&b[0], "page") && !parts(&b[0], "user") && parts(&b[0], "channel"));
    let merged = Segment::from_bytes("m", merge(&b, &options).expect("merge").remove(0)).expect("open");
    assert!(!parts(&merged, "page") && parts(&merged, "channel"), "a merge keeps the choice");
    crate::common::check_bitmaps(&merged);
    let mixed = Segment::from_bytes("x", merge(&[a[0].clone(), b[0].clone()], &options).expect("merge").remove(0))
        .expect("open");
    assert!(parts(&mixed, "page"), "an input with bitmaps brings them back");
    crate::common::check_bitmaps(&mixed);
    assert_eq!(crate::common::comparable(&a[0]), crate::common::comparable(&b[0]), "the same rows");
    let smaller = |s: &Segment| s.size();
    assert!(smaller(&b[0]) < smaller(&a[0]), "{} < {}", b[0].size(), a[0].size());
}
