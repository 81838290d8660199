//! Handing a batch task's work to the functions: each split an indexer may take (at most
//! `maxNumConcurrentSubTasks` of the task held at once, and no more than the deployment's
//! batch slots left free by the splits of every task in flight), then the publish once every
//! split is done (or one failed, which the publish records). The supervisor's pass drives
//! every running task, and each indexer that finishes a split drives its task on at once; a
//! job handed over twice finds its split busy or its task published, and one handed over while
//! others took the last slots waits for a later one (the attempt takes its slot itself).

use super::access::max_splits_from_env;
use super::slots;
use super::status::{list, load_task, splits};
use super::BatchError;
use crate::invoker::{Job, TaskInvoker};
use crate::item::DatasourceError;
use sluice_layout::batch::{BatchState, BatchTaskItem, SplitState};
use sluice_store::metadata::MetadataStore;
use std::future::Future;

/// What driving handed over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Driven {
    /// Batch tasks of the datasource, in any state.
    pub known: u32,
    /// Running tasks seen.
    pub tasks: u32,
    /// Split jobs handed over.
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

/// Drives every running batch task of `datasource`, handing over splits while fewer than
/// `max_splits` of all tasks are in flight.
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
    let running: Vec<&BatchTaskItem> = tasks.iter().filter(|t| t.state == BatchState::Running).collect();
    if running.is_empty() {
        return Ok(out);
    }
    let mut free = max_splits.saturating_sub(slots::in_flight(meta, now_ms).await?);
    for task in running {
        out.add(drive_task(meta, invoker, task, now_ms, &mut free).await?);
    }
    Ok(out)
}

/// Drives batch task `id` (after one of its splits finished), within the deployment's splits
/// in flight at once.
pub async fn drive_id(
    meta: &dyn MetadataStore,
    invoker: &dyn TaskInvoker,
    id: &str,
    now_ms: i64,
) -> Result<Driven, BatchError> {
    let (task, _) = load_task(meta, id).await?;
    if task.state != BatchState::Running {
        return Ok(Driven::default());
    }
    let mut free = max_splits_from_env().saturating_sub(slots::in_flight(meta, now_ms).await?);
    drive_task(meta, invoker, &task, now_ms, &mut free).await
}

/// Hands over `task`'s publish, or as many of its splits as it and `free` slots allow
/// (`free` less those).
async fn drive_task(
    meta: &dyn MetadataStore,
    invoker: &dyn TaskInvoker,
    task: &BatchTaskItem,
    now_ms: i64,
    free: &mut u32,
) -> Result<Driven, BatchError> {
    let mut out = Driven { tasks: 1, ..Default::default() };
    let all = splits(meta, task).await?;
    let done = all.iter().filter(|(s, _)| s.state == SplitState::Done).count();
    let failed = all.iter().any(|(s, _)| s.state == SplitState::Failed);
    let jobs: Vec<Job> = if failed || (done == all.len() && all.len() as u32 == task.splits) {
        out.publishes = 1;
        vec![Job::BatchPublish { batch: task.id.clone() }]
    } else {
        let held = all.iter().filter(|(s, _)| s.state == SplitState::Running && !s.takeable(now_ms)).count();
        let allowed = (task.max_concurrent as usize).saturating_sub(held).min(*free as usize);
        let takeable = all.iter().filter(|(s, _)| s.takeable(now_ms)).take(allowed);
        let jobs: Vec<Job> = takeable.map(|(s, _)| Job::BatchIndex { batch: task.id.clone(), split: s.n }).collect();
        out.splits = jobs.len() as u32;
        *free -= out.splits;
        jobs
    };
    for job in jobs {
        if let Err(e) = invoker.invoke(job).await {
            tracing::warn!(task = task.id, error = %e, "could not hand a batch job over; the next pass will");
        }
    }
    Ok(out)
}
