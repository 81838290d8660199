//! The deployment's batch splits in flight, at most [`BatchAccess::max_splits`] of all tasks
//! at once, however many tasks run and whatever `maxNumConcurrentSubTasks` each allows. A slot
//! (`batchslots/slot#<k>`, `k` below the cap) is taken with a conditional write *before* a
//! split's job is handed over, so no more indexers are invoked than slots are free, however
//! many datasources a pass drives and however many drives run at once; the invocation's
//! attempt takes its slot over, and frees it when it ends. A hand-over's slot is held for
//! [`HANDOVER_LEASE_MS`]: an invocation that never began frees it then (one that begins later
//! takes a free slot, or leaves its split to a later hand-over).
//!
//! Slots go to tasks by submission: a task that finds too few free writes how many splits it
//! waits for (`batchslots/wait#<id>`, for [`WAIT_LEASE_MS`] unless driven again), and a task
//! submitted later takes only the slots free beyond what older tasks wait for. So a slot an
//! attempt frees is not taken back by its own task's next split ahead of an older task of
//! another datasource, which gets it at its next drive.
//!
//! An item that does not read is logged and passed over: a slot item as a free slot (the next
//! hand-over overwrites it), a waiting item as no task waiting.
//!
//! ```text
//!  hand over  query batchslots ; slot#k free -> (task, split, attempt 0, now + 30 s)  Absent|Version(v) ; invoke
//!  begin      slot#k handed over for the split -> (task, split, attempt a, lease)     Version(v)
//!             (none: a free slot as above, or Waiting)
//!  end        slot#k -> until = when it began                                        Version(taken)
//!  wait       wait#<id> -> (submitted, splits waiting, now + 3 min)                   None ; deleted once none wait
//! ```
//!
//! [`BatchAccess::max_splits`]: super::BatchAccess::max_splits

use crate::item::to_json;
use crate::keys::{batch_slot_sk, batch_wait_sk, BATCH_SLOTS_PK, BATCH_SLOT_PREFIX, BATCH_WAIT_PREFIX};
use sluice_layout::batch::{BatchSlotItem, BatchTaskItem, BatchWaitItem};
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore};
use std::collections::{BTreeMap, BTreeSet};

/// How long a hand-over holds its slot for the invocation to begin (ms): Lambda starts an
/// asynchronous invocation within seconds unless it is throttled.
pub const HANDOVER_LEASE_MS: i64 = 30_000;
/// How long a task waits for slots once driven (ms): the supervisor drives every running task
/// every minute, so a task still running waits on.
pub const WAIT_LEASE_MS: i64 = 3 * 60_000;
/// Conditional writes tried before giving up for now: others taking slots at the same moment
/// make one fail.
const TRIES: usize = 4;

/// Why the slots could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SlotError {
    /// The metadata store failed.
    #[error("batch slots: {0}")]
    Metadata(#[from] MetaError),
}

/// A slot an attempt holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Slot {
    k: u32,
    version: u64,
    body: BatchSlotItem,
}

/// The slots and the tasks waiting for them, as read (and as this process changed them since).
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    /// Slot items by number: their body (`None`: unreadable, a free slot) and version.
    slots: BTreeMap<u32, (Option<BatchSlotItem>, u64)>,
    /// Tasks waiting, by id, with their items' versions.
    waiting: BTreeMap<String, (BatchWaitItem, u64)>,
}

impl Ledger {
    /// Slots held at `now_ms` (those above a cap lowered since count too).
    fn held(&self, now_ms: i64) -> u32 {
        self.slots.values().filter(|(s, _)| s.as_ref().is_some_and(|s| s.held(now_ms))).count() as u32
    }

    /// Slots of the `max` free at `now_ms`.
    pub(crate) fn free(&self, max: u32, now_ms: i64) -> u32 {
        max.saturating_sub(self.held(now_ms))
    }

    /// The numbers of the free slots below `max`.
    fn free_slots(&self, max: u32, now_ms: i64) -> Vec<u32> {
        (0..max).filter(|k| self.slots.get(k).is_none_or(|(s, _)| s.as_ref().is_none_or(|s| !s.held(now_ms)))).collect()
    }

