//! Building a summary: from an opened segment ([`SegmentSummary::of`]), or column by column
//! from what a writer has at hand when it finishes a segment (a string dimension's sorted
//! values in use and whether a row is null; a numeric dimension's values), then bounded as a
//! whole ([`SegmentSummary::from_columns`]).

use super::{BloomFilter, ColumnSummary, DoubleSummary, LongSummary, NumberSpan, SegmentSummary, StringSummary};
use super::{BLOCK_BYTES, SUMMARY_VERSION};
use crate::segment::parts::{BytesBlock, NumericPart, KIND_DOUBLES, KIND_FLOATS, KIND_LONGS};
use crate::segment::{ColumnEntry, ColumnType, FormatError, Segment};
use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How large a summary may grow. A summary travels in its segment's record (a DynamoDB item of
/// at most 400 KB, read whenever a query lists the segments it covers), so the defaults keep
/// it to a few kilobytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SummaryLimits {
    /// Most distinct values a string dimension lists; above it, a filter holds them
    /// (default 64).
    pub max_values: usize,
    /// Most bytes of one dimension's listed values (as JSON) or of its filter (as stored,
    /// before base64); a dimension over it keeps its range only (default 1024).
    pub max_dimension_bytes: usize,
    /// Most bytes of the whole summary as JSON: dimensions lose their values or filters,
    /// largest first, then their ranges, until it fits; a segment whose column names alone do
    /// not fit has no summary (default 16384).
    pub max_summary_bytes: usize,
    /// Most bytes of a stored smallest or largest string, cut on a character boundary
    /// (default 64).
    pub max_bound_bytes: usize,
    /// Filter bits per value aimed at: 10 gives about 1.3% false positives (default 10).
    pub filter_bits_per_value: usize,
    /// Fewest filter bits per value a filter cut to its budget may keep: 4 gives about 33%
    /// false positives, 6 about 10% (default 4).
    pub min_filter_bits_per_value: usize,
}

impl Default for SummaryLimits {
    fn default() -> Self {
        Self {
            max_values: 64,
            max_dimension_bytes: 1024,
            max_summary_bytes: 16 * 1024,
            max_bound_bytes: 64,
            filter_bits_per_value: 10,
            min_filter_bits_per_value: 4,
        }
    }
}

