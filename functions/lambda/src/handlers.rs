//! The handlers: plain async functions over a [`FunctionContext`] and a parsed event, each
//! emitting its counters as EMF and classifying its failures.

use crate::context::FunctionContext;
use crate::error::FunctionError;
use crate::events::{self, SupervisorEvent};
use crate::logging;
use crate::metrics::emit;
use crate::permissions::FunctionSpec;
use serde_json::{json, Value};
use sluice_shared::indexer::TaskOutcome;
use sluice_shared::invoker::{Job, TaskInvoker};
use sluice_shared::merger::MergeOutcome;
use sluice_shared::runner::{run_job, JobOutcome};
use sluice_shared::supervisor::{run_pass, SupervisorOptions};
use std::time::{Duration, Instant};

/// Time kept back from the Lambda deadline for the response and the last log lines.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(3);

fn invoker(ctx: &FunctionContext) -> Result<&dyn TaskInvoker, FunctionError> {
    ctx.invoker.as_deref().ok_or_else(|| FunctionError::Configuration("this function cannot invoke others".into()))
}

/// One supervisor pass: plans and invokes for every datasource (or the event's one), emits
/// lag per partition; fails (retryable) naming every datasource whose pass failed.
pub async fn supervise(ctx: &FunctionContext, event: SupervisorEvent) -> Result<Value, FunctionError> {
    tracing::info!(scheduled_time = ?event.scheduled_time.or(event.time), execution_id = ?event.execution_id, "supervisor pass");
    let options = SupervisorOptions::at(chrono::Utc::now().timestamp_millis());
    let passes = run_pass(ctx.meta.as_ref(), ctx.store.as_ref(), invoker(ctx)?, &options, event.datasource.as_deref())
        .await
        .map_err(|e| FunctionError::Retryable(format!("supervisor pass: {e}")))?;
    let (mut summary, mut failures, mut total_lag) = (Vec::new(), Vec::new(), 0i64);
    for (datasource, pass) in passes {
        match pass {
            Ok(p) => {
                let mut lag = 0i64;
                for (&partition, &high) in &p.high {
                    let l = (high - p.committed.get(&partition).copied().unwrap_or(0)).max(0);
                    lag += l;
                    let partition = partition.to_string();
                    emit(
                        &[("Function", "supervisor"), ("Datasource", &p.datasource), ("Partition", &partition)],
                        &[("Lag", l as f64, "Count")],
                    );
                }
                emit(
                    &[("Function", "supervisor"), ("Datasource", &p.datasource)],
                    &[
                        ("Lag", lag as f64, "Count"),
                        ("TasksPlanned", p.planned.len() as f64, "Count"),
                        ("JobsInvoked", p.invoked.len() as f64, "Count"),
                        ("TasksCleanedUp", p.cleaned as f64, "Count"),
                    ],
                );
                total_lag += lag;
                summary.push(json!({"datasource": p.datasource, "lag": lag, "planned": p.planned.len(),
                                    "invoked": p.invoked.len(), "caughtUp": p.caught_up}));
            }
            // run_pass has logged it.
            Err(e) => failures.push(format!("datasource {datasource}: {e}")),
        }
    }
    emit(
        &[("Function", "supervisor")],
        &[("TotalLag", total_lag as f64, "Count"), ("DatasourcePassFailures", failures.len() as f64, "Count")],
    );
    if !failures.is_empty() {
        return Err(FunctionError::Retryable(failures.join("; ")));
    }
    Ok(json!({"datasources": summary}))
}

