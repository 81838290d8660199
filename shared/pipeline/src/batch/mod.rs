//! Batch tasks: Druid's `index_parallel` spec ingested into a datasource beside its stream,
//! with the stream's parts. The input is cut into splits planned into the metadata store like
//! offset ranges ([`submit`]); each split is one indexer invocation that persists hydrants
//! ([`index_split`]); once every split is done, one publish merges them into segments and makes
//! them visible in one replace whose transaction moves the task from running to published
//! ([`publish_batch`]): appended beside the visible segments, or replacing those of the chunks
//! it covers. [`drive`] hands the splits and the publish to the functions, from the
//! supervisor's pass, no more splits of all tasks at once than the deployment allows
//! ([`BatchAccess::max_splits`], held as slots taken before each split is handed over, the
//! oldest task first). The argument is in `docs/exactly-once.md#batch-tasks`.
//!
//! ```text
//!  submit    batchtasks/<id> Absent (the id's claim) -> spec, split#n Absent -> batch#<id> Absent
//!  index     split#n Pending|lease over -> Running(attempt a) ; hydrants ; -> Done(hydrants) if still a's
//!  publish   replace Append|Overwrite begun ; seg# invisible ; replace#r Published + guards
//!            + batch#<id> Version(read, Running) -> Published      one transaction
//! ```

mod access;
mod drive;
mod index;
mod plan;
mod publish;
mod read;
mod slots;
mod status;
mod submit;

pub use access::{
    allow_in_process, max_splits_from_env, own_in_process, process_access, BatchAccess, DEFAULT_MAX_SPLITS,
    INDEXER_RESERVED_ENV, LOCAL_DIRS_ENV, MAX_SPLITS_ENV, METADATA_ENV, S3_BUCKETS_ENV, STORAGE_ENV,
};
pub use drive::{drive, drive_id, drive_id_within, drive_within, Driven};
pub use index::{index_split, SplitOptions, SplitOutcome};
pub use plan::{input_files, splits, InputFile, MAX_SPLITS};
pub use publish::{publish_batch, BatchPublished};
pub use read::{open_piece, PieceReader, ReadError, CHUNK_BYTES, MAX_LINE_BYTES, MAX_SKIPPED_LINE_BYTES};
pub use slots::{SlotError, HANDOVER_LEASE_MS, WAIT_LEASE_MS};
pub use sluice_layout::batch::{
    BatchSlotItem, BatchState, BatchTaskItem, BatchWaitItem, SplitItem, SplitState, BATCH_TASK_TYPE,
};
pub use status::{find, list, report, spec_json, BatchReport};
pub use submit::{submit, Submitted};

use crate::item::DatasourceError;
use sluice_format::spec::SpecError;
use sluice_store::metadata::MetaError;
use sluice_store::storage::StorageError;

/// Why a batch step stopped.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// The spec is invalid.
    #[error("batch spec: {0}")]
    Spec(#[from] SpecError),
    /// The input cannot be read as the spec says.
    #[error("{0}")]
    Input(String),
    /// The task id is taken by another spec.
    #[error("task {0:?} exists with another spec: a task id names one spec")]
    IdTaken(String),
    /// No such task.
    #[error("no batch task {0:?}")]
    Unknown(String),
    /// The metadata store failed, or an item is malformed.
    #[error(transparent)]
    Metadata(#[from] DatasourceError),
    /// Deep storage failed.
    #[error("{object}: {source}")]
    Storage {
        /// The object.
        object: String,
        /// The error.
        source: StorageError,
    },
}

impl From<MetaError> for BatchError {
    fn from(e: MetaError) -> Self {
        BatchError::Metadata(e.into())
    }
}

impl From<SlotError> for BatchError {
    /// The slots' store failing, as any other metadata read or write (a later attempt may
    /// succeed).
    fn from(e: SlotError) -> Self {
        match e {
            SlotError::Metadata(e) => e.into(),
        }
    }
}

impl BatchError {
    /// Whether a store failed (a later attempt may succeed), rather than the spec or the input.
    pub fn is_transient(&self) -> bool {
        matches!(self, BatchError::Storage { .. } | BatchError::Metadata(_))
    }
}
