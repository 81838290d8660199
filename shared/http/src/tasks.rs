//! Druid's task API (`/druid/indexer/v1/tasks`, `/task/{id}`, `/status`, `/reports`,
//! `/taskStatus`) over Sluice's task items and, once cleanup deleted a task's items, its kept
//! report. What cannot apply to a Sluice task is refused by name ([`refused`]): the shapes and
//! the state mapping are [`task_status`](crate::task_status)'s.

use super::batch_tasks::{self, BatchView};
use super::task_status::{TaskView, TASK_TYPE};
use super::{json_body, ApiError, ApiState};
use axum::extract::{Path, Query as UrlQuery, State};
use axum::http::StatusCode;
use serde_json::{json, Map, Value};
use sluice_format::time::parse_iso_instant;
use sluice_metastore::report;
use sluice_pipeline::batch::BATCH_TASK_TYPE;
use sluice_pipeline::datasource;
use sluice_pipeline::task::{load_progress, TaskId, TaskItem};
use sluice_store::metadata::MetadataStore;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Finished tasks a list returns when it does not say `max`, and at most when it does.
pub const DEFAULT_COMPLETE_TASKS: usize = 1_000;
const MAX_COMPLETE_TASKS: usize = 10_000;
/// Datasources a list without `datasource=` reads at most.
const MAX_LISTED_DATASOURCES: usize = 1_000;
/// Task ids one `POST /taskStatus` may ask about.
const MAX_STATUS_IDS: usize = 1_000;

fn bad(reason: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "Invalid request", "TaskError", reason)
}

fn not_found(id: &str) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "Not found", "TaskError", format!("no task {id:?}"))
}

/// What a task list asks for.
pub(crate) struct ListFilter {
    states: BTreeSet<&'static str>,
    datasource: Option<String>,
    created: Option<(i64, i64)>,
    max: usize,
    /// `type=`: Druid's task type asked for (`None`: both).
    kind: Option<String>,
}

fn list_filter(params: &HashMap<String, String>, fixed: Option<&'static str>) -> Result<ListFilter, ApiError> {
    let all = BTreeSet::from(["pending", "running", "complete"]);
    let states = match fixed.or(params.get("state").map(String::as_str)) {
        None => all,
        Some("waiting") => BTreeSet::new(),
        Some(s) => match all.iter().find(|a| a.eq_ignore_ascii_case(s)) {
            Some(a) => BTreeSet::from([*a]),
            None => return Err(bad(format!("state {s:?}: expected running, complete, waiting or pending"))),
        },
    };
    let created = match params.get("createdTimeInterval") {
        None => None,
        Some(text) => {
            let (a, b) = text.split_once('_').ok_or_else(|| bad("createdTimeInterval: expected <start>_<end>"))?;
            let instant = |t: &str| parse_iso_instant(t).map_err(|e| bad(format!("createdTimeInterval: {e}")));
            Some((instant(a)?, instant(b)?))
        }
    };
    let max = match params.get("max") {
        None => DEFAULT_COMPLETE_TASKS,
        Some(m) => m.parse::<usize>().map_err(|_| bad(format!("max {m:?}: expected a count")))?.min(MAX_COMPLETE_TASKS),
    };
    Ok(ListFilter {
        states,
        datasource: params.get("datasource").cloned(),
        created,
        max,
        kind: params.get("type").cloned(),
    })
}

impl ListFilter {
    /// Every task: the live ones and the last [`DEFAULT_COMPLETE_TASKS`] finished.
    pub(crate) fn everything() -> Self {
        let states = BTreeSet::from(["pending", "running", "complete"]);
        Self { states, datasource: None, created: None, max: DEFAULT_COMPLETE_TASKS, kind: None }
    }

    fn wants(&self, kind: &str) -> bool {
        self.kind.as_deref().is_none_or(|k| k == kind)
    }
}

/// A task of either kind, as the lists show it.
pub(crate) enum Listed {
    /// An indexing task of a supervisor.
    Stream(TaskView),
    /// A batch task.
    Batch(BatchView),
}

