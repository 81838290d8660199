//! Indexing tasks as the metadata store holds them: the `task#` item the supervisor plans,
//! an indexer attempt claims and checkpoints, and the merger publishes; and the `ckpt#`
//! items that record, after each hydrant upload, the hydrants so far and the exact offsets
//! they cover. Layout and conditions: `docs/metadata-layout.md`.
//!
//! ```text
//!  planned --claim(attempt+1, lease)--> running --checkpoint*--> complete --publish--> published
//!                                          |  \--deadline--> incomplete --claim--> running ...
//!                                          \--fatal error--> failed
//! ```
//!
//! Every write of an attempt is conditioned on the task item's version it holds, so an attempt
//! that lost its lease (another attempt claimed the task) cannot write anything visible.

use crate::datasource::{parse_body, DatasourceError};
use crate::indexer::{MessageWindow, RowMeters};
use crate::kafka::{OffsetRange, ResetEvent};
use crate::metadata::MetadataStore;
use crate::time::Interval;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Identity of a task: datasource, partition group, sequence number within the group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TaskId {
    /// Datasource.
    pub datasource: String,
    /// Partition group (`partition % taskCount`).
    pub group: u32,
    /// Sequence number of the task within its group.
    pub seq: u64,
}

impl TaskId {
    /// Partition key of every item of the datasource.
    pub fn pk(&self) -> String {
        datasource_pk(&self.datasource)
    }

    /// Sort key of the task item.
    pub fn sk(&self) -> String {
        format!("task#{:04}#{:012}", self.group, self.seq)
    }

    /// Sort key prefix of every checkpoint of the task.
    pub fn checkpoint_prefix(&self) -> String {
        format!("ckpt#{:04}#{:012}#", self.group, self.seq)
    }

    /// Sort key of checkpoint `n` of `attempt`.
    pub fn checkpoint_sk(&self, attempt: u32, n: u32) -> String {
        format!("{}{attempt:04}#{n:06}", self.checkpoint_prefix())
    }

    /// Object key of hydrant `n` of `attempt` for the time chunk `chunk`: unique to
    /// (datasource, task, attempt, chunk, sequence).
    pub fn hydrant_key(&self, attempt: u32, chunk: Interval, n: u32) -> String {
        format!(
            "hydrants/{}/{:04}/{:012}/{attempt:04}/{}/{n:06}.hyd",
            self.datasource,
            self.group,
            self.seq,
            crate::time::format_iso(chunk.start).replace(':', "-")
        )
    }
}

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}_{:04}_{:012}", self.datasource, self.group, self.seq)
    }
}

/// Partition key of a datasource's items.
pub fn datasource_pk(datasource: &str) -> String {
    format!("ds#{datasource}")
}

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskState {
    /// Planned by the supervisor, never run.
    Planned,
    /// Held by an attempt until its lease expires.
    Running,
    /// An attempt stopped before the end (deadline or a retryable error); to be continued.
    Incomplete,
    /// Every range read and persisted; waiting for the merger.
    Complete,
    /// Merged and published with its offsets.
    Published,
    /// Failed for a reason a retry cannot fix.
    Failed,
}

impl TaskState {
    /// The state as the items spell it (`planned`, `running`, ...).
    pub fn name(self) -> &'static str {
        match self {
            TaskState::Planned => "planned",
            TaskState::Running => "running",
            TaskState::Incomplete => "incomplete",
            TaskState::Complete => "complete",
            TaskState::Published => "published",
            TaskState::Failed => "failed",
        }
    }
}

