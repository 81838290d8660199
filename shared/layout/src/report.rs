//! Task reports: what a finished task did, kept after cleanup deletes its task item and
//! checkpoints, so that Druid's task API (`/druid/indexer/v1/task/{id}/status`, `/reports`,
//! the complete-task list) answers for it.
//!
//! ```text
//!  pk ds#<datasource>/<group>   sk report#<seq>    one per finished task, beside its group's tasks
//! ```
//!
//! Cleanup writes a task's report (only if absent: a cleanup killed after some checkpoints were
//! deleted must not overwrite the report with fewer meters) before it deletes anything of the
//! task, and deletes the report [`REPORTS_KEPT_PER_GROUP`] tasks older in the group: a group
//! keeps its last reports, whatever its task rate, and a report is one read by task id.

use crate::task::{TaskId, TaskItem, TaskState};
use serde::{Deserialize, Serialize};
use sluice_format::meters::RowMeters;
use sluice_format::offsets::OffsetRange;
use std::collections::BTreeMap;

/// Reports a partition group keeps: its last 2,000 finished tasks (a day and a half of
/// one-minute tasks, twelve weeks of hourly ones).
pub const REPORTS_KEPT_PER_GROUP: u64 = 2_000;

/// Bytes of a report item's body, under DynamoDB's 400 KB item limit.
pub const REPORT_ITEM_BYTES: usize = 360 << 10;

/// The body of a `report#` item: a finished task as the task API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskReport {
    /// The task's identity.
    pub id: TaskId,
    /// Published or failed.
    pub state: TaskState,
    /// Topic.
    pub topic: String,
    /// The offset ranges it was planned to read (an open end: to the position it closed at).
    pub ranges: Vec<OffsetRange>,
    /// Per partition, the next offset it would have read: where it stopped.
    pub positions: BTreeMap<i32, i64>,
    /// When the supervisor planned it (ms).
    pub created_ms: i64,
    /// When its first attempt claimed it (ms).
    #[serde(default)]
    pub started_ms: Option<i64>,
    /// When it was published or failed (ms).
    pub finished_ms: i64,
    /// Attempts that claimed it.
    pub attempts: u32,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Its row meters and last parse exceptions, as of its last checkpoint (none: it never
    /// checkpointed).
    #[serde(default)]
    pub meters: Option<RowMeters>,
}

impl TaskReport {
    /// The report of a finished `task`, with the meters of its last checkpoint; cut to fit
    /// [`REPORT_ITEM_BYTES`] (the oldest saved parse exceptions go first). None if the task
    /// has not finished.
    pub fn of(task: &TaskItem, meters: Option<RowMeters>) -> Option<Self> {
        if !matches!(task.state, TaskState::Published | TaskState::Failed) {
            return None;
        }
        let mut report = Self {
            id: task.id.clone(),
            state: task.state,
            topic: task.topic.clone(),
            ranges: task.ranges.clone(),
            positions: task.positions.clone(),
            created_ms: task.created_ms,
            started_ms: task.started_ms,
            finished_ms: task.finished_ms?,
            attempts: task.attempt,
            error: task.error.clone(),
            meters,
        };
        report.fit(REPORT_ITEM_BYTES);
        Some(report)
    }

    fn fit(&mut self, budget: usize) {
        let size = |r: &Self| serde_json::to_vec(r).map_or(usize::MAX, |v| v.len());
        while size(self) > budget {
            match self.meters.as_mut().filter(|m| !m.saved_exceptions.is_empty()) {
                Some(m) => {
                    let drop = m.saved_exceptions.len().div_ceil(2);
                    m.saved_exceptions.drain(..drop);
                }
                None => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_format::meters::ParseException;
    use sluice_format::window::MessageWindow;

    fn finished(state: TaskState) -> TaskItem {
        let id = TaskId { datasource: "wiki".into(), group: 1, seq: 7 };
        let ranges = vec![OffsetRange { partition: 1, start: 0, end: 10 }];
        let mut t = TaskItem::planned(id, serde_json::json!({"k": 1}), "edits", ranges, MessageWindow::default(), 5);
        t.state = state;
        t.finished_ms = Some(86_400_000 * 3 + 1);
        t
    }

    #[test]
    fn only_a_finished_task_has_a_report() {
        assert!(TaskReport::of(&finished(TaskState::Complete), None).is_none());
        let r = TaskReport::of(&finished(TaskState::Published), None).expect("report");
        assert_eq!((r.id.seq, r.finished_ms, r.state), (7, 86_400_000 * 3 + 1, TaskState::Published));
    }

    #[test]
    fn a_report_too_large_for_an_item_drops_its_oldest_exceptions() {
        let mut meters = RowMeters::new(500, u64::MAX);
        for offset in 0..500 {
            let e = ParseException { partition: 1, offset, reason: "x".repeat(200), row_kept: false };
            meters.saved_exceptions.push_back(e);
        }
        let mut task = finished(TaskState::Failed);
        task.error = Some("e".repeat(300 << 10));
        let r = TaskReport::of(&task, Some(meters)).expect("report");
        let size = serde_json::to_vec(&r).expect("json").len();
        assert!(size <= REPORT_ITEM_BYTES, "{size} bytes");
        let saved = &r.meters.as_ref().expect("meters").saved_exceptions;
        assert!(saved.len() < 500 && saved.back().map(|e| e.offset) == Some(499), "the newest are kept");
    }
}
