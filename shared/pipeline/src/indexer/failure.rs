//! Why an attempt of an indexing task stopped early, as its steps report it.

use super::IndexerError;
use crate::item::DatasourceError;
use crate::task::TaskId;

/// Why an attempt stopped early.
pub(super) enum Failure {
    /// The task's version moved: another attempt holds it.
    LeaseLost,
    /// A reason no retry can fix: the task fails.
    Fatal(String),
    /// A reason a later attempt may not meet.
    Retryable(Box<IndexerError>),
}

impl Failure {
    /// A store error: retryable when the store failed, fatal when an item is unusable.
    pub(super) fn store(id: &TaskId, e: DatasourceError) -> Self {
        match e {
            DatasourceError::Metadata(source) => {
                Failure::Retryable(Box::new(IndexerError::Metadata { id: id.clone(), source }))
            }
            e => Failure::Fatal(e.to_string()),
        }
    }
}
