//! What an attempt of an indexing task is given and what it returns.

use super::RowMeters;
use crate::task::{HydrantRef, TaskId};
use sluice_kafka::{ReadError, ResetEvent};
use sluice_store::metadata::MetaError;
use sluice_store::storage::StorageError;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How an attempt runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskOptions {
    /// When the attempt must have returned: the Lambda deadline, or a local budget.
    pub deadline: Option<Instant>,
    /// Time kept back before the deadline to persist, upload and checkpoint.
    pub reserve: Duration,
    /// How long a claim, a checkpoint or a heartbeat holds the task for this attempt: the
    /// attempt renews it every quarter of this while it works.
    pub lease: Duration,
}

impl TaskOptions {
    /// Options for an attempt that must return by `deadline`: a lease of [`LEASE`], and a
    /// tenth of the time (at least 2 s) kept for the last persist.
    pub fn until(deadline: Instant) -> Self {
        let left = deadline.saturating_duration_since(Instant::now());
        Self { deadline: Some(deadline), reserve: (left / 10).max(Duration::from_secs(2)), lease: LEASE }
    }

    /// How often the attempt renews its lease.
    pub fn heartbeat(&self) -> Duration {
        (self.lease / 4).max(Duration::from_millis(10))
    }
}

/// How long a lease lasts unless renewed: an attempt that dies is taken over within this
/// (once an indexer is invoked for its task), not after its whole time budget.
pub const LEASE: Duration = Duration::from_secs(20);

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskOutcome {
    /// Every range was read and persisted: the hydrants and end offsets, for the merger.
    Complete(TaskReport),
    /// The deadline came first: progress is checkpointed, the task is to be continued.
    Incomplete(TaskReport),
    /// Another attempt holds a live lease; nothing was done.
    Busy {
        /// The holding attempt.
        attempt: u32,
        /// Until when it holds the task (ms).
        lease_expires_ms: Option<i64>,
    },
    /// Another attempt took the task over; this attempt stopped and wrote nothing visible.
    LeaseLost {
        /// This attempt.
        attempt: u32,
    },
}

/// What a task has done, as of its last checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskReport {
    /// The attempt reporting.
    pub attempt: u32,
    /// Every hydrant of the task, all attempts.
    pub hydrants: Vec<HydrantRef>,
    /// Per partition, the next offset to read (the end offsets when complete).
    pub positions: BTreeMap<i32, i64>,
    /// Row meters of the whole task.
    pub meters: RowMeters,
    /// Ranges moved by the reset policy.
    pub resets: Vec<ResetEvent>,
    /// Records read by this attempt.
    pub num_records_read: u64,
    /// Hydrants this attempt persisted (spilled, or uploaded for a checkpoint).
    pub num_persists: u64,
    /// Where this attempt's time went.
    pub times: StageTimes,
    /// The group's next task, planned when this open task closed (real time).
    pub next: Option<TaskId>,
    /// The task reads open ranges (real time): an attempt that ran out of time hands the
    /// task to a new invocation at once.
    pub open: bool,
}

/// Time spent per stage by one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StageTimes {
    /// Opening the consumer: the partitions' watermarks, the assignment.
    pub open: Duration,
    /// Reading, parsing and indexing records.
    pub read_index: Duration,
    /// Persisting indexes to hydrant bytes (beside reading, but for the last hand-over).
    pub persist: Duration,
    /// Uploading hydrants (beside reading, but for the last hand-over).
    pub upload: Duration,
    /// Merging spilled hydrants into one per time chunk before a checkpoint.
    pub merge: Duration,
    /// Waiting after a read step for the previous hand-over's persist, upload and checkpoint.
    pub persist_wait: Duration,
    /// Claims and checkpoints.
    pub metadata: Duration,
}

/// Why an attempt failed.
#[derive(Debug, thiserror::Error)]
pub enum IndexerError {
    /// The task item does not exist.
    #[error("task {0} does not exist")]
    TaskNotFound(TaskId),
    /// The task failed earlier, or failed now for a reason a retry cannot fix.
    #[error("task {id} failed: {reason}")]
    TaskFailed {
        /// The task.
        id: TaskId,
        /// Why.
        reason: String,
    },
    /// A stored item cannot be read.
    #[error("task {id}: item {sk} is malformed: {reason}")]
    Corrupt {
        /// The task.
        id: TaskId,
        /// The item's sort key.
        sk: String,
        /// Why.
        reason: String,
    },
    /// Kafka could not be read; a later attempt may succeed.
    #[error("task {id}: {source}")]
    Read {
        /// The task.
        id: TaskId,
        /// The read error.
        source: ReadError,
    },
    /// The metadata store failed.
    #[error("task {id}: metadata: {source}")]
    Metadata {
        /// The task.
        id: TaskId,
        /// The store's error.
        source: MetaError,
    },
    /// The object store failed.
    #[error("task {id}: storage: {source}")]
    Storage {
        /// The task.
        id: TaskId,
        /// The store's error.
        source: StorageError,
    },
    /// The task's spill on local disk could not be written or read.
    #[error("task {id}: spill at {path}: {source}")]
    Spill {
        /// The task.
        id: TaskId,
        /// The file or directory.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

impl IndexerError {
    /// Whether a later attempt may succeed (the task is left to be continued).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            IndexerError::Read { .. }
                | IndexerError::Metadata { .. }
                | IndexerError::Storage { .. }
                | IndexerError::Spill { .. }
        )
    }
}
