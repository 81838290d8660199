//! The segment header and its JSON column directory.

use crate::granularity::Granularity;
use crate::spec::{AggregatorSpec, MultiValueHandling};
use crate::time::Interval;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The 8 bytes every segment starts with.
pub const MAGIC: &[u8; 8] = b"SLUICESG";
/// The format version this implementation writes: 2 stores timestamps and long values byte
/// plane by byte plane (a longs flag), 3 front codes dictionaries (a bytes flag). It reads 1
/// to 3.
pub const FORMAT_VERSION: u32 = 3;
/// The oldest format version this implementation reads.
pub const OLDEST_FORMAT_VERSION: u32 = 1;
/// Size of the fixed header: magic, version, directory length, directory CRC-32.
pub const HEADER_LEN: usize = 20;
/// Largest directory a reader accepts, in bytes.
pub const MAX_DIRECTORY_BYTES: usize = 16 << 20;

/// The segment's column directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Directory {
    /// Always `sluice-segment`.
    pub format: String,
    /// Format version (as in the header).
    pub version: u32,
    /// The time chunk the rows belong to.
    pub interval: Interval,
    /// Number of rows.
    pub num_rows: u32,
    /// Whether rows were rolled up.
    pub rollup: bool,
    /// The granularity timestamps were truncated to.
    pub query_granularity: Granularity,
    /// Columns: `__time` first, then dimensions in sort order, then metrics.
    pub columns: Vec<ColumnEntry>,
}

/// The type of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    /// The `__time` column.
    Time,
    /// A dictionary-encoded string dimension.
    String,
    /// A long dimension.
    Long,
    /// A float dimension.
    Float,
    /// A double dimension.
    Double,
    /// A nested (`json`) dimension: its documents' JSON text, dictionary-encoded like a string
    /// dimension; each literal path is a string column of its own (see [`NestedPath`]).
    Json,
    /// A metric; its layout follows its aggregator.
    Metric,
}

/// One column: its type and the parts it is made of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnEntry {
    /// Column name.
    pub name: String,
    /// Column type.
    #[serde(rename = "type")]
    pub kind: ColumnType,
    /// String dimensions: whether any row holds several values.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multi_value: bool,
    /// String dimensions: how multiple values were ordered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_value_handling: Option<MultiValueHandling>,
    /// String dimensions: number of distinct non-null values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cardinality: Option<u32>,
    /// Metrics: the aggregator that produced the column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregator: Option<AggregatorSpec>,
    /// A path column: the `json` column and the path whose literals it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nested_path: Option<NestedPath>,
    /// `json` columns: some literal paths have no column (more than
    /// [`crate::json_path::MAX_PATHS`]), so every path is read from the documents.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
    /// An `auto` dimension (`useSchemaDiscovery`): typed by its values in this segment, so
    /// other segments may store it as another type.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub auto: bool,
    /// Named byte ranges of the data area.
    pub parts: BTreeMap<String, PartRef>,
}

pub use crate::json_path::NESTED_SEPARATOR;

/// What a path column holds: the literals at `path` of the documents of `column`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NestedPath {
    /// The `json` column.
    pub column: String,
    /// The normalized path (`$.a.b`, `$.list[0]`).
    pub path: String,
}

impl NestedPath {
    /// The name of the path column of `path` (normalized) in `column`.
    pub fn column_name(column: &str, path: &str) -> String {
        format!("{column}{NESTED_SEPARATOR}{path}")
    }
}

impl ColumnType {
    /// Whether the column is dictionary-encoded (a string or `json` dimension).
    pub fn is_dictionary(self) -> bool {
        matches!(self, ColumnType::String | ColumnType::Json)
    }
}

impl ColumnEntry {
    /// Whether the column is a `json` column's path column, which readers list under the
    /// `json` column rather than as a column of its own.
    pub fn is_path(&self) -> bool {
        self.nested_path.is_some()
    }
}

/// A byte range of the data area with its checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartRef {
    /// Offset from the start of the data area.
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
    /// CRC-32 (IEEE) of the bytes.
    pub crc32: u32,
}
