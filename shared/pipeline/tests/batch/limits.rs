//! Splits in flight at once across the deployment: driving takes a slot for each split it
//! hands over, so it hands over exactly the slots free, however often it runs and over however
//! many datasources, whatever `maxNumConcurrentSubTasks` each task allows; a handed-over split
//! begins in its own slot; an attempt finding every slot held leaves its split; and a slot
//! freed goes to the oldest task waiting, not back to the task that freed it.

use crate::harness::{spec_of, Env, DS};
use serde_json::json;
use sluice_format::time::now_ms;
use sluice_pipeline::batch::{
    self, index_split, BatchSlotItem, SplitItem, SplitOptions, SplitOutcome, SplitState, Submitted,
};
use sluice_pipeline::invoker::{Job, QueueInvoker};
use sluice_pipeline::keys;
use sluice_store::metadata::{Condition, Item, MetadataStore};

/// Inline data of `n` records of `datasource` cut into about one split each.
fn many_splits_of(datasource: &str, n: usize) -> serde_json::Value {
    let data = crate::harness::rows(n);
    spec_of(
        datasource,
        json!({"type": "inline", "data": data}),
        json!({"maxNumConcurrentSubTasks": 1000, "splitHintSpec": {"type": "maxSize", "maxSplitSize": 40}}),
    )
}

fn many_splits(n: usize) -> serde_json::Value {
    many_splits_of(DS, n)
}

/// Submits `spec` a millisecond after the task before it: tasks are taken by submission.
async fn submit_later(env: &Env, spec: serde_json::Value) -> Submitted {
    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    batch::submit(&env.meta, &env.access(), spec, now_ms()).await.expect("submit")
}

/// The slot items held at `now`: `(task, split, attempt)` each.
async fn held(env: &Env, now: i64) -> Vec<(String, u32, u32)> {
    let items = env.meta.query(keys::BATCH_SLOTS_PK, keys::BATCH_SLOT_PREFIX).await.expect("slots");
    let slots = items.iter().map(|i| serde_json::from_value::<BatchSlotItem>(i.body.clone()).expect("a slot"));
    slots.filter(|s| s.held(now)).map(|s| (s.task, s.split, s.attempt)).collect()
}

