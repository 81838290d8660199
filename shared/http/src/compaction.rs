//! Druid's automatic compaction endpoints: the configurations
//! (`/druid/coordinator/v1/config/compaction`: `GET` every one or one datasource's, `POST` one,
//! create or replace, `DELETE` one) and the status (`GET /druid/coordinator/v1/compaction/status`,
//! `?dataSource=` for one): per configured datasource, the chunks awaiting compaction. A
//! configuration is shown with its secrets redacted (`taskContext`, say, is kept as submitted).

use super::{json_body, ApiError, ApiState};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde_json::{json, Value};
use sluice_format::spec::redacted_spec;
use sluice_pipeline::coordinator;
use std::collections::HashMap;
use std::sync::Arc;

/// Druid's cluster-wide compaction settings, as its `GET` reports them beside the configurations.
const TASK_SLOT_RATIO: f64 = 0.1;
const MAX_TASK_SLOTS: i64 = i32::MAX as i64;

fn not_found(datasource: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "Not found",
        "CompactionConfigError",
        format!("datasource {datasource:?} has no compaction config"),
    )
}

/// `GET /druid/coordinator/v1/config/compaction`.
pub(super) async fn list(State(s): State<Arc<ApiState>>) -> Result<axum::Json<Value>, ApiError> {
    let configs: Vec<Value> =
        coordinator::config::list(s.meta.as_ref()).await?.iter().map(|c| redacted_spec(&c.json)).collect();
    Ok(axum::Json(json!({
        "compactionConfigs": configs,
        "compactionTaskSlotRatio": TASK_SLOT_RATIO,
        "maxCompactionTaskSlots": MAX_TASK_SLOTS,
    })))
}

/// `GET /druid/coordinator/v1/compaction/status`: `{"latestStatus": [snapshot, ...]}`.
pub(super) async fn status(
    State(s): State<Arc<ApiState>>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    let meta = s.meta.as_ref();
    let configs = match params.get("dataSource") {
        Some(name) => vec![coordinator::config::get(meta, name).await?.ok_or_else(|| not_found(name))?],
        None => coordinator::config::list(meta).await?,
    };
    let mut snapshots = Vec::with_capacity(configs.len());
    for c in &configs {
        snapshots.push(coordinator::plan::plan_now(meta, c).await?.druid_snapshot(&c.data_source));
    }
    Ok(axum::Json(json!({"latestStatus": snapshots})))
}

/// `GET /druid/coordinator/v1/config/compaction/{dataSource}`.
pub(super) async fn get(
    State(s): State<Arc<ApiState>>,
    Path(datasource): Path<String>,
) -> Result<axum::Json<Value>, ApiError> {
    match coordinator::config::get(s.meta.as_ref(), &datasource).await? {
        Some(c) => Ok(axum::Json(redacted_spec(&c.json))),
        None => Err(not_found(&datasource)),
    }
}

/// `POST /druid/coordinator/v1/config/compaction`: 200 with the options ignored, as warnings.
pub(super) async fn submit(State(s): State<Arc<ApiState>>, body: String) -> Result<axum::Json<Value>, ApiError> {
    let loaded = coordinator::config::submit(s.meta.as_ref(), json_body(&body)?).await?;
    let warnings: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    Ok(axum::Json(json!({"dataSource": loaded.config.data_source, "warnings": warnings})))
}

/// `DELETE /druid/coordinator/v1/config/compaction/{dataSource}`.
pub(super) async fn remove(
    State(s): State<Arc<ApiState>>,
    Path(datasource): Path<String>,
) -> Result<axum::Json<Value>, ApiError> {
    if coordinator::config::remove(s.meta.as_ref(), &datasource).await? {
        Ok(axum::Json(json!({"dataSource": datasource})))
    } else {
        Err(not_found(&datasource))
    }
}
