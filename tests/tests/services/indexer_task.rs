//! The indexing task against the real broker (tansu) and real stores: exact ranges into
//! hydrants, bad records counted with their offsets, CSV topics, the deadline and resume,
//! lease loss, ranges outside the watermarks, brokers or topics that are not there, and
//! records spread over thousands of time chunks.

use sluice_integration::indexing::{json_record, merged_values, plan, spec, Backends};
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::required_env;
use sluice_kafka::OffsetRange;
use sluice_pipeline::indexer::{run_task, IndexerError, TaskOptions, TaskOutcome, TaskReport};
use sluice_pipeline::task::{Checkpoint, TaskId, TaskItem, TaskState};
use sluice_store::metadata::Intercepted;
use sluice_store::metadata::{Condition, Item, MetadataStore};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn json() -> serde_json::Value {
    serde_json::json!({"type": "json"})
}

fn options() -> TaskOptions {
    TaskOptions::until(Instant::now() + Duration::from_secs(120))
}

async fn task_item(meta: &dyn MetadataStore, id: &TaskId) -> TaskItem {
    let item = meta.get(&id.pk(), &id.sk()).await.expect("get").expect("task item exists");
    serde_json::from_value(item.body).expect("task item body")
}

fn complete(outcome: TaskOutcome) -> TaskReport {
    match outcome {
        TaskOutcome::Complete(r) => r,
        other => panic!("expected a complete task, got {other:?}"),
    }
}

/// Three partitions of 30 records each; the task reads p0 [5, 25), p1 [0, 0), p2 [0, 30).
async fn exact_ranges(b: Backends) {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "task-exact", 3).await;
    let records: Vec<(i32, Vec<u8>)> =
        (0..90).map(|n| ((n % 3) as i32, json_record(&format!("{}-{}", n % 3, n / 3), n))).collect();
    produce(&bootstrap, &topic, &records).await;
    let spec = spec(
        &sluice_integration::unique("exact"),
        &topic,
        &bootstrap,
        json(),
        // A checkpoint per persist: none is spilled (tests/tests/services/indexer_spill.rs).
        serde_json::json!({"maxRowsInMemory": 7, "maxTotalRows": 7}),
    );
    let ranges = vec![
        OffsetRange { partition: 0, start: 5, end: 25 },
        OffsetRange { partition: 1, start: 0, end: 0 },
        OffsetRange { partition: 2, start: 0, end: 30 },
    ];
    let id = plan(b.meta.as_ref(), &spec, ranges).await;
    let report = complete(run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options()).await.expect("task runs"));
    assert_eq!(report.positions, BTreeMap::from([(0, 25), (1, 0), (2, 30)]));
    assert_eq!((report.meters.processed, report.meters.unparseable, report.num_records_read), (50, 0, 50));
    assert!(report.hydrants.len() >= 50 / 7, "maxRowsInMemory 7 persists often: {} hydrants", report.hydrants.len());
    // Persists ran beside reading: each checkpoint, with those before it, holds exactly the
    // records before its positions (a row per record), never the reader's later positions.
    let (starts, mut rows) = (BTreeMap::from([(0, 5), (1, 0), (2, 0)]), 0);
    let checkpoints = b.meta.query(&id.pk(), &id.checkpoint_prefix()).await.expect("checkpoints");
    assert!(checkpoints.len() >= 50 / 7, "a checkpoint per persist: {}", checkpoints.len());
    for item in checkpoints {
        let c: Checkpoint = serde_json::from_value(item.body).expect("a checkpoint");
        rows += c.hydrants.iter().map(|h| h.num_rows).sum::<u64>();
        let read: i64 = c.positions.iter().map(|(p, &at)| at - starts[p]).sum();
        assert_eq!(rows, read as u64, "checkpoint {} holds the records before its positions", c.n);
    }
    let mut expected: Vec<String> =
        (5..25).map(|o| format!("0-{o}")).chain((0..30).map(|o| format!("2-{o}"))).collect();
    expected.sort();
    assert_eq!(
        merged_values(b.store.as_ref(), &report.hydrants, "id").await,
        expected,
        "each record of the ranges once"
    );
    let task = task_item(b.meta.as_ref(), &id).await;
    assert_eq!((task.state, task.attempt, task.positions), (TaskState::Complete, 1, report.positions.clone()));
    let again = complete(run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options()).await.expect("rerun"));
    assert_eq!((again.hydrants, again.num_records_read), (report.hydrants, 0), "a complete task is not read again");
}

