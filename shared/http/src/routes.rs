//! The API's routes, each classed in one table ([`ROUTES`]): what reads segments (queries), what
//! reads metadata only, and what changes state. [`router_for`] builds the api and operations
//! functions' routers from it and [`LocalGuard`](crate::LocalGuard) refuses its writes on a
//! local server without `--allow-operations`, so a route cannot be served without a class.

use super::tasks::{self, Refused};
use super::{compaction, console, datasource_info, lookups, retention, sql, supervisor_api, ApiError, ApiState};
use axum::http::{Method, StatusCode};
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Router;
use std::sync::Arc;

/// What a route does to the stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Reads segments: queries, served by the api function only.
    Query,
    /// Reads metadata only (specs, status, configs, rules), served by both functions.
    Read,
    /// Changes state (supervisors, compaction configs, retention rules), served by the
    /// operations function, and by `sluice serve` only with `--allow-operations`.
    Write,
}

/// One route of the API: a method, a path pattern (`{name}` stands for one non-empty
/// segment) and its class.
#[derive(Debug, Clone)]
pub struct RouteSpec {
    /// The method it answers.
    pub method: Method,
    /// Its path, in the router's pattern syntax.
    pub path: &'static str,
    /// What it does to the stores.
    pub class: Class,
    endpoint: Endpoint,
}

/// The handler a route runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Status,
    Health,
    NativeQuery,
    Sql,
    Datasources,
    Describe,
    Dimensions,
    Metrics,
    Supervisors,
    Submit,
    Spec,
    SupervisorStatus,
    SupervisorHealth,
    SupervisorStats,
    SupervisorHistory,
    AllHistory,
    SuspendAll,
    ResumeAll,
    TerminateAll,
    Operate,
    Tasks,
    CompleteTasks,
    RunningTasks,
    PendingTasks,
    WaitingTasks,
    TaskPayload,
    TaskStatus,
    TaskReports,
    BulkTaskStatus,
    CleanPendingSegments,
    Refused(Refused),
    CompactionConfigs,
    SubmitCompaction,
    SubmitTask,
    CompactionConfig,
    RemoveCompaction,
    CompactionStatus,
    AllRules,
    Rules,
    SetRules,
    LookupTiers,
    UpdateLookups,
    AllLookups,
    LookupTier,
    DeleteLookupTier,
    Lookup,
    PutLookup,
    DeleteLookup,
    LookupStatus,
    LookupTierStatus,
    LookupOneStatus,
    Console,
}

const fn route(method: Method, path: &'static str, class: Class, endpoint: Endpoint) -> RouteSpec {
    RouteSpec { method, path, class, endpoint }
}

/// Druid's compaction configuration routes.
const COMPACTION: &str = "/druid/coordinator/v1/config/compaction";
const COMPACTION_OF: &str = "/druid/coordinator/v1/config/compaction/{datasource}";
/// Druid's retention rule routes.
const RULES: &str = "/druid/coordinator/v1/rules";
const RULES_OF: &str = "/druid/coordinator/v1/rules/{datasource}";
/// Druid's lookup routes.
const LOOKUPS: &str = "/druid/coordinator/v1/lookups/config";
const LOOKUP_TIER: &str = "/druid/coordinator/v1/lookups/config/{tier}";
const LOOKUP: &str = "/druid/coordinator/v1/lookups/config/{tier}/{name}";
const SUPERVISOR: &str = "/druid/indexer/v1/supervisor";
const TASK: &str = "/druid/indexer/v1/task/{id}";

