//! Druid's HTTP API over the stores: the native query endpoint and the supervisor endpoints.
//! The api function serves it behind a Function URL; `sluice serve` serves it locally.
//!
//! Every route is classed in one table, [`ROUTES`]: *query* (reads segments; the api
//! function), *read* (reads metadata only; both functions) or *write* (changes state; the
//! operations function, and `sluice serve` only with `--allow-operations`).
//!
//! | method, path | class | what |
//! | --- | --- | --- |
//! | `POST /druid/v2` (`?pretty`) | query | a native query; Druid's result JSON |
//! | `POST /druid/v2/sql` | query | a Druid SQL request; rows in its `resultFormat` (the `sys` tables too) |
//! | `GET /druid/v2/datasources` | query | datasource names |
//! | `GET /druid/v2/datasources/{ds}` (`?interval=`, `?full`), `/dimensions`, `/metrics` | query | the dimensions and metrics of its segments in an interval (the last week by default) |
//! | `GET /status` | read | Druid's server status: the Druid version whose API this follows, modules, memory |
//! | `GET /status/health` | read | `true` |
//! | `GET /druid/indexer/v1/supervisor` (`?state=true`, `?full`) | read | supervisor names; with their states (and specs) |
//! | `POST /druid/indexer/v1/supervisor` | write | submit a spec (`{"id": ...}`) |
//! | `GET /druid/indexer/v1/supervisor/{id}` (`/status`, `/health`) | read | the spec as Druid serializes it, defaults filled in and secrets redacted (`druid_spec.rs`); Druid's report; 200 or 503 |
//! | `GET /druid/indexer/v1/supervisor/{id}/stats` (`/history`), `/supervisor/history` | read | task row meters; the specs submitted |
//! | `POST /druid/indexer/v1/supervisor/{id}/suspend`, `resume`, `reset`, `resetOffsets`, `terminate` | write | operations (suspend and resume answer the spec, as Druid) |
//! | `POST /druid/indexer/v1/supervisor/suspendAll`, `resumeAll`, `terminateAll` | write | every supervisor at once |
//! | `GET /druid/indexer/v1/tasks` (`completeTasks`, `runningTasks`, `pendingTasks`, `waitingTasks`) | read | tasks, Druid's `TaskStatusPlus` |
//! | `GET /druid/indexer/v1/task/{id}` (`/status`, `/reports`), `POST /druid/indexer/v1/taskStatus` | read | a task's payload (secrets redacted), status, `ingestionStatsAndErrors` |
//! | `POST /druid/indexer/v1/task`, `/task/{id}/shutdown`, `/datasources/{ds}/shutdownAllTasks`, `/supervisor/{id}/taskGroups/handoff`; `GET /task/{id}/log`, `/segments` | write, read | refused by name, saying what to use |
//! | `DELETE /druid/indexer/v1/pendingSegments/{dataSource}` | write | `{"numDeleted": 0}`: no pending segments are kept |
//! | `GET /druid/coordinator/v1/config/compaction` (`/{dataSource}`) | read | every compaction config; one (secrets redacted) |
//! | `POST /druid/coordinator/v1/config/compaction` | write | submit a compaction config |
//! | `DELETE /druid/coordinator/v1/config/compaction/{dataSource}` | write | remove one |
//! | `GET /druid/coordinator/v1/compaction/status` (`?dataSource=`) | read | chunks awaiting compaction, per configured datasource |
//! | `GET /druid/coordinator/v1/rules` (`/{dataSource}`) | read | retention rules, every datasource's or one's (secrets redacted) |
//! | `POST /druid/coordinator/v1/rules/{dataSource}` | write | set a datasource's retention rules |
//! | `GET /unified-console.html`, `/console`, `/console/*.js`, `.css` | read | the web console ([`console`]): supervisors, tasks, segments, queries, compaction and retention |
//!
//! Errors are Druid's error JSON (`error`, `errorMessage`, `errorClass`, `host`): 400 for an
//! invalid query, SQL or spec, 404 for an unknown supervisor, 500 when a store fails, 504 past a
//! query's timeout. [`router_for`] serves the reads or the writes only ([`Routes`]: the api
//! and operations functions); a local server wraps the routes in [`LocalGuard`]'s checks (403,
//! 415).

mod batch_tasks;
mod compaction;
pub mod console;
mod datasource_info;
mod druid_spec;
mod guard;
mod lookups;
mod retention;
mod routes;
mod sql;
pub mod sql_broker;
pub mod sql_system;
pub mod status;
mod supervisor_api;
mod supervisor_report;
mod task_status;
mod tasks;

pub use guard::LocalGuard;
pub use routes::{class_of, router, router_for, Class, RouteSpec, Routes, ROUTES};