/// The longest prefix of `s` of at most `max` bytes ending on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl ColumnSummary {
    /// Summarizes a string dimension from its distinct non-null values, ascending in UTF-8
    /// byte order (a segment dictionary's order), and whether some row is null.
    pub fn of_strings<'a, I>(values: I, nulls: bool, limits: &SummaryLimits) -> Self
    where
        I: IntoIterator<Item = &'a str>,
        I::IntoIter: ExactSizeIterator + Clone,
    {
        let values = values.into_iter();
        let n = values.len();
        let mut out = StringSummary { nulls, ..StringSummary::default() };
        let (Some(first), Some(last)) = (values.clone().next(), values.clone().last()) else {
            return ColumnSummary::String(out);
        };
        debug_assert!(first <= last, "string values must ascend");
        out.min = Some(cut(first, limits.max_bound_bytes).to_string());
        let max = cut(last, limits.max_bound_bytes);
        out.max_cut = max.len() < last.len();
        out.max = Some(max.to_string());
        out.numbers = NumberSpan::of(values.clone().filter_map(|v| v.trim().parse::<f64>().ok()));
        let raw_bytes: usize = values.clone().map(str::len).sum();
        if n <= limits.max_values && raw_bytes + 3 * n < limits.max_dimension_bytes {
            let listed: Vec<String> = values.clone().map(String::from).collect();
            if serde_json::to_vec(&listed).is_ok_and(|json| json.len() <= limits.max_dimension_bytes) {
                out.values = Some(listed);
                return ColumnSummary::String(out);
            }
        }
        let wanted = (n * limits.filter_bits_per_value).div_ceil(8 * BLOCK_BYTES);
        let blocks = wanted.max(1).min(limits.max_dimension_bytes / BLOCK_BYTES);
        if blocks > 0 && blocks * BLOCK_BYTES * 8 >= n * limits.min_filter_bits_per_value.max(1) {
            let mut bloom = BloomFilter::with_blocks(blocks);
            values.for_each(|v| bloom.insert(v));
            out.bloom = Some(bloom);
        }
        ColumnSummary::String(out)
    }

    /// Summarizes a long dimension from its rows' values.
    pub fn of_longs(values: impl IntoIterator<Item = Option<i64>>) -> Self {
        let mut out = LongSummary::default();
        for v in values {
            match v {
                None => out.nulls = true,
                Some(v) => {
                    let [lo, hi] = out.span.get_or_insert([v, v]);
                    *lo = (*lo).min(v);
                    *hi = (*hi).max(v);
                }
            }
        }
        ColumnSummary::Long(out)
    }

    /// Summarizes a double or float dimension from its rows' values (floats widened).
    pub fn of_doubles(values: impl IntoIterator<Item = Option<f64>>) -> Self {
        let mut nulls = false;
        let span = NumberSpan::of(values.into_iter().filter_map(|v| {
            nulls |= v.is_none();
            v
        }));
        ColumnSummary::Double(DoubleSummary { nulls, span })
    }

    /// Bytes of what the column lists beyond its range: its values or its filter, as JSON.
    fn payload_bytes(&self) -> usize {
        match self {
            ColumnSummary::String(s) => {
                let values = s.values.as_ref().map_or(0, |v| v.iter().map(|v| v.len() + 3).sum());
                values + s.bloom.as_ref().map_or(0, |b| b.as_bytes().len() * 4 / 3)
            }
            _ => 0,
        }
    }
}

impl SegmentSummary {
    /// A summary of `num_rows` rows and `columns` (every column of the segment but `__time`),
    /// bounded by `limits.max_summary_bytes`: dimensions lose their values or filters, largest
    /// first, then say nothing of their values, largest first; `None` when even the columns'
    /// names do not fit.
    pub fn from_columns(
        num_rows: u64,
        columns: BTreeMap<String, ColumnSummary>,
        limits: &SummaryLimits,
    ) -> Option<Self> {
        let mut summary = SegmentSummary { version: SUMMARY_VERSION, num_rows, columns };
        let mut size = summary.json_bytes();
        if size <= limits.max_summary_bytes {
            return Some(summary);
        }
        let mut by_payload: Vec<(usize, String)> =
            summary.columns.iter().map(|(name, c)| (c.payload_bytes(), name.clone())).collect();
        by_payload.sort_unstable_by(|a, b| b.cmp(a));
        for (bytes, name) in by_payload.into_iter().take_while(|(bytes, _)| *bytes > 0) {
            if let Some(ColumnSummary::String(s)) = summary.columns.get_mut(&name) {
                s.values = None;
                s.bloom = None;
            }
            // Estimated, not measured: one serialization at the end of the pass.
            size = size.saturating_sub(bytes);
            if size <= limits.max_summary_bytes {
                break;
            }
        }
        size = summary.json_bytes();
        if size > limits.max_summary_bytes {
            let mut by_size: Vec<(usize, String)> = summary
                .columns
                .iter()
                .map(|(name, c)| (serde_json::to_vec(c).map_or(0, |b| b.len()), name.clone()))
                .collect();
            by_size.sort_unstable_by(|a, b| b.cmp(a));
            let other = r#"{"type":"other"}"#.len();
            for (bytes, name) in by_size {
                summary.columns.insert(name, ColumnSummary::Other);
                size = size.saturating_sub(bytes.saturating_sub(other));
                if size <= limits.max_summary_bytes {
                    break;
                }
            }
        }
        (summary.json_bytes() <= limits.max_summary_bytes).then_some(summary)
    }