/// 2,500 records, each in its own hour: one persist would make 2,500 hydrants and a checkpoint
/// far over DynamoDB's 400 KB; the task persists every 1,000 chunks and splits checkpoints.
async fn records_over_thousands_of_time_chunks(b: Backends) {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "task-chunks", 1).await;
    let start = chrono::DateTime::parse_from_rfc3339("2015-01-01T00:00:00Z").expect("time");
    let records: Vec<(i32, Vec<u8>)> = (0..2_500)
        .map(|n| {
            let ts = (start + chrono::Duration::hours(n)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            (0, format!(r#"{{"ts": "{ts}", "id": "h{n}", "page": "p", "added": 1}}"#).into_bytes())
        })
        .collect();
    produce(&bootstrap, &topic, &records).await;
    // The longest name makes every hydrant key, and so every checkpoint, longest.
    let unique = sluice_integration::unique("chunks");
    let name = format!("{unique}-{}", "x".repeat(254 - unique.len()));
    let spec = spec(&name, &topic, &bootstrap, json(), serde_json::json!({"maxRowsInMemory": 100_000}));
    let id = plan(b.meta.as_ref(), &spec, vec![OffsetRange { partition: 0, start: 0, end: 2_500 }]).await;
    let report = complete(run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options()).await.expect("task runs"));
    assert_eq!((report.hydrants.len(), report.meters.processed), (2_500, 2_500), "one hydrant per hour");
    let items = b.meta.query(&id.pk(), &id.checkpoint_prefix()).await.expect("checkpoints");
    let sizes: Vec<usize> = items.iter().map(|i| i.body.to_string().len()).collect();
    assert!(sizes.len() > 3, "three persists, written as parts: {sizes:?}");
    assert!(sizes.iter().all(|&n| n < 400 << 10), "every item under 400 KB: {sizes:?}");
    let mut expected: Vec<String> = (0..2_500).map(|n| format!("h{n}")).collect();
    expected.sort();
    assert_eq!(merged_values(b.store.as_ref(), &report.hydrants, "id").await, expected, "each record once");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_records_are_counted_and_named_by_offset() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "task-bad", 1).await;
    let huge = format!(r#"{{"ts": "2015-09-12T00:00:00Z", "id": "huge", "page": "{}"}}"#, "x".repeat(1_100_000));
    let records: Vec<Vec<u8>> = vec![
        json_record("a", 0),                                                       // 0 good
        b"not json at all".to_vec(),                                               // 1 malformed
        Vec::new(),                                                                // 2 empty
        vec![0xff, 0xfe, 0x7b],                                                    // 3 not UTF-8
        br#"{"ts": "yesterday", "id": "t"}"#.to_vec(),                             // 4 bad timestamp
        br#"{"ts": "2015-09-12T00:00:00Z", "id": "b", "added": "lots"}"#.to_vec(), // 5 kept, metric error
        b"[1, 2]".to_vec(),                                                        // 6 not an object
        huge.into_bytes(),                                                         // 7 value too large
        json_record("c", 1),                                                       // 8 good
    ];
    produce(&bootstrap, &topic, &records.into_iter().map(|r| (0, r)).collect::<Vec<_>>()).await;
    let b = Backends::local().await;
    let tuning = serde_json::json!({"maxParseExceptions": 10, "maxSavedParseExceptions": 10});
    let spec = spec(&sluice_integration::unique("bad"), &topic, &bootstrap, json(), tuning);
    let id = plan(b.meta.as_ref(), &spec, vec![OffsetRange { partition: 0, start: 0, end: 9 }]).await;
    let report = complete(run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options()).await.expect("task runs"));
    let m = &report.meters;
    assert_eq!((m.processed, m.processed_with_error, m.unparseable, m.thrown_away), (3, 1, 6, 0));
    let named: Vec<(i64, bool)> = m.saved_exceptions.iter().map(|e| (e.offset, e.row_kept)).collect();
    assert_eq!(named, vec![(1, false), (2, false), (3, false), (4, false), (5, true), (6, false), (7, false)]);
    let reasons: Vec<&str> = m.saved_exceptions.iter().map(|e| e.reason.as_str()).collect();
    for (at, word) in
        [(0, "malformed JSON"), (1, "empty"), (2, "UTF-8"), (4, "added"), (5, "JSON object"), (6, "bytes")]
    {
        assert!(reasons[at].contains(word), "exception {at} should mention {word:?}: {}", reasons[at]);
    }
    assert_eq!(merged_values(b.store.as_ref(), &report.hydrants, "id").await, vec!["a", "b", "c"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn too_many_parse_exceptions_fail_the_task_naming_the_offset() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "task-strict", 1).await;
    let records = vec![(0, json_record("a", 0)), (0, b"{".to_vec()), (0, b"}".to_vec()), (0, json_record("b", 1))];
    produce(&bootstrap, &topic, &records).await;
    let b = Backends::local().await;
    let spec = spec(
        &sluice_integration::unique("strict"),
        &topic,
        &bootstrap,
        json(),
        serde_json::json!({"maxParseExceptions": 1}),
    );
    let id = plan(b.meta.as_ref(), &spec, vec![OffsetRange { partition: 0, start: 0, end: 4 }]).await;
    let err = run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options()).await.expect_err("fails");
    assert!(!err.is_retryable());
    assert!(err.to_string().contains("partition 0 offset 2"), "{err}");
    let task = task_item(b.meta.as_ref(), &id).await;
    assert_eq!(task.state, TaskState::Failed);
    assert!(b.meta.query(&id.pk(), &id.checkpoint_prefix()).await.expect("query").is_empty(), "no checkpoint");
}