use axum::extract::{Path, Query as UrlQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use sluice_broker::{run_query, FanOut};
use sluice_format::text::excerpt;
use sluice_format::time::now_ms;
use sluice_pipeline::datasource::{self, DatasourceError, SupervisorState};
use sluice_pipeline::supervisor::{reset, reset_offsets, status, SupervisorError};
use sluice_query::{QueryError, SegmentCache};
use sluice_store::metadata::MetadataStore;
use sluice_store::storage::ObjectStore;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// What the API serves from.
#[derive(Debug, Clone)]
pub struct ApiState {
    /// Metadata store.
    pub meta: Arc<dyn MetadataStore>,
    /// Deep storage.
    pub store: Arc<dyn ObjectStore>,
    /// Segment cache (none: ranged reads of the needed parts).
    pub cache: Option<SegmentCache>,
    /// Query workers to fan large timeseries, topN and groupBy queries out to (none: every
    /// query is answered here).
    pub fanout: Option<FanOut>,
    /// The tables SQL read through the fan-out, kept between requests.
    pub tables: Arc<sql_broker::TableCache>,
}

/// An error as Druid's error JSON with its status.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    error: &'static str,
    message: String,
    class: &'static str,
}

impl ApiError {
    /// An error of `status`: Druid's `error` (a short phrase), its `errorClass`, and a
    /// message (cut to a bounded excerpt when sent).
    pub fn new(status: StatusCode, error: &'static str, class: &'static str, message: impl Into<String>) -> Self {
        Self { status, error, message: message.into(), class }
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Most characters of an error message a response carries: a message quoting a hostile
/// input is cut, never sent back whole.
const MAX_MESSAGE_CHARS: usize = 2_000;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let message = excerpt(&self.message, MAX_MESSAGE_CHARS);
        let body = json!({"error": self.error, "errorMessage": message, "errorClass": self.class, "host": null});
        (self.status, axum::Json(body)).into_response()
    }
}

impl From<QueryError> for ApiError {
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::Invalid { .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, "Invalid query", "QueryError", e.to_string())
            }
            QueryError::Unsupported(_) => {
                ApiError::new(StatusCode::BAD_REQUEST, "Unsupported operation", "QueryError", e.to_string())
            }
            QueryError::Timeout(_) => ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "Query timeout",
                "org.apache.druid.query.QueryTimeoutException",
                e.to_string(),
            ),
            QueryError::Segment(_) | QueryError::Source(_) => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "Unknown exception", "QueryError", e.to_string())
            }
        }
    }
}

impl From<DatasourceError> for ApiError {
    fn from(e: DatasourceError) -> Self {
        match e {
            DatasourceError::Unknown(_) => {
                ApiError::new(StatusCode::NOT_FOUND, "Not found", "SupervisorError", e.to_string())
            }
            DatasourceError::InvalidSpec { .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, "Invalid spec", "SupervisorError", e.to_string())
            }
            DatasourceError::InvalidRules { .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, "Invalid rules", "RulesError", e.to_string())
            }
            DatasourceError::InvalidCompaction { .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, "Invalid config", "CompactionConfigError", e.to_string())
            }
            _ => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "Unknown exception", "SupervisorError", e.to_string())
            }
        }
    }
}

impl From<SupervisorError> for ApiError {
    fn from(e: SupervisorError) -> Self {
        match e {
            SupervisorError::Datasource(d) => d.into(),
            SupervisorError::Invalid { .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, "Invalid request", "SupervisorError", e.to_string())
            }
            other => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Unknown exception",
                "SupervisorError",
                other.to_string(),
            ),
        }
    }
}

fn json_body(body: &str) -> Result<Value, ApiError> {
    serde_json::from_str(body).map_err(|e| {
        ApiError::new(StatusCode::BAD_REQUEST, "Invalid request", "JsonError", format!("body is not JSON: {e}"))
    })
}

async fn query(
    State(s): State<Arc<ApiState>>,
    UrlQuery(params): UrlQuery<HashMap<String, String>>,
    body: String,
) -> Result<Response, ApiError> {
    let answer = run_query(s.meta.as_ref(), s.store.as_ref(), s.cache.as_ref(), s.fanout.as_ref(), &body).await?;
    if let Some(f) = answer.fanned_out {
        tracing::info!(
            batches = f.batches,
            invocations = f.invocations,
            retries = f.retries,
            hedges = f.hedges,
            segments = f.segments,
            cached = f.cached,
            bytes = f.bytes,
            "query fanned out to workers"
        );
    }
    let result = answer.result;
    let text = if params.contains_key("pretty") {
        serde_json::to_string_pretty(&result)
    } else {
        serde_json::to_string(&result)
    }
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "Unknown exception", "JsonError", e.to_string()))?;
    Ok(([(axum::http::header::CONTENT_TYPE, "application/json")], text).into_response())
}

async fn datasources(State(s): State<Arc<ApiState>>) -> Result<axum::Json<Vec<String>>, ApiError> {
    Ok(axum::Json(datasource::list(s.meta.as_ref()).await?))
}

async fn submit(State(s): State<Arc<ApiState>>, body: String) -> Result<axum::Json<Value>, ApiError> {
    let (name, _, warnings) = datasource::submit(s.meta.as_ref(), json_body(&body)?, now_ms()).await?;
    Ok(axum::Json(json!({"id": name, "warnings": warnings})))
}

