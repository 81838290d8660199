//! Druid's task and supervisor API over a pipeline's real tasks: the tasks as they run and,
//! once cleanup deleted their items, from the reports cleanup kept; the supervisor's history,
//! stats and the operations on every supervisor.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use sluice_integration::indexing::{spec, Backends};
use sluice_integration::protocol::Setup;
use sluice_pipeline::datasource::submit;
use sluice_pipeline::invoker::QueueInvoker;
use sluice_pipeline::runner::run_until_caught_up;
use sluice_pipeline::supervisor::{supervise, SupervisorOptions};
use std::time::Duration;
use tower::ServiceExt;

fn now() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

async fn call(b: &Backends, method: &str, path: &str) -> (StatusCode, Value) {
    let state = sluice_http::ApiState {
        meta: b.meta.clone(),
        store: b.store.clone(),
        cache: None,
        fanout: None,
        tables: Default::default(),
    };
    let request = Request::builder().method(method).uri(path).body(Body::empty()).expect("request");
    let response = sluice_http::router(state).oneshot(request).await.expect("response");
    let status = response.status();
    let bytes = response.into_body().collect().await.expect("body").to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// The ids and Druid statuses of the datasource's tasks the list gives.
fn listed(list: &Value, name: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = list
        .as_array()
        .expect("a list")
        .iter()
        .filter(|t| t["dataSource"] == name)
        .map(|t| (t["id"].as_str().unwrap_or("").to_string(), t["status"].as_str().unwrap_or("").to_string()))
        .collect();
    out.sort();
    out
}

/// Rows each task's report says it processed, summed.
async fn processed(b: &Backends, ids: &[(String, String)]) -> u64 {
    let mut total = 0;
    for (id, _) in ids {
        let (status, report) = call(b, "GET", &format!("/druid/indexer/v1/task/{id}/reports")).await;
        assert_eq!(status, StatusCode::OK, "{id}: {report}");
        let payload = &report["ingestionStatsAndErrors"]["payload"];
        assert_eq!(payload["ingestionState"], "COMPLETED", "{report}");
        total += payload["rowStats"]["buildSegments"]["processed"].as_u64().expect("processed");
    }
    total
}

async fn finished_tasks_answer_from_their_items_then_from_their_reports(b: Backends) {
    let s = Setup::new(b, 2, 40, 1, 10, serde_json::json!({})).await;
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    let passes = run_until_caught_up(meta, store, Some(&s.name), 40, Duration::from_secs(120), |_, _| {})
        .await
        .expect("pipeline");
    assert!(passes.iter().all(|p| p.caught_up), "{passes:?}");

    let (status, live) = call(&s.b, "GET", &format!("/druid/indexer/v1/tasks?datasource={}", s.name)).await;
    assert_eq!(status, StatusCode::OK, "{live}");
    let live = listed(&live, &s.name);
    assert!(live.len() >= 4, "40 records in tasks of at most 10: {live:?}");
    assert!(live.iter().all(|(_, st)| st == "SUCCESS"), "{live:?}");
    assert_eq!(processed(&s.b, &live).await, 40, "every record counted once, from the tasks' checkpoints");

    let options = SupervisorOptions { cleanup_grace_ms: 0, ..SupervisorOptions::at(now()) };
    let done = supervise(meta, store, &QueueInvoker::default(), &options, &s.name).await.expect("pass");
    assert!(done.cleaned >= 4, "{done:?}");
    let pk = sluice_pipeline::keys::group_pk(&s.name, 0);
    assert!(meta.query(&pk, "task#").await.expect("query").is_empty(), "the task items are deleted");

    let path = format!("/druid/indexer/v1/completeTasks?datasource={}", s.name);
    let (status, kept) = call(&s.b, "GET", &path).await;
    assert_eq!(status, StatusCode::OK, "{kept}");
    assert_eq!(listed(&kept, &s.name), live, "the same tasks, now from their reports");
    assert_eq!(processed(&s.b, &live).await, 40, "and the same meters");
    let (pending, _) = (call(&s.b, "GET", "/druid/indexer/v1/pendingTasks").await.1, ());
    assert!(listed(&pending, &s.name).is_empty(), "{pending}");

    let id = &live[0].0;
    let (status, one) = call(&s.b, "GET", &format!("/druid/indexer/v1/task/{id}/status")).await;
    assert_eq!((status, &one["status"]["status"]), (StatusCode::OK, &Value::from("SUCCESS")), "{one}");
    let (_, payload) = call(&s.b, "GET", &format!("/druid/indexer/v1/task/{id}")).await;
    let payload = &payload["payload"];
    assert_eq!(payload["dataSchema"]["dataSource"], s.name.as_str(), "the spec from the history: {payload}");
    assert_eq!(payload["ioConfig"]["startSequenceNumbers"]["stream"], s.topic.as_str(), "{payload}");
    let (status, _) = call(&s.b, "GET", &format!("/druid/indexer/v1/task/{}_0000_000099999999/status", s.name)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (_, history) = call(&s.b, "GET", &format!("/druid/indexer/v1/supervisor/{}/history", s.name)).await;
    assert_eq!(history.as_array().map(Vec::len), Some(1), "one spec submitted: {history}");
    let (status, stats) = call(&s.b, "GET", &format!("/druid/indexer/v1/supervisor/{}/stats", s.name)).await;
    assert_eq!((status, stats), (StatusCode::OK, serde_json::json!({})), "no task reading");
}

async fn detailed_states(b: &Backends, names: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for name in names {
        let (_, st) = call(b, "GET", &format!("/druid/indexer/v1/supervisor/{name}/status")).await;
        out.push(st["payload"]["detailedState"].as_str().unwrap_or("").to_string());
    }
    out
}

/// Every supervisor of a table of its own: suspended, resumed, terminated at once.
async fn operations_on_every_supervisor(b: Backends) {
    let names = [sluice_integration::unique("all"), sluice_integration::unique("all")];
    for name in &names {
        let spec = spec(name, "t", "127.0.0.1:1", serde_json::json!({"type": "json"}), serde_json::json!({}));
        submit(b.meta.as_ref(), spec, now()).await.expect("submit");
    }
    for (op, expected) in [("suspendAll", "SUSPENDED"), ("resumeAll", "PENDING"), ("terminateAll", "TERMINATED")] {
        let (status, body) = call(&b, "POST", &format!("/druid/indexer/v1/supervisor/{op}")).await;
        assert_eq!((status, &body["status"]), (StatusCode::OK, &Value::from("success")), "{op}: {body}");
        assert_eq!(detailed_states(&b, &names).await, vec![expected; 2], "after {op}");
    }
    call(&b, "POST", "/druid/indexer/v1/supervisor/resumeAll").await;
    assert_eq!(detailed_states(&b, &names).await, vec!["TERMINATED"; 2], "a terminated supervisor is not resumed");
}

#[tokio::test(flavor = "multi_thread")]
async fn operations_on_every_supervisor_on_local_backends() {
    operations_on_every_supervisor(Backends::local().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn operations_on_every_supervisor_on_a_dynamodb_table_of_its_own() {
    let table = sluice_integration::fresh_table("every-supervisor").await;
    let meta = sluice_store::metadata::open_metadata(&table).await.expect("DynamoDB");
    operations_on_every_supervisor(Backends::aws().await.with_meta(meta)).await;
}

sluice_integration::on_backends!(finished_tasks_answer_from_their_items_then_from_their_reports,);
