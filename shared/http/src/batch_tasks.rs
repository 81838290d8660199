//! Batch tasks through Druid's task API: `POST /druid/indexer/v1/task` submits an
//! `index_parallel` spec (`{"task": id}`, Druid's answer), and the task routes show a batch
//! task as Druid shows an `index_parallel` one. Input is read only from what the deployment
//! allows (`SLUICE_BATCH_LOCAL_DIRS`, `SLUICE_BATCH_S3_BUCKETS`).
//!
//! | Sluice batch state | Druid `status` | `runnerStatusCode` | `ingestionState` |
//! | --- | --- | --- | --- |
//! | running (splits indexing, or publishing) | `RUNNING` | `RUNNING` | `BUILD_SEGMENTS` |
//! | published | `SUCCESS` | `NONE` | `COMPLETED` |
//! | failed | `FAILED` | `NONE` | `COMPLETED` |

use super::{json_body, ApiError, ApiState};
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{json, Value};
use sluice_format::spec::redacted_spec;
use sluice_format::time::{format_iso, now_ms};
use sluice_pipeline::batch::{self, BatchError, BatchReport, BatchState, BatchTaskItem, BATCH_TASK_TYPE};
use sluice_store::metadata::MetadataStore;
use std::sync::Arc;

impl From<BatchError> for ApiError {
    fn from(e: BatchError) -> Self {
        match e {
            BatchError::Spec(_) | BatchError::Input(_) => {
                ApiError::new(StatusCode::BAD_REQUEST, "Invalid spec", "TaskError", e.to_string())
            }
            BatchError::IdTaken(_) => {
                ApiError::new(StatusCode::BAD_REQUEST, "Invalid request", "TaskError", e.to_string())
            }
            BatchError::Unknown(_) => ApiError::new(StatusCode::NOT_FOUND, "Not found", "TaskError", e.to_string()),
            BatchError::Metadata(e) => e.into(),
            BatchError::Storage { .. } => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "Unknown exception", "TaskError", e.to_string())
            }
        }
    }
}

/// `POST /druid/indexer/v1/task`: submits a batch task; the supervisor's next pass (or the
/// local runner) starts its splits. A resubmission of the same spec and id answers the same id.
pub async fn submit(State(s): State<Arc<ApiState>>, body: String) -> Result<axum::Json<Value>, ApiError> {
    let spec = json_body(&body)?;
    let submitted = batch::submit(s.meta.as_ref(), &batch::process_access(), spec, now_ms()).await?;
    for w in &submitted.warnings {
        tracing::warn!(task = submitted.id, warning = %w, "batch spec option");
    }
    Ok(axum::Json(json!({"task": submitted.id})))
}

/// A batch task as the task API shows it.
#[derive(Debug, Clone)]
pub struct BatchView {
    /// Its item.
    pub item: BatchTaskItem,
}

impl BatchView {
    /// Druid's `status` and `runnerStatusCode`.
    pub fn codes(&self) -> (&'static str, &'static str) {
        match self.item.state {
            BatchState::Running => ("RUNNING", "RUNNING"),
            BatchState::Published => ("SUCCESS", "NONE"),
            BatchState::Failed => ("FAILED", "NONE"),
        }
    }

