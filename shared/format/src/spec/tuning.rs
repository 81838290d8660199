//! `tuningConfig` of a Kafka supervisor spec.

use serde::{Deserialize, Serialize};

/// The dynamic partitions spec's `maxRowsPerSegment` default.
pub const DEFAULT_MAX_ROWS_PER_SEGMENT: u64 = 5_000_000;
/// The dynamic partitions spec's `maxTotalRows` default.
pub const DEFAULT_MAX_TOTAL_ROWS: u64 = 20_000_000;

/// `tuningConfig`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TuningConfig {
    /// `kafka` when given.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Rows held in memory before a hydrant is persisted (default 150,000).
    pub max_rows_in_memory: Option<u64>,
    /// Estimated bytes held in memory before a hydrant is persisted (default 64 MiB here; Druid
    /// defaults to a sixth of the JVM heap). -1 disables the byte limit.
    pub max_bytes_in_memory: Option<i64>,
    /// Rows per final segment (default 5,000,000).
    pub max_rows_per_segment: Option<u64>,
    /// Rows a task reads before it hands off (default 20,000,000).
    pub max_total_rows: Option<u64>,
    /// Persist period (default `PT10M`).
    pub intermediate_persist_period: Option<String>,
    /// Pending persists allowed: ignored (persists are synchronous).
    pub max_pending_persists: Option<u32>,
    /// Segment encoding and compression.
    pub index_spec: Option<IndexSpec>,
    /// Encoding of hydrants (defaults to `indexSpec`).
    pub index_spec_for_intermediate_persists: Option<IndexSpec>,
    /// Deprecated: true means `maxParseExceptions` = 0.
    pub report_parse_exceptions: Option<bool>,
    /// Handoff wait: ignored (publishing is the handoff).
    pub handoff_condition_timeout: Option<u64>,
    /// Reset offsets automatically when they are out of range (default false).
    #[serde(default)]
    pub reset_offset_automatically: bool,
    /// Skip the offset availability check: ignored.
    pub skip_sequence_number_availability_check: Option<bool>,
    /// Worker threads: ignored.
    pub worker_threads: Option<u32>,
    /// Chat threads: ignored.
    pub chat_threads: Option<u32>,
    /// Chat retries: ignored.
    pub chat_retries: Option<u32>,
    /// HTTP timeout: ignored.
    pub http_timeout: Option<String>,
    /// Shutdown timeout: ignored.
    pub shutdown_timeout: Option<String>,
    /// Offset fetch period: ignored (the schedule decides).
    pub offset_fetch_period: Option<String>,
    /// Intermediate handoff period: ignored.
    pub intermediate_handoff_period: Option<String>,
    /// Log each parse exception (default false).
    pub log_parse_exceptions: Option<bool>,
    /// Parse exceptions tolerated before the task fails (default unlimited).
    pub max_parse_exceptions: Option<u64>,
    /// Parse exceptions kept for reports (default 0 in Druid; Sluice keeps at least the last 10).
    pub max_saved_parse_exceptions: Option<u64>,
    /// Partitioning of batch segments: ignored (streaming uses dynamic partitions).
    pub partitions_spec: Option<serde_json::Value>,
    /// Segment write-out medium: ignored.
    pub segment_write_out_medium_factory: Option<serde_json::Value>,
    /// Append-able segment schema: ignored.
    pub append_schema_versions: Option<serde_json::Value>,
    /// Number of persist threads: ignored.
    pub num_persist_threads: Option<u32>,
}

/// `indexSpec`: encodings of the segment's columns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexSpec {
    /// `{"type": "roaring"}` (default); `concise` is read as roaring with a warning.
    pub bitmap: Option<serde_json::Value>,
    /// Compression of dimension columns: `lz4` (default), `zstd`, `none`/`uncompressed`.
    pub dimension_compression: Option<String>,
    /// Compression of metric columns: `lz4` (default), `zstd`, `none`/`uncompressed`.
    pub metric_compression: Option<String>,
    /// `longs` or `auto`: Sluice always packs longs by frame of reference.
    pub long_encoding: Option<String>,
    /// Front-coded dictionaries: ignored (dictionaries are block-compressed).
    pub string_dictionary_encoding: Option<serde_json::Value>,
    /// Compression of JSON columns: ignored.
    pub json_compression: Option<String>,
    /// Complex metric compression: ignored.
    pub complex_metric_compression: Option<String>,
}
