//! Sluice's indexing tasks in the shapes of Druid's task API: `TaskStatusPlus` (the lists and
//! `/task/{id}/status`), the `index_kafka` payload (`/task/{id}`) and the
//! `ingestionStatsAndErrors` report (`/task/{id}/reports`), built from a live task item or,
//! once cleanup deleted it, from the task's kept report. Sluice's own fields sit beside
//! Druid's, under `sluice`.
//!
//! | Sluice task state | Druid `status` | `runnerStatusCode` | listed under `state=` | `ingestionState` |
//! | --- | --- | --- | --- | --- |
//! | planned (not invoked yet) | `RUNNING` | `PENDING` | `pending` | `NOT_STARTED` |
//! | running (an attempt holds its lease) | `RUNNING` | `RUNNING` | `running` | `BUILD_SEGMENTS` |
//! | incomplete (to be continued) | `RUNNING` | `PENDING` | `pending` | `BUILD_SEGMENTS` |
//! | complete (read, waiting for the merger) | `RUNNING` | `RUNNING` | `running` | `BUILD_SEGMENTS` |
//! | published | `SUCCESS` | `NONE` | `complete` | `COMPLETED` |
//! | failed | `FAILED` | `NONE` | `complete` | `COMPLETED` |
//!
//! No task waits for a lock (a publish is one conditional write), so `state=waiting` lists
//! none. A task has no host to report: `location` is Druid's "unassigned" (`null`, `-1`, `-1`).

use serde_json::{json, Map, Value};
use sluice_format::meters::RowMeters;
use sluice_format::offsets::{OffsetRange, OPEN_END};
use sluice_format::spec::redacted_spec;
use sluice_format::time::format_iso;
use sluice_pipeline::layout::report::TaskReport;
use sluice_pipeline::task::{TaskId, TaskItem, TaskState};
use std::collections::BTreeMap;

/// Druid's type of every Sluice task.
pub const TASK_TYPE: &str = "index_kafka";

/// A task as the task API shows it: from its live item or its kept report.
#[derive(Debug, Clone)]
pub struct TaskView {
    /// Its identity.
    pub id: TaskId,
    /// Its state.
    pub state: TaskState,
    topic: String,
    ranges: Vec<OffsetRange>,
    positions: BTreeMap<i32, i64>,
    /// When it was planned (ms).
    pub created_ms: i64,
    started_ms: Option<i64>,
    /// When it was published or failed (ms).
    pub finished_ms: Option<i64>,
    attempts: u32,
    error: Option<String>,
    /// Its spec, redacted (a live task's own; none for a report).
    spec: Option<Value>,
    /// Whether it comes from a live item (or a kept report).
    pub live: bool,
}

impl TaskView {
    /// A live task.
    pub fn of_item(t: &TaskItem) -> Self {
        Self {
            id: t.id.clone(),
            state: t.state,
            topic: t.topic.clone(),
            ranges: t.ranges.clone(),
            positions: t.positions.clone(),
            created_ms: t.created_ms,
            started_ms: t.started_ms,
            finished_ms: t.finished_ms,
            attempts: t.attempt,
            error: t.error.clone(),
            spec: Some(redacted_spec(&t.spec)),
            live: true,
        }
    }

    /// A finished task, from its report.
    pub fn of_report(r: &TaskReport) -> Self {
        Self {
            id: r.id.clone(),
            state: r.state,
            topic: r.topic.clone(),
            ranges: r.ranges.clone(),
            positions: r.positions.clone(),
            created_ms: r.created_ms,
            started_ms: r.started_ms,
            finished_ms: Some(r.finished_ms),
            attempts: r.attempts,
            error: r.error.clone(),
            spec: None,
            live: false,
        }
    }

    /// Druid's `status` and `runnerStatusCode`.
    pub fn codes(&self) -> (&'static str, &'static str) {
        match self.state {
            TaskState::Planned | TaskState::Incomplete => ("RUNNING", "PENDING"),
            TaskState::Running | TaskState::Complete => ("RUNNING", "RUNNING"),
            TaskState::Published => ("SUCCESS", "NONE"),
            TaskState::Failed => ("FAILED", "NONE"),
        }
    }

