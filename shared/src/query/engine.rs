//! The aggregation path shared by timeseries, topN and groupBy: for every segment overlapping
//! the query intervals, the rows inside the intervals that pass the filter (a bitmap), mapped
//! to groups a batch at a time and folded into each aggregator's states.

use super::aggregator::Accumulator;
use super::bitmap_filter;
use super::columns::SegmentColumns;
use super::grouping::{Groups, SegmentGrouper};
use super::model::{Common, DimensionSpec};
use super::{QueryError, QuerySegment};
use crate::filter::Filter;
use crate::time::Interval;
use roaring::RoaringBitmap;

/// Rows per batch handed to the aggregators.
const BATCH: usize = 4096;

/// Groups and their aggregates.
pub struct Aggregated {
    /// The groups.
    pub groups: Groups,
    /// One accumulator per aggregator, in query order.
    pub accumulators: Vec<Accumulator>,
    /// Per segment with rows in the intervals: the data's time span clipped to each interval
    /// (Druid's cursor span: bucket filling and the `all` bucket's timestamp follow it).
    pub spans: Vec<Interval>,
}

/// The segments overlapping `intervals`.
pub fn overlapping<'a>(
    segments: &'a [QuerySegment],
    intervals: &'a [Interval],
) -> impl Iterator<Item = &'a QuerySegment> {
    segments.iter().filter(move |s| intervals.iter().any(|i| i.start < s.interval.end && s.interval.start < i.end))
}

/// The rows of a segment inside `intervals` and, with `spans`, each interval's clipped span.
pub fn rows_in(cols: &SegmentColumns<'_>, intervals: &[Interval], spans: Option<&mut Vec<Interval>>) -> RoaringBitmap {
    let mut rows = RoaringBitmap::new();
    let mut found = Vec::new();
    for i in intervals {
        let lo = cols.times.partition_point(|&t| t < i.start);
        let hi = cols.times.partition_point(|&t| t < i.end);
        if hi > lo {
            rows.insert_range(lo as u32..hi as u32);
            found.push(Interval::new(i.start.max(cols.times[lo]), i.end.min(cols.times[hi - 1] + 1)));
        }
    }
    if let Some(spans) = spans {
        spans.extend(found);
    }
    rows
}

/// The rows of a segment selected by `intervals` and `filter`.
pub fn select(
    cols: &mut SegmentColumns<'_>,
    intervals: &[Interval],
    filter: Option<&Filter>,
    spans: Option<&mut Vec<Interval>>,
) -> Result<RoaringBitmap, QueryError> {
    let mut rows = rows_in(cols, intervals, spans);
    if let (Some(f), false) = (filter, rows.is_empty()) {
        rows &= bitmap_filter::evaluate(f, cols)?.yes;
    }
    Ok(rows)
}

/// Aggregates the query's rows grouped by time bucket and `dims`.
pub fn aggregate(common: &Common, dims: &[DimensionSpec], segments: &[QuerySegment]) -> Result<Aggregated, QueryError> {
    let mut accumulators = common
        .aggregations
        .iter()
        .enumerate()
        .map(|(i, a)| Accumulator::new(a, &format!("aggregations[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let mut groups = Groups::new(dims.len());
    let mut spans = Vec::new();
    let intervals = &common.intervals.0;
    for seg in overlapping(segments, intervals) {
        let mut cols = SegmentColumns::open(&seg.segment, &common.virtual_columns)?;
        let rows = select(&mut cols, intervals, common.filter.as_ref(), Some(&mut spans))?;
        if rows.is_empty() {
            continue;
        }
        let mut grouper = SegmentGrouper::new(&mut cols, common.granularity, dims)?;
        let mut inputs = Vec::with_capacity(accumulators.len());
        for acc in &accumulators {
            let column = acc.input.as_deref().map(|n| cols.column(n)).transpose()?;
            let only = acc.filter.as_ref().map(|f| bitmap_filter::evaluate(f, &mut cols)).transpose()?.map(|m| m.yes);
            inputs.push((column, only));
        }
        let (mut batch, mut pair_rows, mut pair_slots) = (Vec::with_capacity(BATCH), Vec::new(), Vec::new());
        let (mut sub_rows, mut sub_slots) = (Vec::new(), Vec::new());
        let mut iter = rows.iter().peekable();
        while iter.peek().is_some() {
            batch.clear();
            batch.extend(iter.by_ref().take(BATCH));
            pair_rows.clear();
            pair_slots.clear();
            grouper.assign(&batch, &cols.times, &mut groups, &mut pair_rows, &mut pair_slots);
            for (acc, (column, only)) in accumulators.iter_mut().zip(&inputs) {
                acc.grow(groups.len());
                match only {
                    None => acc.update(column.as_deref(), &pair_rows, &pair_slots, &cols.times),
                    Some(bitmap) => {
                        sub_rows.clear();
                        sub_slots.clear();
                        for (&r, &s) in pair_rows.iter().zip(&pair_slots) {
                            if bitmap.contains(r) {
                                sub_rows.push(r);
                                sub_slots.push(s);
                            }
                        }
                        acc.update(column.as_deref(), &sub_rows, &sub_slots, &cols.times);
                    }
                }
            }
        }
    }
    for acc in &mut accumulators {
        acc.grow(groups.len());
    }
    Ok(Aggregated { groups, accumulators, spans })
}

impl Aggregated {
    /// The finalized aggregates of group `slot`, in query order, keyed by name.
    pub fn row(&self, slot: usize) -> serde_json::Map<String, serde_json::Value> {
        self.accumulators.iter().map(|a| (a.name.clone(), a.value(slot))).collect()
    }

    /// The timestamp Druid gives the `all` bucket: the earliest clipped span start.
    pub fn all_bucket_start(&self) -> Option<i64> {
        self.spans.iter().map(|s| s.start).min()
    }
}