    /// The list a `state=` filter puts the task in.
    pub fn list(&self) -> &'static str {
        if self.item.state == BatchState::Running {
            "running"
        } else {
            "complete"
        }
    }

    fn duration_ms(&self) -> i64 {
        self.item.finished_ms.map_or(-1, |end| (end - self.item.created_ms).max(0))
    }

    /// Druid's `TaskStatusPlus`.
    pub fn status_plus(&self) -> Value {
        let (status, runner) = self.codes();
        let t = &self.item;
        json!({
            "id": t.id, "groupId": t.id, "type": BATCH_TASK_TYPE,
            "createdTime": format_iso(t.created_ms), "queueInsertionTime": format_iso(t.created_ms),
            "statusCode": status, "status": status, "runnerStatusCode": runner,
            "duration": self.duration_ms(), "location": {"host": null, "port": -1, "tlsPort": -1},
            "dataSource": t.datasource, "errorMsg": t.error,
            "sluice": {"splits": t.splits, "append": t.append, "segments": t.segments, "replaced": t.replaced},
        })
    }

    /// One entry of `POST /druid/indexer/v1/taskStatus`.
    pub fn status(&self) -> Value {
        json!({"id": self.item.id, "status": self.codes().0, "duration": self.duration_ms(),
            "errorMsg": self.item.error, "location": {"host": null, "port": -1, "tlsPort": -1}})
    }

    /// Its row of `sys.tasks`.
    pub fn row(&self) -> sluice_sql::TaskRow {
        let (status, runner) = self.codes();
        sluice_sql::TaskRow {
            id: self.item.id.clone(),
            group_id: self.item.id.clone(),
            kind: BATCH_TASK_TYPE.to_string(),
            datasource: self.item.datasource.clone(),
            created_time: format_iso(self.item.created_ms),
            status: status.to_string(),
            runner_status: runner.to_string(),
            duration_ms: self.duration_ms(),
            error: self.item.error.clone(),
        }
    }

    /// Druid's `index_parallel` task payload: the spec as submitted, secrets redacted.
    pub fn payload(&self, spec: &Value) -> Value {
        let body = redacted_spec(spec).get("spec").cloned().unwrap_or(Value::Null);
        json!({"type": BATCH_TASK_TYPE, "id": self.item.id, "groupId": self.item.id,
            "dataSource": self.item.datasource, "spec": body, "context": {}})
    }

    /// Druid's task report: `ingestionStatsAndErrors`, the splits' meters and kept exceptions.
    pub fn report(&self, r: &BatchReport) -> Value {
        let state = if self.item.state == BatchState::Running { "BUILD_SEGMENTS" } else { "COMPLETED" };
        let events: Vec<Value> = r
            .exceptions
            .iter()
            .map(|(piece, e)| {
                json!({"input": piece, "errorType": if e.row_kept { "processedWithError" } else { "unparseable" },
                    "details": [e.reason], "timeOfExceptionMillis": null, "offset": e.offset})
            })
            .collect();
        let m = &r.meters;
        json!({"ingestionStatsAndErrors": {"type": "ingestionStatsAndErrors", "taskId": self.item.id, "payload": {
            "ingestionState": state,
            "unparseableEvents": {"buildSegments": events},
            "rowStats": {"buildSegments": {"processed": m.processed, "processedBytes": m.processed_bytes,
                "processedWithError": m.processed_with_error, "thrownAway": m.thrown_away, "unparseable": m.unparseable}},
            "errorMsg": self.item.error,
            "segmentAvailabilityConfirmed": self.item.state == BatchState::Published,
            "segmentAvailabilityWaitTimeMs": 0,
            "sluice": {"splits": r.splits, "splitsDone": r.splits_done, "splitErrors": r.errors},
        }}})
    }
}

/// A batch task by id.
pub(crate) async fn find(meta: &dyn MetadataStore, id: &str) -> Result<Option<BatchView>, ApiError> {
    if sluice_format::spec::batch::task_id_problem(id).is_some() {
        return Ok(None);
    }
    Ok(batch::find(meta, id).await?.map(|(item, _)| BatchView { item }))
}

/// `GET /druid/indexer/v1/task/{id}` of a batch task.
pub(crate) async fn payload(meta: &dyn MetadataStore, view: &BatchView) -> Result<Value, ApiError> {
    let spec = batch::spec_json(meta, &view.item.id, &view.item.datasource).await?;
    Ok(json!({"task": view.item.id, "payload": view.payload(&spec)}))
}

/// `GET /druid/indexer/v1/task/{id}/reports` of a batch task.
pub(crate) async fn report(meta: &dyn MetadataStore, view: &BatchView) -> Result<Value, ApiError> {
    Ok(view.report(&batch::report(meta, &view.item).await?))
}
