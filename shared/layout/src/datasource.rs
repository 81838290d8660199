//! The bodies of a datasource's items: `spec` (the submitted spec and its state), `plan#` and
//! `offsets#` per partition group, `stats` (the last supervisor pass) and `history#` (the specs
//! submitted), and of its entry in the catalog.

use crate::grouping::first_epoch;
use serde::{Deserialize, Serialize};
use sluice_format::meters::MeterTotals;
use std::collections::BTreeMap;

/// Whether the supervisor works on a datasource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SupervisorState {
    /// Plans, indexes and publishes.
    Running,
    /// Plans nothing new; tasks already planned finish and publish.
    Suspended,
    /// Stopped for good: nothing is planned or invoked.
    Terminated,
}

/// One change of the dimension or metric schema, as submitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchemaChange {
    /// When it was submitted (ms).
    pub at_ms: i64,
    /// Dimension names after the change.
    pub dimensions: Vec<String>,
    /// Metric names after the change.
    pub metrics: Vec<String>,
}

/// The body of a datasource's `spec` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpecItem {
    /// The Druid supervisor spec as submitted.
    pub spec: serde_json::Value,
    /// The supervisor's state.
    pub state: SupervisorState,
    /// The latest schema changes (at most 50), oldest first; tasks planned after a change carry
    /// the new spec.
    pub schema_history: Vec<SchemaChange>,
}

/// The body of a `history#` item: a spec as submitted (secret properties redacted), for the
/// supervisor's history and the payload of the tasks planned while it was in force.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpecVersion {
    /// When it was submitted (ms).
    pub submitted_ms: i64,
    /// The spec, redacted.
    pub spec: serde_json::Value,
}

/// Submitted specs a datasource's history keeps, newest; each is at most the spec limit.
pub const MAX_SPEC_VERSIONS: usize = 20;

/// The body of a `plan#` item: where the next task of the group starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanItem {
    /// The grouping epoch the item belongs to (`grouping` item).
    #[serde(default = "first_epoch")]
    pub epoch: u64,
    /// No task is planned any more: the grouping is changing.
    #[serde(default)]
    pub frozen: bool,
    /// Sequence number of the next task.
    pub next_seq: u64,
    /// Per partition of the group, the first offset no task has been planned for.
    pub next_start: BTreeMap<i32, i64>,
    /// Failed tasks up to this sequence number have been handled (the group replanned).
    #[serde(default)]
    pub replanned_after: Option<u64>,
    /// Real time: the group's last open task ended after `idleAfter` without a record, and the
    /// group rests: its next open task is planned by the first pass that sees a record past
    /// `next_start`, where a group that does not rest has an open task planned at once.
    #[serde(default)]
    pub resting: bool,
}

impl Default for PlanItem {
    /// A group nothing was planned for: the first task will be number 1.
    fn default() -> Self {
        Self::fresh(first_epoch(), 1)
    }
}

impl PlanItem {
    /// A group of `epoch` nothing was planned for, whose first task will be number `first_seq`.
    pub fn fresh(epoch: u64, first_seq: u64) -> Self {
        Self {
            epoch,
            frozen: false,
            next_seq: first_seq,
            next_start: BTreeMap::new(),
            replanned_after: first_seq.checked_sub(1).filter(|s| *s > 0),
            resting: false,
        }
    }
}

/// The body of an `offsets#` item: what is published.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OffsetsItem {
    /// The grouping epoch the item belongs to (`grouping` item).
    #[serde(default = "first_epoch")]
    pub epoch: u64,
    /// Per partition of the group, the next offset to publish: every record before it is in a
    /// visible segment (or was counted and dropped), none after it.
    pub offsets: BTreeMap<i32, i64>,
    /// The last task published.
    pub last_seq: Option<u64>,
    /// Row counters of every task published.
    pub totals: MeterTotals,
}

impl Default for OffsetsItem {
    /// A group of the first epoch nothing was published for.
    fn default() -> Self {
        Self::fresh(first_epoch())
    }
}

impl OffsetsItem {
    /// A group of `epoch` nothing was published for.
    pub fn fresh(epoch: u64) -> Self {
        Self { epoch, offsets: BTreeMap::new(), last_seq: None, totals: MeterTotals::default() }
    }
}

/// Per topic, per partition, an offset.
pub type TopicOffsets = BTreeMap<String, BTreeMap<i32, i64>>;

/// The body of a datasource's `stats` item, written by every pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatsItem {
    /// When the pass ran (ms).
    pub updated_ms: i64,
    /// Per topic and partition, the high watermark seen.
    #[serde(default)]
    pub topic_high: TopicOffsets,
    /// Per topic and partition, the committed offset at the start of the pass.
    #[serde(default)]
    pub topic_committed: TopicOffsets,
    /// Per topic and partition, high watermark minus committed offset.
    #[serde(default)]
    pub topic_lag: TopicOffsets,
    /// Per topic and partition, how long ago (ms, at the pass) the oldest record not yet
    /// published was written (0 for a partition caught up; none when its time was not read).
    #[serde(default)]
    pub topic_time_lag_ms: TopicOffsets,
    /// Tasks by state.
    pub tasks: BTreeMap<String, usize>,
    /// The latest task errors, newest first.
    pub recent_errors: Vec<String>,
    /// When the datasource was last active (ms, at a pass): a record arrived, one was not yet
    /// published, or a task was not finished. What `idleConfig` measures from.
    #[serde(default)]
    pub active_ms: Option<i64>,
    /// Whether the supervisor was idle at the pass (Druid's `IDLE`): it invoked no task.
    #[serde(default)]
    pub idle: bool,
}
