//! Re-indexing for compaction: the rows of segments within one time chunk indexed again under a
//! compaction configuration's `queryGranularity`, `rollup`, `dimensionsSpec` and `metricsSpec`
//! (Druid's compaction task re-ingests its input segments the same way), then written as
//! segments of at most `maxRowsPerSegment` rows. Rows keep their aggregated metric states:
//! rolled up, equal rows combine them as the merge does. `metricsSpec` keeps or drops the
//! segments' own metrics; a new aggregation over them is refused, naming it.

use super::schema::{keeps_bitmaps, merged_dimension_order};
use super::{merge_into, MergeError, MergeOptions};
use crate::granularity::Granularity;
use crate::index::{IncrementalIndex, IndexConfig};
use crate::input::DimPlan;
use crate::row::DimValue;
use crate::segment::{ColumnType, Segment};
use crate::spec::{AggregatorSpec, Compression, DimensionSchema, DimensionType};
use crate::time::Interval;
use std::collections::BTreeMap;

/// What a re-index changes; `None` keeps what the segments have.
#[derive(Debug, Clone, Copy)]
pub struct Reindex<'a> {
    /// The time chunk of the output (the span of the chunks it is cut into, with `split`).
    pub interval: Interval,
    /// Cuts the output into chunks of this granularity (a coarser chunk compacted into finer
    /// ones).
    pub split: Option<Granularity>,
    /// Timestamp truncation.
    pub query_granularity: Option<Granularity>,
    /// Whether equal rows are combined.
    pub rollup: Option<bool>,
    /// The output's dimensions, in order (a dimension the segments lack is null).
    pub dimensions: Option<&'a [DimensionSchema]>,
    /// The output's metrics: some of the segments' own, by their spec.
    pub metrics: Option<&'a [AggregatorSpec]>,
    /// Most rows per output segment.
    pub max_rows_per_segment: u64,
    /// Compression of the output.
    pub compression: Compression,
}

