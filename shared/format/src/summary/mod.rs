//! A segment's summary: per column, what values it holds, small enough to travel in the
//! segment's record, so that a query skips a segment its filter cannot match before it reads
//! any of the segment's objects.
//!
//! ```text
//!  merge / compaction ── segment bytes ──> SegmentSummary::of ──> seg# record (summary)
//!                                                                      │
//!  query filter ──> SegmentPruner::new ── may_match(summary) ──────────┴─> read or skip
//! ```
//!
//! Per dimension the summary keeps whether some row is null and the range of its values: for
//! a string dimension its smallest and largest value in UTF-8 byte order (the dictionary's
//! order, Druid's lexicographic order), and either every distinct value (up to
//! [`SummaryLimits::max_values`]) or a [`BloomFilter`] of them; for a numeric dimension its
//! smallest and largest value. A dimension whose values or filter would pass its budget keeps
//! its range only. Metrics are named, with nothing said of their values; a column the summary
//! does not name is absent from the segment, so every row reads it as null.
//!
//! [`SegmentPruner`] judges a filter against a summary conservatively: "cannot match" only
//! when no row of the segment can match, with the filter's three-valued logic as
//! [`crate::filter`] evaluates it.

mod bloom;
mod build;
mod prune;
#[cfg(test)]
mod segment_tests;
#[cfg(test)]
mod tests;

pub use bloom::{BloomFilter, BLOCK_BYTES};
pub use build::SummaryLimits;
pub use prune::{may_match, SegmentPruner};

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// The summary version this implementation writes and judges; a summary of another version
/// matches every filter.
pub const SUMMARY_VERSION: u32 = 1;

/// What a segment's columns hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentSummary {
    /// Summary format version ([`SUMMARY_VERSION`]).
    pub version: u32,
    /// Rows of the segment.
    pub num_rows: u64,
    /// Every column of the segment but `__time`, by name.
    pub columns: BTreeMap<String, ColumnSummary>,
}

/// What one column holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ColumnSummary {
    /// A string dimension.
    String(StringSummary),
    /// A long dimension.
    Long(LongSummary),
    /// A double or float dimension (floats widened, as queries read them).
    Double(DoubleSummary),
    /// A metric, or a column nothing is said of: any value.
    #[serde(other)]
    Other,
}

/// What a string dimension holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSummary {
    /// Some row is null, holds no value, or holds a null among its values.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nulls: bool,
    /// The smallest value, or a prefix of it. With `max`, absent when no row holds a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<String>,
    /// The largest value, or with `max_cut` a prefix of it; absent with `min` present: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<String>,
    /// `max` is a prefix of the largest value.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub max_cut: bool,
    /// Every distinct value, ascending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<String>>,
    /// A filter holding every value (when `values` is absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bloom: Option<BloomFilter>,
    /// When `values` is absent: the range of the values that read as numbers (Druid reads a
    /// string as a number for numeric comparisons); absent when no value does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numbers: Option<NumberSpan>,
}

/// What a long dimension holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LongSummary {
    /// Some row is null.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nulls: bool,
    /// The smallest and largest value; absent when every row is null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<[i64; 2]>,
}

/// What a double or float dimension holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DoubleSummary {
    /// Some row is null.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nulls: bool,
    /// The range of the values; absent when every row is null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<NumberSpan>,
}

/// A closed range of numbers, `[min, max]`; a missing side is unbounded (so is a side a NaN
/// or an infinity reached: such values compare as no finite bound says).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct NumberSpan(pub Option<f64>, pub Option<f64>);

impl NumberSpan {
    /// The span of `values` (none for no values): an infinity unbounds its side, a NaN both.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Self> {
        let (mut any, mut lo, mut hi) = (false, Some(f64::INFINITY), Some(f64::NEG_INFINITY));
        for v in values {
            any = true;
            if v.is_nan() || v == f64::NEG_INFINITY {
                lo = None;
            }
            if v.is_nan() || v == f64::INFINITY {
                hi = None;
            }
            if v.is_finite() {
                lo = lo.map(|l| l.min(v));
                hi = hi.map(|h| h.max(v));
            }
        }
        // Only infinities: a finite side stays at the other infinity; unbounded says as much.
        let finite = |b: Option<f64>| b.filter(|v| v.is_finite());
        any.then(|| NumberSpan(finite(lo), finite(hi)))
    }

    /// The smallest value (`-inf` when unbounded).
    pub fn min(&self) -> f64 {
        self.0.filter(|v| !v.is_nan()).unwrap_or(f64::NEG_INFINITY)
    }

    /// The largest value (`+inf` when unbounded).
    pub fn max(&self) -> f64 {
        self.1.filter(|v| !v.is_nan()).unwrap_or(f64::INFINITY)
    }

    /// Whether the span is unbounded on either side (it may hold a NaN).
    pub fn is_wild(&self) -> bool {
        self.min() == f64::NEG_INFINITY || self.max() == f64::INFINITY
    }
}

impl SegmentSummary {
    /// Bytes of the summary as JSON, as a record holds it.
    pub fn json_bytes(&self) -> usize {
        serde_json::to_vec(self).map_or(usize::MAX, |b| b.len())
    }
}

/// Reads a record's summary, or none when it is not one this version reads: a summary only
/// ever lets a query skip work, so one that does not read must not keep its record from
/// reading. For `#[serde(deserialize_with = "...")]` on an `Option<SegmentSummary>` field.
pub fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SegmentSummary>, D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(value).ok())
}
