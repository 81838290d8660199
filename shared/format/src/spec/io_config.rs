//! `ioConfig` of a Kafka supervisor spec.

use super::input_format::InputFormat;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `ioConfig`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IoConfig {
    /// `kafka` when given.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The Kafka topic (or `topicPattern`).
    pub topic: Option<String>,
    /// A regex every topic read matches in full (or `topic`).
    pub topic_pattern: Option<String>,
    /// How record values are parsed (absent with the legacy `parser` form).
    pub input_format: Option<InputFormat>,
    /// Number of partition groups, each read by one task at a time (default 1).
    pub task_count: Option<u32>,
    /// Task replicas: Sluice runs each task once and retries it, so this is ignored.
    pub replicas: Option<u32>,
    /// How long a task reads before publishing (default `PT1H`).
    pub task_duration: Option<String>,
    /// Delay before the supervisor starts: ignored (the schedule decides).
    pub start_delay: Option<String>,
    /// Supervisor period: ignored (the EventBridge schedule decides).
    pub period: Option<String>,
    /// Start from the earliest offset when no offsets are committed (default false).
    #[serde(default)]
    pub use_earliest_offset: bool,
    /// Time allowed for publishing: ignored.
    pub completion_timeout: Option<String>,
    /// Rows older than task start minus this period are thrown away.
    pub late_message_rejection_period: Option<String>,
    /// Rows newer than task end plus this period are thrown away.
    pub early_message_rejection_period: Option<String>,
    /// Rows before this instant are thrown away.
    pub late_message_rejection_start_date_time: Option<String>,
    /// librdkafka properties, `bootstrap.servers` required.
    #[serde(default)]
    pub consumer_properties: BTreeMap<String, serde_json::Value>,
    /// Poll timeout in milliseconds (default 100).
    pub poll_timeout: Option<u64>,
    /// Druid's lag-based autoscaler ([`crate::spec::autoscaler`]), as given.
    pub auto_scaler_config: Option<serde_json::Value>,
    /// Idle supervisor configuration (`enabled`, `inactiveAfterMillis`), as given.
    pub idle_config: Option<serde_json::Value>,
    /// Druid 27's multi-topic flag: refused, `topicPattern` replaced it.
    pub multi_topic: Option<serde_json::Value>,
    /// Extra consumer config provider: not supported.
    pub config_overrides: Option<serde_json::Value>,
}