impl Listed {
    fn created_ms(&self) -> i64 {
        match self {
            Listed::Stream(v) => v.created_ms,
            Listed::Batch(v) => v.item.created_ms,
        }
    }

    fn finished_ms(&self) -> Option<i64> {
        match self {
            Listed::Stream(v) => v.finished_ms,
            Listed::Batch(v) => v.item.finished_ms,
        }
    }

    fn id(&self) -> String {
        match self {
            Listed::Stream(v) => v.id.to_string(),
            Listed::Batch(v) => v.item.id.clone(),
        }
    }

    fn list(&self) -> &'static str {
        match self {
            Listed::Stream(v) => v.list(),
            Listed::Batch(v) => v.list(),
        }
    }

    /// Druid's `TaskStatusPlus`.
    pub(crate) fn status_plus(&self) -> Value {
        match self {
            Listed::Stream(v) => v.status_plus(),
            Listed::Batch(v) => v.status_plus(),
        }
    }

    /// Its row of `sys.tasks`.
    pub(crate) fn row(&self) -> sluice_sql::TaskRow {
        match self {
            Listed::Stream(v) => v.row(),
            Listed::Batch(v) => v.row(),
        }
    }
}

/// The tasks a filter names: live ones first (newest planned first), then finished ones
/// (newest finished first, at most `max`).
pub(crate) async fn list_tasks(meta: &dyn MetadataStore, f: &ListFilter) -> Result<Vec<Listed>, ApiError> {
    if f.states.is_empty() {
        return Ok(Vec::new());
    }
    let names = match &f.datasource {
        Some(name) => vec![name.clone()],
        None => datasource::list(meta).await?.into_iter().take(MAX_LISTED_DATASOURCES).collect(),
    };
    let created = |v: &Listed| f.created.is_none_or(|(a, b)| v.created_ms() >= a && v.created_ms() < b);
    let (mut live, mut done) = (Vec::new(), Vec::new());
    for name in &names {
        if f.wants(BATCH_TASK_TYPE) {
            let batches = match sluice_pipeline::batch::list(meta, name).await {
                Err(datasource::DatasourceError::Unknown(_)) => continue,
                other => other?,
            };
            for v in batches.into_iter().map(|item| Listed::Batch(BatchView { item })) {
                if f.states.contains(v.list()) && created(&v) {
                    if v.list() == "complete" {
                        done.push(v);
                    } else {
                        live.push(v);
                    }
                }
            }
        }
        if !f.wants(TASK_TYPE) {
            continue;
        }
        let items = match sluice_pipeline::task::tasks(meta, name).await {
            Err(datasource::DatasourceError::Unknown(_)) => continue,
            other => other?,
        };
        let views = items.iter().map(|t| Listed::Stream(TaskView::of_item(t)));
        for v in views.filter(|v| f.states.contains(v.list()) && created(v)) {
            if v.list() == "complete" {
                done.push(v);
            } else {
                live.push(v);
            }
        }
        if f.states.contains("complete") {
            let seen: BTreeSet<String> = done.iter().map(Listed::id).collect();
            let kept = report::recent(meta, name, f.max).await?;
            let views = kept.iter().map(|r| Listed::Stream(TaskView::of_report(r)));
            done.extend(views.filter(|v| !seen.contains(&v.id()) && created(v)));
        }
    }
    live.sort_by(|a, b| b.created_ms().cmp(&a.created_ms()).then_with(|| a.id().cmp(&b.id())));
    done.sort_by(|a, b| b.finished_ms().cmp(&a.finished_ms()).then_with(|| a.id().cmp(&b.id())));
    done.truncate(f.max);
    live.extend(done);
    Ok(live)
}

/// `GET /druid/indexer/v1/tasks` (`?state=`, `datasource=`, `createdTimeInterval=`, `max=`,
/// `type=`).
pub async fn list(
    State(s): State<Arc<ApiState>>,
    UrlQuery(params): UrlQuery<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    listed(&s, &params, None).await
}

