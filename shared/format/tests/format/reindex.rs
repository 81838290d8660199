//! Re-indexing for compaction, on Druid's Wikipedia sample rolled up by hour: rolled up again by
//! day on fewer dimensions, every metric's total (and maximum) per remaining dimension value is
//! what the source rows give; split by `maxRowsPerSegment`; what is not built is refused by
//! name.

use crate::common::{index_records, wikipedia_lines};
use sluice_format::aggregate::MetricCell;
use sluice_format::granularity::Granularity;
use sluice_format::merge::{reindex, Reindex};
use sluice_format::row::DimValue;
use sluice_format::segment::Segment;
use sluice_format::spec::{DatasourceSpec, DimensionSchema};
use std::collections::BTreeMap;

/// The sample's main day rolled up by hour with a count, a sum and a max.
fn hourly_day() -> (DatasourceSpec, Segment) {
    let spec = crate::merge_single::wikipedia(true);
    let lines = wikipedia_lines();
    let (indexes, _) = index_records(&spec, lines.iter().map(|l| l.as_bytes()));
    let day = indexes.into_values().max_by_key(|i| i.num_rows()).expect("the main day");
    let segment = Segment::from_bytes("day", day.persist(spec.tuning.index).expect("persist")).expect("open");
    (spec, segment)
}

/// Per value of `dim`: (edits, added, maxDelta) over the rows of `segments`.
fn totals(segments: &[Segment], dim: &str) -> BTreeMap<String, (i64, i64, i64)> {
    let mut out: BTreeMap<String, (i64, i64, i64)> = BTreeMap::new();
    for s in segments {
        let i = s.directory().columns[1..]
            .iter()
            .filter(|c| c.kind != sluice_format::segment::ColumnType::Metric)
            .position(|c| c.name == dim)
            .expect("the dimension");
        for (_, dims, cells) in s.read_rows().expect("rows") {
            let key = match &dims[i] {
                DimValue::Str(v) => v.clone(),
                other => format!("{other:?}"),
            };
            let e = out.entry(key).or_insert((0, 0, i64::MIN));
            if let (MetricCell::Long(Some(n)), MetricCell::Long(Some(a)), MetricCell::Double(Some(m))) =
                (&cells[0], &cells[1], &cells[2])
            {
                e.0 += n;
                e.1 += a;
                e.2 = e.2.max(*m as i64);
            }
        }
    }
    out
}

fn by_day<'a>(segment: &Segment, spec: &DatasourceSpec, dims: Option<&'a [DimensionSchema]>) -> Reindex<'a> {
    Reindex {
        interval: segment.directory().interval,
        split: None,
        query_granularity: Some(Granularity::from_name("day").expect("day")),
        rollup: Some(true),
        dimensions: dims,
        metrics: None,
        max_rows_per_segment: u64::MAX,
        compression: spec.tuning.index,
    }
}

#[test]
fn rolled_up_by_day_on_one_dimension_every_total_is_kept() {
    let (spec, hourly) = hourly_day();
    let channel: Vec<DimensionSchema> =
        serde_json::from_value(serde_json::json!([{"name": "channel"}])).expect("dimensions");
    let out = reindex(std::slice::from_ref(&hourly), &by_day(&hourly, &spec, Some(&channel))).expect("reindex");
    let daily: Vec<Segment> = out.into_iter().map(|(_, b)| Segment::from_bytes("daily", b).expect("open")).collect();
    let expected = totals(std::slice::from_ref(&hourly), "channel");
    assert_eq!(totals(&daily, "channel"), expected, "every channel's totals");
    let rows: usize = daily.iter().map(Segment::num_rows).sum();
    assert_eq!(rows, expected.len(), "one row per channel for the day");
    assert!(daily.iter().all(|s| s.directory().columns.iter().all(|c| c.name != "page")), "page dropped");

    // Split by maxRowsPerSegment, the same rows.
    let small = Reindex { max_rows_per_segment: 10, ..by_day(&hourly, &spec, Some(&channel)) };
    let parts = reindex(std::slice::from_ref(&hourly), &small).expect("reindex");
    assert_eq!(parts.len(), expected.len().div_ceil(10));
    let parts: Vec<Segment> = parts.into_iter().map(|(_, b)| Segment::from_bytes("part", b).expect("open")).collect();
    assert_eq!(totals(&parts, "channel"), expected);
}

#[test]
fn a_day_split_into_hours_keeps_every_row_in_its_hour() {
    let (spec, hourly) = hourly_day();
    let hour = Granularity::from_name("hour").expect("hour");
    let how = Reindex { split: Some(hour), query_granularity: None, rollup: None, ..by_day(&hourly, &spec, None) };
    let out = reindex(std::slice::from_ref(&hourly), &how).expect("reindex");
    let hours: Vec<(sluice_format::time::Interval, Segment)> =
        out.into_iter().map(|(i, b)| (i, Segment::from_bytes("hour", b).expect("open"))).collect();
    assert!(hours.len() > 1 && hours.windows(2).all(|w| w[0].0.end <= w[1].0.start), "hours in order");
    for (interval, segment) in &hours {
        assert_eq!((segment.directory().interval, hour.bucket(interval.start)), (*interval, *interval));
        let rows = segment.read_rows().expect("rows");
        assert!(rows.iter().all(|(t, _, _)| interval.contains(*t)), "{interval}: every row in its hour");
    }
    let segments: Vec<Segment> = hours.into_iter().map(|(_, s)| s).collect();
    assert_eq!(segments.iter().map(Segment::num_rows).sum::<usize>(), hourly.num_rows(), "the same rows");
    assert_eq!(totals(&segments, "page"), totals(std::slice::from_ref(&hourly), "page"));
}

#[test]
fn what_is_not_built_is_refused_by_name() {
    let (spec, hourly) = hourly_day();
    let new_sum: Vec<sluice_format::spec::AggregatorSpec> =
        serde_json::from_value(serde_json::json!([{"type": "longSum", "name": "edits", "fieldName": "edits"}]))
            .expect("metrics");
    let how = Reindex { metrics: Some(&new_sum), ..by_day(&hourly, &spec, None) };
    let err = reindex(std::slice::from_ref(&hourly), &how).expect_err("a new aggregation");
    assert!(err.to_string().contains("metricsSpec \"edits\""), "{err}");
    let long_channel: Vec<DimensionSchema> =
        serde_json::from_value(serde_json::json!([{"name": "channel", "type": "long"}])).expect("dimensions");
    let err = reindex(std::slice::from_ref(&hourly), &by_day(&hourly, &spec, Some(&long_channel)))
        .expect_err("a type change");
    assert!(err.to_string().contains("dimensionsSpec \"channel\""), "{err}");
}