/// Every route of the API and its class; nothing else is routed.
pub const ROUTES: &[RouteSpec] = &[
    route(Method::GET, "/status", Class::Read, Endpoint::Status),
    route(Method::GET, "/status/health", Class::Read, Endpoint::Health),
    route(Method::POST, "/druid/v2", Class::Query, Endpoint::NativeQuery),
    route(Method::POST, "/druid/v2/", Class::Query, Endpoint::NativeQuery),
    route(Method::POST, "/druid/v2/sql", Class::Query, Endpoint::Sql),
    route(Method::POST, "/druid/v2/sql/", Class::Query, Endpoint::Sql),
    route(Method::GET, "/druid/v2/datasources", Class::Query, Endpoint::Datasources),
    route(Method::GET, "/druid/v2/datasources/{datasource}", Class::Query, Endpoint::Describe),
    route(Method::GET, "/druid/v2/datasources/{datasource}/dimensions", Class::Query, Endpoint::Dimensions),
    route(Method::GET, "/druid/v2/datasources/{datasource}/metrics", Class::Query, Endpoint::Metrics),
    route(Method::GET, SUPERVISOR, Class::Read, Endpoint::Supervisors),
    route(Method::POST, SUPERVISOR, Class::Write, Endpoint::Submit),
    route(Method::GET, "/druid/indexer/v1/supervisor/{id}", Class::Read, Endpoint::Spec),
    route(Method::GET, "/druid/indexer/v1/supervisor/{id}/status", Class::Read, Endpoint::SupervisorStatus),
    route(Method::GET, "/druid/indexer/v1/supervisor/{id}/health", Class::Read, Endpoint::SupervisorHealth),
    route(Method::GET, "/druid/indexer/v1/supervisor/{id}/stats", Class::Read, Endpoint::SupervisorStats),
    route(Method::GET, "/druid/indexer/v1/supervisor/{id}/history", Class::Read, Endpoint::SupervisorHistory),
    route(Method::GET, "/druid/indexer/v1/supervisor/history", Class::Read, Endpoint::AllHistory),
    route(Method::POST, "/druid/indexer/v1/supervisor/suspendAll", Class::Write, Endpoint::SuspendAll),
    route(Method::POST, "/druid/indexer/v1/supervisor/resumeAll", Class::Write, Endpoint::ResumeAll),
    route(Method::POST, "/druid/indexer/v1/supervisor/terminateAll", Class::Write, Endpoint::TerminateAll),
    route(Method::POST, "/druid/indexer/v1/supervisor/{id}/{action}", Class::Write, Endpoint::Operate),
    route(
        Method::POST,
        "/druid/indexer/v1/supervisor/{id}/taskGroups/handoff",
        Class::Write,
        Endpoint::Refused(Refused::Handoff),
    ),
    route(Method::GET, "/druid/indexer/v1/tasks", Class::Read, Endpoint::Tasks),
    route(Method::GET, "/druid/indexer/v1/tasks/", Class::Read, Endpoint::Tasks),
    route(Method::GET, "/druid/indexer/v1/completeTasks", Class::Read, Endpoint::CompleteTasks),
    route(Method::GET, "/druid/indexer/v1/runningTasks", Class::Read, Endpoint::RunningTasks),
    route(Method::GET, "/druid/indexer/v1/pendingTasks", Class::Read, Endpoint::PendingTasks),
    route(Method::GET, "/druid/indexer/v1/waitingTasks", Class::Read, Endpoint::WaitingTasks),
    route(Method::GET, TASK, Class::Read, Endpoint::TaskPayload),
    route(Method::GET, "/druid/indexer/v1/task/{id}/status", Class::Read, Endpoint::TaskStatus),
    route(Method::GET, "/druid/indexer/v1/task/{id}/reports", Class::Read, Endpoint::TaskReports),
    route(Method::GET, "/druid/indexer/v1/task/{id}/log", Class::Read, Endpoint::Refused(Refused::Log)),
    route(Method::GET, "/druid/indexer/v1/task/{id}/segments", Class::Read, Endpoint::Refused(Refused::Segments)),
    route(Method::POST, "/druid/indexer/v1/taskStatus", Class::Read, Endpoint::BulkTaskStatus),
    route(Method::POST, "/druid/indexer/v1/task", Class::Write, Endpoint::SubmitTask),
    route(Method::POST, "/druid/indexer/v1/task/{id}/shutdown", Class::Write, Endpoint::Refused(Refused::Shutdown)),
    route(
        Method::POST,
        "/druid/indexer/v1/datasources/{datasource}/shutdownAllTasks",
        Class::Write,
        Endpoint::Refused(Refused::ShutdownAll),
    ),
    route(
        Method::DELETE,
        "/druid/indexer/v1/pendingSegments/{datasource}",
        Class::Write,
        Endpoint::CleanPendingSegments,
    ),
    route(Method::GET, COMPACTION, Class::Read, Endpoint::CompactionConfigs),
    route(Method::POST, COMPACTION, Class::Write, Endpoint::SubmitCompaction),
    route(Method::GET, COMPACTION_OF, Class::Read, Endpoint::CompactionConfig),
    route(Method::DELETE, COMPACTION_OF, Class::Write, Endpoint::RemoveCompaction),
    route(Method::GET, "/druid/coordinator/v1/compaction/status", Class::Read, Endpoint::CompactionStatus),
    route(Method::GET, RULES, Class::Read, Endpoint::AllRules),
    route(Method::GET, RULES_OF, Class::Read, Endpoint::Rules),
    route(Method::POST, RULES_OF, Class::Write, Endpoint::SetRules),
    route(Method::GET, LOOKUPS, Class::Read, Endpoint::LookupTiers),
    route(Method::POST, LOOKUPS, Class::Write, Endpoint::UpdateLookups),
    route(Method::GET, "/druid/coordinator/v1/lookups/config/all", Class::Read, Endpoint::AllLookups),
    route(Method::GET, LOOKUP_TIER, Class::Read, Endpoint::LookupTier),
    route(Method::DELETE, LOOKUP_TIER, Class::Write, Endpoint::DeleteLookupTier),
    route(Method::GET, LOOKUP, Class::Read, Endpoint::Lookup),
    route(Method::POST, LOOKUP, Class::Write, Endpoint::PutLookup),
    route(Method::DELETE, LOOKUP, Class::Write, Endpoint::DeleteLookup),
    route(Method::GET, "/druid/coordinator/v1/lookups/status", Class::Read, Endpoint::LookupStatus),
    route(Method::GET, "/druid/coordinator/v1/lookups/status/{tier}", Class::Read, Endpoint::LookupTierStatus),
    route(Method::GET, "/druid/coordinator/v1/lookups/status/{tier}/{name}", Class::Read, Endpoint::LookupOneStatus),
    // The web console: its page at Druid's path and its own, then each of its files.
    route(Method::GET, "/unified-console.html", Class::Read, Endpoint::Console),
    route(Method::GET, "/console", Class::Read, Endpoint::Console),
    route(Method::GET, "/console/style.css", Class::Read, Endpoint::Console),
    route(Method::GET, "/console/app.js", Class::Read, Endpoint::Console),
    route(Method::GET, "/console/api.js", Class::Read, Endpoint::Console),
    route(Method::GET, "/console/dom.js", Class::Read, Endpoint::Console),
    route(Method::GET, "/console/chart.js", Class::Read, Endpoint::Console),
    route(Method::GET, "/console/native.js", Class::Read, Endpoint::Console),
    route(Method::GET, "/console/supervisors.js", Class::Read, Endpoint::Console),
    route(Method::GET, "/console/tasks.js", Class::Read, Endpoint::Console),
    route(Method::GET, "/console/segments.js", Class::Read, Endpoint::Console),
    route(Method::GET, "/console/query.js", Class::Read, Endpoint::Console),
    route(Method::GET, "/console/compaction.js", Class::Read, Endpoint::Console),
];

