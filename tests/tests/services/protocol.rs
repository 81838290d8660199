//! Every rule of the exactly-once protocol, deterministically, against the real broker and
//! each metadata backend (embedded SQLite with local files; DynamoDB with S3 at the endpoint):
//! duplicate planning, duplicate invocation, out-of-order completion, publish retry after
//! success, a merger racing another, a merger racing a reset, more segments than a transaction
//! holds, a corrupt hydrant, a failed task before and after others, cleanup, schema changes,
//! operations on unknown datasources.

use sluice_format::segment::directory::HEADER_LEN;
use sluice_format::segment::Segment;
use sluice_integration::indexing::{visible_values, Backends};
use sluice_integration::protocol::Setup;
use sluice_pipeline::datasource::{self, submit, OffsetsItem, Submitted, SupervisorState};
use sluice_pipeline::indexer::{run_task, TaskOptions, TaskOutcome};
use sluice_pipeline::invoker::{Job, QueueInvoker};
use sluice_pipeline::keys::{datasource_pk, offsets_sk};
use sluice_pipeline::merger::{merge_and_publish, MergeOutcome, MergerError, MergerOptions};
use sluice_pipeline::runner::{run_job, run_until_caught_up, JobOutcome};
use sluice_pipeline::supervisor::{reset, reset_offsets, status, supervise, SupervisorOptions};
use sluice_pipeline::task::{TaskId, TaskItem, TaskState};
use sluice_store::metadata::Intercepted;
use sluice_store::metadata::{Condition, MetadataStore};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const BUDGET: Duration = Duration::from_secs(60);

fn now() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn merger() -> MergerOptions {
    MergerOptions::at(now())
}

async fn pass(s: &Setup, queue: &QueueInvoker) {
    supervise(s.b.meta.as_ref(), s.b.store.as_ref(), queue, &SupervisorOptions::at(now()), &s.name)
        .await
        .expect("pass");
}

async fn finish(s: &Setup) {
    let passes = run_until_caught_up(s.b.meta.as_ref(), s.b.store.as_ref(), Some(&s.name), 40, BUDGET, |_, _| {})
        .await
        .expect("pipeline");
    assert!(passes.iter().all(|p| p.caught_up), "{passes:?}");
}

async fn index(s: &Setup, id: &TaskId) {
    let queue = QueueInvoker::default();
    let outcome =
        run_job(s.b.meta.as_ref(), s.b.store.as_ref(), &queue, &Job::Index { task: id.clone() }, BUDGET).await;
    assert!(matches!(outcome, JobOutcome::Indexed(Ok(_))), "{outcome:?}");
}

/// A datasource of 12 records in one partition whose single task is planned and indexed.
async fn one_indexed_task(b: Backends) -> (Setup, TaskId) {
    let s = Setup::new(b, 1, 12, 1, 100, serde_json::json!({})).await;
    pass(&s, &QueueInvoker::default()).await;
    let id = s.tasks().await[0].id.clone();
    index(&s, &id).await;
    (s, id)
}

async fn committed(meta: &dyn MetadataStore, name: &str, group: u32) -> BTreeMap<i32, i64> {
    let item = meta.get(&datasource_pk(name), &offsets_sk(group)).await.expect("get").expect("offsets item");
    serde_json::from_value::<OffsetsItem>(item.body).expect("offsets").offsets
}

async fn duplicate_planning(b: Backends) {
    let s = Setup::new(b, 3, 90, 2, 20, serde_json::json!({})).await;
    let (q1, q2) = (QueueInvoker::default(), QueueInvoker::default());
    let options = SupervisorOptions::at(now());
    let (a, b) = tokio::join!(
        supervise(s.b.meta.as_ref(), s.b.store.as_ref(), &q1, &options, &s.name),
        supervise(s.b.meta.as_ref(), s.b.store.as_ref(), &q2, &options, &s.name),
    );
    let (a, b) = (a.expect("supervisor 1"), b.expect("supervisor 2"));
    let tasks = s.tasks().await;
    assert_eq!(tasks.len(), a.planned.len() + b.planned.len(), "every task planned by exactly one supervisor");
    let mut ranges: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
    for t in &tasks {
        for r in &t.ranges {
            ranges.entry(r.partition).or_default().push((r.start, r.end));
        }
    }
    for (p, mut rs) in ranges {
        rs.sort();
        assert_eq!(rs[0].0, 0, "partition {p} starts at the earliest offset");
        assert!(rs.windows(2).all(|w| w[0].1 == w[1].0), "partition {p}: ranges chain without gap or overlap: {rs:?}");
    }
    finish(&s).await;
    assert_eq!(visible_values(s.b.meta.as_ref(), s.b.store.as_ref(), &s.name, "id").await, s.expected());
}

