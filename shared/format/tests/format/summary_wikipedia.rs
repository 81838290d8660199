//! Segment summaries of the Wikipedia sample's day in hourly segments: what they cost in
//! bytes, and how many segments a selective filter on a high-cardinality dimension skips.
//! `cargo test -p sluice-format --test format summary -- --nocapture` prints the numbers.

use crate::common::{index_records, wikipedia_lines};
use crate::merge_single::wikipedia;
use sluice_format::filter::Filter;
use sluice_format::segment::Segment;
use sluice_format::summary::{may_match, SegmentSummary, SummaryLimits};
use std::collections::BTreeSet;

/// The sample's segments at `granularity` (each chunk's index persisted: what a task whose
/// chunk held one hydrant publishes).
fn segments(granularity: &str) -> Vec<Segment> {
    let lines = wikipedia_lines();
    let mut spec = wikipedia(false);
    spec.granularity.segment_granularity = serde_json::from_value(granularity.into()).expect("granularity");
    let (indexes, _) = index_records(&spec, lines.iter().map(|l| l.as_bytes()));
    let bytes = indexes.into_values().map(|index| index.persist(spec.tuning.index).expect("persist"));
    bytes.enumerate().map(|(i, b)| Segment::from_bytes(&format!("{granularity}-{i}"), b).expect("open")).collect()
}

fn summary(segment: &Segment, limits: &SummaryLimits) -> SegmentSummary {
    SegmentSummary::of(segment, limits).expect("summary").expect("fits the limits")
}

/// The default limits, and a budget of 2 KiB per dimension (printed, not checked).
fn limits() -> [(SummaryLimits, bool); 2] {
    let default = SummaryLimits::default();
    [(default, true), (SummaryLimits { max_dimension_bytes: 2048, ..default }, false)]
}

#[test]
fn summaries_stay_small() {
    for granularity in ["hour", "day"] {
        let segments = segments(granularity);
        for (limits, checked) in limits() {
            let summaries: Vec<SegmentSummary> = segments.iter().map(|s| summary(s, &limits)).collect();
            let largest = summaries.iter().max_by_key(|s| s.json_bytes()).expect("a segment");
            let min = summaries.iter().map(SegmentSummary::json_bytes).min().unwrap_or(0);
            let columns: Vec<String> = largest
                .columns
                .iter()
                .map(|(name, c)| format!("{name} {}", serde_json::to_vec(c).map_or(0, |b| b.len())))
                .collect();
            println!(
                "{granularity}, {} bytes per dimension: {} segments, summaries of {min} to {} bytes as JSON; \
                 the largest ({} rows) by column: {}",
                limits.max_dimension_bytes,
                segments.len(),
                largest.json_bytes(),
                largest.num_rows,
                columns.join(", ")
            );
            if checked {
                assert!(largest.json_bytes() <= limits.max_summary_bytes, "{granularity}: {}", largest.json_bytes());
            }
        }
    }
}

#[test]
fn a_selector_on_a_high_cardinality_dimension_skips_the_hours_without_its_value() {
    let hours: Vec<Segment> = segments("hour").into_iter().filter(|s| s.num_rows() > 100).collect();
    for (limits, checked) in limits() {
        let summaries: Vec<SegmentSummary> = hours.iter().map(|s| summary(s, &limits)).collect();
        for (dimension, least_skipped) in [("page", 0.6), ("user", 0.9), ("comment", 0.8)] {
            let held: Vec<BTreeSet<String>> =
                hours.iter().map(|s| s.dictionary(dimension).expect("dictionary").into_iter().collect()).collect();
            let all: BTreeSet<&String> = held.iter().flatten().collect();
            let (mut without, mut skipped, mut read) = (0usize, 0usize, 0usize);
            for value in all.iter().step_by(37) {
                let f = Filter::Selector {
                    dimension: dimension.into(),
                    value: Some(value.to_string()),
                    extraction_fn: None,
                };
                for (summary, values) in summaries.iter().zip(&held) {
                    let may = may_match(&f, summary);
                    read += usize::from(may);
                    if values.contains(*value) {
                        assert!(may, "{dimension} = {value:?} is held but the segment is skipped");
                    } else {
                        without += 1;
                        skipped += usize::from(!may);
                    }
                }
            }
            let probes = all.len().div_ceil(37);
            let fraction_skipped = skipped as f64 / without as f64;
            let fraction_read = read as f64 / (probes * hours.len()) as f64;
            println!(
                "{dimension} = one value ({probes} values, {} hourly segments, {} bytes per dimension): {:.1}% of the \
             segments without it skipped, {:.1}% of the segments read",
                hours.len(),
                limits.max_dimension_bytes,
                100.0 * fraction_skipped,
                100.0 * fraction_read
            );
            if checked {
                assert!(
                    fraction_skipped >= least_skipped,
                    "{dimension}: {fraction_skipped:.3} of the segments skipped"
                );
            }
        }
    }
}
