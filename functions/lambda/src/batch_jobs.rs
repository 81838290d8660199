//! The batch task jobs the indexer and merger functions run beside the stream's: one split of
//! a batch task (then its task driven on), and a batch task's publish.

use crate::context::FunctionContext;
use crate::error::FunctionError;
use crate::metrics::emit;
use serde_json::{json, Value};
use sluice_format::time::now_ms;
use sluice_pipeline::batch::{publish_batch, BatchPublished, SplitOutcome};
use sluice_pipeline::invoker::{Job, TaskInvoker};
use sluice_pipeline::runner::run_batch_index_job;
use std::time::Duration;

/// Indexes one split for at most `budget`.
pub async fn index(
    ctx: &FunctionContext,
    invoker: &dyn TaskInvoker,
    job: Job,
    budget: Duration,
) -> Result<Value, FunctionError> {
    let Job::BatchIndex { batch, split } = &job else { unreachable!("the indexer hands batch-index jobs here") };
    let outcome = run_batch_index_job(ctx.meta.as_ref(), ctx.store.as_ref(), invoker, batch, *split, budget).await;
    match outcome {
        Ok(outcome) => {
            let state = match &outcome {
                SplitOutcome::Done { rows, .. } => {
                    emit(&[("Function", "indexer")], &[("BatchRowsProcessed", *rows as f64, "Count")]);
                    "done"
                }
                SplitOutcome::Finished => "finished",
                SplitOutcome::Busy => "busy",
                SplitOutcome::Waiting => "waiting",
                SplitOutcome::Lost => "lost",
                SplitOutcome::Retry(_) => "retry",
                SplitOutcome::Failed(why) => {
                    tracing::error!(task = batch, split, reason = why, "batch split failed");
                    "failed"
                }
            };
            Ok(json!({"job": job, "outcome": state}))
        }
        Err(e) if e.is_transient() => Err(FunctionError::Retryable(e.to_string())),
        Err(e) => Ok(json!({"job": job, "outcome": "failed", "error": e.to_string()})),
    }
}

/// Publishes a batch task whose splits are done.
pub async fn publish(ctx: &FunctionContext, job: Job) -> Result<Value, FunctionError> {
    let Job::BatchPublish { batch } = &job else { unreachable!("the merger hands batch-publish jobs here") };
    match publish_batch(ctx.meta.as_ref(), ctx.store.as_ref(), batch, now_ms()).await {
        Ok(outcome) => {
            let state = match &outcome {
                BatchPublished::Published { segments, .. } => {
                    emit(&[("Function", "merger")], &[("BatchSegments", *segments as f64, "Count")]);
                    "published"
                }
                BatchPublished::Finished => "finished",
                BatchPublished::NotReady { .. } => "notReady",
                BatchPublished::Conflict(_) => "conflict",
                BatchPublished::Failed(_) => "failed",
            };
            Ok(json!({"job": job, "outcome": state}))
        }
        Err(e) if e.is_transient() => Err(FunctionError::Retryable(e.to_string())),
        Err(e) => Ok(json!({"job": job, "outcome": "failed", "error": e.to_string()})),
    }
}
