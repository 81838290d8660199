//! Druid's supervisor endpoints beyond the spec and status: `/supervisor/{id}/stats`, the
//! history of submitted specs (`/supervisor/history`, `/supervisor/{id}/history`) and the
//! operations on every supervisor at once (`suspendAll`, `resumeAll`, `terminateAll`).
//!
//! Druid's stats give each task's row meters as totals and as 1-, 5- and 15-minute moving
//! averages of the rates. A Sluice task keeps its meters in its checkpoints without their
//! times, so the three averages are one figure: the task's rate since its first attempt
//! started (its totals over the seconds since then). A monitor that reads `totals` reads them
//! exactly.

use super::task_status::row_stats;
use super::{ApiError, ApiState};
use axum::extract::{Path, State};
use serde_json::{json, Map, Value};
use sluice_format::meters::RowMeters;
use sluice_format::time::{format_iso, now_ms};
use sluice_pipeline::datasource::{self, SpecVersion, SupervisorState};
use sluice_pipeline::task::{load_progress, TaskState};
use std::sync::Arc;

/// Supervisors one `*All` operation or the whole history reads at most.
const MAX_SUPERVISORS: usize = 1_000;

/// `GET /druid/indexer/v1/supervisor/{id}/stats`: per task group, per reading or publishing
/// task, `movingAverages` and `totals` of `buildSegments`.
pub async fn stats(State(s): State<Arc<ApiState>>, Path(id): Path<String>) -> Result<axum::Json<Value>, ApiError> {
    let meta = s.meta.as_ref();
    datasource::load(meta, &id).await?;
    let now = now_ms();
    let mut groups: Map<String, Value> = Map::new();
    for task in sluice_pipeline::task::tasks(meta, &id).await? {
        if !matches!(task.state, TaskState::Running | TaskState::Incomplete | TaskState::Complete) {
            continue;
        }
        let meters = load_progress(meta, &task.id).await?.last.map(|c| c.meters);
        let seconds = task.started_ms.map(|t| ((now - t) as f64 / 1_000.0).max(1.0));
        let average = rates(meters.as_ref(), seconds);
        let entry = json!({
            "movingAverages": {"buildSegments": {"1m": average, "5m": average, "15m": average}},
            "totals": {"buildSegments": row_stats(meters.as_ref())},
        });
        let group = groups.entry(task.id.group.to_string()).or_insert_with(|| json!({}));
        group[task.id.to_string()] = entry;
    }
    Ok(axum::Json(Value::Object(groups)))
}

/// Rows per second of each meter over `seconds` (zeros before a start).
fn rates(meters: Option<&RowMeters>, seconds: Option<f64>) -> Value {
    let (Some(m), Some(secs)) = (meters, seconds) else {
        return json!({"processed": 0.0, "processedBytes": 0.0, "processedWithError": 0.0, "thrownAway": 0.0, "unparseable": 0.0});
    };
    let rate = |n: u64| n as f64 / secs;
    json!({
        "processed": rate(m.processed),
        "processedBytes": rate(m.processed_bytes),
        "processedWithError": rate(m.processed_with_error),
        "thrownAway": rate(m.thrown_away),
        "unparseable": rate(m.unparseable),
    })
}

fn versions(history: Vec<SpecVersion>) -> Value {
    let shown = |spec: &Value| {
        let suspended = spec.get("suspended").and_then(Value::as_bool).unwrap_or(false);
        super::druid_spec::shown(spec, suspended)
    };
    history.into_iter().map(|v| json!({"spec": shown(&v.spec), "version": format_iso(v.submitted_ms)})).collect()
}

/// `GET /druid/indexer/v1/supervisor/{id}/history`: the specs submitted, newest first (the
/// latest [`MAX_SPEC_VERSIONS`](datasource::MAX_SPEC_VERSIONS), secrets redacted).
pub async fn history(State(s): State<Arc<ApiState>>, Path(id): Path<String>) -> Result<axum::Json<Value>, ApiError> {
    let meta = s.meta.as_ref();
    datasource::load(meta, &id).await?;
    Ok(axum::Json(versions(datasource::history(meta, &id).await?)))
}

/// `GET /druid/indexer/v1/supervisor/history`: every supervisor's history, by id.
pub async fn all_history(State(s): State<Arc<ApiState>>) -> Result<axum::Json<Value>, ApiError> {
    let meta = s.meta.as_ref();
    let mut out = Map::new();
    for name in datasource::list(meta).await?.into_iter().take(MAX_SUPERVISORS) {
        out.insert(name.clone(), versions(datasource::history(meta, &name).await?));
    }
    Ok(axum::Json(Value::Object(out)))
}

async fn set_all(s: &ApiState, from: &[SupervisorState], to: SupervisorState) -> Result<axum::Json<Value>, ApiError> {
    let meta = s.meta.as_ref();
    for name in datasource::list(meta).await?.into_iter().take(MAX_SUPERVISORS) {
        let (item, _) = datasource::load(meta, &name).await?;
        if from.contains(&item.state) {
            datasource::set_state(meta, &name, to).await?;
        }
    }
    Ok(axum::Json(json!({"status": "success"})))
}

/// `POST /druid/indexer/v1/supervisor/suspendAll`: every running supervisor suspended.
pub async fn suspend_all(State(s): State<Arc<ApiState>>) -> Result<axum::Json<Value>, ApiError> {
    set_all(&s, &[SupervisorState::Running], SupervisorState::Suspended).await
}

/// `POST /druid/indexer/v1/supervisor/resumeAll`: every suspended supervisor running again
/// (a terminated one stays terminated, as Druid forgets it).
pub async fn resume_all(State(s): State<Arc<ApiState>>) -> Result<axum::Json<Value>, ApiError> {
    set_all(&s, &[SupervisorState::Suspended], SupervisorState::Running).await
}

/// `POST /druid/indexer/v1/supervisor/terminateAll`: every supervisor terminated.
pub async fn terminate_all(State(s): State<Arc<ApiState>>) -> Result<axum::Json<Value>, ApiError> {
    set_all(&s, &[SupervisorState::Running, SupervisorState::Suspended], SupervisorState::Terminated).await
}
