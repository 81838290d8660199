//! Real-time tasks (`sluiceConfig.realtime`) on each metadata backend: one supervisor pass
//! plans a group's open task; it reads records as they are produced and checkpoints them
//! within its period, closes at `taskDuration` planning the group's next open task itself,
//! stops after `idleAfter` without records; every record is published exactly once, and the
//! supervisor planned only the first task. Queries count every record produced, once, from
//! its checkpoint on: while the tasks read, close, merge and publish. The first pass over a
//! topic with no record yet opens the group's task; a group that ended idle rests until a
//! record arrives.

use sluice_integration::indexing::{json_record, spec, visible_values, Backends};
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::{required_env, unique};
use sluice_pipeline::datasource::submit;
use sluice_pipeline::invoker::QueueInvoker;
use sluice_pipeline::keys::{datasource_pk, group_pk};
use sluice_pipeline::runner::{run_until_caught_up, JobPool};
use sluice_pipeline::supervisor::{status, supervise, SupervisorOptions};
use sluice_pipeline::task::TaskItem;
use sluice_query::run_query;
use sluice_store::metadata::{Intercepted, TxOp};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BUDGET: Duration = Duration::from_secs(120);

fn now() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

async fn tasks(b: &Backends, name: &str) -> Vec<TaskItem> {
    sluice_pipeline::task::tasks(b.meta.as_ref(), name).await.expect("tasks")
}

/// Rows a query counts now: published segments and what running tasks checkpointed.
async fn queried_rows(b: &Backends, name: &str) -> u64 {
    let query = serde_json::json!({"queryType": "timeseries", "dataSource": name, "granularity": "all",
        "intervals": ["2015-09-12/2015-09-13"], "aggregations": [{"type": "count", "name": "rows"}]});
    let out = run_query(b.meta.as_ref(), b.store.as_ref(), None, &query.to_string()).await.expect("query");
    out[0]["result"]["rows"].as_u64().unwrap_or(0)
}

/// The keys of every checkpoint transaction (one that writes a `ckpt#` item).
type CheckpointKeys = Arc<Mutex<Vec<Vec<(String, String)>>>>;

fn recording_checkpoints(b: &Backends) -> (Backends, CheckpointKeys) {
    let seen = CheckpointKeys::default();
    let record = seen.clone();
    let meta = Intercepted::inspect(b.meta.clone(), move |ops: &[TxOp]| {
        let keys: Vec<(String, String)> = ops.iter().map(|o| (o.key().0.to_string(), o.key().1.to_string())).collect();
        if keys.iter().any(|(_, sk)| sk.starts_with("ckpt#")) {
            record.lock().expect("lock").push(keys);
        }
    });
    (b.with_meta(Arc::new(meta)), seen)
}

/// A running task's checkpoints write its group's key; the datasource's key only when the
/// task closes (its group's plan), so the groups of a datasource do not share a key's write
/// limit.
fn checkpoints_write_the_group_key(name: &str, seen: &CheckpointKeys) {
    let seen = seen.lock().expect("lock");
    let (group_key, datasource_key) = (group_pk(name, 0), datasource_pk(name));
    let mut closes = 0;
    for keys in seen.iter() {
        for (pk, sk) in keys {
            if *pk == datasource_key && sk.starts_with("plan#") {
                closes += 1;
            } else {
                assert_eq!(*pk, group_key, "a checkpoint writes {pk}/{sk}: {keys:?}");
            }
        }
    }
    assert!(seen.len() > closes && closes >= 1, "{} checkpoints, {closes} closing", seen.len());
}

