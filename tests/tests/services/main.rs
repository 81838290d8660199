//! Integration tests against the real services `localstack/up.sh` starts (tansu, moto), one
//! binary: each module is one area. Tests that restart a service, kill processes on a
//! timing or change the process environment keep binaries of their own.

mod autoscale;
mod avro;
mod backends;
mod bad_urls;
mod batch;
mod compaction;
mod coordinator_config;
mod idle;
mod indexer_spill;
mod indexer_task;
mod kafka_columns;
mod kafka_faults;
mod kafka_gaps;
mod kafka_group;
mod kafka_range;
mod kept_timeline;
mod lookups;
mod merger_segments;
mod msk_iam;
mod nested;
mod pipeline;
mod protobuf;
mod protocol;
mod query_oracle;
mod query_sources;
mod realtime;
mod regroup;
mod sdk_errors;
mod sql_oracle;
mod task_api;
mod timeline_head;
mod topic_pattern;
