//! The `sluice` command end to end: the demo and queries, ingest, the local pipeline.

mod demo_query;
mod ingest;
mod pipeline_cli;
