//! search: the values of string dimensions that pass a search query spec (`contains`,
//! `insensitive_contains`, `fragment`, `regex`), with the number of rows holding each, per
//! time bucket; sorted (`lexicographic` by default, or `strlen`, `alphanumeric`, `numeric`)
//! and cut at `limit` (1,000 by default) per bucket, as Druid's search query answers.

use super::columns::Column;
use super::engine::{overlapping, select};
use super::model::{DimensionSpec, SearchQuery};
use super::{QueryError, QuerySegment};
use serde_json::{json, Value};
use sluice_format::granularity::Granularity;
use sluice_format::segment::ColumnType;
use sluice_format::value::Value as Cell;
use std::collections::BTreeMap;

/// Druid's default `limit` of a search.
const DEFAULT_LIMIT: usize = 1_000;
/// Most values a search counts before its limit applies.
pub const MAX_SEARCH_VALUES: usize = 1_000_000;

/// Runs a search query.
pub fn run(q: &SearchQuery, segments: &[QuerySegment]) -> Result<Value, QueryError> {
    let search = q.query.compile().map_err(|e| QueryError::invalid("query", e.to_string()))?;
    let intervals = &q.intervals.0;
    // (bucket, dimension's output name, value) -> rows.
    let mut counts: BTreeMap<(i64, String, String), u64> = BTreeMap::new();
    let mut spans = Vec::new();
    for seg in overlapping(segments, intervals) {
        let mut cols = super::columns::SegmentColumns::open(&seg.segment, &q.virtual_columns)?;
        let rows = select(&mut cols, intervals, q.filter.as_ref(), Some(&mut spans))?;
        if rows.is_empty() {
            continue;
        }
        let times = cols.times()?;
        let dims: Vec<DimensionSpec> = match &q.search_dimensions {
            Some(d) => d.clone(),
            None => (seg.segment.directory().columns.iter())
                .filter(|c| c.kind == ColumnType::String && !c.is_path())
                .map(|c| DimensionSpec {
                    dimension: c.name.clone(),
                    output_name: c.name.clone(),
                    output_type: super::model::OutputType::String,
                    lookup: None,
                    extraction: None,
                })
                .collect(),
        };
        for d in &dims {
            let column = cols.column(&d.dimension)?;
            let bucket =
                |r: u32| if q.granularity == Granularity::All { 0 } else { q.granularity.floor(times[r as usize]) };
            // Counts a value; false once more than the most values are held.
            let mut count = |b: i64, value: &str| {
                *counts.entry((b, d.output_name.clone(), value.to_string())).or_insert(0) += 1;
                counts.len() <= MAX_SEARCH_VALUES
            };
            match &*column {
                Column::String(s) => {
                    let matched: Vec<bool> = (0..=s.dictionary.len() as u32)
                        .map(|id| s.dictionary.get(id).is_some_and(|v| search.matches(v)))
                        .collect();
                    for r in rows.rows() {
                        for &id in s.row_ids(r as usize) {
                            let hit = matched.get(id as usize).copied().unwrap_or(false);
                            if hit && !count(bucket(r), s.dictionary.get(id).unwrap_or_default()) {
                                return Err(too_many());
                            }
                        }
                    }
                }
                other => {
                    for r in rows.rows() {
                        let values = match other.value(r as usize, &times) {
                            Cell::Array(items) => items,
                            v => vec![v],
                        };
                        for text in values.iter().filter_map(Cell::as_str) {
                            if search.matches(&text) && !count(bucket(r), &text) {
                                return Err(too_many());
                            }
                        }
                    }
                }
            }
        }
    }
    let all_start = spans.iter().map(|s| s.start).min().unwrap_or(0);
    let order = q.sort.unwrap_or_default();
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    let mut by_bucket: BTreeMap<i64, Vec<(String, String, u64)>> = BTreeMap::new();
    for ((b, dim, value), n) in counts {
        by_bucket.entry(b).or_default().push((dim, value, n));
    }
    let answer: Vec<Value> = by_bucket
        .into_iter()
        .map(|(b, mut hits)| {
            hits.sort_by(|a, b| {
                let (x, y) = (Value::String(a.1.clone()), Value::String(b.1.clone()));
                super::ordering::compare(&x, &y, order).then_with(|| a.0.cmp(&b.0))
            });
            hits.truncate(limit);
            let t = if q.granularity == Granularity::All { all_start } else { b };
            let result: Vec<Value> =
                hits.into_iter().map(|(d, v, n)| json!({"dimension": d, "value": v, "count": n})).collect();
            json!({"timestamp": sluice_format::time::format_iso(t), "result": result})
        })
        .collect();
    Ok(Value::Array(answer))
}

fn too_many() -> QueryError {
    QueryError::invalid(
        "query",
        format!("more than {MAX_SEARCH_VALUES} values match: narrow the search or its intervals"),
    )
}
