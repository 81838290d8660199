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
    send(b, method, path, Body::empty()).await
}

/// The rows (arrays) of a SQL query through `POST /druid/v2/sql`.
async fn sql(b: &Backends, query: &str) -> Vec<Value> {
    let body = serde_json::json!({"query": query, "resultFormat": "array"}).to_string();
    let (status, rows) = send(b, "POST", "/druid/v2/sql", Body::from(body)).await;
    assert_eq!(status, StatusCode::OK, "{query}: {rows}");
    rows.as_array().cloned().unwrap_or_default()
}

/// One request to Druid's API on `b` (the other modules' too): its status and JSON.
pub(crate) async fn send(b: &Backends, method: &str, path: &str, body: Body) -> (StatusCode, Value) {
    let state = sluice_http::ApiState {
        meta: b.meta.clone(),
        store: b.store.clone(),
        cache: None,
        fanout: None,
        tables: Default::default(),
    };
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body)
        .expect("request");
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
    let query = format!("SELECT task_id, status, type, duration FROM sys.tasks WHERE datasource = '{}'", s.name);
    let mut rows = sql(&s.b, &query).await;
    rows.sort_by_key(|r| r[0].as_str().unwrap_or("").to_string());
    let ids: Vec<(String, String)> =
        rows.iter().map(|r| (r[0].as_str().unwrap_or("").into(), r[1].as_str().unwrap_or("").into())).collect();
    assert_eq!(ids, live, "sys.tasks lists what the task API lists");
    assert!(rows.iter().all(|r| r[2] == "index_kafka" && r[3].as_i64().is_some_and(|d| d >= 0)), "{rows:?}");
    let query = format!(
        "SELECT supervisor_id, state, healthy, type, source, suspended, spec FROM sys.supervisors WHERE supervisor_id = '{}'",
        s.name
    );
    let rows = sql(&s.b, &query).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    let expected = serde_json::json!([s.name, "RUNNING", 1, "kafka", s.topic, 0]);
    assert_eq!(Value::from(row.as_array().expect("a row")[..6].to_vec()), expected, "{row}");
    let spec: Value = serde_json::from_str(row[6].as_str().expect("the spec as text")).expect("JSON");
    assert_eq!(
        spec["spec"]["dataSchema"]["dataSource"].as_str().or(spec["dataSchema"]["dataSource"].as_str()),
        Some(s.name.as_str()),
        "{spec}"
    );

    let id = &live[0].0;
    let (status, one) = call(&s.b, "GET", &format!("/druid/indexer/v1/task/{id}/status")).await;
    assert_eq!((status, &one["status"]["status"]), (StatusCode::OK, &Value::from("SUCCESS")), "{one}");
    let (_, payload) = call(&s.b, "GET", &format!("/druid/indexer/v1/task/{id}")).await;
    let payload = &payload["payload"];
    assert_eq!(payload["dataSchema"]["dataSource"], s.name.as_str(), "the spec from the history: {payload}");
    assert_eq!(payload["ioConfig"]["startSequenceNumbers"]["stream"], s.topic.as_str(), "{payload}");
    let (status, _) = call(&s.b, "GET", &format!("/druid/indexer/v1/task/{}_0000_000099999999/status", s.name)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    datasource_columns_agree_with_the_spec(&s.b, &s.name).await;

    let (_, history) = call(&s.b, "GET", &format!("/druid/indexer/v1/supervisor/{}/history", s.name)).await;
    assert_eq!(history.as_array().map(Vec::len), Some(1), "one spec submitted: {history}");
    let (status, stats) = call(&s.b, "GET", &format!("/druid/indexer/v1/supervisor/{}/stats", s.name)).await;
    assert_eq!((status, stats), (StatusCode::OK, serde_json::json!({})), "no task reading");
}

