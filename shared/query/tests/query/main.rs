//! The query engine's integration tests: Druid's tutorials and the query features.

#[path = "../../../format/tests/common/mod.rs"]
mod common;

mod druid_tutorials;
mod hostile_queries;
mod partials;
mod query_features;
mod query_tutorials;
