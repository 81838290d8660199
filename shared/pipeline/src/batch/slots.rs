//! The deployment's batch splits in flight, at most [`BatchAccess::max_splits`] of all tasks
//! at once, however many tasks run and whatever `maxNumConcurrentSubTasks` each allows: an
//! attempt takes a slot (`batchslots/slot#<k>`, `k` below the cap) before it takes its split,
//! with a conditional write, and frees it when it ends; a slot whose attempt died frees itself
//! when its lease ends, as the split's does. Driving hands over no more splits than slots are
//! free, and an attempt that finds none leaves its split to a later one.
//!
//! ```text
//!  take     query batchslots ; slot#k absent | until <= now -> (task, split, attempt, until) Absent|Version(v)
//!  free     slot#k -> until = now                                                         Version(taken)
//! ```
//!
//! [`BatchAccess::max_splits`]: super::BatchAccess::max_splits

use crate::item::{parse_body, to_json, DatasourceError};
use crate::keys::{batch_slot_sk, BATCH_SLOTS_PK, BATCH_SLOT_PREFIX};
use sluice_layout::batch::BatchSlotItem;
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore};
use std::collections::BTreeMap;

/// Slots tried before an attempt gives up for now: others taking slots at the same moment
/// make a conditional write fail.
const TRIES: usize = 4;

/// A slot an attempt holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Slot {
    k: u32,
    version: u64,
    body: BatchSlotItem,
}

/// The slots, by number, with their items' versions.
async fn read(meta: &dyn MetadataStore) -> Result<BTreeMap<u32, (BatchSlotItem, u64)>, DatasourceError> {
    let mut out = BTreeMap::new();
    for item in meta.query(BATCH_SLOTS_PK, BATCH_SLOT_PREFIX).await? {
        let Some(k) = item.sk.strip_prefix(BATCH_SLOT_PREFIX).and_then(|k| k.parse().ok()) else { continue };
        out.insert(k, (parse_body::<BatchSlotItem>("", &item)?, item.version));
    }
    Ok(out)
}

/// Splits in flight at `now_ms` (slots above a cap lowered since count too).
pub(crate) async fn in_flight(meta: &dyn MetadataStore, now_ms: i64) -> Result<u32, DatasourceError> {
    Ok(read(meta).await?.values().filter(|(s, _)| s.held(now_ms)).count() as u32)
}

/// Takes one of the `max` slots for `holder` (held until `holder.until_ms`), or `None` when
/// every slot is held.
pub(crate) async fn take(
    meta: &dyn MetadataStore,
    max: u32,
    holder: BatchSlotItem,
    now_ms: i64,
) -> Result<Option<Slot>, DatasourceError> {
    for _ in 0..TRIES {
        let slots = read(meta).await?;
        let held = slots.values().filter(|(s, _)| s.held(now_ms)).count() as u32;
        if held >= max {
            return Ok(None);
        }
        let free: Vec<u32> = (0..max).filter(|k| slots.get(k).is_none_or(|(s, _)| !s.held(now_ms))).collect();
        // Attempts starting together spread over the free slots instead of racing for the first.
        let k = free[fastrand::usize(..free.len())];
        let condition = match slots.get(&k) {
            Some((_, version)) => Condition::Version(*version),
            None => Condition::Absent,
        };
        match meta.put(Item::new(BATCH_SLOTS_PK, batch_slot_sk(k), to_json(&holder)), condition).await {
            Ok(version) => return Ok(Some(Slot { k, version, body: holder })),
            Err(MetaError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(None)
}

/// Frees `slot` at `now_ms`, unless its lease ended and another attempt took it.
pub(crate) async fn free(meta: &dyn MetadataStore, slot: Slot, now_ms: i64) -> Result<(), DatasourceError> {
    let body = BatchSlotItem { until_ms: now_ms.min(slot.body.until_ms), ..slot.body };
    match meta
        .put(Item::new(BATCH_SLOTS_PK, batch_slot_sk(slot.k), to_json(&body)), Condition::Version(slot.version))
        .await
    {
        Ok(_) | Err(MetaError::ConditionFailed { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_store::metadata::EmbeddedStore;

    fn holder(split: u32, until_ms: i64) -> BatchSlotItem {
        BatchSlotItem { task: "t".into(), split, attempt: 1, until_ms }
    }

    #[tokio::test]
    async fn at_most_max_slots_are_held_until_freed_or_their_lease_ends() {
        let dir = tempfile::tempdir().expect("dir");
        let meta = EmbeddedStore::open("embedded://slots", dir.path()).expect("store");
        let a = take(&meta, 2, holder(0, 1_000), 0).await.expect("take").expect("a free slot");
        let b = take(&meta, 2, holder(1, 1_000), 0).await.expect("take").expect("a free slot");
        assert_ne!(a.k, b.k);
        assert_eq!(take(&meta, 2, holder(2, 1_000), 0).await.expect("take"), None, "two of two held");
        assert_eq!(in_flight(&meta, 0).await.expect("count"), 2);
        free(&meta, a, 10).await.expect("free");
        assert_eq!(in_flight(&meta, 10).await.expect("count"), 1);
        let c = take(&meta, 2, holder(2, 1_000), 10).await.expect("take").expect("the freed slot");
        assert_eq!(take(&meta, 2, holder(3, 2_000), 999).await.expect("take"), None);
        // The holders' leases end: their slots are taken over, and a late free changes nothing.
        let d = take(&meta, 2, holder(3, 2_000), 1_000).await.expect("take").expect("a lapsed slot");
        free(&meta, c.clone(), 1_001).await.expect("a late free");
        let held = read(&meta).await.expect("read");
        assert_eq!(held[&d.k].0, holder(3, 2_000), "the new holder keeps its slot");
        // A cap lowered counts the slots above it still held.
        assert_eq!(take(&meta, 1, holder(4, 3_000), 1_001).await.expect("take"), None);
    }
}
