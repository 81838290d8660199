//! The segment engine's integration tests, one binary (the memory tests, which count
//! allocations with a global allocator, keep binaries of their own).

#[path = "../common/mod.rs"]
mod common;

mod json_fields;
mod merge_properties;
mod merge_single;
mod reindex;
mod segment_golden;
mod sketch_properties;
mod summary_wikipedia;