async fn duplicate_invocation(b: Backends) {
    let s = Setup::new(b, 2, 60, 1, 30, serde_json::json!({"maxRowsInMemory": 7})).await;
    let queue = QueueInvoker::default();
    pass(&s, &queue).await;
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    let mut merges = Vec::new();
    while let Some(job) = queue.pop() {
        let (x, y) =
            tokio::join!(run_job(meta, store, &queue, &job, BUDGET), run_job(meta, store, &queue, &job, BUDGET));
        for o in [x, y] {
            match o {
                JobOutcome::Merged(Ok(m)) => merges.push(m),
                JobOutcome::Indexed(Ok(_)) => {}
                other => panic!("{other:?}"),
            }
        }
    }
    let published = merges.iter().filter(|m| matches!(m, MergeOutcome::Published { .. })).count();
    assert!(published >= 1, "{merges:?}");
    finish(&s).await;
    assert_eq!(visible_values(meta, store, &s.name, "id").await, s.expected(), "each record once");
}

async fn out_of_order_completion(b: Backends) {
    let s = Setup::new(b, 1, 30, 1, 10, serde_json::json!({})).await;
    let queue = QueueInvoker::default();
    pass(&s, &queue).await;
    let ids: Vec<TaskId> = s.tasks().await.into_iter().map(|t| t.id).collect();
    assert_eq!(ids.iter().map(|i| i.seq).collect::<Vec<_>>(), vec![1, 2, 3], "planning ran ahead: three tasks");
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    index(&s, &ids[2]).await;
    index(&s, &ids[1]).await;
    let waiting = merge_and_publish(meta, store, None, &ids[2], &merger()).await.expect("merge 3");
    assert_eq!(waiting, MergeOutcome::Waiting { partition: 0, committed: 0, start: 20 });
    assert_eq!(committed(meta, &s.name, 0).await, BTreeMap::from([(0, 0)]), "nothing published out of order");
    index(&s, &ids[0]).await;
    let chain = QueueInvoker::default();
    let first = merge_and_publish(meta, store, Some(&chain), &ids[0], &merger()).await.expect("merge 1");
    assert!(matches!(first, MergeOutcome::Published { .. }), "{first:?}");
    assert_eq!(chain.pop(), Some(Job::Merge { task: ids[1].clone() }), "the publish hands over the next task");
    assert!(matches!(
        merge_and_publish(meta, store, Some(&chain), &ids[1], &merger()).await,
        Ok(MergeOutcome::Published { .. })
    ));
    assert!(matches!(
        merge_and_publish(meta, store, Some(&chain), &ids[2], &merger()).await,
        Ok(MergeOutcome::Published { .. })
    ));
    assert_eq!(committed(meta, &s.name, 0).await, BTreeMap::from([(0, 30)]));
    let again = merge_and_publish(meta, store, None, &ids[0], &merger()).await.expect("retry");
    assert_eq!(again, MergeOutcome::AlreadyPublished, "a publish retried after success changes nothing");
    assert_eq!(committed(meta, &s.name, 0).await, BTreeMap::from([(0, 30)]));
    assert_eq!(visible_values(meta, store, &s.name, "id").await, s.expected());
}