async fn open_tasks_chain_and_publish_every_record_once(b: Backends) {
    let (b, checkpoint_keys) = recording_checkpoints(&b);
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "realtime", 2).await;
    let name = unique("realtime");
    let mut spec = spec(&name, &topic, &bootstrap, serde_json::json!({"type": "json"}), serde_json::json!({}));
    spec["spec"]["ioConfig"]["useEarliestOffset"] = true.into();
    spec["spec"]["ioConfig"]["taskDuration"] = "PT4S".into();
    spec["spec"]["sluiceConfig"] = serde_json::json!({"realtime": {"checkpointPeriod": "PT0.2S", "idleAfter": "PT3S"}});
    submit(b.meta.as_ref(), spec, now()).await.expect("submit");
    let record = |k: usize| ((k % 2) as i32, json_record(&format!("r{k}"), k));
    produce(&bootstrap, &topic, &(0..100).map(record).collect::<Vec<_>>()).await;

    let queue = Arc::new(QueueInvoker::default());
    let first = supervise(b.meta.as_ref(), b.store.as_ref(), queue.as_ref(), &SupervisorOptions::at(now()), &name)
        .await
        .expect("pass");
    assert_eq!(first.planned.len(), 1, "one open task for the group");
    let open = tasks(&b, &name).await;
    assert!(open[0].ranges.iter().all(|r| r.is_open()), "{:?}", open[0].ranges);

    let mut pool = JobPool::default();
    let mut produced = 100;
    let started = Instant::now();
    // Records keep coming for 6 s (past the 4 s task duration), 50 every half second; each
    // batch becomes queryable while the tasks run (within 10 s: a bound for a loaded machine,
    // not the freshness, which `bench pipeline --realtime` measures).
    let mut slowest = Duration::ZERO;
    while started.elapsed() < Duration::from_secs(6) {
        pool.start(&b.meta, &b.store, &queue, BUDGET);
        produce(&bootstrap, &topic, &(produced..produced + 50).map(record).collect::<Vec<_>>()).await;
        produced += 50;
        let sent = Instant::now();
        let visible = loop {
            pool.start(&b.meta, &b.store, &queue, BUDGET);
            let rows = queried_rows(&b, &name).await;
            assert!(rows <= produced as u64, "a query counted {rows} rows of {produced} records");
            if rows == produced as u64 {
                break sent.elapsed();
            }
            assert!(sent.elapsed() < Duration::from_secs(10), "{produced} records not queryable within 10 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        slowest = slowest.max(visible);
        // The status says how far records are queryable: past the committed offsets.
        let st = status(b.meta.as_ref(), &name).await.expect("status");
        let queryable: i64 = st.partitions.iter().map(|p| p.queryable.expect("real-time status")).sum();
        assert!(queryable >= produced as i64, "status: queryable up to {queryable} of {produced}: {st:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Idle: the open task closes within idleAfter plus a period, and merges publish.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        pool.start(&b.meta, &b.store, &queue, BUDGET);
        if pool.is_empty() && queue.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "the jobs did not end after the records stopped");
        tokio::time::timeout(Duration::from_millis(200), pool.join_next()).await.ok();
        // Tasks close, merge and publish meanwhile: a query counts every row once throughout.
        assert_eq!(queried_rows(&b, &name).await, produced as u64, "while tasks close and publish");
    }
    let all = tasks(&b, &name).await;
    assert!(all.len() >= 2, "the open task closed at its duration and planned the next: {all:?}");
    assert!(all.iter().all(|t| !t.is_open()), "every task closed its ranges: {all:?}");
    // The supervisor finishes what is left (nothing to read; publishes if a merge was lost).
    let passes = run_until_caught_up(b.meta.as_ref(), b.store.as_ref(), Some(&name), 10, BUDGET, |_, _| {})
        .await
        .expect("pipeline");
    assert!(passes.last().is_some_and(|p| p.caught_up), "{:?}", passes.last());
    let mut expected: Vec<String> = (0..produced).map(|k| format!("r{k}")).collect();
    expected.sort();
    assert_eq!(visible_values(b.meta.as_ref(), b.store.as_ref(), &name, "id").await, expected, "every record once");
    checkpoints_write_the_group_key(&name, &checkpoint_keys);
    eprintln!("realtime: the slowest batch was queryable after {slowest:?} (freshness is measured by bench pipeline)");
}

/// Runs the jobs `queue` holds (and those they queue) until a query counts `rows`: within 20 s,
/// a bound for a loaded machine far below the minute a deployed supervisor's next pass is away.
async fn run_jobs_until_queryable(b: &Backends, queue: &Arc<QueueInvoker>, pool: &mut JobPool, name: &str, rows: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        pool.start(&b.meta, &b.store, queue, BUDGET);
        if queried_rows(b, name).await == rows {
            return;
        }
        assert!(Instant::now() < deadline, "{rows} records not queryable within 20 s");
        tokio::time::timeout(Duration::from_millis(100), pool.join_next()).await.ok();
    }
}