/// `GET /druid/v2/datasources/{ds}` (with `?full`, `/dimensions`, `/metrics`) names the columns
/// of the datasource's segments (its spec's) in the interval asked, and none outside.
async fn datasource_columns_agree_with_the_spec(b: &Backends, name: &str) {
    let dimensions = std::collections::BTreeSet::from(["id".to_string(), "page".to_string()]);
    let metrics = std::collections::BTreeSet::from(["added".to_string(), "count".to_string()]);
    let all = "interval=1000-01-01T00:00:00Z/3000-01-01T00:00:00Z";
    let (status, described) = call(b, "GET", &format!("/druid/v2/datasources/{name}?{all}")).await;
    assert_eq!(status, StatusCode::OK, "{described}");
    assert_eq!(described, serde_json::json!({"dimensions": dimensions, "metrics": metrics}));
    let (_, listed) = call(b, "GET", &format!("/druid/v2/datasources/{name}/dimensions?{all}")).await;
    assert_eq!(listed, serde_json::json!(dimensions));
    let (_, listed) = call(b, "GET", &format!("/druid/v2/datasources/{name}/metrics?{all}")).await;
    assert_eq!(listed, serde_json::json!(metrics));
    let (_, full) = call(b, "GET", &format!("/druid/v2/datasources/{name}?full&{all}")).await;
    let intervals = full.as_object().expect("intervals");
    assert!(!intervals.is_empty(), "{full}");
    let mut seen = std::collections::BTreeSet::new();
    for (interval, columns) in intervals {
        assert!(sluice_format::time::Interval::parse(interval).is_ok(), "{interval}");
        seen.extend(columns["dimensions"].as_array().expect("dimensions").iter().filter_map(|d| d.as_str()));
    }
    assert_eq!(seen.into_iter().map(String::from).collect::<std::collections::BTreeSet<_>>(), dimensions);
    let (_, none) = call(b, "GET", &format!("/druid/v2/datasources/{name}?interval=1990-01-01_1990-01-02")).await;
    assert_eq!(none, serde_json::json!({"dimensions": [], "metrics": []}));
    let (status, _) = call(b, "GET", &format!("/druid/v2/datasources/{name}?interval=yesterday")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
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

/// The time lag of a partition behind by records written an hour ago is about an hour, in the
/// pass, the status and Druid's report (`minimumLagMillis`, `aggregateLagMillis`); a partition
/// with nothing to read, and every partition once published, lag 0.
#[tokio::test(flavor = "multi_thread")]
async fn time_lag_is_the_age_of_the_oldest_record_not_published() {
    use sluice_integration::kafka::{create_topic, produce_full, FullRecord};
    let b = Backends::local().await;
    let bootstrap = sluice_integration::required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "timelag", 2).await;
    let hour_ago = now() - 3_600_000;
    let records: Vec<FullRecord> = (0..5)
        .map(|i| FullRecord {
            partition: 0,
            key: None,
            headers: Vec::new(),
            timestamp: hour_ago + i * 1_000,
            value: Some(sluice_integration::indexing::json_record(&format!("r{i}"), i as usize)),
        })
        .collect();
    produce_full(&bootstrap, &topic, &records).await;
    let name = sluice_integration::unique("timelag");
    let mut spec = spec(&name, &topic, &bootstrap, serde_json::json!({"type": "json"}), serde_json::json!({}));
    spec["spec"]["ioConfig"]["useEarliestOffset"] = true.into();
    submit(b.meta.as_ref(), spec, now()).await.expect("submit");
    let (meta, store) = (b.meta.as_ref(), b.store.as_ref());

    let started = now();
    let pass =
        supervise(meta, store, &QueueInvoker::default(), &SupervisorOptions::at(started), &name).await.expect("pass");
    let lags = &pass.time_lag_ms[&topic];
    let behind = started - hour_ago;
    assert_eq!(lags.get(&0), Some(&behind), "the record at offset 0 was written an hour ago: {lags:?}");
    assert_eq!(lags.get(&1), Some(&0), "an empty partition is not behind: {lags:?}");
    let (_, report) = call(&b, "GET", &format!("/druid/indexer/v1/supervisor/{name}/status")).await;
    let payload = &report["payload"];
    assert_eq!(payload["minimumLagMillis"], serde_json::json!({"0": behind, "1": 0}), "{payload}");
    assert_eq!(payload["aggregateLagMillis"], behind, "{payload}");

    // A datasource reading from the latest offset starts at the high watermarks: nothing is behind.
    let latest = sluice_integration::unique("timelag");
    let from_latest = sluice_integration::indexing::spec(
        &latest,
        &topic,
        &bootstrap,
        serde_json::json!({"type": "json"}),
        serde_json::json!({}),
    );
    submit(b.meta.as_ref(), from_latest, now()).await.expect("submit");
    let pass =
        supervise(meta, store, &QueueInvoker::default(), &SupervisorOptions::at(now()), &latest).await.expect("pass");
    assert_eq!(pass.time_lag_ms[&topic], std::collections::BTreeMap::from([(0, 0), (1, 0)]), "from the latest");

    let passes =
        run_until_caught_up(meta, store, Some(&name), 40, Duration::from_secs(120), |_, _| {}).await.expect("pipeline");
    assert!(passes.iter().all(|p| p.caught_up), "{passes:?}");
    let pass =
        supervise(meta, store, &QueueInvoker::default(), &SupervisorOptions::at(now()), &name).await.expect("pass");
    assert_eq!(pass.time_lag_ms[&topic], std::collections::BTreeMap::from([(0, 0), (1, 0)]), "published: no lag");
}