impl RouteSpec {
    /// Whether a request's method and path are this route's (`HEAD` is a `GET`'s, as the
    /// router answers it).
    pub fn matches(&self, method: &Method, path: &str) -> bool {
        let method_matches = *method == self.method || (*method == Method::HEAD && self.method == Method::GET);
        method_matches && path_matches(self.path, path)
    }

    fn method_router(&self) -> MethodRouter<Arc<ApiState>> {
        let filter = MethodFilter::try_from(self.method.clone()).expect("the route table names standard methods");
        match self.endpoint {
            Endpoint::Status => on(filter, || async { axum::Json(super::status::answer()) }),
            Endpoint::Health => on(filter, || async { axum::Json(true) }),
            Endpoint::NativeQuery => on(filter, super::query),
            Endpoint::Sql => on(filter, sql::query),
            Endpoint::Datasources => on(filter, super::datasources),
            Endpoint::Describe => on(filter, datasource_info::describe),
            Endpoint::Dimensions => on(filter, datasource_info::dimensions),
            Endpoint::Metrics => on(filter, datasource_info::metrics),
            Endpoint::Supervisors => on(filter, super::supervisors),
            Endpoint::Submit => on(filter, super::submit),
            Endpoint::Spec => on(filter, super::spec),
            Endpoint::SupervisorStatus => on(filter, super::supervisor_status),
            Endpoint::SupervisorHealth => on(filter, super::supervisor_health),
            Endpoint::SupervisorStats => on(filter, supervisor_api::stats),
            Endpoint::SupervisorHistory => on(filter, supervisor_api::history),
            Endpoint::AllHistory => on(filter, supervisor_api::all_history),
            Endpoint::SuspendAll => on(filter, supervisor_api::suspend_all),
            Endpoint::ResumeAll => on(filter, supervisor_api::resume_all),
            Endpoint::TerminateAll => on(filter, supervisor_api::terminate_all),
            Endpoint::Operate => on(filter, super::operate),
            Endpoint::Tasks => on(filter, tasks::list),
            Endpoint::CompleteTasks => on(filter, tasks::complete),
            Endpoint::RunningTasks => on(filter, tasks::running),
            Endpoint::PendingTasks => on(filter, tasks::pending),
            Endpoint::WaitingTasks => on(filter, tasks::waiting),
            Endpoint::TaskPayload => on(filter, tasks::payload),
            Endpoint::TaskStatus => on(filter, tasks::status),
            Endpoint::TaskReports => on(filter, tasks::reports),
            Endpoint::BulkTaskStatus => on(filter, tasks::bulk_status),
            Endpoint::CleanPendingSegments => on(filter, tasks::clean_pending_segments),
            Endpoint::Refused(what) => on(filter, move || async move { tasks::refused(what) }),
            Endpoint::CompactionConfigs => on(filter, compaction::list),
            Endpoint::SubmitCompaction => on(filter, compaction::submit),
            Endpoint::SubmitTask => on(filter, super::batch_tasks::submit),
            Endpoint::CompactionConfig => on(filter, compaction::get),
            Endpoint::RemoveCompaction => on(filter, compaction::remove),
            Endpoint::CompactionStatus => on(filter, compaction::status),
            Endpoint::AllRules => on(filter, retention::list),
            Endpoint::Rules => on(filter, retention::get),
            Endpoint::SetRules => on(filter, retention::set),
            Endpoint::LookupTiers => on(filter, lookups::tiers),
            Endpoint::UpdateLookups => on(filter, lookups::update_all),
            Endpoint::AllLookups => on(filter, lookups::all),
            Endpoint::LookupTier => on(filter, lookups::tier),
            Endpoint::DeleteLookupTier => on(filter, lookups::delete_tier),
            Endpoint::Lookup => on(filter, lookups::get),
            Endpoint::PutLookup => on(filter, lookups::put),
            Endpoint::DeleteLookup => on(filter, lookups::delete),
            Endpoint::LookupStatus => on(filter, lookups::status),
            Endpoint::LookupTierStatus => on(filter, lookups::tier_status),
            Endpoint::LookupOneStatus => on(filter, lookups::lookup_status),
            Endpoint::Console => {
                let path = self.path;
                on(filter, move || async move { console::answer(path) })
            }
        }
    }
}

