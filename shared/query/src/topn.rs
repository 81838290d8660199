//! topN: per time bucket, the dimension's values ranked by a metric (or by the value itself),
//! cut at the threshold. Ranking is exact: every value's aggregate is complete before the cut.

use super::engine::{self, Aggregated};
use super::model::{DimensionOrder, TopNMetric, TopNQuery};
use super::ordering::compare;
use super::{post_aggregate, QueryError, QuerySegment};
use serde_json::{json, Map, Value};
use sluice_format::granularity::Granularity;
use sluice_format::time::format_iso;
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// Checks a topN query, then aggregates `segments` (its part of them): the query's partial.
pub fn aggregate(q: &TopNQuery, segments: &[QuerySegment]) -> Result<Aggregated, QueryError> {
    let c = &q.common;
    let names: Vec<String> = c.aggregations.iter().map(|a| a.name().to_string()).collect();
    post_aggregate::check(&c.post_aggregations, &names)?;
    check_metric(&q.metric, &names, c)?;
    engine::aggregate(c, std::slice::from_ref(&q.dimension), segments)
}

/// The topN result from the query's merged partial.
pub fn finish(q: &TopNQuery, agg: Aggregated) -> Result<Value, QueryError> {
    let c = &q.common;
    let dim = &q.dimension;
    let mut slots_by_bucket: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for slot in 0..agg.groups.len() {
        slots_by_bucket.entry(agg.groups.buckets[slot]).or_default().push(slot);
    }
    // Ranked by an aggregator: rank on its values, then build only the rows kept.
    let by_aggregator = match &q.metric {
        TopNMetric::Numeric(m) => agg.accumulators.iter().position(|a| &a.name == m).map(|k| (k, false)),
        TopNMetric::Inverted(inner) => match inner.as_ref() {
            TopNMetric::Numeric(m) => agg.accumulators.iter().position(|a| &a.name == m).map(|k| (k, true)),
            _ => None,
        },
        TopNMetric::Dimension { .. } => None,
    };
    if let Some((k, inverted)) = by_aggregator {
        for slots in slots_by_bucket.values_mut() {
            let acc = &agg.accumulators[k];
            let tie = |a: usize, b: usize| {
                let (x, y) = (agg.groups.value(a, 0), agg.groups.value(b, 0));
                compare(&x.json(dim.output_type), &y.json(dim.output_type), DimensionOrder::Lexicographic)
            };
            let by_value = |a: &usize, b: &usize| {
                let (x, y) = (acc.number(*a), acc.number(*b));
                // Nulls rank below every number.
                let o = match (x, y) {
                    (Some(x), Some(y)) => x.total_cmp(&y),
                    (x, y) => x.is_some().cmp(&y.is_some()),
                };
                if inverted {
                    o
                } else {
                    o.reverse()
                }
            };
            let cut = q.threshold.min(slots.len());
            if cut < slots.len() {
                slots.select_nth_unstable_by(cut.saturating_sub(1), |a, b| by_value(a, b).then_with(|| tie(*a, *b)));
                slots.truncate(cut);
            }
            slots.sort_by(|a, b| by_value(a, b).then_with(|| tie(*a, *b)));
        }
    }
    let mut by_bucket: BTreeMap<i64, Vec<Map<String, Value>>> = BTreeMap::new();
    for (bucket, slots) in &slots_by_bucket {
        for &slot in slots {
            let mut row = agg.row(slot);
            post_aggregate::apply(&c.post_aggregations, &mut row, &|n| agg.sketch(slot, n));
            row.insert(dim.output_name.clone(), agg.groups.value(slot, 0).json(dim.output_type));
            by_bucket.entry(*bucket).or_default().push(row);
        }
    }
    let mut out = Vec::with_capacity(by_bucket.len());
    for (bucket, mut rows) in by_bucket {
        if let TopNMetric::Dimension { previous_stop: Some(stop), ordering } = &q.metric {
            let stop = Value::String(stop.clone());
            rows.retain(|r| compare(&r[&dim.output_name], &stop, *ordering) == Ordering::Greater);
        }
        rows.sort_by(|a, b| rank(&q.metric, &dim.output_name, a, b));
        rows.truncate(q.threshold);
        let t = if c.granularity == Granularity::All { agg.all_bucket_start().unwrap_or(bucket) } else { bucket };
        out.push(json!({"timestamp": format_iso(t), "result": rows}));
    }
    Ok(Value::Array(out))
}

fn check_metric(metric: &TopNMetric, names: &[String], c: &super::model::Common) -> Result<(), QueryError> {
    match metric {
        TopNMetric::Numeric(m) => {
            if !names.contains(m) && !c.post_aggregations.iter().any(|p| p.name() == m) {
                return Err(QueryError::invalid(
                    "metric",
                    format!("{m:?} is not an aggregator or post-aggregator of the query"),
                ));
            }
            Ok(())
        }
        TopNMetric::Inverted(inner) => check_metric(inner, names, c),
        TopNMetric::Dimension { .. } => Ok(()),
    }
}

fn rank(metric: &TopNMetric, dim: &str, a: &Map<String, Value>, b: &Map<String, Value>) -> Ordering {
    let by_dim =
        |a: &Map<String, Value>, b: &Map<String, Value>| compare(&a[dim], &b[dim], DimensionOrder::Lexicographic);
    match metric {
        // Largest first; ties by dimension value so results are deterministic.
        TopNMetric::Numeric(m) => compare(&b[m], &a[m], DimensionOrder::Lexicographic).then_with(|| by_dim(a, b)),
        TopNMetric::Dimension { ordering, .. } => compare(&a[dim], &b[dim], *ordering),
        TopNMetric::Inverted(inner) => match inner.as_ref() {
            TopNMetric::Numeric(m) => compare(&a[m], &b[m], DimensionOrder::Lexicographic).then_with(|| by_dim(a, b)),
            other => rank(other, dim, b, a),
        },
    }
}
