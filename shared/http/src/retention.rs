//! Druid's retention rule endpoints (`/druid/coordinator/v1/rules`): `GET` every datasource's
//! rules (with Druid's cluster default under `_default`), `GET` and `POST` one datasource's.
//! Rules are shown as stored, any field named as a secret redacted.

use super::{json_body, ApiError, ApiState};
use axum::extract::{Path, State};
use serde_json::{json, Map, Value};
use sluice_format::spec::redacted_spec;
use sluice_pipeline::coordinator;
use std::sync::Arc;

/// `GET /druid/coordinator/v1/rules`.
pub(super) async fn list(State(s): State<Arc<ApiState>>) -> Result<axum::Json<Value>, ApiError> {
    let mut all = Map::new();
    all.insert("_default".into(), json!([{"type": "loadForever"}]));
    for (name, rules) in coordinator::rules::list(s.meta.as_ref()).await? {
        all.insert(name, redacted_spec(&rules.json));
    }
    Ok(axum::Json(Value::Object(all)))
}

/// `GET /druid/coordinator/v1/rules/{dataSource}`: `[]` when none were set, as in Druid.
pub(super) async fn get(
    State(s): State<Arc<ApiState>>,
    Path(datasource): Path<String>,
) -> Result<axum::Json<Value>, ApiError> {
    let rules = coordinator::rules::get(s.meta.as_ref(), &datasource).await?;
    Ok(axum::Json(rules.map_or(json!([]), |r| redacted_spec(&r.json))))
}

/// `POST /druid/coordinator/v1/rules/{dataSource}`: 200 with the options ignored, as warnings.
pub(super) async fn set(
    State(s): State<Arc<ApiState>>,
    Path(datasource): Path<String>,
    body: String,
) -> Result<axum::Json<Value>, ApiError> {
    let loaded = coordinator::rules::set(s.meta.as_ref(), &datasource, json_body(&body)?).await?;
    let warnings: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    Ok(axum::Json(json!({"dataSource": datasource, "warnings": warnings})))
}