    /// Splits of `task` handed over at `now_ms` whose attempt has not begun.
    pub(crate) fn handed_over(&self, task: &str, now_ms: i64) -> BTreeSet<u32> {
        self.slots
            .values()
            .filter_map(|(s, _)| s.as_ref())
            .filter(|s| s.handed_over(task, s.split, now_ms))
            .map(|s| s.split)
            .collect()
    }

    /// The slot split `split` of `task` was handed over in, and its version.
    fn handed_over_slot(&self, task: &str, split: u32, now_ms: i64) -> Option<(u32, u64)> {
        self.slots
            .iter()
            .find_map(|(k, (s, v))| s.as_ref().is_some_and(|s| s.handed_over(task, split, now_ms)).then_some((*k, *v)))
    }

    /// Splits the tasks submitted before `task` wait for at `now_ms`: slots `task` leaves them.
    pub(crate) fn owed_before(&self, task: &BatchTaskItem, now_ms: i64) -> u32 {
        self.waiting
            .values()
            .map(|(w, _)| w)
            .filter(|w| w.waiting(now_ms) && w.ahead_of(&task.id, task.created_ms))
            .map(|w| w.splits)
            .sum()
    }
}

/// The slots and the tasks waiting for them.
pub(crate) async fn read(meta: &dyn MetadataStore) -> Result<Ledger, SlotError> {
    let mut ledger = Ledger::default();
    for item in meta.query(BATCH_SLOTS_PK, "").await? {
        if let Some(k) = item.sk.strip_prefix(BATCH_SLOT_PREFIX).and_then(|k| k.parse().ok()) {
            let body = serde_json::from_value::<BatchSlotItem>(item.body.clone())
                .inspect_err(|e| tracing::warn!(slot = item.sk, error = %e, "an unreadable batch slot counts as free"))
                .ok();
            ledger.slots.insert(k, (body, item.version));
        } else if let Some(id) = item.sk.strip_prefix(BATCH_WAIT_PREFIX) {
            match serde_json::from_value::<BatchWaitItem>(item.body.clone()) {
                Ok(w) => {
                    ledger.waiting.insert(id.to_string(), (w, item.version));
                }
                Err(e) => tracing::warn!(item = item.sk, error = %e, "an unreadable batch wait is passed over"),
            }
        }
    }
    Ok(ledger)
}