    /// Summarizes an opened segment: its dictionaries, the null bitmap of each string
    /// dimension (or its ids, when it has no bitmaps) and the values of its numeric
    /// dimensions are read; metrics are named only. `None` when the summary would not fit
    /// `limits` (see [`SegmentSummary::from_columns`]).
    pub fn of(segment: &Segment, limits: &SummaryLimits) -> Result<Option<Self>, FormatError> {
        let mut columns = BTreeMap::new();
        for col in &segment.directory().columns {
            let summary = match col.kind {
                ColumnType::Time => continue,
                // Documents are not summarized; a path column is filtered through its `json`
                // column's virtual columns, never by its own name.
                ColumnType::Metric | ColumnType::Json => ColumnSummary::Other,
                ColumnType::String if col.is_path() => ColumnSummary::Other,
                ColumnType::String => {
                    let nulls = string_nulls(segment, col)?;
                    let dictionary = segment.stored_dictionary(&col.name)?;
                    ColumnSummary::of_strings(dictionary.iter().collect::<Vec<_>>(), nulls, limits)
                }
                ColumnType::Long => {
                    let part = segment.numeric(col, "values", KIND_LONGS, Some(segment.num_rows()))?;
                    let nulls = segment.nulls(col)?;
                    ColumnSummary::of_longs(numbers(&part, &nulls, |b, out| part.long_block(b, out))?)
                }
                ColumnType::Double => {
                    let part = segment.numeric(col, "values", KIND_DOUBLES, Some(segment.num_rows()))?;
                    let nulls = segment.nulls(col)?;
                    ColumnSummary::of_doubles(numbers(&part, &nulls, |b, out| part.float_block::<f64>(b, out))?)
                }
                ColumnType::Float => {
                    let part = segment.numeric(col, "values", KIND_FLOATS, Some(segment.num_rows()))?;
                    let nulls = segment.nulls(col)?;
                    let values = numbers(&part, &nulls, |b, out| part.float_block::<f32>(b, out))?;
                    ColumnSummary::of_doubles(values.into_iter().map(|v| v.map(f64::from)))
                }
            };
            columns.insert(col.name.clone(), summary);
        }
        Ok(Self::from_columns(segment.num_rows() as u64, columns, limits))
    }

    /// Summarizes segment bytes (copied once to open them); `object` names them in errors.
    pub fn of_bytes(object: &str, bytes: &[u8], limits: &SummaryLimits) -> Result<Option<Self>, FormatError> {
        Self::of(&Segment::from_bytes(object, bytes)?, limits)
    }
}

/// Whether some row of string dimension `col` holds null: its id-0 bitmap, or its ids.
fn string_nulls(segment: &Segment, col: &ColumnEntry) -> Result<bool, FormatError> {
    let s = segment.string_column(col)?;
    if let Some(bitmaps) = &s.bitmaps {
        let mut block = BytesBlock::default();
        bitmaps.block(0, &mut block)?;
        return Ok(!segment.bitmap(block.get(0), &col.name)?.is_empty());
    }
    let mut ids = Vec::new();
    for b in 0..s.ids.num_blocks() {
        s.ids.long_block(b, &mut ids)?;
        if ids.contains(&0) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Every row's value of a numeric part, `None` for the rows of `nulls`.
fn numbers<T: Copy>(
    part: &NumericPart<'_>,
    nulls: &RoaringBitmap,
    block: impl Fn(usize, &mut Vec<T>) -> Result<(), FormatError>,
) -> Result<Vec<Option<T>>, FormatError> {
    let mut out = Vec::with_capacity(part.len());
    let mut values = Vec::new();
    for b in 0..part.num_blocks() {
        block(b, &mut values)?;
        let first = out.len() as u32;
        out.extend(values.iter().enumerate().map(|(j, &v)| (!nulls.contains(first + j as u32)).then_some(v)));
    }
    Ok(out)
}