async fn a_racing_merger_loses_and_leaves_nothing(b: Backends) {
    let (s, id) = one_indexed_task(b).await;
    let (meta, store) = (s.b.meta.clone(), s.b.store.clone());
    let (m, st, i) = (meta.clone(), store.clone(), id.clone());
    // The other merger publishes between this merger's segment writes and its publish.
    let racing = Intercepted::before_first(meta.clone(), "offsets#", move || async move {
        let won = merge_and_publish(m.as_ref(), st.as_ref(), None, &i, &merger()).await.expect("other merger");
        assert!(matches!(won, MergeOutcome::Published { .. }), "{won:?}");
    });
    let lost = merge_and_publish(&racing, store.as_ref(), None, &id, &merger()).await.expect("this merger");
    assert_eq!(lost, MergeOutcome::AlreadyPublished);
    let records = meta.query(&datasource_pk(&s.name), "seg#").await.expect("records");
    let task: TaskItem =
        serde_json::from_value(meta.get(&id.pk(), &id.sk()).await.expect("get").expect("task").body).expect("task");
    assert!(
        records.iter().all(|r| r.body["merge"].as_str() == task.published_by.as_deref()),
        "the loser's records are gone"
    );
    assert_eq!(visible_values(meta.as_ref(), store.as_ref(), &s.name, "id").await, s.expected());
}

async fn a_zombie_attempt_after_takeover_and_publish_writes_nothing(b: Backends) {
    let s = Setup::new(b, 1, 15, 1, 100, serde_json::json!({"maxRowsInMemory": 4})).await;
    let queue = QueueInvoker::default();
    pass(&s, &queue).await;
    let id = s.tasks().await[0].id.clone();
    let (meta, store) = (s.b.meta.clone(), s.b.store.clone());
    let (m, st, i) = (meta.clone(), store.clone(), id.clone());
    // Just before the first attempt's first checkpoint, its lease is taken over by a second
    // attempt that indexes the whole range, and the task is merged and published.
    let zombie_store = Intercepted::before_first(meta.clone(), "ckpt#", move || async move {
        let current = m.get(&i.pk(), &i.sk()).await.expect("get").expect("task");
        let mut task: TaskItem = serde_json::from_value(current.body.clone()).expect("task");
        task.lease_expires_ms = Some(0);
        let body = serde_json::to_value(&task).expect("body");
        m.put(
            sluice_store::metadata::Item { body, ..current.clone() },
            sluice_store::metadata::Condition::Version(current.version),
        )
        .await
        .expect("expire the lease");
        let q = QueueInvoker::default();
        let second = run_job(m.as_ref(), st.as_ref(), &q, &Job::Index { task: i.clone() }, BUDGET).await;
        assert!(matches!(second, JobOutcome::Indexed(Ok(TaskOutcome::Complete(_)))), "{second:?}");
        let published = merge_and_publish(m.as_ref(), st.as_ref(), None, &i, &merger()).await.expect("merge");
        assert!(matches!(published, MergeOutcome::Published { .. }), "{published:?}");
    });
    let zombie = run_task(&zombie_store, store.as_ref(), &id, &TaskOptions::until(std::time::Instant::now() + BUDGET))
        .await
        .expect("zombie attempt");
    assert_eq!(zombie, TaskOutcome::LeaseLost { attempt: 1 });
    assert_eq!(committed(meta.as_ref(), &s.name, 0).await, BTreeMap::from([(0, 15)]));
    assert_eq!(visible_values(meta.as_ref(), store.as_ref(), &s.name, "id").await, s.expected(), "each record once");
}

async fn a_reset_during_a_merge_refuses_its_publish(b: Backends) {
    let (s, id) = one_indexed_task(b).await;
    let (meta, store) = (s.b.meta.clone(), s.b.store.clone());
    let (m, name) = (meta.clone(), s.name.clone());
    let racing = Intercepted::before_first(meta.clone(), "offsets#", move || async move {
        let abandoned =
            reset_offsets(m.as_ref(), &name, &BTreeMap::from([(0, 5)]), now()).await.expect("reset offsets");
        assert_eq!(abandoned, 1);
    });
    let refused = merge_and_publish(&racing, store.as_ref(), None, &id, &merger()).await.expect("merger");
    assert!(matches!(refused, MergeOutcome::Conflict { .. }), "{refused:?}");
    assert!(meta.query(&datasource_pk(&s.name), "seg#").await.expect("records").is_empty(), "nothing left behind");
    assert_eq!(committed(meta.as_ref(), &s.name, 0).await, BTreeMap::from([(0, 5)]));
    finish(&s).await;
    let mut expected: Vec<String> = (5..12).map(|n| format!("r{n}")).collect();
    expected.sort();
    assert_eq!(
        visible_values(meta.as_ref(), store.as_ref(), &s.name, "id").await,
        expected,
        "from the reset offset on"
    );
}