/// Puts `body` in slot `k` as the ledger last saw it: its new version, or `None` when another
/// wrote it first.
async fn put_slot(
    meta: &dyn MetadataStore,
    ledger: &Ledger,
    k: u32,
    body: &BatchSlotItem,
) -> Result<Option<u64>, SlotError> {
    let condition = match ledger.slots.get(&k) {
        Some((_, version)) => Condition::Version(*version),
        None => Condition::Absent,
    };
    match meta.put(Item::new(BATCH_SLOTS_PK, batch_slot_sk(k), to_json(body)), condition).await {
        Ok(version) => Ok(Some(version)),
        Err(MetaError::ConditionFailed { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Takes a free slot of the `max` for `holder`, a split about to be handed over (attempt 0, a
/// hand-over's lease): its number, or `None` when every slot is held. `ledger` follows.
pub(crate) async fn hand_over(
    meta: &dyn MetadataStore,
    ledger: &mut Ledger,
    max: u32,
    holder: &BatchSlotItem,
    now_ms: i64,
) -> Result<Option<u32>, SlotError> {
    debug_assert_eq!(holder.attempt, 0, "a hand-over holds a slot for no attempt yet");
    for _ in 0..TRIES {
        let free = ledger.free_slots(max, now_ms);
        if ledger.held(now_ms) >= max || free.is_empty() {
            return Ok(None);
        }
        // Drives at the same moment spread over the free slots instead of racing for the first.
        let k = free[fastrand::usize(..free.len())];
        match put_slot(meta, ledger, k, holder).await? {
            Some(version) => {
                ledger.slots.insert(k, (Some(holder.clone()), version));
                return Ok(Some(k));
            }
            None => *ledger = read(meta).await?,
        }
    }
    Ok(None)
}

/// Frees slot `k`, handed over for an invocation that could not be made.
pub(crate) async fn release(
    meta: &dyn MetadataStore,
    ledger: &mut Ledger,
    k: u32,
    now_ms: i64,
) -> Result<(), SlotError> {
    let Some((Some(body), _)) = ledger.slots.get(&k) else { return Ok(()) };
    let freed = BatchSlotItem { until_ms: now_ms, ..body.clone() };
    if let Some(version) = put_slot(meta, ledger, k, &freed).await? {
        ledger.slots.insert(k, (Some(freed), version));
    }
    Ok(())
}

/// Frees the slot split `split` of `task` was handed over in, if it holds one: its attempt
/// will not run (the split is done, held by another attempt, or its task finished).
pub(crate) async fn release_handed_over(
    meta: &dyn MetadataStore,
    task: &str,
    split: u32,
    now_ms: i64,
) -> Result<(), SlotError> {
    let mut ledger = read(meta).await?;
    match ledger.handed_over_slot(task, split, now_ms) {
        Some((k, _)) => release(meta, &mut ledger, k, now_ms).await,
        None => Ok(()),
    }
}

/// Takes a slot of the `max` for `holder` (an attempt, held until `holder.until_ms`): the one
/// its split was handed over in, else a free one; `None` when every slot is held.
pub(crate) async fn take(
    meta: &dyn MetadataStore,
    max: u32,
    holder: BatchSlotItem,
    now_ms: i64,
) -> Result<Option<Slot>, SlotError> {
    for _ in 0..TRIES {
        let ledger = read(meta).await?;
        let k = match ledger.handed_over_slot(&holder.task, holder.split, now_ms) {
            Some((k, _)) => k,
            None => {
                let free = ledger.free_slots(max, now_ms);
                if ledger.held(now_ms) >= max || free.is_empty() {
                    return Ok(None);
                }
                free[fastrand::usize(..free.len())]
            }
        };
        if let Some(version) = put_slot(meta, &ledger, k, &holder).await? {
            return Ok(Some(Slot { k, version, body: holder }));
        }
    }
    Ok(None)
}

/// Frees `slot` at `now_ms`, unless its lease ended and another attempt took it.
pub(crate) async fn free(meta: &dyn MetadataStore, slot: Slot, now_ms: i64) -> Result<(), SlotError> {
    let body = BatchSlotItem { until_ms: now_ms.min(slot.body.until_ms), ..slot.body };
    match meta
        .put(Item::new(BATCH_SLOTS_PK, batch_slot_sk(slot.k), to_json(&body)), Condition::Version(slot.version))
        .await
    {
        Ok(_) | Err(MetaError::ConditionFailed { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Records that `task` waits for `splits` slots (none: it waits no more). `ledger` follows.
pub(crate) async fn wait(
    meta: &dyn MetadataStore,
    ledger: &mut Ledger,
    task: &BatchTaskItem,
    splits: u32,
    now_ms: i64,
) -> Result<(), SlotError> {
    let sk = batch_wait_sk(&task.id);
    if splits == 0 {
        if let Some((_, version)) = ledger.waiting.remove(&task.id) {
            match meta.delete(BATCH_SLOTS_PK, &sk, Condition::Version(version)).await {
                Ok(()) | Err(MetaError::ConditionFailed { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        return Ok(());
    }
    let body =
        BatchWaitItem { task: task.id.clone(), created_ms: task.created_ms, splits, until_ms: now_ms + WAIT_LEASE_MS };
    let version = meta.put(Item::new(BATCH_SLOTS_PK, sk, to_json(&body)), Condition::None).await?;
    ledger.waiting.insert(task.id.clone(), (body, version));
    Ok(())
}

/// Deletes the waits that ended before `now_ms` (their tasks no longer driven).
pub(crate) async fn forget_lapsed(meta: &dyn MetadataStore, ledger: &mut Ledger, now_ms: i64) -> Result<(), SlotError> {
    let lapsed: Vec<(String, u64)> =
        ledger.waiting.iter().filter(|(_, (w, _))| !w.waiting(now_ms)).map(|(id, (_, v))| (id.clone(), *v)).collect();
    for (id, version) in lapsed {
        ledger.waiting.remove(&id);
        match meta.delete(BATCH_SLOTS_PK, &batch_wait_sk(&id), Condition::Version(version)).await {
            Ok(()) | Err(MetaError::ConditionFailed { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "slots_tests.rs"]
mod tests;
