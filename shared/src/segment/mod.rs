//! The segment format (one format for hydrants and final segments).

mod codec;

pub use codec::Codec;

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