/// Whether `path` fits `pattern`, segment by segment.
fn path_matches(pattern: &str, path: &str) -> bool {
    let (mut want, mut got) = (pattern.split('/'), path.split('/'));
    loop {
        match (want.next(), got.next()) {
            (None, None) => return true,
            (Some(w), Some(g)) if w.starts_with('{') && w.ends_with('}') && !g.is_empty() => {}
            (Some(w), Some(g)) if w == g => {}
            _ => return false,
        }
    }
}

/// The class of the route a request names: [`Class::Write`] if any route it fits changes
/// state, none if it fits no route.
pub fn class_of(method: &Method, path: &str) -> Option<Class> {
    let classes: Vec<Class> = ROUTES.iter().filter(|r| r.matches(method, path)).map(|r| r.class).collect();
    match classes.first() {
        _ if classes.contains(&Class::Write) => Some(Class::Write),
        first => first.copied(),
    }
}

/// Which of the API's routes a server answers: Druid authorizes reading a datasource and
/// writing to it separately, and the template deploys the two halves as two functions with
/// their own roles and Function URLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routes {
    /// Every route.
    All,
    /// [`Class::Query`] and [`Class::Read`]: what a query-only principal may use.
    Reads,
    /// [`Class::Write`] and [`Class::Read`]: the changes, and the reads that show their effect.
    Writes,
}

/// A routes name that is none of `all`, `reads` and `writes`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: expected all, reads or writes")]
pub struct UnknownRoutes(pub String);

impl Routes {
    /// Routes from the name the api function's `SLUICE_API_ROUTES` gives: `all` (or nothing),
    /// `reads` or `writes`.
    pub fn from_name(name: Option<&str>) -> Result<Self, UnknownRoutes> {
        match name.unwrap_or("all") {
            "all" | "" => Ok(Routes::All),
            "reads" => Ok(Routes::Reads),
            "writes" => Ok(Routes::Writes),
            other => Err(UnknownRoutes(other.to_string())),
        }
    }

    /// Whether a server of these routes serves routes of `class`.
    pub fn serves(self, class: Class) -> bool {
        match self {
            Routes::All => true,
            Routes::Reads => class != Class::Write,
            Routes::Writes => class != Class::Query,
        }
    }
}

/// The API's routes.
pub fn router(state: ApiState) -> Router {
    router_for(state, Routes::All)
}

/// The API's routes of `routes`, from [`ROUTES`]; the others answer 403 naming where they are
/// served.
pub fn router_for(state: ApiState, routes: Routes) -> Router {
    let mut r = Router::new();
    for spec in ROUTES {
        let handler = if routes.serves(spec.class) {
            spec.method_router()
        } else {
            let filter = MethodFilter::try_from(spec.method.clone()).expect("the route table names standard methods");
            on(filter, move || async move { elsewhere(routes) })
        };
        r = r.route(spec.path, handler);
    }
    r.fallback(move || async move { elsewhere(routes) }).with_state(Arc::new(state))
}

