//! Sluice's metastore: the metadata items of the exactly-once protocol, read and written
//! through typed functions. The datasource names and specs, the task items and checkpoints of
//! each partition group, the replaces, and the segment timeline they decide, each row once, with
//! the timeline's records as their writers keep them. (More of the protocol's writes move here
//! from `sluice-pipeline`; today it holds the timeline's and the lookups'.)
//!
//! ```text
//!  catalog ds#, spec                 -> datasource    the names, a datasource's spec
//!  plan#, task#, ckpt#               -> task          groups, their tasks and progress
//!  report#                           -> report        finished tasks, kept after cleanup
//!  seg#, chunk#, sum#, replace#      -> timeline      the visible segments (the replace view,
//!                                                     the rule); for a real-time datasource,
//!                                                     unpublished hydrants too; kept between
//!                                                     queries; the records' writes
//!  lookup# + their objects           -> lookups       the lookups queries read (written here
//!                                                     too: they are no part of ingestion)
//! ```
//!
//! The [`timeline`] holds the visibility rule (through
//! [`timeline::replace_view::ReplaceView`]), in this one place. Readers (`sluice-query`,
//! `sluice-sql`) depend on this crate and not on `sluice-pipeline`, so they link neither the
//! Kafka client nor the ingestion path; the pipeline re-exports the timeline from its own
//! module of that name. The items' bodies and keys are `sluice-layout`'s.

pub mod datasource;
pub mod lookups;
pub mod report;
pub mod task;
pub mod timeline;