async fn more_segments_than_a_transaction_holds(b: Backends) {
    let s = Setup::new(b, 1, 40, 1, 100, serde_json::json!({"maxRowsPerSegment": 3})).await;
    // The publish: offsets and task, then the timeline's head, its entry and the log's trim.
    let small: Arc<dyn MetadataStore> = Arc::new(Intercepted::small_transactions(s.b.meta.clone(), 5));
    let queue = QueueInvoker::default();
    // Planning starts the group's items in one transaction with a check of the grouping (3
    // actions): the limit applies from the indexer on.
    pass(&s, &queue).await;
    let id = s.tasks().await[0].id.clone();
    let indexed = run_job(small.as_ref(), s.b.store.as_ref(), &queue, &Job::Index { task: id.clone() }, BUDGET).await;
    assert!(matches!(indexed, JobOutcome::Indexed(Ok(_))), "{indexed:?}");
    let published = merge_and_publish(small.as_ref(), s.b.store.as_ref(), None, &id, &merger()).await.expect("merge");
    let MergeOutcome::Published { segments } = published else { panic!("{published:?}") };
    assert!(segments.len() >= 14, "40 rows in segments of 3 rows: {} segments", segments.len());
    assert_eq!(visible_values(small.as_ref(), s.b.store.as_ref(), &s.name, "id").await, s.expected());
}

/// How a test damages a hydrant.
#[derive(Debug, Clone, Copy)]
enum Damage {
    /// A byte of its first bitmap flipped: a part a hydrant published as persisted is not
    /// decoded for.
    Bitmap,
    /// Its first ids part zeroed and every checksum made to match: it decodes to nothing valid.
    Forged,
}

impl Damage {
    fn apply(self, key: &str, mut bytes: Vec<u8>) -> Vec<u8> {
        let mut directory = Segment::directory_of(key, &bytes).expect("a hydrant");
        let data_start = HEADER_LEN + u32::from_le_bytes(bytes[12..16].try_into().expect("a header")) as usize;
        let name = match self {
            Damage::Bitmap => "bitmaps",
            Damage::Forged => "ids",
        };
        let part = directory.columns.iter_mut().find_map(|c| c.parts.get_mut(name)).expect("a string dimension");
        let range = data_start + part.offset as usize..data_start + (part.offset + part.length) as usize;
        if let Damage::Bitmap = self {
            bytes[range.start + range.len() / 2] ^= 0xff;
            return bytes;
        }
        // Forged: the part zeroed, then the part's and the directory's checksums rewritten.
        bytes[range.clone()].fill(0);
        part.crc32 = crc32fast::hash(&bytes[range]);
        let dir = serde_json::to_vec(&directory).expect("directory");
        let mut forged = bytes[..12].to_vec();
        forged.extend_from_slice(&(dir.len() as u32).to_le_bytes());
        forged.extend_from_slice(&crc32fast::hash(&dir).to_le_bytes());
        forged.extend_from_slice(&dir);
        forged.extend_from_slice(&bytes[data_start..]);
        forged
    }
}

