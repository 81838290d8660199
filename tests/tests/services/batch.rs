//! Batch tasks (Druid's `index_parallel`) into a streaming datasource, on each backend: Druid's
//! batch tutorial spec over the Wikipedia sample gives the tutorial's answers; a task appends
//! beside the stream's segments and publishes once however often its jobs run (twice at once
//! too); an overwrite hides exactly the chunks it covers; a resubmitted id is the same task,
//! another spec under it is refused; a split past `maxParseExceptions` fails its task with
//! nothing published.

use axum::body::Body;
use axum::http::StatusCode;
use serde_json::{json, Value};
use sluice_format::time::now_ms;
use sluice_integration::indexing::{spec, visible_values, Backends};
use sluice_integration::protocol::Setup;
use sluice_integration::unique;
use sluice_integration::wikipedia::{data_path, documented_answer, tutorial_query, tutorial_spec};
use sluice_pipeline::batch::{
    self, allow_in_process, find, index_split, publish_batch, BatchAccess, BatchError, BatchPublished, BatchState,
    SplitOptions, SplitOutcome,
};
use sluice_pipeline::invoker::QueueInvoker;
use sluice_pipeline::runner::drain;
use sluice_pipeline::timeline::visible_segments;
use sluice_store::metadata::MetadataStore;
use sluice_store::storage::ObjectStore;
use std::time::Duration;

const HOUR: i64 = 3_600_000;