/// The body of a `task#` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskItem {
    /// The task's identity.
    pub id: TaskId,
    /// The Druid spec the task indexes with (tasks carry their schema, as in Druid).
    pub spec: serde_json::Value,
    /// Topic.
    pub topic: String,
    /// The offset ranges to read, one per partition of the group.
    pub ranges: Vec<OffsetRange>,
    /// Rows outside this window are thrown away (Druid's minimum/maximumMessageTime).
    pub window: MessageWindow,
    /// When the supervisor planned the task (ms).
    pub created_ms: i64,
    /// State.
    pub state: TaskState,
    /// The last attempt that claimed the task (0: none yet).
    pub attempt: u32,
    /// Until when the attempt holds the task (ms).
    pub lease_expires_ms: Option<i64>,
    /// Per partition, the next offset to read as of the last checkpoint.
    pub positions: BTreeMap<i32, i64>,
    /// Checkpoints written by the current attempt.
    pub num_checkpoints: u32,
    /// Why the task failed or the last attempt stopped.
    pub error: Option<String>,
    /// The merge whose segments the publish made visible.
    #[serde(default)]
    pub published_by: Option<String>,
    /// When the task was published or failed (ms): cleanup waits a grace period after it.
    #[serde(default)]
    pub finished_ms: Option<i64>,
}

impl TaskItem {
    /// A planned task.
    pub fn planned(
        id: TaskId,
        spec: serde_json::Value,
        topic: &str,
        ranges: Vec<OffsetRange>,
        window: MessageWindow,
        created_ms: i64,
    ) -> Self {
        let positions = ranges.iter().map(|r| (r.partition, r.start)).collect();
        Self {
            id,
            spec,
            topic: topic.into(),
            ranges,
            window,
            created_ms,
            state: TaskState::Planned,
            attempt: 0,
            lease_expires_ms: None,
            positions,
            num_checkpoints: 0,
            error: None,
            published_by: None,
            finished_ms: None,
        }
    }
}

/// A hydrant as a checkpoint records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HydrantRef {
    /// Object key.
    pub key: String,
    /// Its time chunk.
    pub chunk: Interval,
    /// Rows it holds.
    pub num_rows: u64,
    /// Its size in bytes.
    pub num_bytes: u64,
}

/// The body of a `ckpt#` item: written after the hydrants it lists are uploaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Checkpoint {
    /// The attempt that wrote it.
    pub attempt: u32,
    /// Its number within the attempt.
    pub n: u32,
    /// Hydrants uploaded since the previous checkpoint.
    pub hydrants: Vec<HydrantRef>,
    /// Per partition, the next offset to read: every record before it is in a hydrant of
    /// this or an earlier checkpoint (or was counted and dropped).
    pub positions: BTreeMap<i32, i64>,
    /// Per partition, where its range ends (after any reset).
    pub ends: BTreeMap<i32, i64>,
    /// Row meters of the whole task so far.
    pub meters: RowMeters,
    /// Ranges moved by the reset policy so far.
    pub resets: Vec<ResetEvent>,
}

/// The state of a task rebuilt from its checkpoints, in sort-key order (attempt, number).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Progress {
    /// Every hydrant checkpointed.
    pub hydrants: Vec<HydrantRef>,
    /// The last checkpoint, if any.
    pub last: Option<Checkpoint>,
}

impl Progress {
    /// Folds checkpoints (sorted by sort key) into the progress they record.
    pub fn from_checkpoints(checkpoints: impl IntoIterator<Item = Checkpoint>) -> Self {
        let mut progress = Progress::default();
        for mut c in checkpoints {
            progress.hydrants.append(&mut c.hydrants);
            progress.last = Some(c);
        }
        progress
    }
}

/// Reads a task's checkpoints and folds them into its progress.
pub async fn load_progress(meta: &dyn MetadataStore, id: &TaskId) -> Result<Progress, DatasourceError> {
    let items = meta.query(&id.pk(), &id.checkpoint_prefix()).await?;
    let checkpoints =
        items.iter().map(|i| parse_body::<Checkpoint>(&id.datasource, i)).collect::<Result<Vec<_>, _>>()?;
    Ok(Progress::from_checkpoints(checkpoints))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_names_are_the_items_spelling() {
        for s in [
            TaskState::Planned,
            TaskState::Running,
            TaskState::Incomplete,
            TaskState::Complete,
            TaskState::Published,
            TaskState::Failed,
        ] {
            assert_eq!(serde_json::to_value(s).expect("state"), s.name());
        }
    }
}