async fn listed(
    s: &ApiState,
    params: &HashMap<String, String>,
    state: Option<&'static str>,
) -> Result<axum::Json<Value>, ApiError> {
    let filter = list_filter(params, state)?;
    let tasks = list_tasks(s.meta.as_ref(), &filter).await?;
    Ok(axum::Json(Value::Array(tasks.iter().map(Listed::status_plus).collect())))
}

/// `GET /druid/indexer/v1/completeTasks`.
pub async fn complete(
    State(s): State<Arc<ApiState>>,
    UrlQuery(params): UrlQuery<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    listed(&s, &params, Some("complete")).await
}

/// `GET /druid/indexer/v1/runningTasks`.
pub async fn running(
    State(s): State<Arc<ApiState>>,
    UrlQuery(params): UrlQuery<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    listed(&s, &params, Some("running")).await
}

/// `GET /druid/indexer/v1/pendingTasks`.
pub async fn pending(
    State(s): State<Arc<ApiState>>,
    UrlQuery(params): UrlQuery<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    listed(&s, &params, Some("pending")).await
}

/// `GET /druid/indexer/v1/waitingTasks`: none (no Sluice task waits for a lock).
pub async fn waiting(
    State(s): State<Arc<ApiState>>,
    UrlQuery(params): UrlQuery<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    listed(&s, &params, Some("waiting")).await
}

/// A task by its id: its live item, or its kept report.
async fn find(meta: &dyn MetadataStore, text: &str) -> Result<Option<(TaskView, Option<TaskItem>)>, ApiError> {
    let Some(id) = TaskId::parse(text) else { return Ok(None) };
    if sluice_format::spec::datasource_name_problem(&id.datasource).is_some() {
        return Ok(None);
    }
    if let Some(item) = meta.get(&id.pk(), &id.sk()).await.map_err(datasource::DatasourceError::from)? {
        let task: TaskItem = sluice_pipeline::item::parse_body(&id.datasource, &item)?;
        return Ok(Some((TaskView::of_item(&task), Some(task))));
    }
    Ok(report::find(meta, &id).await?.map(|r| (TaskView::of_report(&r), None)))
}

/// `GET /druid/indexer/v1/task/{id}/status`: `{"task": id, "status": TaskStatusPlus}`.
pub async fn status(State(s): State<Arc<ApiState>>, Path(id): Path<String>) -> Result<axum::Json<Value>, ApiError> {
    if let Some(batch) = batch_tasks::find(s.meta.as_ref(), &id).await? {
        return Ok(axum::Json(json!({"task": id, "status": batch.status_plus()})));
    }
    let (view, _) = find(s.meta.as_ref(), &id).await?.ok_or_else(|| not_found(&id))?;
    Ok(axum::Json(json!({"task": id, "status": view.status_plus()})))
}

/// `GET /druid/indexer/v1/task/{id}`: `{"task": id, "payload": ...}`; a finished task's spec
/// is the version of the supervisor's history in force when it was planned.
pub async fn payload(State(s): State<Arc<ApiState>>, Path(id): Path<String>) -> Result<axum::Json<Value>, ApiError> {
    let meta = s.meta.as_ref();
    if let Some(batch) = batch_tasks::find(meta, &id).await? {
        return Ok(axum::Json(batch_tasks::payload(meta, &batch).await?));
    }
    let (view, _) = find(meta, &id).await?.ok_or_else(|| not_found(&id))?;
    let spec = if view.live {
        None
    } else {
        let history = datasource::history(meta, &view.id.datasource).await?;
        history.into_iter().find(|v| v.submitted_ms <= view.created_ms).map(|v| v.spec)
    };
    Ok(axum::Json(json!({"task": id, "payload": view.payload(spec.as_ref())})))
}