/// An `index_parallel` spec of the test datasource's schema (`id`, `page`, a count and a sum
/// of `added`, hourly chunks) over inline `rows` (`(id, hour)`).
fn inline_spec(datasource: &str, rows: &[(String, usize)], append: bool) -> Value {
    let data: Vec<String> = rows
        .iter()
        .map(|(id, hour)| format!(r#"{{"ts": "2015-09-12T0{hour}:30:00Z", "id": "{id}", "page": "b", "added": 1}}"#))
        .collect();
    // The stream's data schema (tests/src/indexing.rs).
    let schema = spec(datasource, "t", "b:9092", json!({"type": "json"}), json!({}))["spec"]["dataSchema"].clone();
    json!({"type": "index_parallel", "spec": {
        "dataSchema": schema,
        "ioConfig": {"type": "index_parallel", "inputSource": {"type": "inline", "data": data.join("\n")},
            "inputFormat": {"type": "json"}, "appendToExisting": append},
        "tuningConfig": {"type": "index_parallel", "maxNumConcurrentSubTasks": 2}
    }})
}

fn ids(prefix: &str, n: usize, hour: usize) -> Vec<(String, usize)> {
    (0..n).map(|i| (format!("{prefix}{i}"), hour)).collect()
}

/// Submits `spec` and runs its jobs in this process until it published or failed.
async fn run(meta: &dyn MetadataStore, store: &dyn ObjectStore, spec: Value) -> batch::BatchTaskItem {
    let submitted = batch::submit(meta, &batch::process_access(), spec, now_ms()).await.expect("submit");
    finish(meta, store, &submitted.id).await
}

async fn finish(meta: &dyn MetadataStore, store: &dyn ObjectStore, id: &str) -> batch::BatchTaskItem {
    let queue = QueueInvoker::default();
    for _ in 0..50 {
        let (task, _) = find(meta, id).await.expect("find").expect("the task");
        if task.state != BatchState::Running {
            return task;
        }
        batch::drive(meta, &queue, &task.datasource, now_ms()).await.expect("drive");
        drain(meta, store, &queue, Duration::from_secs(60), |_, _| {}).await;
    }
    panic!("batch task {id} did not finish");
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

async fn a_batch_task_appends_beside_the_stream_and_publishes_once(b: Backends) {
    let s = Setup::new(b, 1, 60, 1, 20, json!({})).await;
    s.catch_up().await;
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    let stream_segments = visible_segments(meta, &s.name).await.expect("timeline").len();

    let mut spec = inline_spec(&s.name, &ids("b", 10, 1), true);
    spec["id"] = format!("backfill-{}", unique("b")).into();
    let task = run(meta, store, spec.clone()).await;
    assert_eq!(task.state, BatchState::Published, "{task:?}");
    assert_eq!((task.segments, task.replaced, task.meters.map(|m| m.processed)), (1, 0, Some(10)), "{task:?}");
    let mut expected = s.expected();
    expected.extend(ids("b", 10, 1).into_iter().map(|(id, _)| id));
    assert_eq!(visible_values(meta, store, &s.name, "id").await, sorted(expected.clone()), "beside the stream's");
    assert_eq!(visible_segments(meta, &s.name).await.expect("timeline").len(), stream_segments + 1);

    // Its jobs again, and the same spec resubmitted: nothing new.
    assert_eq!(publish_batch(meta, store, &task.id, now_ms()).await.expect("again"), BatchPublished::Finished);
    let access = BatchAccess::default();
    assert_eq!(
        index_split(meta, store, &access, &task.id, 0, &SplitOptions::until(now_ms(), None)).await.expect("again"),
        SplitOutcome::Finished
    );
    let again = batch::submit(meta, &access, spec.clone(), now_ms()).await.expect("resubmitted");
    assert!(again.existed && again.id == task.id, "{again:?}");
    let mut other = spec.clone();
    other["spec"]["ioConfig"]["inputSource"]["data"] = "{}".into();
    assert!(matches!(batch::submit(meta, &access, other, now_ms()).await, Err(BatchError::IdTaken(_))));
    assert_eq!(finish(meta, store, &task.id).await.state, BatchState::Published);
    assert_eq!(visible_values(meta, store, &s.name, "id").await, sorted(expected.clone()), "published once");

    // Two publishers of one task at once (a duplicated invocation): at most one publishes. Both
    // may give up (the second counted itself, so the first's transaction fails; the second
    // found the first's segment keys taken): then the next publish does.
    let spec = inline_spec(&s.name, &ids("c", 5, 0), true);
    let submitted = batch::submit(meta, &access, spec, now_ms()).await.expect("submit");
    let split =
        index_split(meta, store, &access, &submitted.id, 0, &SplitOptions::until(now_ms(), None)).await.expect("split");
    assert_eq!(split, SplitOutcome::Done { rows: 5, hydrants: 1 });
    let (one, two) = tokio::join!(
        publish_batch(meta, store, &submitted.id, now_ms()),
        publish_batch(meta, store, &submitted.id, now_ms())
    );
    let outcomes = [one.expect("one"), two.expect("two")];
    let published = outcomes.iter().filter(|o| matches!(o, BatchPublished::Published { .. })).count();
    assert!(published <= 1, "{outcomes:?}");
    if published == 0 {
        assert!(outcomes.iter().all(|o| matches!(o, BatchPublished::Conflict(_))), "{outcomes:?}");
        let again = publish_batch(meta, store, &submitted.id, now_ms()).await.expect("again");
        assert!(matches!(again, BatchPublished::Published { .. }), "{again:?}");
    }
    assert_eq!(finish(meta, store, &submitted.id).await.state, BatchState::Published);
    expected.extend(ids("c", 5, 0).into_iter().map(|(id, _)| id));
    assert_eq!(visible_values(meta, store, &s.name, "id").await, sorted(expected.clone()), "each row once");

    // Local files; resubmitted once a file was added, the id is refused rather than mixed.
    let dir = tempfile::tempdir().expect("dir");
    let row = |id: &str| format!(r#"{{"ts": "2015-09-12T01:10:00Z", "id": "{id}", "page": "f", "added": 1}}"#);
    std::fs::write(dir.path().join("a.json"), row("f0")).expect("write");
    allow_in_process(Some(dir.path()), None);
    let mut files = inline_spec(&s.name, &[], true);
    files["id"] = unique("files").into();
    files["spec"]["ioConfig"]["inputSource"] =
        json!({"type": "local", "baseDir": dir.path().display().to_string(), "filter": "*.json"});
    assert_eq!(run(meta, store, files.clone()).await.state, BatchState::Published);
    expected.push("f0".into());
    assert_eq!(visible_values(meta, store, &s.name, "id").await, sorted(expected));
    std::fs::write(dir.path().join("b.json"), row("f1")).expect("write");
    let e = batch::submit(meta, &batch::process_access(), files, now_ms()).await.expect_err("listed otherwise");
    assert!(e.to_string().contains("new id"), "{e}");
    s.b.discard(&s.name).await;
}

async fn an_overwrite_hides_exactly_the_chunks_it_covers(b: Backends) {
    let s = Setup::new(b, 1, 60, 1, 20, json!({})).await;
    s.catch_up().await;
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    let before = visible_segments(meta, &s.name).await.expect("timeline");
    let task = run(meta, store, inline_spec(&s.name, &ids("o", 4, 2), false)).await;
    assert_eq!(task.state, BatchState::Published, "{task:?}");
    let in_hour_2 = before.iter().filter(|r| r.interval.start % (24 * HOUR) == 2 * HOUR).count() as u64;
    assert_eq!((task.segments, task.replaced), (1, in_hour_2), "{task:?}");
    // Stream records r<n> fall in hour n % 3: hour 2's are replaced, the others stay.
    let mut expected: Vec<String> = (0..60).filter(|n| n % 3 != 2).map(|n| format!("r{n}")).collect();
    expected.extend(ids("o", 4, 2).into_iter().map(|(id, _)| id));
    assert_eq!(visible_values(meta, store, &s.name, "id").await, sorted(expected.clone()));

    // Two overwrites of hour 7 (no segment there yet) publishing at once: one's rows, never both.
    let access = BatchAccess::default();
    let mut both = Vec::new();
    for prefix in ["x", "y"] {
        let submitted = batch::submit(meta, &access, inline_spec(&s.name, &ids(prefix, 3, 7), false), now_ms())
            .await
            .expect("submit");
        let split = index_split(meta, store, &access, &submitted.id, 0, &SplitOptions::until(now_ms(), None)).await;
        assert!(matches!(split, Ok(SplitOutcome::Done { rows: 3, .. })), "{split:?}");
        both.push(submitted.id);
    }
    let _ =
        tokio::join!(publish_batch(meta, store, &both[0], now_ms()), publish_batch(meta, store, &both[1], now_ms()));
    for id in &both {
        assert_eq!(finish(meta, store, id).await.state, BatchState::Published);
    }
    let hour_7: Vec<String> = visible_values(meta, store, &s.name, "id")
        .await
        .into_iter()
        .filter(|id| id.starts_with('x') || id.starts_with('y'))
        .collect();
    assert!(hour_7 == ["x0", "x1", "x2"] || hour_7 == ["y0", "y1", "y2"], "one overwrite's rows: {hour_7:?}");
    expected.extend(hour_7);
    assert_eq!(visible_values(meta, store, &s.name, "id").await, sorted(expected.clone()));

    // dropExisting with hour 0 in its intervals and rows only in hour 1: hours 0 and 1 are
    // replaced, hour 0 by nothing.
    let mut spec = inline_spec(&s.name, &ids("d", 3, 1), false);
    spec["spec"]["ioConfig"]["dropExisting"] = true.into();
    let last = expected.iter().filter(|id| id.starts_with('x') || id.starts_with('y')).cloned().collect::<Vec<_>>();
    spec["spec"]["dataSchema"]["granularitySpec"]["intervals"] = json!(["2015-09-12T00:00:00Z/2015-09-12T02:00:00Z"]);
    let task = run(meta, store, spec).await;
    assert_eq!(task.state, BatchState::Published, "{task:?}");
    let mut expected: Vec<String> = ids("o", 4, 2).into_iter().map(|(id, _)| id).collect();
    expected.extend(ids("d", 3, 1).into_iter().map(|(id, _)| id));
    expected.extend(last);
    assert_eq!(visible_values(meta, store, &s.name, "id").await, sorted(expected));
    s.b.discard(&s.name).await;
}

async fn a_split_past_max_parse_exceptions_fails_its_task(b: Backends) {
    let s = Setup::new(b, 1, 30, 1, 30, json!({})).await;
    s.catch_up().await;
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    let mut spec = inline_spec(&s.name, &ids("x", 3, 0), true);
    spec["spec"]["ioConfig"]["inputSource"]["data"] =
        "{\"ts\": \"2015-09-12T00:00:00Z\", \"id\": \"ok\"}\nnot json\n".into();
    spec["spec"]["tuningConfig"]["maxParseExceptions"] = 0.into();
    let task = run(meta, store, spec).await;
    assert_eq!(task.state, BatchState::Failed, "{task:?}");
    let error = task.error.unwrap_or_default();
    assert!(error.contains("maxParseExceptions") && error.contains("inline data byte 43"), "{error}");
    assert_eq!(visible_values(meta, store, &s.name, "id").await, s.expected(), "nothing of it published");
    s.b.discard(&s.name).await;
}

async fn send(b: &Backends, method: &str, path: &str, body: String) -> (StatusCode, Value) {
    super::task_api::send(b, method, path, Body::from(body)).await
}

/// Druid's task API: a batch task submitted by `POST /druid/indexer/v1/task`, then its status,
/// payload, report, place in the lists and `sys.tasks`; a bad spec is refused naming its field.
async fn the_task_api_submits_and_shows_batch_tasks(b: Backends) {
    let s = Setup::new(b, 1, 30, 1, 30, json!({})).await;
    s.catch_up().await;
    let spec = inline_spec(&s.name, &ids("api", 6, 1), true);
    let (status, body) = send(&s.b, "POST", "/druid/indexer/v1/task", spec.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["task"].as_str().expect("the task id").to_string();
    assert!(id.starts_with(&format!("index_parallel_{}_", s.name)), "{id}");
    let (_, running) = send(&s.b, "GET", &format!("/druid/indexer/v1/task/{id}/status"), String::new()).await;
    assert_eq!(
        (running["status"]["status"].as_str(), running["status"]["type"].as_str()),
        (Some("RUNNING"), Some("index_parallel"))
    );
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    assert_eq!(finish(meta, store, &id).await.state, BatchState::Published);
    let (_, done) = send(&s.b, "GET", &format!("/druid/indexer/v1/task/{id}/status"), String::new()).await;
    assert_eq!(done["status"]["status"], "SUCCESS", "{done}");
    let (_, report) = send(&s.b, "GET", &format!("/druid/indexer/v1/task/{id}/reports"), String::new()).await;
    let payload = &report["ingestionStatsAndErrors"]["payload"];
    assert_eq!(payload["rowStats"]["buildSegments"]["processed"], 6, "{report}");
    assert_eq!(payload["ingestionState"], "COMPLETED", "{report}");
    let (_, task) = send(&s.b, "GET", &format!("/druid/indexer/v1/task/{id}"), String::new()).await;
    assert_eq!(task["payload"]["spec"]["ioConfig"]["appendToExisting"], true, "{task}");
    let (_, list) =
        send(&s.b, "GET", &format!("/druid/indexer/v1/tasks?datasource={}&type=index_parallel", s.name), String::new())
            .await;
    let listed: Vec<&str> = list.as_array().expect("list").iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(listed, [id.as_str()], "{list}");
    let (_, stream_only) =
        send(&s.b, "GET", &format!("/druid/indexer/v1/tasks?datasource={}&type=index_kafka", s.name), String::new())
            .await;
    assert!(stream_only.as_array().expect("list").iter().all(|t| t["type"] == "index_kafka"), "{stream_only}");
    let query =
        json!({"query": format!("SELECT type, status FROM sys.tasks WHERE task_id = '{id}'"), "resultFormat": "array"});
    let (_, rows) = send(&s.b, "POST", "/druid/v2/sql", query.to_string()).await;
    assert_eq!(rows, json!([["index_parallel", "SUCCESS"]]));
    let (_, bulk) = send(&s.b, "POST", "/druid/indexer/v1/taskStatus", json!([id]).to_string()).await;
    assert_eq!(bulk[&id]["status"], "SUCCESS", "{bulk}");
    let mut bad = spec.clone();
    bad["spec"]["tuningConfig"]["partitionsSpec"] = json!({"type": "hashed"});
    let (status, refused) = send(&s.b, "POST", "/druid/indexer/v1/task", bad.to_string()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert!(refused["errorMessage"].as_str().unwrap_or_default().contains("partitionsSpec"), "{refused}");
    s.b.discard(&s.name).await;
}

/// Druid's batch tutorial: `index_parallel` from a `local` directory holding the sample into a
/// datasource of the Kafka tutorial's spec; the 12 rows off 2015-09-12 fall outside its
/// `intervals` and are thrown away.
async fn druids_batch_tutorial_gives_the_tutorials_answers(b: Backends) {
    let name = unique("wikipedia");
    let spec = tutorial_spec(&name, "wikipedia", "127.0.0.1:9");
    sluice_pipeline::datasource::submit(b.meta.as_ref(), spec, now_ms()).await.expect("the datasource");
    let dir = data_path("");
    allow_in_process(Some(std::path::Path::new(&dir)), None);
    let text = std::fs::read_to_string(data_path("specs/wikipedia-index-parallel.json")).expect("the tutorial spec");
    let mut spec: Value = serde_json::from_str(&text).expect("JSON");
    spec["spec"]["dataSchema"]["dataSource"] = name.clone().into();
    spec["spec"]["ioConfig"]["inputSource"]["baseDir"] = dir.into();
    let (meta, store) = (b.meta.as_ref(), b.store.as_ref());
    let task = run(meta, store, spec).await;
    assert_eq!(task.state, BatchState::Published, "{task:?}");
    let m = task.meters.expect("meters");
    assert_eq!((m.processed, m.thrown_away, m.unparseable), (39_232, 12, 0), "{m:?}");
    let top = sluice_query::run_query(meta, store, None, &tutorial_query("wikipedia-top-pages.json", &name))
        .await
        .expect("query");
    assert_eq!(top[0]["result"], documented_answer("wikipedia-top-pages.json")["result"], "{top}");
    b.discard(&name).await;
}

sluice_integration::on_backends!(
    a_batch_task_appends_beside_the_stream_and_publishes_once,
    an_overwrite_hides_exactly_the_chunks_it_covers,
    a_split_past_max_parse_exceptions_fails_its_task,
    druids_batch_tutorial_gives_the_tutorials_answers,
    the_task_api_submits_and_shows_batch_tasks,
);
