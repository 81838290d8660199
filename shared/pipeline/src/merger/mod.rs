//! The merger: a completed task's hydrants merged per time chunk into final segments, pushed
//! to deep storage, and published with the task's offsets in one conditional transaction.
//!
//! ```text
//!  task# Complete, offsets#<group> == the task's start offsets     (else: Waiting / Conflict)
//!  per chunk: hydrants of >= maxRowsPerSegment / 4 rows: each a segment as persisted;
//!             smaller ones, in batches of the bytes the merger's memory holds:
//!             get -> merge -> split at maxRowsPerSegment
//!  chunk#: reserve partition numbers (version shared by appends)    Version(v) / Absent
//!  put_if_absent segments/<ds>/<chunk>/<version>/<partition>.seg
//!  put seg#<chunk>#<version>#<partition>  Absent, invisible
//!  transact [ offsets#<group> Version(v): start offsets -> end offsets,
//!             task#<group>#<seq> Version(v): Complete -> Published ]   <- the exactly-once step
//!  mark seg# visible; invoke the merger of the group's next task if it is complete
//! ```
//!
//! Tasks publish strictly in offset order per group: a task whose predecessor has not
//! published is `Waiting` and is retried. A publish retried after it happened finds its task
//! published and succeeds without change. A merger that loses the race (a duplicate
//! invocation, or a task superseded meanwhile) deletes the segments it wrote, which were never
//! visible.

mod plan;
mod publish;

pub use plan::{merge_batch_bound, MERGE_BATCH_BYTES, MIN_SHARE_AS_PERSISTED};
pub use publish::{merge_and_publish, MergeOutcome, MergerError, MergerOptions};