/// The answer to a route this server does not serve.
fn elsewhere(routes: Routes) -> ApiError {
    let message = match routes {
        Routes::Reads => "this endpoint serves queries and reads; supervisor changes go to the operations endpoint",
        Routes::Writes => "this endpoint serves supervisor changes; queries go to the query endpoint",
        Routes::All => "no such route",
    };
    match routes {
        Routes::All => ApiError::new(StatusCode::NOT_FOUND, "Not found", "NotFoundException", message),
        _ => ApiError::new(StatusCode::FORBIDDEN, "Forbidden", "ForbiddenException", message),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    /// A request path for a route: each `{name}` becomes `wiki`.
    fn example(pattern: &str) -> String {
        pattern.split('/').map(|s| if s.starts_with('{') { "wiki" } else { s }).collect::<Vec<_>>().join("/")
    }

    async fn answer(router: &Router, method: &Method, path: &str) -> (StatusCode, String) {
        let request = Request::builder()
            .method(method.clone())
            .uri(path)
            .header("content-type", "application/json")
            .body(Body::from("{}"))
            .expect("request");
        let response = router.clone().oneshot(request).await.expect("response");
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.expect("body");
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    /// An API over file stores under `dir`.
    pub(crate) async fn state(dir: &std::path::Path) -> ApiState {
        let root = dir.display();
        let meta = sluice_store::metadata::open_metadata(&format!("file://{root}/meta")).await.expect("metadata");
        let store = sluice_store::storage::open_store(&format!("file://{root}/store")).await.expect("store");
        ApiState { meta, store, cache: None, fanout: None, tables: Default::default() }
    }

    #[tokio::test]
    async fn each_half_serves_its_classes_and_refuses_the_others() {
        let dir = tempfile::tempdir().expect("temp dir");
        let state = state(dir.path()).await;
        for routes in [Routes::Reads, Routes::Writes] {
            let router = router_for(state.clone(), routes);
            for spec in ROUTES {
                let path = example(spec.path);
                let (status, body) = answer(&router, &spec.method, &path).await;
                let what = format!("{routes:?}: {} {path}: {status} {body}", spec.method);
                if routes.serves(spec.class) {
                    assert_ne!(status, StatusCode::FORBIDDEN, "{what}");
                    assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{what}");
                } else {
                    assert_eq!(status, StatusCode::FORBIDDEN, "{what}");
                    assert!(body.contains("ForbiddenException"), "{what}");
                }
            }
        }
        assert!(ROUTES.iter().any(|r| r.class == Class::Write && !Routes::Reads.serves(r.class)));
    }

    #[test]
    fn a_request_is_classed_by_its_method_and_path() {
        let class = |method: Method, path: &str| class_of(&method, path);
        assert_eq!(class(Method::POST, "/druid/coordinator/v1/rules/wiki"), Some(Class::Write));
        assert_eq!(class(Method::GET, "/druid/coordinator/v1/rules/wiki"), Some(Class::Read));
        assert_eq!(class(Method::HEAD, "/druid/coordinator/v1/rules/wiki"), Some(Class::Read));
        assert_eq!(class(Method::DELETE, "/druid/coordinator/v1/config/compaction/wiki"), Some(Class::Write));
        assert_eq!(class(Method::POST, "/druid/indexer/v1/supervisor/wiki/status"), Some(Class::Write));
        assert_eq!(class(Method::GET, "/druid/indexer/v1/supervisor/wiki/status"), Some(Class::Read));
        assert_eq!(class(Method::POST, "/druid/v2"), Some(Class::Query));
        assert_eq!(class(Method::PUT, "/druid/coordinator/v1/rules/wiki"), None);
        assert_eq!(class(Method::POST, "/druid/coordinator/v1/rules/"), None);
        assert_eq!(class(Method::POST, "/druid/coordinator/v1/rules/wiki/x"), None);
        assert_eq!(class(Method::GET, "/druid/v2/datasources/"), None);
    }

    #[test]
    fn every_route_is_routed_once() {
        for (i, a) in ROUTES.iter().enumerate() {
            assert!(MethodFilter::try_from(a.method.clone()).is_ok(), "{}", a.path);
            for b in &ROUTES[i + 1..] {
                assert!(!(a.method == b.method && a.path == b.path), "{} {} twice", a.method, a.path);
            }
        }
    }
}