/// Runs the jobs until none is left: the open tasks ended idle, and their mergers ran.
async fn run_jobs_to_the_end(b: &Backends, queue: &Arc<QueueInvoker>, pool: &mut JobPool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        pool.start(&b.meta, &b.store, queue, BUDGET);
        if pool.is_empty() && queue.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "the jobs did not end after the records stopped");
        tokio::time::timeout(Duration::from_millis(200), pool.join_next()).await.ok();
    }
}

/// The first pass of a real-time datasource over a topic with no record yet plans and invokes
/// its group's open task, as Druid's real-time tasks run from the supervisor's start: records
/// produced after that pass are read and queryable with no other pass (deployed, the next one
/// is a minute away). After the task ends idle the group rests: a pass over the quiet topic
/// plans nothing, and the first pass that sees a record starts the group again.
async fn the_first_pass_opens_a_task_before_any_record(b: Backends) {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "realtime-empty", 2).await;
    let name = unique("realtime_empty");
    let mut spec = spec(&name, &topic, &bootstrap, serde_json::json!({"type": "json"}), serde_json::json!({}));
    spec["spec"]["sluiceConfig"] = serde_json::json!({"realtime": {"checkpointPeriod": "PT0.2S", "idleAfter": "PT3S"}});
    submit(b.meta.as_ref(), spec, now()).await.expect("submit");
    let queue = Arc::new(QueueInvoker::default());
    let pass = || async {
        supervise(b.meta.as_ref(), b.store.as_ref(), queue.as_ref(), &SupervisorOptions::at(now()), &name)
            .await
            .expect("pass")
    };
    let first = pass().await;
    assert_eq!(first.planned.len(), 1, "the first pass plans the open task before any record: {first:?}");
    assert_eq!(first.invoked.len(), 1, "and invokes it: {first:?}");
    let open = tasks(&b, &name).await;
    assert!(open[0].ranges.iter().all(|r| r.is_open() && r.start == 0), "{:?}", open[0].ranges);

    let mut pool = JobPool::default();
    pool.start(&b.meta, &b.store, &queue, BUDGET);
    let record = |k: usize| ((k % 2) as i32, json_record(&format!("e{k}"), k));
    produce(&bootstrap, &topic, &(0..40).map(record).collect::<Vec<_>>()).await;
    run_jobs_until_queryable(&b, &queue, &mut pool, &name, 40).await;
    run_jobs_to_the_end(&b, &queue, &mut pool).await;

    // Quiet after the idle end: the group rests until a record arrives.
    let quiet = pass().await;
    assert!(quiet.planned.is_empty(), "a resting group plans nothing while no record arrives: {quiet:?}");
    produce(&bootstrap, &topic, &(40..50).map(record).collect::<Vec<_>>()).await;
    let woken = pass().await;
    assert_eq!(woken.planned.len(), 1, "a record wakes the group: {woken:?}");
    run_jobs_until_queryable(&b, &queue, &mut pool, &name, 50).await;
    run_jobs_to_the_end(&b, &queue, &mut pool).await;
    let passes = run_until_caught_up(b.meta.as_ref(), b.store.as_ref(), Some(&name), 10, BUDGET, |_, _| {})
        .await
        .expect("pipeline");
    assert!(passes.last().is_some_and(|p| p.caught_up), "{:?}", passes.last());
    let all = tasks(&b, &name).await;
    assert_eq!(all.len(), 2, "one open task per wake, each ended idle: {all:?}");
    let mut expected: Vec<String> = (0..50).map(|k| format!("e{k}")).collect();
    expected.sort();
    assert_eq!(visible_values(b.meta.as_ref(), b.store.as_ref(), &name, "id").await, expected, "every record once");
}

sluice_integration::on_backends!(
    open_tasks_chain_and_publish_every_record_once,
    the_first_pass_opens_a_task_before_any_record
);