async fn a_corrupt_hydrant_fails_the_task_and_it_is_indexed_again(b: Backends) {
    // A checkpoint every 5 rows: several hydrants a chunk, merged. One checkpoint: a chunk's
    // only hydrant, published as persisted (its checksums are checked; it is not decoded).
    let merged = serde_json::json!({"maxRowsInMemory": 5, "maxTotalRows": 5});
    let cases = [(merged.clone(), Damage::Bitmap), (serde_json::json!({}), Damage::Bitmap), (merged, Damage::Forged)];
    for (tuning, damage) in cases {
        let s = Setup::new(b.clone(), 1, 20, 1, 100, tuning.clone()).await;
        let queue = QueueInvoker::default();
        pass(&s, &queue).await;
        let id = s.tasks().await[0].id.clone();
        index(&s, &id).await;
        let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
        let hydrants = store.list(&format!("hydrants/{}/", s.name)).await.expect("list");
        let merges = tuning.get("maxTotalRows").is_some();
        assert_eq!(hydrants.len() > 3, merges, "{tuning}: {} hydrants for 3 chunks", hydrants.len());
        let victim = hydrants[hydrants.len() / 2].key.clone();
        let bytes = store.get(&victim).await.expect("hydrant").to_vec();
        store.put(&victim, damage.apply(&victim, bytes).into()).await.expect("damage it");
        let err = merge_and_publish(meta, store, None, &id, &merger()).await.expect_err("corrupt");
        let case = format!("{tuning} {damage:?}");
        assert!(matches!(&err, MergerError::Corrupt { object, .. } if *object == victim), "{case}: {err}");
        assert!(err.to_string().contains(&victim), "the error names the object: {err}");
        assert_eq!(committed(meta, &s.name, 0).await, BTreeMap::from([(0, 0)]), "{case}: offsets did not advance");
        let task: TaskItem =
            serde_json::from_value(meta.get(&id.pk(), &id.sk()).await.expect("get").expect("task").body).expect("task");
        assert_eq!(task.state, TaskState::Failed);
        finish(&s).await;
        assert_eq!(visible_values(meta, store, &s.name, "id").await, s.expected(), "{case}: indexed again from Kafka");
    }
}

/// Fails the task as a fatal indexing error would, unless it is finished already.
async fn fail_task(meta: &dyn MetadataStore, id: &TaskId, reason: &str) {
    let item = meta.get(&id.pk(), &id.sk()).await.expect("get").expect("task");
    let mut task: TaskItem = serde_json::from_value(item.body).expect("task");
    if !task.is_finished() {
        task.fail(reason.into(), now());
        let body = serde_json::to_value(&task).expect("task body");
        meta.put(sluice_store::metadata::Item::new(id.pk(), id.sk(), body), Condition::Version(item.version))
            .await
            .expect("fail the task");
    }
}

async fn an_earlier_task_failing_after_a_later_one_stalls_nothing(b: Backends) {
    let s = Setup::new(b, 1, 30, 1, 10, serde_json::json!({})).await;
    pass(&s, &QueueInvoker::default()).await;
    let ids: Vec<TaskId> = s.tasks().await.into_iter().map(|t| t.id).collect();
    assert_eq!(ids.len(), 3, "three tasks of 10 records");
    let meta = s.b.meta.as_ref();
    fail_task(meta, &ids[1], "a fatal error").await;
    pass(&s, &QueueInvoker::default()).await;
    let states: Vec<TaskState> = s.tasks().await.iter().filter(|t| t.id.seq <= 3).map(|t| t.state).collect();
    assert_eq!(states, vec![TaskState::Failed; 3], "every unfinished task of the group is superseded");
    // The earlier task cannot fail later unnoticed: it is failed already (or fails now).
    fail_task(meta, &ids[0], "a fatal error, later").await;
    finish(&s).await;
    assert_eq!(visible_values(meta, s.b.store.as_ref(), &s.name, "id").await, s.expected(), "each record once");
}

async fn cleanup_keeps_only_what_visible_segments_need(b: Backends) {
    let s = Setup::new(b, 2, 40, 1, 10, serde_json::json!({"maxRowsInMemory": 4})).await;
    finish(&s).await;
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    assert!(!store.list(&format!("hydrants/{}/", s.name)).await.expect("list").is_empty());
    let options = SupervisorOptions { cleanup_grace_ms: 0, ..SupervisorOptions::at(now()) };
    let done = supervise(meta, store, &QueueInvoker::default(), &options, &s.name).await.expect("pass");
    assert!(done.cleaned >= 4, "{done:?}");
    assert!(store.list(&format!("hydrants/{}/", s.name)).await.expect("list").is_empty(), "hydrants deleted");
    let groups = sluice_pipeline::task::planned_groups(meta, &s.name).await.expect("groups");
    assert!(!groups.is_empty(), "the groups are named by their plans");
    for g in groups.into_keys() {
        let pk = sluice_pipeline::keys::group_pk(&s.name, g);
        assert!(meta.query(&pk, "ckpt#").await.expect("q").is_empty(), "checkpoints of group {g} deleted");
        assert!(meta.query(&pk, "task#").await.expect("q").is_empty(), "published tasks of group {g} deleted");
    }
    assert_eq!(visible_values(meta, store, &s.name, "id").await, s.expected(), "segments stay visible");
    let st = status(meta, &s.name).await.expect("status");
    assert!(st.partitions.iter().all(|p| p.lag == Some(0)), "{st:?}");
    assert_eq!(st.totals.processed, 40);
}

