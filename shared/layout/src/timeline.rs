//! The bodies of the segment timeline's items: `chunk#` (a time chunk's version and
//! partition numbering) and `seg#` (one segment record, written by a task's merge or by a
//! compaction).

use crate::keys::segment_sk;
use crate::task::TaskId;
use serde::{Deserialize, Serialize};
use sluice_format::time::Interval;

/// The body of a `chunk#` item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChunkItem {
    /// The time chunk.
    pub interval: Interval,
    /// Version shared by the chunk's appended segments.
    pub version: String,
    /// The next free partition number.
    pub next_partition: u32,
}

/// The body of a `seg#` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentRecord {
    /// Its time chunk.
    pub interval: Interval,
    /// Version.
    pub version: String,
    /// Partition number within the chunk and version.
    pub partition: u32,
    /// Object key in deep storage.
    pub key: String,
    /// Rows.
    pub num_rows: u64,
    /// Bytes.
    pub num_bytes: u64,
    /// Dimension names, in the segment's order.
    pub dimensions: Vec<String>,
    /// Metric names.
    pub metrics: Vec<String>,
    /// The task that produced it (`None`: a compaction's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    /// The compaction (replace number) that produced it (`None`: a task's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace: Option<u64>,
    /// The merge that wrote it: a task's segments are those of the merge its publish names.
    pub merge: String,
    /// The row changes of the compaction configuration that wrote it (Druid's
    /// `lastCompactionState`; `None`: none asked, or written by a task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_state: Option<String>,
    /// Set once its task or compaction is published (before that, visibility follows the
    /// publish).
    pub visible: bool,
}

impl SegmentRecord {
    /// The record's sort key.
    pub fn sk(&self) -> String {
        segment_sk(self.interval.start, &self.version, self.partition)
    }
}
