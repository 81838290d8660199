//! The local pipeline: supervisor passes with the in-process invoker, each queued job run in
//! this process. The same library calls the Lambda handlers make, in one loop.

use crate::batch::{
    drive_id, index_split, process_access, publish_batch, BatchError, BatchPublished, SplitOptions, SplitOutcome,
};
use crate::indexer::{run_task, IndexerError, TaskOptions, TaskOutcome};
use crate::invoker::{Job, QueueInvoker, TaskInvoker};
use crate::merger::{merge_and_publish, MergeOutcome, MergerError, MergerOptions};
use crate::supervisor::{run_pass, DatasourcePass, SupervisorError, SupervisorOptions};
use crate::task::TaskId;
use sluice_format::time::now_ms;
use sluice_store::metadata::MetadataStore;
use sluice_store::storage::ObjectStore;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// How a job ended (one value per job: its size does not matter).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum JobOutcome {
    /// An indexer attempt ended.
    Indexed(Result<TaskOutcome, IndexerError>),
    /// A merger ended.
    Merged(Result<MergeOutcome, MergerError>),
    /// An indexer at a batch task's split ended.
    BatchIndexed(Result<SplitOutcome, BatchError>),
    /// A batch task's publish ended.
    BatchPublished(Result<BatchPublished, BatchError>),
}

/// Runs one job as its function would: an indexer that completes its task hands it to a
/// merger at once, a merger that publishes hands over the group's next completed task.
pub async fn run_job(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    invoker: &dyn TaskInvoker,
    job: &Job,
    task_budget: Duration,
) -> JobOutcome {
    match job {
        Job::Index { task } => JobOutcome::Indexed(run_index_job(meta, store, invoker, task, task_budget).await),
        Job::Merge { task } => JobOutcome::Merged(run_merge_job(meta, store, invoker, task).await),
        Job::BatchIndex { batch, split } => {
            JobOutcome::BatchIndexed(run_batch_index_job(meta, store, invoker, batch, *split, task_budget).await)
        }
        Job::BatchPublish { batch } => JobOutcome::BatchPublished(publish_batch(meta, store, batch, now_ms()).await),
    }
}

/// Indexes split `split` of batch task `id` for at most `task_budget`, then drives the task on:
/// its next split, or its publish.
pub async fn run_batch_index_job(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    invoker: &dyn TaskInvoker,
    id: &str,
    split: u32,
    task_budget: Duration,
) -> Result<SplitOutcome, BatchError> {
    let deadline = Instant::now() + task_budget;
    let options = SplitOptions::until(now_ms(), Some(deadline));
    let outcome = index_split(meta, store, &process_access(), id, split, &options).await;
    if matches!(outcome, Ok(SplitOutcome::Done { .. } | SplitOutcome::Retry(_) | SplitOutcome::Failed(_))) {
        if let Err(e) = drive_id(meta, invoker, id, now_ms()).await {
            tracing::warn!(task = id, error = %e, "could not drive a batch task on; the supervisor's next pass will");
        }
    }
    outcome
}

/// Runs one attempt of `task` for at most `task_budget`. A completed task is handed to a
/// merger at once, and the group's next task (planned by a real-time task's close) to an
/// indexer; an attempt that ran out of time hands the task to a new invocation. If an
/// invocation fails, the supervisor's next pass hands the job over.
pub async fn run_index_job(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    invoker: &dyn TaskInvoker,
    task: &TaskId,
    task_budget: Duration,
) -> Result<TaskOutcome, IndexerError> {
    let outcome = run_task(meta, store, task, &TaskOptions::until(Instant::now() + task_budget)).await;
    let mut jobs = Vec::new();
    match &outcome {
        Ok(TaskOutcome::Complete(r)) => {
            jobs.push(Job::Merge { task: task.clone() });
            jobs.extend(r.next.clone().map(|next| Job::Index { task: next }));
        }
        Ok(TaskOutcome::Incomplete(_)) => jobs.push(Job::Index { task: task.clone() }),
        _ => {}
    }
    for job in jobs {
        if let Err(e) = invoker.invoke(job).await {
            tracing::warn!(error = %e, "could not hand a job over; the supervisor's next pass will");
        }
    }
    outcome
}

