//! The `sluice` command end to end: the demo and queries, ingest, the local pipeline.

mod bench_fragments;
mod bi_tools_duckdb;
mod command;
mod compaction_cli;
mod console_browser;
mod demo_query;
mod druid_api;
mod druid_monitor;
mod hostile_http;
mod ingest;
mod joins_duckdb;
mod local_server;
mod pipeline_cli;
mod plywood;
mod query_scripts;
mod realtime_run;
mod retention_cli;
mod run_kill;
mod serve_connections;
mod spec_secrets;
mod superset;
mod task_cli;
mod windows_duckdb;
