//! groupBy: one row per time bucket and combination of dimension values, filtered by
//! `having`, then ordered and cut by `limitSpec` (by default rows come ordered by time and
//! dimension values).

use super::engine::{self, Aggregated};
use super::model::{DimensionOrder, GroupByQuery, Having};
use super::ordering::compare;
use super::{post_aggregate, QueryError, QuerySegment};
use serde_json::{json, Map, Value};
use sluice_format::filter::{Filter, RowFilter};
use sluice_format::granularity::Granularity;
use sluice_format::time::format_iso;
use sluice_format::value::Value as RowValue;
use std::cmp::Ordering;

/// Checks a groupBy query, then aggregates `segments` (its part of them): the query's partial.
pub fn aggregate(q: &GroupByQuery, segments: &[QuerySegment]) -> Result<Aggregated, QueryError> {
    check(q)?;
    engine::aggregate(&q.common, &q.dimensions, segments)
}

/// The result columns of a groupBy query, its `limitSpec` and `having` checked against them.
fn check(q: &GroupByQuery) -> Result<(Vec<String>, Option<CompiledHaving>), QueryError> {
    let c = &q.common;
    let names: Vec<String> = c.aggregations.iter().map(|a| a.name().to_string()).collect();
    post_aggregate::check(&c.post_aggregations, &names)?;
    let mut columns: Vec<String> = q.dimensions.iter().map(|d| d.output_name.clone()).collect();
    columns.extend(names);
    columns.extend(c.post_aggregations.iter().map(|p| p.name().to_string()));
    // As Druid: one name for two result columns would make rows and their order ambiguous.
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = columns.iter().find(|c| !seen.insert(c.as_str())) {
        return Err(QueryError::invalid("dimensions", format!("duplicate output name {dup:?}")));
    }
    if let Some(limit) = &q.limit_spec {
        if let Some(kind) = limit.kind.as_deref().filter(|k| *k != "default") {
            return Err(QueryError::invalid("limitSpec.type", format!("{kind:?}: expected \"default\"")));
        }
        for (i, col) in limit.columns.iter().enumerate() {
            if !columns.contains(&col.dimension) {
                return Err(QueryError::invalid(
                    format!("limitSpec.columns[{i}].dimension"),
                    format!("{:?} is not a dimension, aggregator or post-aggregator of the query", col.dimension),
                ));
            }
        }
    }
    let having = q.having.as_ref().map(|h| CompiledHaving::new(h, &columns)).transpose()?;
    Ok((columns, having))
}

/// The groupBy result from the query's merged partial.
pub fn finish(q: &GroupByQuery, agg: Aggregated) -> Result<Value, QueryError> {
    let c = &q.common;
    let (_, having) = check(q)?;
    let all_start = c.intervals.0.first().map(|i| i.start).unwrap_or(sluice_format::time::ETERNITY_START);
    let mut rows: Vec<(i64, Map<String, Value>)> = Vec::with_capacity(agg.groups.len());
    for slot in 0..agg.groups.len() {
        let mut event = Map::new();
        for (d, spec) in q.dimensions.iter().enumerate() {
            event.insert(spec.output_name.clone(), agg.groups.value(slot, d).json(spec.output_type));
        }
        event.extend(agg.row(slot));
        post_aggregate::apply(&c.post_aggregations, &mut event, &|n| agg.sketch(slot, n));
        if having.as_ref().is_some_and(|h| !h.holds(&event)) {
            continue;
        }
        let t = if c.granularity == Granularity::All { all_start } else { agg.groups.buckets[slot] };
        rows.push((t, event));
    }
    rows.sort_by(|(ta, a), (tb, b)| {
        ta.cmp(tb).then_with(|| {
            q.dimensions
                .iter()
                .map(|d| compare(&a[&d.output_name], &b[&d.output_name], DimensionOrder::Lexicographic))
                .find(|o| *o != Ordering::Equal)
                .unwrap_or(Ordering::Equal)
        })
    });
    if let Some(limit) = &q.limit_spec {
        if !limit.columns.is_empty() {
            rows.sort_by(|(_, a), (_, b)| {
                limit
                    .columns
                    .iter()
                    .map(|col| {
                        let o = compare(&a[&col.dimension], &b[&col.dimension], col.order);
                        if col.descending {
                            o.reverse()
                        } else {
                            o
                        }
                    })
                    .find(|o| *o != Ordering::Equal)
                    .unwrap_or(Ordering::Equal)
            });
        }
        rows.drain(..limit.offset.min(rows.len()));
        if let Some(n) = limit.limit {
            rows.truncate(n);
        }
    }
    Ok(Value::Array(
        rows.into_iter()
            .map(|(t, event)| json!({"version": "v1", "timestamp": format_iso(t), "event": event}))
            .collect(),
    ))
}

/// A `having` clause with its filters compiled over the result columns.
enum CompiledHaving {
    Compare(String, Ordering, f64),
    Filter(RowFilter),
    And(Vec<CompiledHaving>),
    Or(Vec<CompiledHaving>),
    Not(Box<CompiledHaving>),
}

impl CompiledHaving {
    fn new(h: &Having, columns: &[String]) -> Result<Self, QueryError> {
        let known = |name: &str| {
            if columns.iter().any(|c| c == name) {
                Ok(())
            } else {
                Err(QueryError::invalid("having", format!("{name:?} is not a column of the result")))
            }
        };
        let filter = |f: &Filter| {
            let mut resolve = |name: &str| columns.iter().position(|c| c == name).unwrap_or(usize::MAX);
            f.compile(&mut resolve)
                .map(CompiledHaving::Filter)
                .map_err(|e| QueryError::invalid("having.filter", e.to_string()))
        };
        Ok(match h {
            Having::GreaterThan { aggregation, value } => {
                known(aggregation)?;
                CompiledHaving::Compare(aggregation.clone(), Ordering::Greater, *value)
            }
            Having::LessThan { aggregation, value } => {
                known(aggregation)?;
                CompiledHaving::Compare(aggregation.clone(), Ordering::Less, *value)
            }
            Having::EqualTo { aggregation, value } => {
                known(aggregation)?;
                CompiledHaving::Compare(aggregation.clone(), Ordering::Equal, *value)
            }
            Having::DimSelector { dimension, value } => {
                known(dimension)?;
                filter(&Filter::Selector { dimension: dimension.clone(), value: value.clone(), extraction_fn: None })?
            }
            Having::Filter { filter: f } => filter(f)?,
            Having::And { having_specs } => {
                CompiledHaving::And(having_specs.iter().map(|h| Self::new(h, columns)).collect::<Result<_, _>>()?)
            }
            Having::Or { having_specs } => {
                CompiledHaving::Or(having_specs.iter().map(|h| Self::new(h, columns)).collect::<Result<_, _>>()?)
            }
            Having::Not { having_spec } => CompiledHaving::Not(Box::new(Self::new(having_spec, columns)?)),
        })
    }

    fn holds(&self, event: &Map<String, Value>) -> bool {
        match self {
            CompiledHaving::Compare(name, want, bound) => {
                event.get(name).and_then(Value::as_f64).is_some_and(|v| v.partial_cmp(bound) == Some(*want))
            }
            CompiledHaving::Filter(f) => {
                let row: Vec<RowValue> = event.values().map(|v| RowValue::from_json(v.clone())).collect();
                f.matches(&row, 0)
            }
            CompiledHaving::And(parts) => parts.iter().all(|p| p.holds(event)),
            CompiledHaving::Or(parts) => parts.iter().any(|p| p.holds(event)),
            CompiledHaving::Not(inner) => !inner.holds(event),
        }
    }
}