    /// The list a `state=` filter puts the task in: `pending`, `running` or `complete`.
    pub fn list(&self) -> &'static str {
        match self.codes() {
            (_, "PENDING") => "pending",
            (_, "RUNNING") => "running",
            _ => "complete",
        }
    }

    fn duration_ms(&self) -> i64 {
        match (self.started_ms.unwrap_or(self.created_ms), self.finished_ms) {
            (start, Some(end)) => (end - start).max(0),
            _ => -1,
        }
    }

    fn group_id(&self) -> String {
        format!("{TASK_TYPE}_{}", self.id.datasource)
    }

    /// Druid's `TaskStatusPlus`, with Sluice's state, group, number and attempts beside it.
    pub fn status_plus(&self) -> Value {
        let (status, runner) = self.codes();
        json!({
            "id": self.id.to_string(),
            "groupId": self.group_id(),
            "type": TASK_TYPE,
            "createdTime": format_iso(self.created_ms),
            "queueInsertionTime": format_iso(self.created_ms),
            "statusCode": status,
            "status": status,
            "runnerStatusCode": runner,
            "duration": self.duration_ms(),
            "location": location(),
            "dataSource": self.id.datasource,
            "errorMsg": self.error,
            "sluice": {
                "state": self.state.name(),
                "group": self.id.group,
                "seq": self.id.seq,
                "attempts": self.attempts,
                "startTime": self.started_ms.map(format_iso),
            },
        })
    }

    /// Its row of `sys.tasks`.
    pub fn row(&self) -> sluice_sql::TaskRow {
        let (status, runner) = self.codes();
        sluice_sql::TaskRow {
            id: self.id.to_string(),
            group_id: self.group_id(),
            kind: TASK_TYPE.to_string(),
            datasource: self.id.datasource.clone(),
            created_time: format_iso(self.created_ms),
            status: status.to_string(),
            runner_status: runner.to_string(),
            duration_ms: self.duration_ms(),
            error: self.error.clone(),
        }
    }

    /// One entry of `POST /druid/indexer/v1/taskStatus`: Druid's `TaskStatus`.
    pub fn status(&self) -> Value {
        json!({
            "id": self.id.to_string(),
            "status": self.codes().0,
            "duration": self.duration_ms(),
            "errorMsg": self.error,
            "location": location(),
        })
    }

    /// Druid's `index_kafka` task payload: the spec it indexes with (`spec`: the version in
    /// force when it was planned, for a task known from its report), secrets redacted, and its
    /// offset ranges.
    pub fn payload(&self, spec: Option<&Value>) -> Value {
        let given = spec.map(redacted_spec);
        let spec = self.spec.as_ref().or(given.as_ref());
        // A supervisor spec is `{"type": "kafka", "spec": {...}}` or the same fields flat.
        let body = spec.map(|s| s.get("spec").filter(|b| b.is_object()).unwrap_or(s));
        let part = |name: &str| body.and_then(|b| b.get(name)).cloned().unwrap_or(Value::Null);
        let io = part("ioConfig");
        let offsets = |f: &dyn Fn(&OffsetRange) -> i64| -> Map<String, Value> {
            self.ranges.iter().map(|r| (r.partition.to_string(), json!(f(r)))).collect()
        };
        let end = |r: &OffsetRange| match r.end {
            // Druid's running task reads to Long.MAX_VALUE until its end is set; a task done
            // reading ended where it stopped.
            OPEN_END if matches!(self.state, TaskState::Complete | TaskState::Published | TaskState::Failed) => {
                self.positions.get(&r.partition).copied().unwrap_or(r.start)
            }
            end => end,
        };
        json!({
            "type": TASK_TYPE,
            "id": self.id.to_string(),
            "groupId": self.group_id(),
            "resource": {"availabilityGroup": format!("{}_{}", self.group_id(), self.id.group), "requiredCapacity": 1},
            "dataSchema": super::druid_spec::data_schema(&part("dataSchema")),
            "tuningConfig": super::druid_spec::tuning_config(&part("tuningConfig")),
            "ioConfig": {
                "type": "kafka",
                "taskGroupId": self.id.group,
                "baseSequenceName": format!("{}_{}", self.group_id(), self.id.group),
                "startSequenceNumbers": {
                    "type": "start",
                    "stream": self.topic,
                    "partitionSequenceNumberMap": offsets(&|r| r.start),
                    "exclusivePartitions": [],
                },
                "endSequenceNumbers": {"type": "end", "stream": self.topic, "partitionSequenceNumberMap": offsets(&end)},
                "consumerProperties": io.get("consumerProperties").cloned().unwrap_or(json!({})),
                "useTransaction": true,
                "inputFormat": io.get("inputFormat").cloned().unwrap_or(Value::Null),
            },
            "context": {},
            "dataSource": self.id.datasource,
            "sluice": {"specKnown": spec.is_some()},
        })
    }

    /// Druid's task report: `ingestionStatsAndErrors` with the row meters and the saved parse
    /// exceptions (where each happened, partition and offset, beside Druid's fields).
    pub fn report(&self, meters: Option<&RowMeters>) -> Value {
        let ingestion_state = match self.state {
            TaskState::Planned => "NOT_STARTED",
            TaskState::Running | TaskState::Incomplete | TaskState::Complete => "BUILD_SEGMENTS",
            TaskState::Published | TaskState::Failed => "COMPLETED",
        };
        let events: Vec<Value> = meters
            .map(|m| {
                m.saved_exceptions
                    .iter()
                    .rev()
                    .map(|e| {
                        json!({
                            "input": null,
                            "errorType": if e.row_kept { "processedWithError" } else { "unparseable" },
                            "details": [e.reason],
                            "timeOfExceptionMillis": null,
                            "partition": e.partition,
                            "offset": e.offset,
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        json!({
            "ingestionStatsAndErrors": {
                "type": "ingestionStatsAndErrors",
                "taskId": self.id.to_string(),
                "payload": {
                    "ingestionState": ingestion_state,
                    "unparseableEvents": {"buildSegments": events},
                    "rowStats": {"buildSegments": row_stats(meters)},
                    "errorMsg": self.error,
                    "segmentAvailabilityConfirmed": self.state == TaskState::Published,
                    "segmentAvailabilityWaitTimeMs": 0,
                },
            }
        })
    }
}

/// Druid's row stats of one phase (zeros before a task's first checkpoint).
pub fn row_stats(meters: Option<&RowMeters>) -> Value {
    let m = meters.cloned().unwrap_or_else(|| RowMeters::new(0, 0));
    json!({
        "processed": m.processed,
        "processedBytes": m.processed_bytes,
        "processedWithError": m.processed_with_error,
        "thrownAway": m.thrown_away,
        "unparseable": m.unparseable,
    })
}

/// Druid's location of a task no server runs.
fn location() -> Value {
    json!({"host": null, "port": -1, "tlsPort": -1})
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_format::meters::ParseException;
    use sluice_format::window::MessageWindow;

    fn task(state: TaskState) -> TaskItem {
        let id = TaskId { datasource: "wiki".into(), group: 2, seq: 5 };
        let ranges = vec![OffsetRange { partition: 2, start: 10, end: OPEN_END }];
        let spec = json!({"type": "kafka", "spec": {"dataSchema": {"dataSource": "wiki"}, "ioConfig": {
            "topic": "edits", "consumerProperties": {"sasl.jaas.config": "password=hunter2"}}}});
        let mut t = TaskItem::planned(id, spec, "edits", ranges, MessageWindow::default(), 1_000);
        t.state = state;
        t
    }

    #[test]
    fn every_state_has_druid_codes_and_one_list() {
        let expect = [
            (TaskState::Planned, "RUNNING", "PENDING", "pending"),
            (TaskState::Running, "RUNNING", "RUNNING", "running"),
            (TaskState::Incomplete, "RUNNING", "PENDING", "pending"),
            (TaskState::Complete, "RUNNING", "RUNNING", "running"),
            (TaskState::Published, "SUCCESS", "NONE", "complete"),
            (TaskState::Failed, "FAILED", "NONE", "complete"),
        ];
        for (state, status, runner, list) in expect {
            let v = TaskView::of_item(&task(state));
            assert_eq!((v.codes(), v.list()), ((status, runner), list), "{state:?}");
            let s = v.status_plus();
            assert_eq!((s["status"].as_str(), s["runnerStatusCode"].as_str()), (Some(status), Some(runner)));
        }
    }

    #[test]
    fn a_finished_task_has_a_duration_and_its_closed_end_offsets() {
        let mut t = task(TaskState::Published);
        t.started_ms = Some(2_000);
        t.finished_ms = Some(9_500);
        t.positions.insert(2, 77);
        let v = TaskView::of_item(&t);
        assert_eq!(v.status_plus()["duration"], 7_500);
        let payload = v.payload(None);
        let end = &payload["ioConfig"]["endSequenceNumbers"]["partitionSequenceNumberMap"]["2"];
        assert_eq!(end, 77, "{payload}");
        assert_eq!(payload["ioConfig"]["startSequenceNumbers"]["partitionSequenceNumberMap"]["2"], 10);
        assert_eq!(payload["dataSchema"]["dataSource"], "wiki");
        assert!(!payload.to_string().contains("hunter2"), "{payload}");
        assert_eq!(TaskView::of_item(&task(TaskState::Running)).status_plus()["duration"], -1);
    }

    #[test]
    fn a_report_carries_druid_row_stats_and_where_each_exception_happened() {
        let mut meters = RowMeters::new(10, 100);
        meters.processed = 9;
        meters.unparseable = 1;
        let e = ParseException { partition: 2, offset: 44, reason: "bad json".into(), row_kept: false };
        meters.saved_exceptions.push_back(e);
        let r = TaskView::of_item(&task(TaskState::Running)).report(Some(&meters));
        let p = &r["ingestionStatsAndErrors"]["payload"];
        assert_eq!(p["ingestionState"], "BUILD_SEGMENTS");
        assert_eq!(p["rowStats"]["buildSegments"]["processed"], 9);
        assert_eq!(p["rowStats"]["buildSegments"]["unparseable"], 1);
        let event = &p["unparseableEvents"]["buildSegments"][0];
        assert_eq!((event["errorType"].as_str(), event["offset"].as_i64()), (Some("unparseable"), Some(44)));
        assert_eq!(event["details"][0], "bad json");
    }
}
