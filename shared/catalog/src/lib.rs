//! Sluice's catalog: what is visible, read from the metadata store. The datasource names and
//! specs, the task items and checkpoints of each partition group, the replaces, and the
//! segment timeline they decide, each row once.
//!
//! ```text
//!  catalog ds#, spec                 -> datasource    the names, a datasource's spec
//!  plan#, task#, ckpt#               -> task          groups, their tasks and progress
//!  report#                           -> report        finished tasks, kept after cleanup
//!  replaces, replace#                -> replace_view  the replaces as a reader sees them
//!  seg# + task states + replace view -> timeline      the visible segments; for a real-time
//!                                                     datasource, unpublished hydrants too
//!  spec, grouping, offsets#, replace*  -> timeline_cache  the timeline kept between queries
//!                                                     while none of these items changed
//!  lookup# + their objects           -> lookups       the lookups queries read (written here
//!                                                     too: they are no part of ingestion)
//!  sum#                              -> summary_cache  the summaries of the records a query
//!                                                     selected, for pruning
//! ```
//!
//! The [`timeline`] holds the visibility rule (through [`replace_view::ReplaceView`]), in this
//! one place. Readers (`sluice-query`, `sluice-sql`) depend on this crate and not on
//! `sluice-pipeline`, so they link neither the Kafka client nor the ingestion path; the
//! pipeline writes these items and re-exports the reads from its own modules of the same
//! names. The items' bodies and keys are `sluice-layout`'s.

pub mod datasource;
pub mod lookups;
pub mod replace_view;
pub mod report;
pub mod summary_cache;
pub mod task;
pub mod timeline;
pub mod timeline_cache;