/// Runs an indexer or merger job until `deadline` (less [`DEADLINE_MARGIN`]). An indexer
/// that runs out of time hands the task to a new invocation; one that completes hands it to a
/// merger (inside [`run_job`]).
pub async fn run(ctx: &FunctionContext, job: Job, deadline: Instant) -> Result<Value, FunctionError> {
    let invoker = invoker(ctx)?;
    let budget = deadline.saturating_duration_since(Instant::now()).saturating_sub(DEADLINE_MARGIN);
    let datasource = match &job {
        Job::Index { task } | Job::Merge { task } => task.datasource.clone(),
    };
    let dims = [
        ("Function", if matches!(job, Job::Index { .. }) { "indexer" } else { "merger" }),
        ("Datasource", datasource.as_str()),
    ];
    match run_job(ctx.meta.as_ref(), ctx.store.as_ref(), invoker, &job, budget).await {
        JobOutcome::Indexed(Ok(outcome)) => {
            let (state, report) = match &outcome {
                TaskOutcome::Complete(r) => ("complete", Some(r)),
                TaskOutcome::Incomplete(r) => ("incomplete", Some(r)),
                TaskOutcome::Busy { .. } => ("busy", None),
                TaskOutcome::LeaseLost { .. } => ("leaseLost", None),
            };
            if let Some(r) = report {
                let m = &r.meters;
                emit(
                    &dims,
                    &[
                        ("RecordsRead", r.num_records_read as f64, "Count"),
                        ("RowsProcessed", m.processed as f64, "Count"),
                        ("RowsProcessedWithError", m.processed_with_error as f64, "Count"),
                        ("RowsUnparseable", m.unparseable as f64, "Count"),
                        ("RowsThrownAway", m.thrown_away as f64, "Count"),
                        ("Hydrants", r.hydrants.len() as f64, "Count"),
                    ],
                );
            }
            if let TaskOutcome::Incomplete(_) = outcome {
                invoker
                    .invoke(job.clone())
                    .await
                    .map_err(|e| FunctionError::Retryable(format!("continue the task: {e}")))?;
            }
            Ok(json!({"job": job, "outcome": state}))
        }
        JobOutcome::Indexed(Err(e)) if e.is_retryable() => Err(FunctionError::Retryable(e.to_string())),
        JobOutcome::Indexed(Err(e)) => {
            // The task is marked failed with the reason (status shows it); a retry cannot help.
            tracing::error!(error = %e, "indexing task failed");
            emit(&dims, &[("TasksFailed", 1.0, "Count")]);
            Ok(json!({"job": job, "outcome": "failed", "error": e.to_string()}))
        }
        JobOutcome::Merged(Ok(outcome)) => {
            let state = match &outcome {
                MergeOutcome::Published { segments } => {
                    emit(&dims, &[("Segments", segments.len() as f64, "Count"), ("TasksPublished", 1.0, "Count")]);
                    "published"
                }
                MergeOutcome::AlreadyPublished => "alreadyPublished",
                MergeOutcome::Waiting { .. } => "waiting",
                MergeOutcome::NotComplete { .. } => "notComplete",
                MergeOutcome::Conflict { reason } => {
                    tracing::warn!(reason, "publish conflict");
                    emit(&dims, &[("PublishConflicts", 1.0, "Count")]);
                    "conflict"
                }
            };
            Ok(json!({"job": job, "outcome": state}))
        }
        JobOutcome::Merged(Err(e)) if e.is_retryable() => Err(FunctionError::Retryable(e.to_string())),
        JobOutcome::Merged(Err(e)) => {
            tracing::error!(error = %e, "merge failed");
            emit(&dims, &[("MergeFailures", 1.0, "Count")]);
            Ok(json!({"job": job, "outcome": "failed", "error": e.to_string()}))
        }
    }
}

/// The whole life of an indexer or merger process: logging, the context built once, then
/// [`run`] for every job event until the runtime stops.
pub async fn serve_jobs(function: &FunctionSpec) -> Result<(), lambda_runtime::Error> {
    logging::init();
    let ctx = FunctionContext::at_cold_start(function).await;
    lambda_runtime::run(lambda_runtime::service_fn(|event: lambda_runtime::LambdaEvent<Value>| {
        let ctx = &ctx;
        async move {
            let deadline = logging::deadline(&event.context);
            run(ctx, events::job_event(event.payload)?, deadline).await
        }
    }))
    .await
}
