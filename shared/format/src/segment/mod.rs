//! The segment format, one format for hydrants and final segments (as in Druid): a header,
//! a JSON column directory and checksummed, block-compressed column parts. The byte layout is
//! specified in `docs/segment-format.md`.

pub mod access;
mod bitmap_bytes;
mod decoded;
mod dictionary;
pub mod directory;
pub mod parts;
mod reader;
mod rows;
mod writer;

pub use crate::codec::Codec;
pub(crate) use dictionary::sort_prefix;
pub use dictionary::{DictionaryTooLarge, StoredDictionary};
pub use directory::{
    ColumnEntry, ColumnType, Directory, NestedPath, FORMAT_VERSION, NESTED_SEPARATOR, OLDEST_FORMAT_VERSION,
};
pub use reader::{Segment, StringColumn};
pub use rows::{DimBuf, RowBuf, RowCursor};
pub use writer::{DimCell, DimLayout, SegmentLayout, SegmentWriter};

/// A corrupt or truncated segment, naming the object and the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("segment {object}: {reason}")]
pub struct FormatError {
    /// Object key or file name of the segment.
    pub object: String,
    /// What is wrong.
    pub reason: String,
}

impl FormatError {
    /// Builds an error for `object`.
    pub fn new(object: &str, reason: impl Into<String>) -> Self {
        Self { object: object.to_string(), reason: reason.into() }
    }
}