/// Merges and publishes the completed `task`, then hands over the group's next completed task.
pub async fn run_merge_job(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    invoker: &dyn TaskInvoker,
    task: &TaskId,
) -> Result<MergeOutcome, MergerError> {
    let options = MergerOptions::at(now_ms());
    merge_and_publish(meta, store, Some(invoker), task, &options).await
}

/// Supervisor passes and queued jobs until every datasource's (or only `only`'s) committed
/// offsets reach the high watermarks of a pass, or `max_passes` passes ran. Returns the last
/// pass.
pub async fn run_until_caught_up(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    only: Option<&str>,
    max_passes: usize,
    task_budget: Duration,
    mut on_job: impl FnMut(&Job, &JobOutcome),
) -> Result<Vec<DatasourcePass>, SupervisorError> {
    let queue = QueueInvoker::default();
    let mut last = Vec::new();
    for _ in 0..max_passes {
        let options = SupervisorOptions::at(now_ms());
        last = run_pass(meta, store, &queue, &options, only)
            .await?
            .into_iter()
            .map(|(_, pass)| pass)
            .collect::<Result<Vec<_>, _>>()?;
        if last.iter().all(|p| p.caught_up) {
            return Ok(last);
        }
        drain(meta, store, &queue, task_budget, &mut on_job).await;
    }
    Ok(last)
}

/// Jobs a [`JobPool`] runs at once at most; more wait in the queue.
pub const MAX_RUNNING_JOBS: usize = 64;

/// Jobs running concurrently in this process, as Lambda runs invocations: a real-time task
/// reads for as long as records arrive, so jobs cannot run one after the other.
#[derive(Default)]
pub struct JobPool {
    running: JoinSet<(Job, JobOutcome)>,
    /// The jobs running, by their tokio task: a job that panics is forgotten too.
    active: HashMap<tokio::task::Id, Job>,
}

impl JobPool {
    /// Starts queued jobs up to [`MAX_RUNNING_JOBS`]; a job already running is not started
    /// twice (the queue's copy is dropped: the running one does its work).
    pub fn start(
        &mut self,
        meta: &Arc<dyn MetadataStore>,
        store: &Arc<dyn ObjectStore>,
        queue: &Arc<QueueInvoker>,
        task_budget: Duration,
    ) {
        while self.running.len() < MAX_RUNNING_JOBS {
            let Some(job) = queue.pop() else { break };
            if self.active.values().any(|running| *running == job) {
                continue;
            }
            let (meta, store, queue) = (Arc::clone(meta), Arc::clone(store), Arc::clone(queue));
            let spawned = job.clone();
            let handle = self.running.spawn(async move {
                let outcome = run_job(meta.as_ref(), store.as_ref(), queue.as_ref(), &spawned, task_budget).await;
                (spawned, outcome)
            });
            self.active.insert(handle.id(), job);
        }
    }

    /// Drops every running job at its next await, as a crash would: their attempts write
    /// nothing more and their leases lapse (for benchmarks and tests of recovery).
    pub fn crash(&mut self) {
        self.running = JoinSet::new();
        self.active.clear();
    }

    /// Whether no job runs.
    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// Waits for the next job to end (`None` when none runs).
    pub async fn join_next(&mut self) -> Option<Result<(Job, JobOutcome), tokio::task::JoinError>> {
        let done = self.running.join_next_with_id().await?;
        let id = match &done {
            Ok((id, _)) => *id,
            Err(e) => e.id(),
        };
        self.active.remove(&id);
        Some(done.map(|(_, out)| out))
    }
}

/// Runs queued jobs, and the jobs they queue, until the queue is empty.
pub async fn drain(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    queue: &QueueInvoker,
    task_budget: Duration,
    mut on_job: impl FnMut(&Job, &JobOutcome),
) {
    while let Some(job) = queue.pop() {
        let outcome = run_job(meta, store, queue, &job, task_budget).await;
        on_job(&job, &outcome);
    }
}