async fn spec(State(s): State<Arc<ApiState>>, Path(id): Path<String>) -> Result<axum::Json<Value>, ApiError> {
    let (item, _) = datasource::load(s.meta.as_ref(), &id).await?;
    Ok(axum::Json(druid_spec::shown(&item.spec, item.state != SupervisorState::Running)))
}

async fn supervisor_status(
    State(s): State<Arc<ApiState>>,
    Path(id): Path<String>,
) -> Result<axum::Json<Value>, ApiError> {
    let meta = s.meta.as_ref();
    let st = status(meta, &id).await?;
    let (item, _) = datasource::load(meta, &id).await?;
    let spec = sluice_format::spec::load_spec_value(item.spec).ok().map(|l| l.spec);
    let tasks = sluice_pipeline::task::tasks(meta, &id).await?;
    Ok(axum::Json(supervisor_report::report(&id, &st, &tasks, spec.as_ref(), now_ms())))
}

/// Druid's supervisor health: 200 `{"healthy": true}`, or 503 `{"healthy": false}`.
async fn supervisor_health(State(s): State<Arc<ApiState>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let healthy = supervisor_report::healthy(&status(s.meta.as_ref(), &id).await?);
    let code = if healthy { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    Ok((code, axum::Json(json!({"healthy": healthy}))).into_response())
}

/// Most supervisors `?state=true` or `?full` reports on in one answer (each costs a status read).
const MAX_LISTED_STATES: usize = 1_000;

/// Druid's supervisor list: names; with `?state=true`, `?full` or `?system`, an item per
/// supervisor with its state (and `?full` its spec, secrets redacted).
async fn supervisors(
    State(s): State<Arc<ApiState>>,
    UrlQuery(params): UrlQuery<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    let meta = s.meta.as_ref();
    let names = datasource::list(meta).await?;
    let full = params.contains_key("full");
    let states = full || params.contains_key("system") || params.get("state").is_some_and(|v| v == "true");
    if !states {
        return Ok(axum::Json(json!(names)));
    }
    let mut items = Vec::new();
    for name in names.iter().take(MAX_LISTED_STATES) {
        let st = status(meta, name).await?;
        let mut item = supervisor_report::list_item(name, &st);
        if full {
            let suspended = st.state != SupervisorState::Running;
            item["spec"] = druid_spec::shown(&datasource::load(meta, name).await?.0.spec, suspended);
        }
        items.push(item);
    }
    Ok(axum::Json(Value::Array(items)))
}

async fn operate(
    State(s): State<Arc<ApiState>>,
    Path((id, action)): Path<(String, String)>,
    body: String,
) -> Result<axum::Json<Value>, ApiError> {
    let meta = s.meta.as_ref();
    match action.as_str() {
        "suspend" => datasource::set_state(meta, &id, SupervisorState::Suspended).await?,
        "resume" => datasource::set_state(meta, &id, SupervisorState::Running).await?,
        "terminate" | "shutdown" => datasource::set_state(meta, &id, SupervisorState::Terminated).await?,
        "reset" => {
            reset(meta, &id, now_ms()).await?;
        }
        "resetOffsets" => {
            let offsets = reset_offsets_body(&json_body(&body)?)?;
            reset_offsets(meta, &id, &offsets, now_ms()).await?;
        }
        other => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "Not found",
                "SupervisorError",
                format!(
                "unknown supervisor operation {other:?}: expected suspend, resume, reset, resetOffsets or terminate"
            ),
            ))
        }
    }
    if matches!(action.as_str(), "suspend" | "resume") {
        // Druid answers a suspend or resume with the spec, its `suspended` flag set.
        let (item, _) = datasource::load(meta, &id).await?;
        let mut shown = druid_spec::shown(&item.spec, item.state != SupervisorState::Running);
        shown["id"] = json!(id);
        return Ok(axum::Json(shown));
    }
    Ok(axum::Json(json!({"id": id})))
}

/// Druid's resetOffsets body: `{"type": "kafka", "partitions": {"type": "end", "stream": ...,
/// "partitionOffsetMap": {"0": 100}}}`.
fn reset_offsets_body(body: &Value) -> Result<BTreeMap<i32, i64>, ApiError> {
    let bad = |reason: String| ApiError::new(StatusCode::BAD_REQUEST, "Invalid request", "SupervisorError", reason);
    let map = body["partitions"]["partitionOffsetMap"]
        .as_object()
        .ok_or_else(|| bad("partitions.partitionOffsetMap: expected an object of partition -> offset".into()))?;
    map.iter()
        .map(|(p, o)| {
            let partition = p
                .parse::<i32>()
                .map_err(|_| bad(format!("partitions.partitionOffsetMap: {p:?} is not a partition")))?;
            let offset =
                o.as_i64().ok_or_else(|| bad(format!("partitions.partitionOffsetMap.{p}: expected an offset")))?;
            Ok((partition, offset))
        })
        .collect()
}
