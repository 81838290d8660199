//! Splits in flight at once across the deployment: driving hands over at most the
//! deployment's cap, whatever `maxNumConcurrentSubTasks` each task allows, counting the
//! splits of every task in flight; an attempt finding every slot held leaves its split.

use crate::harness::{spec, Env};
use serde_json::json;
use sluice_format::time::now_ms;
use sluice_pipeline::batch::{self, index_split, BatchSlotItem, SplitItem, SplitOptions, SplitOutcome, SplitState};
use sluice_pipeline::invoker::QueueInvoker;
use sluice_pipeline::keys;
use sluice_store::metadata::{Condition, Item, MetadataStore};

/// Inline data of `n` records cut into about one split each.
fn many_splits(n: usize) -> serde_json::Value {
    let data = crate::harness::rows(n);
    spec(
        json!({"type": "inline", "data": data}),
        json!({"maxNumConcurrentSubTasks": 1000, "splitHintSpec": {"type": "maxSize", "maxSplitSize": 40}}),
    )
}

#[tokio::test]
async fn driving_hands_over_at_most_the_deployments_splits_at_once() {
    let env = Env::new().await;
    let first = env.submit(many_splits(80)).await.expect("submit");
    let second = env.submit(many_splits(81)).await.expect("submit");
    assert!(first.splits >= 80 && second.splits >= 80, "{} and {} splits", first.splits, second.splits);
    let queue = QueueInvoker::default();
    let driven = batch::drive(&env.meta, &queue, crate::harness::DS, now_ms()).await.expect("drive");
    assert_eq!(driven.tasks, 2);
    assert!(queue.len() <= 100 && driven.splits as usize == queue.len(), "{driven:?}");
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
    let driven = batch::drive_within(&env.meta, &queue, crate::harness::DS, now, 2).await.expect("drive");
    assert_eq!((driven.splits, queue.len()), (1, 1), "one of two slots is free");

    hold_slot(&env, 1, now + 60_000).await;
    let access = env.access().with_max_splits(2);
    let options = SplitOptions::until(now, None);
    let waiting = index_split(&env.meta, &env.store, &access, &task.id, 0, &options).await.expect("split");
    assert_eq!(waiting, SplitOutcome::Waiting);
    let (split, _) = batch_splits(&env, &task.id).await.remove(0);
    assert!(split.state == SplitState::Pending && split.attempt == 0, "{split:?}");
    let driven = batch::drive_within(&env.meta, &queue, crate::harness::DS, now, 2).await.expect("drive");
    assert_eq!(driven.splits, 0, "no slot is free");

    // A third slot allowed, or the holders' leases over: the split runs, and frees its slot.
    let wider = env.access().with_max_splits(3);
    let done = index_split(&env.meta, &env.store, &wider, &task.id, 0, &options).await.expect("split");
    assert!(matches!(done, SplitOutcome::Done { rows: 1, .. }), "{done:?}");
    let later = SplitOptions::until(now + 60_000, None);
    let done = index_split(&env.meta, &env.store, &access, &task.id, 1, &later).await.expect("split");
    assert!(matches!(done, SplitOutcome::Done { rows: 1, .. }), "{done:?}");
    let driven = batch::drive_within(&env.meta, &queue, crate::harness::DS, now + 60_000, 2).await.expect("drive");
    assert_eq!(driven.splits, (task.splits - 2).min(2), "the splits left, in both slots free again");
}

async fn batch_splits(env: &Env, id: &str) -> Vec<(SplitItem, u64)> {
    let items = env.meta.query(&keys::batch_pk(id), keys::SPLIT_PREFIX).await.expect("splits");
    items.iter().map(|i| (serde_json::from_value(i.body.clone()).expect("a split"), i.version)).collect()
}
