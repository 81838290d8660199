//! The local pipeline: supervisor passes with the in-process invoker, each queued job run in
//! this process. The same library calls the Lambda handlers make, in one loop.

use crate::indexer::{run_task, IndexerError, TaskOptions, TaskOutcome};
use crate::invoker::{Job, QueueInvoker, TaskInvoker};
use crate::merger::{merge_and_publish, MergeOutcome, MergerError, MergerOptions};
use crate::supervisor::{run_pass, DatasourcePass, SupervisorError, SupervisorOptions};
use crate::task::TaskId;
use sluice_format::time::now_ms;
use sluice_store::metadata::MetadataStore;
use sluice_store::storage::ObjectStore;
use std::time::{Duration, Instant};

/// How a job ended.
#[derive(Debug)]
pub enum JobOutcome {
    /// An indexer attempt ended.
    Indexed(Result<TaskOutcome, IndexerError>),
    /// A merger ended.
    Merged(Result<MergeOutcome, MergerError>),
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
    }
}

/// Runs one attempt of `task` for at most `task_budget`; a completed task is handed to a
/// merger at once (if that invocation fails, the supervisor's next pass hands it over).
pub async fn run_index_job(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    invoker: &dyn TaskInvoker,
    task: &TaskId,
    task_budget: Duration,
) -> Result<TaskOutcome, IndexerError> {
    let outcome = run_task(meta, store, task, &TaskOptions::until(Instant::now() + task_budget)).await;
    if let Ok(TaskOutcome::Complete(_)) = &outcome {
        if let Err(e) = invoker.invoke(Job::Merge { task: task.clone() }).await {
            tracing::warn!(error = %e, "could not hand the task to a merger; the supervisor will");
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
    let options = MergerOptions { now_ms: now_ms() };
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