/// Indexes the rows of `inputs` again as `how` says; returns the output segments' chunks and
/// bytes, in time order.
pub fn reindex(inputs: &[Segment], how: &Reindex) -> Result<Vec<(Interval, Vec<u8>)>, MergeError> {
    let first = inputs.first().ok_or(MergeError::Empty)?;
    let incompatible = |seg: &Segment, reason: String| MergeError::Incompatible { object: seg.object().into(), reason };
    let source = first.aggregators();
    for seg in inputs {
        let d = seg.directory();
        if d.interval.start < how.interval.start || d.interval.end > how.interval.end {
            return Err(incompatible(seg, format!("interval {} is not within {}", d.interval, how.interval)));
        }
        if seg.aggregators().iter().map(|a| &a.spec).ne(source.iter().map(|a| &a.spec)) {
            return Err(incompatible(seg, "metrics differ from the other inputs'".into()));
        }
    }
    let selected: Vec<usize> = match how.metrics {
        None => (0..source.len()).collect(),
        Some(specs) => specs
            .iter()
            .map(|spec| {
                source.iter().position(|a| a.spec == *spec).ok_or_else(|| {
                    incompatible(
                        first,
                        format!(
                            "metricsSpec {:?}: not one of the segments' metrics; a new aggregation over them is not built",
                            spec.name()
                        ),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
    };
    // Path columns are built again from their `json` columns' documents.
    let mut columns = merged_dimension_order(inputs)?;
    columns.retain(|(name, _, _)| !name.contains(crate::segment::NESTED_SEPARATOR));
    let plan: Vec<DimPlan> = match how.dimensions {
        None => columns
            .iter()
            .map(|(name, kind, mvh)| {
                let auto = inputs.iter().filter_map(|s| s.column(name)).any(|c| c.auto);
                // An `auto` column keeps its arrays' order, as discovery does.
                let (kind, mvh) = match auto {
                    true => (DimensionType::Auto, crate::spec::MultiValueHandling::Array),
                    false => (dimension_type(*kind), *mvh),
                };
                let mut plan = DimPlan::declared(name, kind, mvh);
                plan.bitmap_index =
                    matches!(kind, DimensionType::Json | DimensionType::Auto) || keeps_bitmaps(inputs, name);
                plan
            })
            .collect(),
        Some(dims) => {
            for d in dims {
                if let Some((_, kind, _)) = columns.iter().find(|(name, _, _)| *name == d.name) {
                    if dimension_type(*kind) != d.kind {
                        let reason = format!("dimensionsSpec {:?}: changing a dimension's type is not built", d.name);
                        return Err(incompatible(first, reason));
                    }
                }
            }
            dims.iter()
                .map(|d| {
                    let mut plan = DimPlan::declared(&d.name, d.kind, d.multi_value_handling);
                    plan.bitmap_index = d.create_bitmap_index != Some(false);
                    plan
                })
                .collect()
        }
    };
    let config = IndexConfig {
        aggregators: selected.iter().map(|&i| source[i].clone()).collect(),
        rollup: how.rollup.unwrap_or_else(|| inputs.iter().all(|s| s.directory().rollup)),
        query_granularity: how.query_granularity.unwrap_or(first.directory().query_granularity),
        segment_granularity: Granularity::All,
    };
    let mut indexes: BTreeMap<i64, IncrementalIndex> = BTreeMap::new();
    for seg in inputs {
        let stored: Vec<(&str, ColumnType)> = seg.directory().columns[1..]
            .iter()
            .filter(|c| c.kind != ColumnType::Metric)
            .map(|c| (c.name.as_str(), c.kind))
            .collect();
        let from: Vec<Option<usize>> = plan.iter().map(|p| stored.iter().position(|(n, _)| *n == p.name)).collect();
        for (time, values, cells) in seg.read_rows()? {
            let chunk = how.split.map_or(how.interval, |g| g.bucket(time));
            let index = indexes.entry(chunk.start).or_insert_with(|| IncrementalIndex::new(config.clone(), chunk));
            let dims: Vec<DimValue> = (from.iter().zip(&plan))
                .map(|(i, p)| match (i, p.kind) {
                    (None, _) => DimValue::Null,
                    (Some(i), DimensionType::Auto) => auto_text(values[*i].clone(), stored[*i].1),
                    (Some(i), _) => values[*i].clone(),
                })
                .collect();
            let states = selected.iter().map(|&i| cells[i].clone()).collect();
            index.add_states(time, dims, states, &plan);
        }
    }
    let options = MergeOptions { max_rows_per_segment: how.max_rows_per_segment, compression: how.compression };
    let mut out = Vec::new();
    for index in indexes.into_values() {
        let bytes = index.persist(how.compression)?;
        if index.num_rows() as u64 <= how.max_rows_per_segment {
            out.push((index.interval(), bytes));
            continue;
        }
        let whole = Segment::from_bytes(first.object(), bytes)?;
        out.extend(merge_into(&[whole], index.interval(), &options)?.into_iter().map(|b| (index.interval(), b)));
    }
    Ok(out)
}

/// A stored value of an `auto` column (of type `stored` in its segment) as the JSON text the
/// index keeps for `auto` dimensions.
fn auto_text(v: DimValue, stored: ColumnType) -> DimValue {
    use serde_json::Value as J;
    let text = match v {
        DimValue::Null => return DimValue::Null,
        DimValue::Str(s) if stored == ColumnType::Json => s,
        DimValue::Str(s) => J::String(s).to_string(),
        DimValue::Multi(items) => J::Array(items.into_iter().map(J::String).collect()).to_string(),
        DimValue::Long(x) => x.to_string(),
        DimValue::Double(x) => J::from(x).to_string(),
        DimValue::Float(x) => J::from(f64::from(x)).to_string(),
    };
    DimValue::Str(text)
}

/// The dimension type of a segment column.
fn dimension_type(kind: ColumnType) -> DimensionType {
    match kind {
        ColumnType::Long => DimensionType::Long,
        ColumnType::Float => DimensionType::Float,
        ColumnType::Double => DimensionType::Double,
        ColumnType::Json => DimensionType::Json,
        _ => DimensionType::String,
    }
}
