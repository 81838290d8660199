//! The task's lease, as an attempt holds it: the claim (a task held by another attempt is
//! watched for up to one lease, so a dead holder stalls it for one lease only) and the
//! heartbeats that renew it while the attempt works. Every write is fenced by the task item's
//! version the attempt last wrote: a write refused means another attempt took the task over.

use super::failure::Failure;
use super::{IndexerError, TaskOptions};
use crate::item::to_json;
use crate::task::{ClaimRefused, TaskId, TaskItem};
use sluice_format::time::now_ms;
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore};
use std::future::Future;
use std::time::{Duration, Instant};

/// The claimed task: its item as this attempt wrote it and the version that fences it.
pub(super) struct Claim {
    pub(super) item: TaskItem,
    pub(super) version: u64,
}

/// What a claim found.
pub(super) enum Claimed {
    Now(Claim),
    Done(TaskItem),
    /// Held by another attempt; `version`: the item's, when the lease can be watched.
    Busy {
        attempt: u32,
        lease_expires_ms: Option<i64>,
        version: Option<u64>,
    },
}

/// Claims the task. A task held by another attempt is watched for up to one lease: a live
/// attempt renews its lease every quarter of it (the item's version moves: busy), a dead one
/// lets it lapse and this attempt takes over, so a crash stalls a task for one lease, not
/// for the dead attempt's whole time budget.
pub(super) async fn claim(
    meta: &dyn MetadataStore,
    id: &TaskId,
    options: &TaskOptions,
) -> Result<Claimed, IndexerError> {
    let watch_until = Instant::now() + options.lease + options.heartbeat();
    let mut watched: Option<u64> = None;
    loop {
        match claim_once(meta, id, options).await? {
            Claimed::Busy { attempt, lease_expires_ms: Some(expires), version: Some(version) }
                if watched.is_none_or(|v| v == version) && Instant::now() < watch_until =>
            {
                let left = expires - now_ms();
                if left > options.lease.as_millis() as i64 {
                    // A longer lease than this attempt's: not one it can outwait.
                    return Ok(Claimed::Busy { attempt, lease_expires_ms: Some(expires), version: None });
                }
                watched = Some(version);
                // Polled every quarter heartbeat: a live holder is seen within about one.
                let wait = Duration::from_millis(left.max(0) as u64 + 20).min(options.heartbeat() / 4);
                tokio::time::sleep(wait).await;
            }
            claimed => return Ok(claimed),
        }
    }
}

async fn claim_once(meta: &dyn MetadataStore, id: &TaskId, options: &TaskOptions) -> Result<Claimed, IndexerError> {
    let metadata = |source| IndexerError::Metadata { id: id.clone(), source };
    let item =
        meta.get(&id.pk(), &id.sk()).await.map_err(metadata)?.ok_or_else(|| IndexerError::TaskNotFound(id.clone()))?;
    let mut task: TaskItem = serde_json::from_value(item.body.clone()).map_err(|e| IndexerError::Corrupt {
        id: id.clone(),
        sk: id.sk(),
        reason: e.to_string(),
    })?;
    match task.claim(now_ms(), options.lease.as_millis() as i64) {
        Ok(()) => {}
        Err(ClaimRefused::Done) => return Ok(Claimed::Done(task)),
        Err(ClaimRefused::Failed(reason)) => return Err(IndexerError::TaskFailed { id: id.clone(), reason }),
        Err(ClaimRefused::GaveUp(reason)) => {
            // The item now says failed, with the reason: written fenced like a claim.
            let failed = Item::new(id.pk(), id.sk(), to_json(&task));
            return match meta.put(failed, Condition::Version(item.version)).await {
                Ok(_) => {
                    tracing::error!(task = %id, reason, "the task failed: too many attempts without progress");
                    Err(IndexerError::TaskFailed { id: id.clone(), reason })
                }
                Err(MetaError::ConditionFailed { .. }) => {
                    Ok(Claimed::Busy { attempt: task.attempt, lease_expires_ms: None, version: None })
                }
                Err(e) => Err(metadata(e)),
            };
        }
        Err(ClaimRefused::Busy { attempt, lease_expires_ms }) => {
            return Ok(Claimed::Busy { attempt, lease_expires_ms, version: Some(item.version) })
        }
    }
    let body = serde_json::to_value(&task).map_err(|e| IndexerError::Corrupt {
        id: id.clone(),
        sk: id.sk(),
        reason: e.to_string(),
    })?;
    let version = item.version;
    match meta.put(Item { body, ..item }, Condition::Version(version)).await {
        Ok(version) => {
            tracing::info!(task = %id, attempt = task.attempt, "claimed");
            Ok(Claimed::Now(Claim { item: task, version }))
        }
        Err(MetaError::ConditionFailed { current, .. }) => {
            let current: Option<TaskItem> = current.and_then(|c| serde_json::from_value(c.body).ok());
            Ok(Claimed::Busy {
                attempt: current.as_ref().map_or(0, |c| c.attempt),
                lease_expires_ms: current.and_then(|c| c.lease_expires_ms),
                version: None,
            })
        }
        Err(e) => Err(metadata(e)),
    }
}

/// Runs `work` while renewing the claim's lease every heartbeat. A renewal refused means
/// another attempt took the task over: `LeaseLost`, and `work` is dropped.
pub(super) async fn renewing<T>(
    meta: &dyn MetadataStore,
    id: &TaskId,
    claim: &mut Claim,
    options: &TaskOptions,
    work: impl Future<Output = T>,
) -> Result<T, Failure> {
    tokio::pin!(work);
    let every = options.heartbeat();
    let mut next = tokio::time::Instant::now() + every;
    loop {
        tokio::select! {
            out = &mut work => return Ok(out),
            () = tokio::time::sleep_until(next) => {
                renew(meta, id, claim, options).await?;
                next = tokio::time::Instant::now() + every;
            }
        }
    }
}

/// One heartbeat: the lease renewed, fenced like every write of the attempt.
pub(super) async fn renew(
    meta: &dyn MetadataStore,
    id: &TaskId,
    claim: &mut Claim,
    options: &TaskOptions,
) -> Result<(), Failure> {
    let mut task = claim.item.clone();
    task.renew(now_ms(), options.lease.as_millis() as i64);
    let body = to_json(&task);
    match meta.put(Item::new(id.pk(), id.sk(), body.clone()), Condition::Version(claim.version)).await {
        Ok(version) => {
            *claim = Claim { item: task, version };
            Ok(())
        }
        Err(MetaError::ConditionFailed { .. }) => {
            tracing::warn!(task = %id, attempt = task.attempt, "lease lost: another attempt holds the task");
            Err(Failure::LeaseLost)
        }
        Err(e) => {
            // The write may have happened: if the item is this heartbeat's, go on from it.
            // Otherwise the lease has three quarters left and the next heartbeat tries again.
            tracing::warn!(task = %id, error = %e, "heartbeat not written");
            if let Ok(Some(current)) = meta.get(&id.pk(), &id.sk()).await {
                if current.body == body {
                    *claim = Claim { item: task, version: current.version };
                }
            }
            Ok(())
        }
    }
}