/// `GET /druid/indexer/v1/task/{id}/reports`: `ingestionStatsAndErrors`, a live task's as of
/// its last checkpoint.
pub async fn reports(State(s): State<Arc<ApiState>>, Path(id): Path<String>) -> Result<axum::Json<Value>, ApiError> {
    let meta = s.meta.as_ref();
    if let Some(batch) = batch_tasks::find(meta, &id).await? {
        return Ok(axum::Json(batch_tasks::report(meta, &batch).await?));
    }
    let parsed = TaskId::parse(&id).ok_or_else(|| not_found(&id))?;
    let (view, item) = find(meta, &id).await?.ok_or_else(|| not_found(&id))?;
    let meters = match item {
        Some(_) => load_progress(meta, &parsed).await?.last.map(|c| c.meters),
        None => report::find(meta, &parsed).await?.and_then(|r| r.meters),
    };
    Ok(axum::Json(view.report(meters.as_ref())))
}

/// `POST /druid/indexer/v1/taskStatus` with an array of task ids: each known one's Druid
/// `TaskStatus`, keyed by id.
pub async fn bulk_status(State(s): State<Arc<ApiState>>, body: String) -> Result<axum::Json<Value>, ApiError> {
    let ids: Vec<String> =
        serde_json::from_value(json_body(&body)?).map_err(|_| bad("expected a JSON array of task ids"))?;
    if ids.len() > MAX_STATUS_IDS {
        return Err(bad(format!("{} task ids: at most {MAX_STATUS_IDS} at once", ids.len())));
    }
    let mut out = Map::new();
    for id in ids {
        if let Some(batch) = batch_tasks::find(s.meta.as_ref(), &id).await? {
            out.insert(id, batch.status());
        } else if let Some((view, _)) = find(s.meta.as_ref(), &id).await? {
            out.insert(id, view.status());
        }
    }
    Ok(axum::Json(Value::Object(out)))
}

/// `DELETE /druid/indexer/v1/pendingSegments/{datasource}`: Sluice allocates segment ids in
/// the publish itself and keeps no pending segments, so none are deleted.
pub async fn clean_pending_segments(
    State(s): State<Arc<ApiState>>,
    Path(name): Path<String>,
) -> Result<axum::Json<Value>, ApiError> {
    datasource::load(s.meta.as_ref(), &name).await?;
    Ok(axum::Json(json!({"numDeleted": 0})))
}

/// The task routes that cannot apply to Sluice's tasks, each with why and what to do instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// `POST /druid/indexer/v1/task/{id}/shutdown`.
    Shutdown,
    /// `POST /druid/indexer/v1/datasources/{datasource}/shutdownAllTasks`.
    ShutdownAll,
    /// `GET /druid/indexer/v1/task/{id}/log`.
    Log,
    /// `GET /druid/indexer/v1/task/{id}/segments`.
    Segments,
    /// `POST /druid/indexer/v1/supervisor/{id}/taskGroups/handoff`.
    Handoff,
}

/// The answer to a [`Refused`] route: 400 (404 for the reads Druid answers 404 when it has
/// nothing), naming what to use instead.
pub fn refused(what: Refused) -> ApiError {
    let (status, message) = match what {
        Refused::Shutdown | Refused::ShutdownAll => (
            StatusCode::BAD_REQUEST,
            "a Sluice task cannot be shut down on its own: its supervisor plans and retries it until it publishes \
             exactly once; suspend the supervisor (POST /druid/indexer/v1/supervisor/{id}/suspend) to stop planning",
        ),
        Refused::Log => (
            StatusCode::NOT_FOUND,
            "task logs are not kept here: the indexer and merger functions log to CloudWatch Logs (their log \
             groups, as JSON lines with the task id), and `sluice` locally to standard error",
        ),
        Refused::Segments => (
            StatusCode::NOT_FOUND,
            "task segments (deprecated in Druid) are not served: query sys.segments (POST /druid/v2/sql) or run \
             `sluice segments`",
        ),
        Refused::Handoff => (
            StatusCode::BAD_REQUEST,
            "an early handoff is not needed here: a Sluice task reads a planned offset range and publishes as soon \
             as it has read it, and a real-time task publishes after ioConfig.taskDuration or \
             sluiceConfig.maxRecordsPerTask; lower those for sooner handoffs",
        ),
    };
    ApiError::new(status, "Unsupported operation", "UnsupportedOperationException", message)
}
