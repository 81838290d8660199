//! Handing a batch task's work to the functions: each split an indexer may take (at most
//! `maxNumConcurrentSubTasks` of the task held at once, and one of the deployment's batch
//! slots taken for each before its job is handed over, so that no more indexers are invoked
//! than slots are free), then the publish once every split is done (or one failed, which the
//! publish records). The supervisor's pass drives every running task, and each indexer that
//! finishes a split drives its task on at once; tasks are driven oldest first, and a task
//! takes no slot an older task waits for ([`super::slots`]). A job handed over twice finds its
//! split busy or its task published, and frees its slot.

use super::access::max_splits_from_env;
use super::slots::{self, Ledger, HANDOVER_LEASE_MS};
use super::status::{list, load_task, splits};
use super::BatchError;
use crate::invoker::{Job, TaskInvoker};
use crate::item::DatasourceError;
use sluice_layout::batch::{BatchSlotItem, BatchState, BatchTaskItem, SplitState};
use sluice_store::metadata::MetadataStore;
use std::future::Future;

/// What driving handed over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Driven {
    /// Batch tasks of the datasource, in any state.
    pub known: u32,
    /// Running tasks seen.
    pub tasks: u32,
    /// Split jobs handed over (each in a slot of its own).
    pub splits: u32,
    /// Publish jobs handed over.
    pub publishes: u32,
}

impl Driven {
    fn add(&mut self, other: Driven) {
        self.known += other.known;
        self.tasks += other.tasks;
        self.splits += other.splits;
        self.publishes += other.publishes;
    }
}

/// Drives every running batch task of `datasource`, within the deployment's splits in flight
/// at once ([`max_splits_from_env`]).
pub fn drive<'a>(
    meta: &'a dyn MetadataStore,
    invoker: &'a dyn TaskInvoker,
    datasource: &'a str,
    now_ms: i64,
) -> impl Future<Output = Result<Driven, BatchError>> + Send + 'a {
    // Not a future of its own around `drive_within`: a supervisor pass's future stays as deep.
    drive_within(meta, invoker, datasource, now_ms, max_splits_from_env())
}

/// Drives every running batch task of `datasource`, oldest first, handing over splits while
/// fewer than `max_splits` of all tasks are in flight (handed over or running).
pub async fn drive_within(
    meta: &dyn MetadataStore,
    invoker: &dyn TaskInvoker,
    datasource: &str,
    now_ms: i64,
    max_splits: u32,
) -> Result<Driven, BatchError> {
    let tasks = match list(meta, datasource).await {
        Ok(tasks) => tasks,
        Err(DatasourceError::Unknown(_)) => return Ok(Driven::default()),
        Err(e) => return Err(e.into()),
    };
    let mut out = Driven { known: tasks.len() as u32, ..Default::default() };
    let mut running: Vec<&BatchTaskItem> = tasks.iter().filter(|t| t.state == BatchState::Running).collect();
    if running.is_empty() {
        return Ok(out);
    }
    running.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
    let mut ledger = read_ledger(meta, now_ms).await?;
    for task in running {
        out.add(drive_task(meta, invoker, task, now_ms, max_splits, &mut ledger).await?);
    }
    Ok(out)
}

/// Drives batch task `id` (after one of its splits finished), within the deployment's splits
/// in flight at once ([`max_splits_from_env`]).
pub async fn drive_id(
    meta: &dyn MetadataStore,
    invoker: &dyn TaskInvoker,
    id: &str,
    now_ms: i64,
) -> Result<Driven, BatchError> {
    drive_id_within(meta, invoker, id, now_ms, max_splits_from_env()).await
}

/// Drives batch task `id` while fewer than `max_splits` of all tasks are in flight, leaving the
/// slots older tasks wait for to them.
pub async fn drive_id_within(
    meta: &dyn MetadataStore,
    invoker: &dyn TaskInvoker,
    id: &str,
    now_ms: i64,
    max_splits: u32,
) -> Result<Driven, BatchError> {
    let (task, _) = load_task(meta, id).await?;
    if task.state != BatchState::Running {
        return Ok(Driven::default());
    }
    let mut ledger = read_ledger(meta, now_ms).await?;
    drive_task(meta, invoker, &task, now_ms, max_splits, &mut ledger).await
}

/// The slots and the tasks waiting, those no longer driven forgotten.
async fn read_ledger(meta: &dyn MetadataStore, now_ms: i64) -> Result<Ledger, BatchError> {
    let mut ledger = slots::read(meta).await?;
    if let Err(e) = slots::forget_lapsed(meta, &mut ledger, now_ms).await {
        tracing::warn!(error = %e, "could not delete the batch waits that ended; the next drive will");
    }
    Ok(ledger)
}

/// Hands over `task`'s publish, or as many of its splits as it allows and slots are free
/// beyond what older tasks wait for, each in a slot taken first; records how many more wait.
async fn drive_task(
    meta: &dyn MetadataStore,
    invoker: &dyn TaskInvoker,
    task: &BatchTaskItem,
    now_ms: i64,
    max_splits: u32,
    ledger: &mut Ledger,
) -> Result<Driven, BatchError> {
    let mut out = Driven { tasks: 1, ..Default::default() };
    let all = splits(meta, task).await?;
    let done = all.iter().filter(|(s, _)| s.state == SplitState::Done).count();
    let failed = all.iter().any(|(s, _)| s.state == SplitState::Failed);
    let mut waiting = 0;
    if failed || (done == all.len() && all.len() as u32 == task.splits) {
        out.publishes = 1;
        if let Err(e) = invoker.invoke(Job::BatchPublish { batch: task.id.clone() }).await {
            tracing::warn!(task = task.id, error = %e, "could not hand a batch publish over; the next pass will");
        }
    } else {
        let handed = ledger.handed_over(&task.id, now_ms);
        let running = all.iter().filter(|(s, _)| s.state == SplitState::Running && !s.takeable(now_ms)).count();
        let allowed = (task.max_concurrent as usize).saturating_sub(running + handed.len());
        let wanted: Vec<u32> = all
            .iter()
            .filter(|(s, _)| s.takeable(now_ms) && !handed.contains(&s.n))
            .map(|(s, _)| s.n)
            .take(allowed)
            .collect();
        let room = ledger.free(max_splits, now_ms).saturating_sub(ledger.owed_before(task, now_ms));
        for &split in wanted.iter().take(room as usize) {
            let holder = BatchSlotItem {
                task: task.id.clone(),
                split,
                attempt: 0,
                until_ms: now_ms.saturating_add(HANDOVER_LEASE_MS),
            };
            let Some(k) = slots::hand_over(meta, ledger, max_splits, &holder, now_ms).await? else { break };
            if let Err(e) = invoker.invoke(Job::BatchIndex { batch: task.id.clone(), split }).await {
                tracing::warn!(task = task.id, error = %e, "could not hand a batch split over; the next pass will");
                slots::release(meta, ledger, k, now_ms).await?;
                break;
            }
            out.splits += 1;
        }
        waiting = wanted.len() as u32 - out.splits;
    }
    if let Err(e) = slots::wait(meta, ledger, task, waiting, now_ms).await {
        tracing::warn!(task = task.id, error = %e, "could not record a batch task waiting for slots");
    }
    Ok(out)
}
