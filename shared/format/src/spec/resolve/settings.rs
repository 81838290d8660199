//! The settings Sluice runs a datasource with: the spec resolved, defaults applied.

use super::topics::TopicSource;
use crate::codec::Codec;
use crate::spec::aggregator::AggregatorSpec;
use crate::spec::data_schema::{DimensionSchema, GranularitySpec, TimestampSpec, TransformSpec};
use crate::spec::input_format::InputFormat;
use crate::time::Period;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A datasource spec resolved with defaults, ready to drive ingestion.
#[derive(Debug, Clone)]
pub struct DatasourceSpec {
    /// Datasource name.
    pub data_source: String,
    /// How the timestamp is read.
    pub timestamp: TimestampSpec,
    /// Declared dimensions, in order (empty with discovery).
    pub dimensions: Vec<DimensionSchema>,
    /// Fields never discovered as dimensions.
    pub dimension_exclusions: Vec<String>,
    /// Whether dimensions are discovered from the input (no dimension list given, or
    /// `useSchemaDiscovery`).
    pub discover_dimensions: bool,
    /// `useSchemaDiscovery`: discovered fields are `auto` dimensions (typed when persisted).
    pub schema_discovery: bool,
    /// Aggregators.
    pub metrics: Vec<AggregatorSpec>,
    /// Granularities and rollup.
    pub granularity: GranularitySpec,
    /// Filter and transforms.
    pub transform: TransformSpec,
    /// Record value format.
    pub input_format: InputFormat,
    /// Kafka settings.
    pub io: IoSettings,
    /// Memory, persist and segment settings.
    pub tuning: TuningSettings,
    /// Serverless settings.
    pub sluice: SluiceConfig,
    /// Whether the spec was submitted suspended.
    pub suspended: bool,
}

/// Resolved `ioConfig`.
#[derive(Debug, Clone, PartialEq)]
pub struct IoSettings {
    /// The topic, or the pattern of the topics, read.
    pub source: TopicSource,
    /// Number of partition groups (per topic, with a pattern).
    pub task_count: u32,
    /// Task duration.
    pub task_duration: Period,
    /// Where to start without committed offsets.
    pub use_earliest_offset: bool,
    /// `lateMessageRejectionPeriod`.
    pub late_message_rejection_period: Option<Period>,
    /// `earlyMessageRejectionPeriod`.
    pub early_message_rejection_period: Option<Period>,
    /// `lateMessageRejectionStartDateTime`, in ms.
    pub late_message_rejection_start: Option<i64>,
    /// librdkafka properties as strings.
    pub consumer_properties: BTreeMap<String, String>,
    /// Poll timeout in ms.
    pub poll_timeout_ms: u64,
    /// The lag-based autoscaler's settings, checked, when it is enabled.
    pub auto_scaler: Option<crate::spec::autoscaler::AutoScalerConfig>,
    /// `idleConfig`, when it is enabled.
    pub idle: Option<crate::spec::idle::IdleConfig>,
}

/// Resolved `tuningConfig`.
#[derive(Debug, Clone, PartialEq)]
pub struct TuningSettings {
    /// Rows in memory before a persist.
    pub max_rows_in_memory: u64,
    /// Estimated bytes in memory before a persist; `None` when disabled.
    pub max_bytes_in_memory: Option<u64>,
    /// Rows per final segment.
    pub max_rows_per_segment: u64,
    /// Rows per task before handoff.
    pub max_total_rows: u64,
    /// Persist period.
    pub intermediate_persist_period: Period,
    /// Parse exceptions tolerated.
    pub max_parse_exceptions: u64,
    /// Parse exceptions kept with their reasons.
    pub max_saved_parse_exceptions: u64,
    /// Log each parse exception.
    pub log_parse_exceptions: bool,
    /// Reset out-of-range offsets automatically.
    pub reset_offset_automatically: bool,
    /// Compression of final segments.
    pub index: Compression,
    /// Compression of hydrants.
    pub intermediate_index: Compression,
}