#[tokio::test(flavor = "multi_thread")]
async fn csv_topics_are_indexed() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "task-csv", 2).await;
    let records: Vec<(i32, Vec<u8>)> = (0..20)
        .map(|n: i32| (n % 2, format!("2015-09-12T01:{:02}:00Z,c{n},page{},{n}", n, n % 4).into_bytes()))
        .chain([(0, b"not a time,cx,page,1".to_vec())])
        .collect();
    produce(&bootstrap, &topic, &records).await;
    let b = Backends::local().await;
    let csv = serde_json::json!({"type": "csv", "columns": ["ts", "id", "page", "added"]});
    let spec = spec(&sluice_integration::unique("csv"), &topic, &bootstrap, csv, serde_json::json!({}));
    let ranges = vec![OffsetRange { partition: 0, start: 0, end: 11 }, OffsetRange { partition: 1, start: 0, end: 10 }];
    let id = plan(b.meta.as_ref(), &spec, ranges).await;
    let report = complete(run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options()).await.expect("task runs"));
    assert_eq!((report.meters.processed, report.meters.unparseable), (20, 1));
    assert_eq!(report.meters.saved_exceptions.front().map(|e| (e.partition, e.offset)), Some((0, 10)));
    let mut expected: Vec<String> = (0..20).map(|n| format!("c{n}")).collect();
    expected.sort();
    assert_eq!(merged_values(b.store.as_ref(), &report.hydrants, "id").await, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deadline_checkpoints_and_the_next_attempt_resumes() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "task-deadline", 2).await;
    let records: Vec<(i32, Vec<u8>)> = (0..40).map(|n| ((n % 2) as i32, json_record(&format!("d{n}"), n))).collect();
    produce(&bootstrap, &topic, &records).await;
    let b = Backends::local().await;
    let spec = spec(
        &sluice_integration::unique("deadline"),
        &topic,
        &bootstrap,
        json(),
        serde_json::json!({"maxRowsInMemory": 6}),
    );
    let ranges = vec![OffsetRange { partition: 0, start: 0, end: 20 }, OffsetRange { partition: 1, start: 0, end: 20 }];
    let id = plan(b.meta.as_ref(), &spec, ranges).await;
    let out_of_time =
        TaskOptions { deadline: Some(Instant::now()), reserve: Duration::ZERO, lease: Duration::from_secs(60) };
    let first = run_task(b.meta.as_ref(), b.store.as_ref(), &id, &out_of_time).await.expect("first attempt");
    let TaskOutcome::Incomplete(first) = first else { panic!("expected incomplete, got {first:?}") };
    assert_eq!(first.positions, BTreeMap::from([(0, 0), (1, 0)]));
    let task = task_item(b.meta.as_ref(), &id).await;
    assert_eq!((task.state, task.lease_expires_ms), (TaskState::Incomplete, None), "the lease is released");
    let second = complete(run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options()).await.expect("second attempt"));
    assert_eq!((second.attempt, second.num_records_read), (2, 40));
    let mut expected: Vec<String> = (0..40).map(|n| format!("d{n}")).collect();
    expected.sort();
    assert_eq!(merged_values(b.store.as_ref(), &second.hydrants, "id").await, expected);
}

