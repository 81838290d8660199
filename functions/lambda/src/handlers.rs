//! The handlers: plain async functions over a [`FunctionContext`] and a parsed event, each
//! emitting its counters as EMF and classifying its failures.

use crate::context::FunctionContext;
use crate::error::FunctionError;
use crate::events::{self, SupervisorEvent};
use crate::logging;
use crate::metrics::emit;
use crate::permissions::{INDEXER, MERGER};
use serde_json::{json, Value};
use sluice_format::time::now_ms;
use sluice_pipeline::coordinator::{compact_all, CompactOptions};
use sluice_pipeline::indexer::TaskOutcome;
use sluice_pipeline::invoker::{Job, TaskInvoker};
use sluice_pipeline::merger::MergeOutcome;
use sluice_pipeline::runner::{run_index_job, run_merge_job};
use sluice_pipeline::supervisor::{offset_at, run_pass, SupervisorOptions};
use sluice_pipeline::task::TaskId;
use std::time::{Duration, Instant};

/// Time kept back from the Lambda deadline for the response and the last log lines.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(3);

pub(crate) fn invoker(ctx: &FunctionContext) -> Result<&dyn TaskInvoker, FunctionError> {
    ctx.invoker.as_deref().ok_or_else(|| FunctionError::Configuration("this function cannot invoke others".into()))
}