async fn schema_changes_apply_to_new_tasks_and_are_recorded(b: Backends) {
    let s = Setup::new(b, 1, 10, 1, 100, serde_json::json!({})).await;
    let queue = QueueInvoker::default();
    pass(&s, &queue).await;
    let (meta, _) = (s.b.meta.as_ref(), ());
    let (item, _) = datasource::load(meta, &s.name).await.expect("spec");
    let mut changed = item.spec.clone();
    changed["spec"]["dataSchema"]["dimensionsSpec"]["dimensions"] = serde_json::json!(["id", "page", "channel"]);
    let (_, what, _) = submit(meta, changed, 1).await.expect("resubmit");
    assert_eq!(what, Submitted::Updated { schema_changed: true });
    let (item, _) = datasource::load(meta, &s.name).await.expect("spec");
    assert_eq!(item.schema_history.len(), 2);
    assert_eq!(item.schema_history[1].dimensions, vec!["id", "page", "channel"]);
    let planned_before = &s.tasks().await[0];
    assert_eq!(
        planned_before.spec["spec"]["dataSchema"]["dimensionsSpec"]["dimensions"],
        serde_json::json!(["id", "page"])
    );
    datasource::set_state(meta, &s.name, SupervisorState::Suspended).await.expect("suspend");
    assert_eq!(status(meta, &s.name).await.expect("status").state, SupervisorState::Suspended);
}

async fn operations_on_unknown_datasources_are_clear_errors(b: Backends) {
    let name = sluice_integration::unique("nobody");
    let meta = b.meta.as_ref();
    let expected = format!("datasource {name:?} does not exist (submit its spec first)");
    assert_eq!(reset(meta, &name, now()).await.expect_err("reset").to_string(), expected);
    assert_eq!(status(meta, &name).await.expect_err("status").to_string(), expected);
    assert_eq!(
        datasource::set_state(meta, &name, SupervisorState::Terminated).await.expect_err("terminate").to_string(),
        expected
    );
}

/// Task items under the datasource's own key, where releases before the group keys wrote
/// them, stop the supervisor with an error saying so: planning past them would leave their
/// ranges unpublished for ever.
async fn task_items_of_the_earlier_layout_are_refused(b: Backends) {
    let s = Setup::new(b, 1, 4, 1, 10, serde_json::json!({})).await;
    let meta = s.b.meta.as_ref();
    let id = TaskId { datasource: s.name.clone(), group: 0, seq: 1 };
    let old = sluice_store::metadata::Item::new(datasource_pk(&s.name), id.sk(), serde_json::json!({}));
    meta.put(old, Condition::Absent).await.expect("an item of the earlier layout");
    let options = SupervisorOptions::at(now());
    let err = supervise(meta, s.b.store.as_ref(), &QueueInvoker::default(), &options, &s.name)
        .await
        .expect_err("the pass refuses the datasource");
    assert!(err.to_string().contains("metadata layout of an earlier release"), "{err}");
    meta.delete(&datasource_pk(&s.name), &id.sk(), Condition::None).await.expect("delete");
    finish(&s).await;
    assert_eq!(visible_values(meta, s.b.store.as_ref(), &s.name, "id").await, s.expected());
}

sluice_integration::on_backends!(
    task_items_of_the_earlier_layout_are_refused,
    an_earlier_task_failing_after_a_later_one_stalls_nothing,
    duplicate_planning,
    duplicate_invocation,
    out_of_order_completion,
    a_racing_merger_loses_and_leaves_nothing,
    a_reset_during_a_merge_refuses_its_publish,
    a_zombie_attempt_after_takeover_and_publish_writes_nothing,
    more_segments_than_a_transaction_holds,
    a_corrupt_hydrant_fails_the_task_and_it_is_indexed_again,
    cleanup_keeps_only_what_visible_segments_need,
    schema_changes_apply_to_new_tasks_and_are_recorded,
    operations_on_unknown_datasources_are_clear_errors,
);
