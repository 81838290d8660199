//! timeseries: one result per time bucket. Empty buckets inside the data's span are filled
//! with empty aggregates unless the context says `skipEmptyBuckets`; granularity `all` gives
//! one result stamped with the start of the data's span.

use super::engine::{self, Aggregated, MAX_CELLS};
use super::model::TimeseriesQuery;
use super::{post_aggregate, QueryError, QuerySegment};
use serde_json::{json, Value};
use sluice_format::granularity::Granularity;
use sluice_format::time::{format_iso, Interval};
use std::collections::BTreeMap;

/// Most buckets a timeseries fills.
const MAX_BUCKETS: usize = 1_000_000;

/// Checks a timeseries query, then aggregates `segments` (its part of them): the query's
/// partial.
pub fn aggregate(q: &TimeseriesQuery, segments: &[QuerySegment]) -> Result<Aggregated, QueryError> {
    let c = &q.common;
    post_aggregate::check(
        &c.post_aggregations,
        &c.aggregations.iter().map(|a| a.name().to_string()).collect::<Vec<_>>(),
    )?;
    engine::aggregate(c, &[], segments)
}

/// The timeseries result from the query's merged partial.
pub fn finish(q: &TimeseriesQuery, mut agg: Aggregated) -> Result<Value, QueryError> {
    let c = &q.common;
    if agg.spans.is_empty() {
        return Ok(json!([]));
    }
    let empty = agg.groups.len();
    for a in &mut agg.accumulators {
        a.grow(empty + 1);
    }
    let mut buckets: BTreeMap<i64, usize> = BTreeMap::new();
    if c.granularity == Granularity::All {
        let start = agg.all_bucket_start().unwrap_or(sluice_format::time::ETERNITY_START);
        buckets.insert(start, if agg.groups.is_empty() { empty } else { 0 });
    } else {
        for slot in 0..agg.groups.len() {
            buckets.insert(agg.groups.buckets[slot], slot);
        }
        if !q.skips_empty_buckets() && c.granularity != Granularity::None {
            // Over merged spans every step adds a bucket (but a span's first), and fails when
            // it does not advance: the work is bounded by the bucket limit, and the answer by
            // the values it may hold (buckets times aggregators).
            let width = (c.aggregations.len() + c.post_aggregations.len()).max(1);
            for span in merged(&agg.spans) {
                let mut b = c.granularity.floor(span.start);
                while b < span.end {
                    buckets.entry(b).or_insert(empty);
                    if buckets.len() > MAX_BUCKETS || buckets.len().saturating_mul(width) > MAX_CELLS {
                        return Err(QueryError::invalid(
                            "granularity",
                            format!(
                                "more than {MAX_BUCKETS} buckets or {MAX_CELLS} values (buckets times aggregators): \
                                 use a coarser granularity, fewer aggregators or skipEmptyBuckets"
                            ),
                        ));
                    }
                    let next = c.granularity.next(b);
                    if next <= b {
                        return Err(QueryError::invalid("granularity", format!("does not advance past {b} ms")));
                    }
                    b = next;
                }
            }
        }
    }
    let mut out: Vec<Value> = buckets
        .into_iter()
        .map(|(t, slot)| {
            let mut row = agg.row(slot);
            post_aggregate::apply(&c.post_aggregations, &mut row, &|n| agg.sketch(slot, n));
            json!({"timestamp": format_iso(t), "result": row})
        })
        .collect();
    if q.descending {
        out.reverse();
    }
    if let Some(limit) = q.limit {
        out.truncate(limit);
    }
    Ok(Value::Array(out))
}

/// `spans` sorted and with the overlapping ones joined.
fn merged(spans: &[Interval]) -> Vec<Interval> {
    let mut sorted = spans.to_vec();
    sorted.sort_by_key(|s| s.start);
    let mut out: Vec<Interval> = Vec::with_capacity(sorted.len());
    for span in sorted {
        match out.last_mut() {
            Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
            _ => out.push(span),
        }
    }
    out
}