/// One supervisor pass: plans and invokes for every datasource (or the event's one), emits
/// lag per partition (records, and milliseconds where its record's time was read) and, per
/// datasource, the records not yet queryable (below the lag with real-time tasks) and the
/// time lag summed and at most; fails (retryable) naming every datasource whose pass failed.
pub async fn supervise(ctx: &FunctionContext, event: SupervisorEvent) -> Result<Value, FunctionError> {
    tracing::info!(scheduled_time = ?event.scheduled_time.or(event.time), execution_id = ?event.execution_id, "supervisor pass");
    let options = SupervisorOptions::at(now_ms());
    let passes = run_pass(ctx.meta.as_ref(), ctx.store.as_ref(), invoker(ctx)?, &options, event.datasource.as_deref())
        .await
        .map_err(|e| FunctionError::Retryable(format!("supervisor pass: {e}")))?;
    let (mut summary, mut failures, mut total_lag) = (Vec::new(), Vec::new(), 0i64);
    for (datasource, pass) in passes {
        match pass {
            Ok(p) => {
                for (topic, partition_id, high) in p.highs() {
                    let l = (high - offset_at(&p.committed, topic, partition_id)).max(0);
                    let partition = partition_id.to_string();
                    let dimensions = [
                        ("Function", "supervisor"),
                        ("Datasource", &p.datasource),
                        ("Topic", topic),
                        ("Partition", &partition),
                    ];
                    let mut metrics = vec![("Lag", l as f64, "Count")];
                    if let Some(ms) = p.time_lag_ms.get(topic).and_then(|t| t.get(&partition_id)) {
                        metrics.push(("LagTime", *ms as f64, "Milliseconds"));
                    }
                    emit(&dimensions, &metrics);
                }
                let (lag, queryable_lag) = (p.lag(), p.queryable_lag());
                let (time_lag, max_time_lag) = p.time_lag();
                emit(
                    &[("Function", "supervisor"), ("Datasource", &p.datasource)],
                    &[
                        ("Lag", lag as f64, "Count"),
                        ("QueryableLag", queryable_lag as f64, "Count"),
                        ("LagTime", time_lag as f64, "Milliseconds"),
                        ("MaxLagTime", max_time_lag as f64, "Milliseconds"),
                        ("TasksPlanned", p.planned.len() as f64, "Count"),
                        ("JobsInvoked", p.invoked.len() as f64, "Count"),
                        ("TasksCleanedUp", p.cleaned as f64, "Count"),
                    ],
                );
                total_lag += lag;
                summary.push(json!({"datasource": p.datasource, "lag": lag, "queryableLag": queryable_lag,
                                    "planned": p.planned.len(),
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

/// One compaction pass (the compactor function, on its own schedule): each datasource's
/// retention rules and compaction configuration applied (or the event's datasource's) until
/// nothing is left or `deadline` (less [`DEADLINE_MARGIN`] and one compaction's time) comes;
/// emits what it did per datasource and fails (retryable) naming every datasource whose pass
/// failed.
pub async fn compact(ctx: &FunctionContext, event: SupervisorEvent, deadline: Instant) -> Result<Value, FunctionError> {
    tracing::info!(scheduled_time = ?event.scheduled_time.or(event.time), execution_id = ?event.execution_id, "compaction pass");
    let stop = deadline.checked_sub(DEADLINE_MARGIN + COMPACTION_RESERVE).unwrap_or(deadline);
    let options = CompactOptions { deadline: Some(stop), ..CompactOptions::at(now_ms()) };
    let reports = compact_all(ctx.meta.as_ref(), ctx.store.as_ref(), event.datasource.as_deref(), &options)
        .await
        .map_err(|e| FunctionError::Retryable(format!("compaction pass: {e}")))?;
    let (mut summary, mut failures) = (Vec::new(), Vec::new());
    for (datasource, report) in reports {
        match report {
            Ok(r) => {
                emit(
                    &[("Function", "compactor"), ("Datasource", &datasource)],
                    &[
                        ("ChunksCompacted", r.chunks_compacted as f64, "Count"),
                        ("SegmentsCompacted", r.segments_compacted as f64, "Count"),
                        ("RowsCompacted", r.rows_compacted as f64, "Count"),
                        ("SegmentsDropped", r.segments_dropped as f64, "Count"),
                        ("ReplaceConflicts", r.conflicts as f64, "Count"),
                        ("ReplacesCleanedUp", r.replaces_cleaned as f64, "Count"),
                    ],
                );
                for why in &r.skipped {
                    tracing::warn!(datasource, reason = why, "left as it is");
                }
                summary.push(serde_json::to_value(&r).unwrap_or_default());
            }
            Err(e) => {
                tracing::error!(datasource, error = %e, "compaction pass failed");
                failures.push(format!("datasource {datasource}: {e}"));
            }
        }
    }
    emit(&[("Function", "compactor")], &[("DatasourcePassFailures", failures.len() as f64, "Count")]);
    if !failures.is_empty() {
        return Err(FunctionError::Retryable(failures.join("; ")));
    }
    Ok(json!({"datasources": summary}))
}

/// Time a compaction may take after the last one started: none starts later than this before
/// the deadline (merging 512 MiB of segments and writing them back).
pub const COMPACTION_RESERVE: Duration = Duration::from_secs(240);

/// The kind of job a function runs; a job of the other kind is an invalid event (the invoker
/// routes each kind to its own function).
fn expect_kind(job: &Job, index: bool) -> Result<&TaskId, FunctionError> {
    match (job, index) {
        (Job::Index { task }, true) | (Job::Merge { task }, false) => Ok(task),
        _ => Err(FunctionError::InvalidEvent {
            field: "job".into(),
            reason: format!(
                "the {} function runs {} jobs only",
                if index { "indexer" } else { "merger" },
                if index { "index" } else { "merge" }
            ),
        }),
    }
}

/// Runs an index job until `deadline` (less [`DEADLINE_MARGIN`]): an attempt that runs out
/// of time hands the task to a new invocation, one that completes hands it to a merger (and
/// a real-time task's successor to an indexer).
pub async fn index(ctx: &FunctionContext, job: Job, deadline: Instant) -> Result<Value, FunctionError> {
    if matches!(job, Job::BatchIndex { .. }) {
        let budget = deadline.saturating_duration_since(Instant::now()).saturating_sub(DEADLINE_MARGIN);
        return crate::batch_jobs::index(ctx, invoker(ctx)?, job, budget).await;
    }
    let invoker = invoker(ctx)?;
    let task = expect_kind(&job, true)?.clone();
    let budget = deadline.saturating_duration_since(Instant::now()).saturating_sub(DEADLINE_MARGIN);
    let dims = [("Function", "indexer"), ("Datasource", task.datasource.as_str())];
    match run_index_job(ctx.meta.as_ref(), ctx.store.as_ref(), invoker, &task, budget).await {
        Ok(outcome) => {
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
            Ok(json!({"job": job, "outcome": state}))
        }
        Err(e) if e.is_retryable() => Err(FunctionError::Retryable(e.to_string())),
        Err(e) => {
            // The task is marked failed with the reason (status shows it); a retry cannot help.
            tracing::error!(error = %e, "indexing task failed");
            emit(&dims, &[("TasksFailed", 1.0, "Count")]);
            // Across datasources too, for the alarm.
            emit(&[("Function", "indexer")], &[("TasksFailed", 1.0, "Count")]);
            Ok(json!({"job": job, "outcome": "failed", "error": e.to_string()}))
        }
    }
}

/// Runs a merge job: merges the task's hydrants and publishes, then hands the group's next
/// completed task to a merger.
pub async fn merge(ctx: &FunctionContext, job: Job) -> Result<Value, FunctionError> {
    if matches!(job, Job::BatchPublish { .. }) {
        return crate::batch_jobs::publish(ctx, job).await;
    }
    let invoker = invoker(ctx)?;
    let task = expect_kind(&job, false)?.clone();
    let dims = [("Function", "merger"), ("Datasource", task.datasource.as_str())];
    match run_merge_job(ctx.meta.as_ref(), ctx.store.as_ref(), invoker, &task).await {
        Ok(outcome) => {
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
        Err(e) if e.is_retryable() => Err(FunctionError::Retryable(e.to_string())),
        Err(e) => {
            tracing::error!(error = %e, "merge failed");
            emit(&dims, &[("MergeFailures", 1.0, "Count")]);
            Ok(json!({"job": job, "outcome": "failed", "error": e.to_string()}))
        }
    }
}

/// The whole life of an indexer process: logging, the context built once, then [`index`]
/// for every job event until the runtime stops.
pub async fn serve_indexer() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let ctx = FunctionContext::at_cold_start(&INDEXER).await;
    // One invocation at a time per environment: a spill found now is a dead attempt's.
    sluice_pipeline::indexer::remove_stale_spills();
    lambda_runtime::run(lambda_runtime::service_fn(|event: lambda_runtime::LambdaEvent<Value>| {
        let ctx = &ctx;
        async move {
            let deadline = logging::deadline(&event.context);
            index(ctx, events::job_event(event.payload)?, deadline).await
        }
    }))
    .await
}

/// The whole life of a merger process: logging, the context built once, then [`merge`] for
/// every job event until the runtime stops. It links no Kafka client and no indexer.
pub async fn serve_merger() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let ctx = FunctionContext::at_cold_start(&MERGER).await;
    lambda_runtime::run(lambda_runtime::service_fn(|event: lambda_runtime::LambdaEvent<Value>| {
        let ctx = &ctx;
        async move { merge(ctx, events::job_event(event.payload)?).await }
    }))
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_job_function_refuses_the_other_kind() {
        let task = TaskId { datasource: "wiki".into(), group: 0, seq: 1 };
        let (index, merge) = (Job::Index { task: task.clone() }, Job::Merge { task: task.clone() });
        assert_eq!(expect_kind(&index, true).expect("index job"), &task);
        assert_eq!(expect_kind(&merge, false).expect("merge job"), &task);
        let err = expect_kind(&merge, true).expect_err("a merge job sent to the indexer");
        assert!(!err.is_retryable() && err.to_string().contains("index jobs only"), "{err}");
        let err = expect_kind(&index, false).expect_err("an index job sent to the merger");
        assert!(err.to_string().contains("merge jobs only"), "{err}");
    }
}
