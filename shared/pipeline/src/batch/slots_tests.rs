//! Unit tests of the batch slots: at most the cap held, a hand-over's slot taken over by its
//! attempt, an unreadable item passed over, tasks waiting in the order they were submitted.

use super::*;
use sluice_store::metadata::EmbeddedStore;

fn holder(split: u32, until_ms: i64) -> BatchSlotItem {
    BatchSlotItem { task: "t".into(), split, attempt: 1, until_ms }
}

fn store(dir: &tempfile::TempDir) -> EmbeddedStore {
    EmbeddedStore::open("embedded://slots", dir.path()).expect("store")
}

fn task(id: &str, created_ms: i64) -> BatchTaskItem {
    serde_json::from_value(serde_json::json!({
        "id": id, "datasource": "d", "state": "running", "splits": 10, "append": true,
        "maxConcurrent": 10, "createdMs": created_ms
    }))
    .expect("a task item")
}

#[tokio::test]
async fn at_most_max_slots_are_held_until_freed_or_their_lease_ends() {
    let dir = tempfile::tempdir().expect("dir");
    let meta = store(&dir);
    let a = take(&meta, 2, holder(0, 1_000), 0).await.expect("take").expect("a free slot");
    let b = take(&meta, 2, holder(1, 1_000), 0).await.expect("take").expect("a free slot");
    assert_ne!(a.k, b.k);
    assert_eq!(take(&meta, 2, holder(2, 1_000), 0).await.expect("take"), None, "two of two held");
    assert_eq!(read(&meta).await.expect("read").held(0), 2);
    free(&meta, a, 10).await.expect("free");
    assert_eq!(read(&meta).await.expect("read").held(10), 1);
    let c = take(&meta, 2, holder(2, 1_000), 10).await.expect("take").expect("the freed slot");
    assert_eq!(take(&meta, 2, holder(3, 2_000), 999).await.expect("take"), None);
    // The holders' leases end: their slots are taken over, and a late free changes nothing.
    let d = take(&meta, 2, holder(3, 2_000), 1_000).await.expect("take").expect("a lapsed slot");
    free(&meta, c.clone(), 1_001).await.expect("a late free");
    let held = read(&meta).await.expect("read");
    assert_eq!(held.slots[&d.k].0, Some(holder(3, 2_000)), "the new holder keeps its slot");
    // A cap lowered counts the slots above it still held.
    assert_eq!(take(&meta, 1, holder(4, 3_000), 1_001).await.expect("take"), None);
}

#[tokio::test]
async fn a_handed_over_split_begins_in_its_own_slot_however_many_are_held() {
    let dir = tempfile::tempdir().expect("dir");
    let meta = store(&dir);
    let mut ledger = read(&meta).await.expect("read");
    let handed = BatchSlotItem { task: "t".into(), split: 7, attempt: 0, until_ms: 100 };
    let k = hand_over(&meta, &mut ledger, 1, &handed, 0).await.expect("hand over").expect("a free slot");
    assert_eq!(ledger.handed_over("t", 50), BTreeSet::from([7]));
    assert_eq!(
        hand_over(&meta, &mut ledger, 1, &BatchSlotItem { split: 8, ..handed.clone() }, 0).await.expect("x"),
        None
    );
    // Another split finds the only slot held; split 7's attempt takes its own over.
    assert_eq!(take(&meta, 1, holder(8, 500), 10).await.expect("take"), None);
    let slot = take(&meta, 1, BatchSlotItem { split: 7, ..holder(7, 500) }, 10).await.expect("take").expect("its own");
    assert_eq!(slot.k, k);
    assert!(read(&meta).await.expect("read").handed_over("t", 10).is_empty(), "begun");
    // A hand-over whose invocation never began frees its slot when its lease ends.
    free(&meta, slot, 20).await.expect("free");
    let mut ledger = read(&meta).await.expect("read");
    let late = BatchSlotItem { until_ms: 130, ..handed.clone() };
    hand_over(&meta, &mut ledger, 1, &late, 30).await.expect("hand over").expect("the slot freed");
    assert_eq!(take(&meta, 1, holder(8, 500), 129).await.expect("take"), None);
    assert!(take(&meta, 1, holder(8, 500), 130).await.expect("take").is_some(), "the hand-over's lease ended");
    // An invocation that will not run frees the slot it was handed over in.
    let mut ledger = read(&meta).await.expect("read");
    let again = BatchSlotItem { split: 9, until_ms: 10_000, ..handed };
    assert!(hand_over(&meta, &mut ledger, 2, &again, 200).await.expect("hand over").is_some());
    release_handed_over(&meta, "t", 9, 300).await.expect("release");
    assert_eq!(read(&meta).await.expect("read").held(300), 1, "slot 9's freed, the attempt's still held");
}

#[tokio::test]
async fn an_unreadable_slot_is_passed_over_as_free_and_taken_again() {
    let dir = tempfile::tempdir().expect("dir");
    let meta = store(&dir);
    for (k, body) in [(0, serde_json::json!({"no": "slot"})), (1, serde_json::json!("garbage"))] {
        meta.put(Item::new(BATCH_SLOTS_PK, batch_slot_sk(k), body), Condition::None).await.expect("put");
    }
    meta.put(Item::new(BATCH_SLOTS_PK, batch_wait_sk("x"), serde_json::json!([1])), Condition::None)
        .await
        .expect("put");
    let ledger = read(&meta).await.expect("unreadable items are passed over");
    assert_eq!((ledger.held(0), ledger.free(2, 0), ledger.waiting.len()), (0, 2, 0));
    let a = take(&meta, 2, holder(0, 1_000), 0).await.expect("take").expect("a slot");
    let b = take(&meta, 2, holder(1, 1_000), 0).await.expect("take").expect("a slot");
    assert_eq!(BTreeSet::from([a.k, b.k]), BTreeSet::from([0, 1]), "both overwritten");
}

#[tokio::test]
async fn tasks_waiting_are_owed_slots_in_the_order_they_were_submitted() {
    let dir = tempfile::tempdir().expect("dir");
    let meta = store(&dir);
    let (old, young, younger) = (task("b-old", 10), task("a-young", 20), task("c-younger", 20));
    let mut ledger = read(&meta).await.expect("read");
    wait(&meta, &mut ledger, &old, 3, 0).await.expect("wait");
    wait(&meta, &mut ledger, &young, 2, 0).await.expect("wait");
    let ledger = read(&meta).await.expect("read");
    assert_eq!(ledger.owed_before(&old, 0), 0, "nobody ahead of the oldest");
    assert_eq!(ledger.owed_before(&young, 0), 3, "its own wait is not ahead of it");
    assert_eq!(ledger.owed_before(&younger, 0), 5, "submitted at the same instant: by id");
    assert_eq!(ledger.owed_before(&younger, WAIT_LEASE_MS), 0, "waits not renewed end");
    let mut ledger = read(&meta).await.expect("read");
    wait(&meta, &mut ledger, &old, 0, 1).await.expect("served");
    assert_eq!(read(&meta).await.expect("read").owed_before(&younger, 1), 2);
    let mut ledger = read(&meta).await.expect("read");
    forget_lapsed(&meta, &mut ledger, WAIT_LEASE_MS).await.expect("forget");
    assert!(meta.query(BATCH_SLOTS_PK, BATCH_WAIT_PREFIX).await.expect("query").is_empty(), "lapsed waits deleted");
}