/// The split jobs queued: `(task, split)` each.
fn queued(queue: &QueueInvoker) -> Vec<(String, u32)> {
    std::iter::from_fn(|| queue.pop())
        .map(|job| match job {
            Job::BatchIndex { batch, split } => (batch, split),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn driving_hands_over_exactly_the_slots_free_however_often_it_runs() {
    let env = Env::new().await;
    let first = env.submit(many_splits(80)).await.expect("submit");
    let second = submit_later(&env, many_splits(81)).await;
    assert!(first.splits >= 80 && second.splits >= 80, "{} and {} splits", first.splits, second.splits);
    let now = now_ms();
    let queue = QueueInvoker::default();
    let driven = batch::drive_within(&env.meta, &queue, DS, now, 100).await.expect("drive");
    assert_eq!((driven.tasks, driven.splits, queue.len()), (2, 100, 100), "{driven:?}");
    let slots = held(&env, now).await;
    assert_eq!(slots.len(), 100, "a slot taken for each split handed over");
    assert!(slots.iter().all(|(_, _, attempt)| *attempt == 0), "none begun");
    let of = |id: &str| slots.iter().filter(|(t, _, _)| t == id).count() as u32;
    assert_eq!((of(&first.id), of(&second.id)), (first.splits, 100 - first.splits), "the older task first");

    // Handed over but not begun, the jobs hold their slots: driving again hands over nothing.
    let again = batch::drive_within(&env.meta, &queue, DS, now + 1, 100).await.expect("drive");
    assert_eq!((again.splits, queue.len()), (0, 100));
    for id in [&first.id, &second.id] {
        let driven = batch::drive_id_within(&env.meta, &queue, id, now + 1, 100).await.expect("drive");
        assert_eq!(driven.splits, 0, "a split's end frees no slot here");
    }
    assert_eq!(queue.len(), 100);
}

#[tokio::test]
async fn a_pass_over_many_datasources_hands_over_no_more_than_the_slots() {
    let env = Env::new().await;
    env.add_datasource("other").await;
    env.submit(many_splits(10)).await.expect("submit");
    submit_later(&env, many_splits_of("other", 10)).await;
    let (queue, now) = (QueueInvoker::default(), now_ms());
    let driven = batch::drive_within(&env.meta, &queue, DS, now, 4).await.expect("drive");
    assert_eq!(driven.splits, 4);
    let other = batch::drive_within(&env.meta, &queue, "other", now, 4).await.expect("drive");
    assert_eq!((other.splits, queue.len()), (0, 4), "the slots are taken");
}

#[tokio::test]
async fn a_freed_slot_goes_to_the_oldest_task_waiting_not_back_to_its_own() {
    let env = Env::new().await;
    env.add_datasource("younger").await;
    let old = env.submit(many_splits(10)).await.expect("submit");
    let young = submit_later(&env, many_splits_of("younger", 10)).await;
    let (queue, now) = (QueueInvoker::default(), now_ms());
    // The younger task's datasource driven first takes both slots; the older one waits.
    let driven = batch::drive_within(&env.meta, &queue, "younger", now, 2).await.expect("drive");
    assert_eq!(driven.splits, 2);
    assert_eq!(batch::drive_within(&env.meta, &queue, DS, now, 2).await.expect("drive").splits, 0);
    let (task, split) = queued(&queue).remove(0);
    assert_eq!(task, young.id);

    // One of the younger task's splits ends: its slot is the older task's.
    let access = env.access().with_max_splits(2);
    let done = index_split(&env.meta, &env.store, &access, &young.id, split, &SplitOptions::until(now + 1, None)).await;
    assert!(matches!(done, Ok(SplitOutcome::Done { .. })), "{done:?}");
    let driven = batch::drive_id_within(&env.meta, &queue, &young.id, now + 2, 2).await.expect("drive");
    assert_eq!(driven.splits, 0, "the slot is left to the older task");
    let driven = batch::drive_within(&env.meta, &queue, "younger", now + 2, 2).await.expect("drive");
    assert_eq!(driven.splits, 0, "and its datasource's next drive leaves it too");
    let driven = batch::drive_within(&env.meta, &queue, DS, now + 3, 2).await.expect("drive");
    assert_eq!(driven.splits, 1);
    assert_eq!(queued(&queue).iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(), [old.id.as_str()]);
}

/// Writes slot `k` as held by a split of another task until `until_ms`.
async fn hold_slot(env: &Env, k: u32, until_ms: i64) {
    let body = BatchSlotItem { task: "another-task".into(), split: k, attempt: 1, until_ms };
    let item = Item::new(keys::BATCH_SLOTS_PK, keys::batch_slot_sk(k), serde_json::to_value(body).expect("json"));
    env.meta.put(item, Condition::None).await.expect("slot");
}

#[tokio::test]
async fn splits_of_other_tasks_in_flight_hold_the_slots_a_split_needs() {
    let env = Env::new().await;
    let task = env.submit(many_splits(3)).await.expect("submit");
    let now = now_ms();
    hold_slot(&env, 0, now + 60_000).await;
    let queue = QueueInvoker::default();
    let driven = batch::drive_within(&env.meta, &queue, DS, now, 2).await.expect("drive");
    assert_eq!((driven.splits, queued(&queue)), (1, vec![(task.id.clone(), 0)]), "one of two slots is free");

    // A split not handed over finds every slot held; the one handed over begins in its own.
    let access = env.access().with_max_splits(2);
    let options = SplitOptions::until(now, None);
    let waiting = index_split(&env.meta, &env.store, &access, &task.id, 1, &options).await.expect("split");
    assert_eq!(waiting, SplitOutcome::Waiting);
    let (split, _) = batch_splits(&env, &task.id).await.remove(1);
    assert!(split.state == SplitState::Pending && split.attempt == 0, "{split:?}");
    assert_eq!(batch::drive_within(&env.meta, &queue, DS, now, 2).await.expect("drive").splits, 0, "none free");
    let done = index_split(&env.meta, &env.store, &access, &task.id, 0, &options).await.expect("split");
    assert!(matches!(done, SplitOutcome::Done { rows: 1, .. }), "{done:?}");

    // Its slot freed: the next split runs in it.
    let driven = batch::drive_within(&env.meta, &queue, DS, now + 1, 2).await.expect("drive");
    assert_eq!((driven.splits, queued(&queue)), (1, vec![(task.id.clone(), 1)]));
    // The other holder's lease over, and the hand-over's whose invocation never began: both
    // slots free again, split 1 handed over again.
    let later = now + 60_000;
    assert!(later > now + 1 + batch::HANDOVER_LEASE_MS);
    let driven = batch::drive_within(&env.meta, &queue, DS, later, 2).await.expect("drive");
    assert_eq!(driven.splits, (task.splits - 1).min(2), "{} splits", task.splits);
    assert_eq!(queued(&queue)[0], (task.id.clone(), 1));
}

async fn batch_splits(env: &Env, id: &str) -> Vec<(SplitItem, u64)> {
    let items = env.meta.query(&keys::batch_pk(id), keys::SPLIT_PREFIX).await.expect("splits");
    items.iter().map(|i| (serde_json::from_value(i.body.clone()).expect("a split"), i.version)).collect()
}
