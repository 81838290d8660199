//! Merge: N hydrants or segments of one time chunk -> final segments. Dictionaries are merged
//! (sorted union), rows k-way merged in (time, dimensions) order with rollup where the inputs
//! were rolled up, bitmaps rebuilt by the writer, and the output split into shards of at most
//! `maxRowsPerSegment` rows.
//!
//! Two passes. The first computes the merged row order from `__time` alone, reading the
//! dimensions only where times tie (or to detect rollup groups): 8 bytes per row, never the
//! rows themselves. The second gathers each output column in that order from the inputs'
//! columns. Every input column is read forward, one block at a time.

mod gather;
mod order;
mod reindex;
mod schema;

pub use reindex::{reindex, Reindex};

use crate::aggregate::Aggregator;
use crate::segment::access::Columns;
use crate::segment::{ColumnType, DimLayout, FormatError, Segment, SegmentLayout, StoredDictionary};
use crate::spec::{Compression, DimensionType};
use crate::time::Interval;
use std::sync::Arc;

/// Why inputs could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// An input is corrupt.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// Inputs that cannot be merged together.
    #[error("cannot merge {object}: {reason}")]
    Incompatible {
        /// The input at fault.
        object: String,
        /// Why.
        reason: String,
    },
    /// No inputs.
    #[error("nothing to merge")]
    Empty,
}

/// Merge settings.
#[derive(Debug, Clone, Copy)]
pub struct MergeOptions {
    /// Most rows per output segment.
    pub max_rows_per_segment: u64,
    /// Compression of the output.
    pub compression: Compression,
}

/// Merges segments of one time chunk into one or more segments of at most
/// `max_rows_per_segment` rows each. Rows are rolled up when every input was.
pub fn merge(inputs: &[Segment], options: &MergeOptions) -> Result<Vec<Vec<u8>>, MergeError> {
    let first = inputs.first().ok_or(MergeError::Empty)?;
    let interval = first.directory().interval;
    if let Some(other) = inputs.iter().find(|s| s.directory().interval != interval) {
        return Err(MergeError::Incompatible {
            object: other.object().into(),
            reason: format!("interval {} differs from {}", other.directory().interval, interval),
        });
    }
    merge_into(inputs, interval, options)
}

/// Merges segments whose time chunks lie within `interval` (finer chunks compacted into a
/// coarser one) into segments of the chunk `interval`, as [`merge`] does.
pub fn merge_into(inputs: &[Segment], interval: Interval, options: &MergeOptions) -> Result<Vec<Vec<u8>>, MergeError> {
    let first = inputs.first().ok_or(MergeError::Empty)?;
    let aggregators: Vec<Aggregator> = first.aggregators();
    let rollup = inputs.iter().all(|s| s.directory().rollup);
    let query_granularity = first.directory().query_granularity;
    for seg in inputs {
        let d = seg.directory();
        let incompatible = |reason: String| MergeError::Incompatible { object: seg.object().into(), reason };
        if d.interval.start < interval.start || d.interval.end > interval.end {
            return Err(incompatible(format!("interval {} is not within {}", d.interval, interval)));
        }
        if seg.aggregators().iter().map(|a| &a.spec).ne(aggregators.iter().map(|a| &a.spec)) {
            return Err(incompatible("metrics differ from the other inputs'".into()));
        }
        if d.query_granularity != query_granularity {
            return Err(incompatible("query granularity differs from the other inputs'".into()));
        }
    }
    if schema::auto_types_differ(inputs) {
        let how = Reindex {
            interval,
            split: None,
            query_granularity: Some(query_granularity),
            rollup: Some(rollup),
            dimensions: None,
            metrics: None,
            max_rows_per_segment: options.max_rows_per_segment,
            compression: options.compression,
        };
        return Ok(reindex(inputs, &how)?.into_iter().map(|(_, bytes)| bytes).collect());
    }
    let order = schema::merged_dimension_order(inputs)?;
    let incomplete = schema::incomplete_columns(inputs);
    let dims: Vec<(String, ColumnType)> = order.iter().map(|(n, k, _)| (n.clone(), *k)).collect();

    // Dictionaries: sorted union, and each input's id -> merged code table.
    let mut remaps: Vec<Vec<Vec<u32>>> = vec![Vec::with_capacity(dims.len()); inputs.len()];
    let mut dictionaries = Vec::with_capacity(dims.len());
    for (name, kind) in &dims {
        if !kind.is_dictionary() {
            remaps.iter_mut().for_each(|r| r.push(Vec::new()));
            dictionaries.push(StoredDictionary::default());
            continue;
        }
        let locals: Vec<StoredDictionary> = inputs
            .iter()
            .map(|s| if s.column(name).is_some() { s.stored_dictionary(name) } else { Ok(Default::default()) })
            .collect::<Result<_, _>>()?;
        let (dictionary, tables) = schema::merge_dictionaries(&locals)
            .map_err(|e| MergeError::Incompatible { object: first.object().into(), reason: e.to_string() })?;
        dictionaries.push(dictionary);
        for (i, table) in tables.into_iter().enumerate() {
            remaps[i].push(table);
        }
    }
    let named = |seg: &Segment, e: FormatError| MergeError::Format(FormatError::new(seg.object(), e.reason));
    let open_all = || -> Result<Vec<Columns<'_>>, MergeError> {
        inputs
            .iter()
            .zip(&remaps)
            .map(|(s, r)| Columns::open(s, &dims, r, &aggregators).map_err(|e| named(s, e)))
            .collect()
    };

    let mut key_columns = open_all()?;
    let string_dims: Vec<bool> = dims.iter().map(|(_, k)| k.is_dictionary()).collect();
    let merged_order =
        order::merged_order(&mut key_columns, &string_dims, rollup).map_err(|(i, e)| named(&inputs[i], e))?;
    drop(key_columns);

    let layout = SegmentLayout {
        interval,
        dims: order
            .into_iter()
            .zip(dictionaries)
            .map(|((name, kind, multi_value_handling), dictionary)| DimLayout {
                bitmap_index: schema::keeps_bitmaps(inputs, &name),
                nested_path: inputs.iter().find_map(|s| s.column(&name)).and_then(|c| c.nested_path.clone()),
                incomplete: incomplete.contains(&name),
                auto: inputs.iter().filter_map(|s| s.column(&name)).any(|c| c.auto),
                name,
                kind: match kind {
                    ColumnType::Long => DimensionType::Long,
                    ColumnType::Float => DimensionType::Float,
                    ColumnType::Double => DimensionType::Double,
                    ColumnType::Json => DimensionType::Json,
                    _ => DimensionType::String,
                },
                multi_value_handling,
                dictionary: Arc::new(dictionary),
            })
            .collect(),
        metrics: aggregators.clone(),
        rollup,
        query_granularity,
    };
    let mut value_columns = open_all()?;
    gather::write_shards(&merged_order, &mut value_columns, &layout, &string_dims, options).map_err(|(i, e)| match i {
        Some(i) => named(&inputs[i], e),
        None => MergeError::Format(e),
    })
}
