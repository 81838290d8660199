//! The coordinator's work, as Druid's coordinator does it for a datasource: retention rules
//! that drop segments, automatic compaction that merges or re-indexes time chunks, and the
//! replace protocol both publish through (as a batch task's overwrite does).
//!
//! ```text
//!  config    Druid's compaction configuration: checked (load) and stored, one item per datasource
//!  rules     Druid's retention rules: checked and matched (load) and stored
//!  plan      which time chunks a configuration finds awaiting compaction
//!  pass      one pass over a datasource: rules' drops, then each planned chunk compacted
//!  replace   segments made invisible and others visible in their place in one transaction,
//!            and cleaned up after the grace (docs/exactly-once.md)
//! ```

pub mod config;
pub mod pass;
pub mod plan;
pub mod replace;
pub mod rules;

pub use pass::{compact, compact_all, configured, CompactError, CompactOptions, CompactReport};
