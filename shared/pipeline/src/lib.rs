//! Sluice's pipeline: Druid's Kafka indexing path (supervisor, indexing tasks, merge,
//! transactional publish) over the segment engine of `sluice-format`, the stores of
//! `sluice-store`, the range reader of `sluice-kafka` and the reads of `sluice-metastore`.
//!
//! ```text
//!  supervisor   plans offset ranges per partition group (plan# + task#), invokes functions
//!  task#  an offset range per partition, claimed by one attempt        (task, indexer)
//!    -> sluice_kafka   exact range read: records in [start, end), nothing else
//!    -> sluice_format  input -> index -> segment                       => hydrant bytes
//!  hydrants -> storage (put_if_absent); ckpt# + task# in one metadata transaction
//!  merger       merge (sluice_format) -> segments -> storage, seg# (invisible) -> publish:
//!               offsets# + task# in one transaction (compare-and-swap from the task's
//!               start offsets to its end)
//!  timeline     the visible segments, each row once: read by sluice_metastore (queries read
//!               them there, without this crate)
//! ```
//!
//! The [`indexer`] runs one task attempt; the [`supervisor`] plans and invokes, the
//! [`merger`] publishes, and the [`runner`] is the whole loop in one process. The
//! [`coordinator`] holds what Druid's coordinator does (retention rules, compaction, and the
//! replace protocol they and [`batch`] tasks publish through). What is visible
//! is `sluice-metastore`'s to say, so that queries read it without linking this crate; the
//! [`datasource`], [`task`] and [`timeline`] modules re-export its reads beside the writes
//! they hold.

pub mod batch;
pub mod coordinator;
pub mod datasource;
pub mod indexer;
pub mod invoker;
pub mod item;
pub use sluice_layout as layout;
pub use sluice_layout::keys;
pub mod merger;
pub mod runner;
pub mod schemas;
pub mod supervisor;
pub mod task;
pub mod timeline;

/// The function's memory size when running in Lambda (`AWS_LAMBDA_FUNCTION_MEMORY_SIZE`).
pub(crate) fn function_memory_mb() -> Option<u64> {
    std::env::var("AWS_LAMBDA_FUNCTION_MEMORY_SIZE").ok()?.parse().ok()
}