/// Column compression chosen by an `indexSpec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compression {
    /// Codec of dimension columns (dictionaries, row ids, bitmaps).
    pub dimensions: Codec,
    /// Codec of metric and time columns.
    pub metrics: Codec,
}

impl Default for Compression {
    fn default() -> Self {
        Self { dimensions: Codec::Lz4, metrics: Codec::Lz4 }
    }
}

/// Sluice's serverless settings, in the optional `sluiceConfig` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SluiceConfig {
    /// Most records one task reads (default 2,000,000), sized for the Lambda time limit.
    #[serde(default = "default_max_records")]
    pub max_records_per_task: u64,
    /// Most record bytes one task reads (default 512 MiB).
    #[serde(default = "default_max_bytes")]
    pub max_bytes_per_task: u64,
    /// Time a task may run before it checkpoints and returns incomplete (default `PT10M`).
    #[serde(default = "default_budget")]
    pub task_time_budget: String,
    /// Also commit the published offsets to the Kafka consumer group `sluice.<dataSource>`, so
    /// Kafka's lag tools see the progress (informational: Sluice never reads them back). A group
    /// of that name that another client joined is left untouched, and the supervisor's status
    /// says so.
    #[serde(default)]
    pub commit_offsets_to_kafka: bool,
    /// Real-time tasks: when present, a group's task reads on as records arrive and makes
    /// them queryable every `checkpointPeriod`, instead of reading a planned range and ending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realtime: Option<RealtimeConfig>,
}

/// `sluiceConfig.realtime`: a group keeps one open task that reads records as they arrive.
/// What it costs: the indexer runs for as long as records keep arriving (billed Lambda time
/// while waiting for them), and writes a checkpoint per `checkpointPeriod` while it reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RealtimeConfig {
    /// How often what the task read is persisted, uploaded and checkpointed, and so becomes
    /// queryable (default `PT1S`).
    #[serde(default = "default_checkpoint_period")]
    pub checkpoint_period: String,
    /// A task that reads no record for this long ends, and with it the invocation; the group
    /// rests, and the supervisor's first pass that sees a record starts it again (default
    /// `PT5M`).
    /// An idle datasource then costs only the supervisor's passes.
    #[serde(default = "default_idle_after")]
    pub idle_after: String,
}

fn default_checkpoint_period() -> String {
    "PT1S".to_string()
}
fn default_idle_after() -> String {
    "PT5M".to_string()
}

impl RealtimeConfig {
    /// The checkpoint period in ms (validated at submit).
    pub fn checkpoint_period_ms(&self) -> i64 {
        Period::parse(&self.checkpoint_period).ok().and_then(|p| p.fixed_millis()).unwrap_or(1_000)
    }

    /// The idle time in ms after which a task ends (validated at submit).
    pub fn idle_after_ms(&self) -> i64 {
        Period::parse(&self.idle_after).ok().and_then(|p| p.fixed_millis()).unwrap_or(300_000)
    }
}

fn default_max_records() -> u64 {
    2_000_000
}
fn default_max_bytes() -> u64 {
    512 << 20
}
fn default_budget() -> String {
    "PT10M".to_string()
}

impl Default for SluiceConfig {
    fn default() -> Self {
        Self {
            max_records_per_task: default_max_records(),
            max_bytes_per_task: default_max_bytes(),
            task_time_budget: default_budget(),
            commit_offsets_to_kafka: false,
            realtime: None,
        }
    }
}

/// Default `maxBytesInMemory`: 64 MiB, sized for a Lambda of 512 MiB or more.
pub const DEFAULT_MAX_BYTES_IN_MEMORY: u64 = 64 << 20;
/// Default `maxRowsInMemory` (Druid's).
pub const DEFAULT_MAX_ROWS_IN_MEMORY: u64 = 150_000;
