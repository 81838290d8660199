//! Parsed rows: a timestamp, dimension values aligned to the parser's dimension list, and
//! the inputs of each aggregator.

use crate::value::Value;

/// A dimension value of a parsed row.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum DimValue {
    /// Null (also an empty multi-value list).
    #[default]
    Null,
    /// A single string.
    Str(String),
    /// Several strings, already ordered by the dimension's `multiValueHandling`.
    Multi(Vec<String>),
    /// A long dimension value.
    Long(i64),
    /// A float dimension value.
    Float(f32),
    /// A double dimension value.
    Double(f64),
}

/// A parsed row ready for the incremental index.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Timestamp in milliseconds (not yet truncated by `queryGranularity`).
    pub time: i64,
    /// Dimension values, aligned to the parser's dimension list; missing trailing values are null.
    pub dims: Vec<DimValue>,
    /// One input per aggregator (null for `count`).
    pub metrics: Vec<Value>,
}

impl Row {
    /// The value of dimension `i`, null when the row predates the dimension.
    pub fn dim(&self, i: usize) -> &DimValue {
        static NULL: DimValue = DimValue::Null;
        self.dims.get(i).unwrap_or(&NULL)
    }
}

/// What indexed rows hand back to the parser, to read the next records into without
/// allocating: their strings once interned, and their emptied value vectors.
#[derive(Debug, Default)]
pub struct Spare {
    /// Strings of dimension values interned by the index.
    pub strings: Vec<String>,
    /// Rows' dimension and metric vectors, emptied.
    pub rows: Vec<(Vec<DimValue>, Vec<Value>)>,
}
