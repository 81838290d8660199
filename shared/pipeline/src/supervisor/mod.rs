//! The supervisor: one pass per schedule tick (an EventBridge rule on AWS, a loop locally).
//!
//! ```text
//!  for each datasource of the catalog (spec running or suspended):
//!    grouping: epoch, taskCount, topic or pattern; a change of either drains, snapshots,
//!              moves (regroup); a pattern's topics found since are appended
//!    Kafka: partitions and watermarks of the grouping's topic (or of every topic matching)
//!    per group (topic number * taskCount + partition % taskCount), `concurrency` at a time:
//!      plan#/offsets#: add new partitions (useEarliestOffset decides where the first ones
//!                      start; partitions found later start at their earliest offset)
//!      a failed task: supersede the group's other unfinished tasks, plan again from the
//!                     committed offsets
//!      a grouping change under way: freeze plan#, plan nothing
//!      running: plan tasks [next_start, min(high, next_start + budget)) while fewer than
//!               max_in_flight are unpublished      transact [plan# Version(v), task# Absent]
//!               (budget: maxRecordsPerTask, and maxBytesPerTask over the mean record size)
//!    invoke: indexer for planned / incomplete / lease-expired tasks, merger for complete ones
//!            (`concurrency` invocations in flight)
//!    stats#: high watermarks, committed offsets, lag, tasks by state, recent errors
//!    cleanup of tasks finished a grace period ago
//! ```
//!
//! Planning runs ahead of publishing (from where the last planned range ended), so indexing
//! is not held up by merges; publishing stays in offset order per group (see
//! [`crate::merger`]). Two supervisors may run at once: every write is conditional, the loser
//! of a race plans nothing and moves on.

mod autoscale;
mod cleanup;
mod group;
mod grouping;
mod groups;
mod ops;
mod outcome;
mod pass;
mod regroup;
mod stats;
mod step;
mod watermarks;

pub use crate::layout::autoscaler::AutoscalerItem;
pub use autoscale::{read_item as read_autoscaler, simulate as simulate_autoscaler, AutoscalerStatus};
pub use group::{initial_offset, next_ranges, record_budget};
pub use ops::{reset, reset_offsets, status, PartitionStatus, Status, RESET_WARNING};
pub use outcome::{offset_at, DatasourcePass};
pub use pass::{run_pass, supervise};

use crate::invoker::InvokeError;
use crate::item::DatasourceError;
pub use crate::layout::datasource::{StatsItem, TopicOffsets};
use crate::task::{TaskItem, TaskState};
use sluice_kafka::ReadError;
use sluice_store::metadata::MetaError;
use sluice_store::storage::StorageError;

/// How a pass runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SupervisorOptions {
    /// Now (ms).
    pub now_ms: i64,
    /// Most unpublished tasks per partition group.
    pub max_in_flight: usize,
    /// How long finished tasks are kept before their hydrants and items are deleted (ms).
    pub cleanup_grace_ms: i64,
    /// Requests in flight at once when planning groups and invoking jobs.
    pub concurrency: usize,
    /// Invoke an indexer for every running task, not only those whose heartbeat lapsed: each
    /// watches its task's lease and takes over if it lapses. For a process that starts again
    /// after a crash, whose own attempts may still hold leases.
    pub watch_running: bool,
    /// Most steps a pass takes while each moves a grouping change on ([`DEFAULT_MAX_STEPS`]; 1
    /// takes one step per pass, each a schedule period apart).
    pub max_steps: usize,
    /// How long a datasource's timeline head stays initializing before the pass makes it ready
    /// ([`READY_AFTER_MS`](sluice_metastore::timeline::head::READY_AFTER_MS)): until then its
    /// queries read the whole timeline.
    pub timeline_ready_after_ms: i64,
}

/// Steps a pass takes at most: the autoscaler's new `taskCount`, the change recorded and its
/// snapshot taken (when the earlier tasks are done), the groups moved, and planning under them.
pub const DEFAULT_MAX_STEPS: usize = 4;

pub use crate::task::DEFAULT_CLEANUP_GRACE_MS;

impl SupervisorOptions {
    /// Defaults at `now_ms`: 4 tasks in flight per group, [`DEFAULT_CLEANUP_GRACE_MS`],
    /// [`DEFAULT_MAX_STEPS`].
    pub fn at(now_ms: i64) -> Self {
        Self {
            now_ms,
            max_in_flight: 4,
            cleanup_grace_ms: DEFAULT_CLEANUP_GRACE_MS,
            concurrency: 32,
            watch_running: false,
            max_steps: DEFAULT_MAX_STEPS,
            timeline_ready_after_ms: sluice_metastore::timeline::head::READY_AFTER_MS,
        }
    }
}

/// Per topic and partition, the offset before which every record is queryable with real-time
/// tasks: the committed offset, or the position a task not published yet checkpointed. A
/// task's positions are its last checkpoint's (before one, its starts: the end of the task
/// before it, or the committed offsets).
pub(crate) fn queryable_offsets<'a>(
    committed: &TopicOffsets,
    tasks: impl Iterator<Item = &'a TaskItem>,
) -> TopicOffsets {
    let mut queryable = committed.clone();
    let unpublished =
        tasks.filter(|t| matches!(t.state, TaskState::Running | TaskState::Incomplete | TaskState::Complete));
    for t in unpublished {
        let topic = queryable.entry(t.topic.clone()).or_default();
        for (&p, &position) in &t.positions {
            let q = topic.entry(p).or_insert(position);
            *q = (*q).max(position);
        }
    }
    queryable
}

/// Why a supervisor pass or operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    /// A datasource item or spec is unusable, or an operation's input is invalid.
    #[error("datasource {datasource:?}: {reason}")]
    Invalid {
        /// The datasource.
        datasource: String,
        /// Why.
        reason: String,
    },
    /// A datasource error (unknown datasource, corrupt item, metadata store failure).
    #[error(transparent)]
    Datasource(#[from] DatasourceError),
    /// Kafka could not be read.
    #[error(transparent)]
    Kafka(#[from] ReadError),
    /// A job could not be handed over.
    #[error(transparent)]
    Invoke(#[from] InvokeError),
    /// Deep storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl From<MetaError> for SupervisorError {
    fn from(e: MetaError) -> Self {
        SupervisorError::Datasource(DatasourceError::Metadata(e))
    }
}