/// Another attempt claims the task just before the running one's first checkpoint.
fn take_over_before_checkpoint(inner: Arc<dyn MetadataStore>, id: &TaskId) -> Intercepted {
    let (meta, id) = (inner.clone(), id.clone());
    Intercepted::before_first(inner, "ckpt#", move || async move {
        let current = meta.get(&id.pk(), &id.sk()).await.expect("get").expect("task item");
        let mut task: TaskItem = serde_json::from_value(current.body.clone()).expect("task body");
        task.attempt += 1;
        task.lease_expires_ms = Some(0);
        let body = serde_json::to_value(&task).expect("body");
        meta.put(Item { body, ..current.clone() }, Condition::Version(current.version)).await.expect("take over");
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn an_attempt_that_lost_its_lease_writes_nothing_visible() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "task-lease", 1).await;
    let records: Vec<(i32, Vec<u8>)> = (0..12).map(|n| (0, json_record(&format!("l{n}"), n))).collect();
    produce(&bootstrap, &topic, &records).await;
    let b = Backends::local().await;
    let spec = spec(
        &sluice_integration::unique("lease"),
        &topic,
        &bootstrap,
        json(),
        serde_json::json!({"maxRowsInMemory": 5}),
    );
    let id = plan(b.meta.as_ref(), &spec, vec![OffsetRange { partition: 0, start: 0, end: 12 }]).await;
    let racing = take_over_before_checkpoint(b.meta.clone(), &id);
    let lost = run_task(&racing, b.store.as_ref(), &id, &options()).await.expect("first attempt");
    assert_eq!(lost, TaskOutcome::LeaseLost { attempt: 1 });
    assert!(b.meta.query(&id.pk(), &id.checkpoint_prefix()).await.expect("query").is_empty(), "no checkpoint");
    let orphans = b.store.list(&format!("hydrants/{}/", id.datasource)).await.expect("list");
    assert!(!orphans.is_empty(), "the stale attempt had uploaded its first hydrants");
    let task = task_item(b.meta.as_ref(), &id).await;
    assert_eq!((task.state, task.attempt), (TaskState::Running, 2), "the stale attempt did not touch the task");
    let report = complete(run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options()).await.expect("next attempt"));
    assert_eq!(report.attempt, 3);
    assert!(report.hydrants.iter().all(|h| h.key.contains("/0003/")), "{:?}", report.hydrants);
    assert!(
        orphans.iter().all(|o| o.key.contains("/0001/") && report.hydrants.iter().all(|h| h.key != o.key)),
        "the stale attempt's hydrants are left for cleanup, referenced by nothing"
    );
    let mut expected: Vec<String> = (0..12).map(|n| format!("l{n}")).collect();
    expected.sort();
    assert_eq!(merged_values(b.store.as_ref(), &report.hydrants, "id").await, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_live_lease_keeps_other_attempts_out() {
    let b = Backends::local().await;
    let spec = spec(&sluice_integration::unique("busy"), "t", "127.0.0.1:9", json(), serde_json::json!({}));
    let id = plan(b.meta.as_ref(), &spec, vec![OffsetRange { partition: 0, start: 0, end: 5 }]).await;
    let current = b.meta.get(&id.pk(), &id.sk()).await.expect("get").expect("item");
    let mut task: TaskItem = serde_json::from_value(current.body.clone()).expect("body");
    let until = chrono::Utc::now().timestamp_millis() + 60_000;
    (task.state, task.attempt, task.lease_expires_ms) = (TaskState::Running, 4, Some(until));
    let body = serde_json::to_value(&task).expect("body");
    b.meta.put(Item { body, ..current.clone() }, Condition::Version(current.version)).await.expect("hold");
    let outcome = run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options()).await.expect("busy is not an error");
    assert_eq!(outcome, TaskOutcome::Busy { attempt: 4, lease_expires_ms: Some(until) });
}

#[tokio::test(flavor = "multi_thread")]
async fn offsets_past_the_high_watermark_fail_or_reset_as_configured() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "task-range", 1).await;
    let records: Vec<(i32, Vec<u8>)> = (0..10).map(|n| (0, json_record(&format!("r{n}"), n))).collect();
    produce(&bootstrap, &topic, &records).await;
    let b = Backends::local().await;
    let strict = spec(&sluice_integration::unique("strict"), &topic, &bootstrap, json(), serde_json::json!({}));
    let id = plan(b.meta.as_ref(), &strict, vec![OffsetRange { partition: 0, start: 4, end: 100 }]).await;
    let err = run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options()).await.expect_err("fails");
    assert!(matches!(err, IndexerError::TaskFailed { .. }), "{err:?}");
    assert!(err.to_string().contains("requested offsets [4, 100) but the partition holds [0, 10)"), "{err}");
    assert_eq!(task_item(b.meta.as_ref(), &id).await.state, TaskState::Failed);
    let reset = spec(
        &sluice_integration::unique("reset"),
        &topic,
        &bootstrap,
        json(),
        serde_json::json!({"resetOffsetAutomatically": true}),
    );
    let id = plan(b.meta.as_ref(), &reset, vec![OffsetRange { partition: 0, start: 4, end: 100 }]).await;
    let report = complete(run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options()).await.expect("resets"));
    assert_eq!(report.resets.iter().map(|r| (r.requested, r.read)).collect::<Vec<_>>(), vec![((4, 100), (4, 10))]);
    assert_eq!(report.positions, BTreeMap::from([(0, 10)]));
    assert_eq!(merged_values(b.store.as_ref(), &report.hydrants, "id").await.len(), 6);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_broker_fails_the_attempt_in_bounded_time() {
    let b = Backends::local().await;
    let mut spec = spec(&sluice_integration::unique("down"), "t", "127.0.0.1:9", json(), serde_json::json!({}));
    spec["spec"]["ioConfig"]["consumerProperties"]["request.timeout.ms"] = "3000".into();
    let id = plan(b.meta.as_ref(), &spec, vec![OffsetRange { partition: 0, start: 0, end: 5 }]).await;
    let started = Instant::now();
    let err = run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options()).await.expect_err("no broker");
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
    assert!(err.is_retryable(), "{err:?}");
    assert!(err.to_string().contains("127.0.0.1:9"), "{err}");
    let task = task_item(b.meta.as_ref(), &id).await;
    assert_eq!((task.state, task.lease_expires_ms), (TaskState::Incomplete, None), "released for the next attempt");
    assert!(task.error.is_some_and(|e| e.contains("broker running")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_topic_fails_in_bounded_time_naming_it() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let b = Backends::local().await;
    let topic = sluice_integration::unique("no-such-topic");
    let mut spec = spec(&sluice_integration::unique("missing"), &topic, &bootstrap, json(), serde_json::json!({}));
    spec["spec"]["ioConfig"]["consumerProperties"]["request.timeout.ms"] = "3000".into();
    spec["spec"]["ioConfig"]["consumerProperties"]["allow.auto.create.topics"] = "false".into();
    let id = plan(b.meta.as_ref(), &spec, vec![OffsetRange { partition: 0, start: 0, end: 5 }]).await;
    let started = Instant::now();
    let err = run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options()).await.expect_err("no topic");
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
    assert!(err.to_string().contains(&topic), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_specs_task_time_budget_ends_an_attempt() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "task-budget", 1).await;
    produce(&bootstrap, &topic, &[(0, json_record("b0", 0)), (0, json_record("b1", 1))]).await;
    let b = Backends::local().await;
    let mut spec = spec(&sluice_integration::unique("budget"), &topic, &bootstrap, json(), serde_json::json!({}));
    spec["spec"]["sluiceConfig"] = serde_json::json!({"taskTimeBudget": "PT0S"});
    let id = plan(b.meta.as_ref(), &spec, vec![OffsetRange { partition: 0, start: 0, end: 2 }]).await;
    let outcome = run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options()).await.expect("attempt");
    assert!(matches!(outcome, TaskOutcome::Incomplete(ref r) if r.num_records_read == 0), "{outcome:?}");
}

// The scenarios that run on each metadata backend (`local::`, `aws::`).
sluice_integration::on_backends!(exact_ranges, records_over_thousands_of_time_chunks);
