//! One supervisor pass over every datasource of the catalog: per datasource, its batch tasks
//! driven, then its steps ([`super::step`]) until a grouping change stops moving.

use super::outcome::DatasourcePass;
use super::step::step;
use super::{SupervisorError, SupervisorOptions};
use crate::datasource;
use crate::invoker::TaskInvoker;
use sluice_metastore::timeline::head;
use sluice_store::metadata::MetadataStore;
use sluice_store::storage::ObjectStore;

/// Runs one pass: for every datasource of the catalog (or only `only`), plan, invoke, record
/// stats, clean up. A datasource that fails does not stop the others; its error is returned
/// in its place, beside the datasource's name.
pub async fn run_pass(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    invoker: &dyn TaskInvoker,
    options: &SupervisorOptions,
    only: Option<&str>,
) -> Result<Vec<(String, Result<DatasourcePass, SupervisorError>)>, SupervisorError> {
    let names = match only {
        Some(name) => vec![name.to_string()],
        None => datasource::list(meta).await?,
    };
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let result = supervise(meta, store, invoker, options, &name).await;
        if let Err(e) = &result {
            tracing::error!(datasource = name, error = %e, "supervisor pass failed for the datasource");
        }
        out.push((name, result));
    }
    Ok(out)
}

/// One pass over one datasource: its steps, each as a pass of its own, while one moves a
/// grouping change on (the autoscaler's new `taskCount`, a snapshot taken, groups moved) and
/// at most `options.max_steps`. The next step reads everything again, as the next pass would:
/// no schedule period is spent between the steps of a change.
pub async fn supervise(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    invoker: &dyn TaskInvoker,
    options: &SupervisorOptions,
    name: &str,
) -> Result<DatasourcePass, SupervisorError> {
    // Batch tasks first: a stream that cannot be supervised does not hold them up. Their
    // replaces are cleaned up here (a datasource without a compaction configuration has no
    // compaction pass to do it).
    let batch_jobs = match crate::batch::drive(meta, invoker, name, options.now_ms).await {
        Ok(driven) => {
            if driven.known > 0 {
                let cleaned =
                    crate::coordinator::replace::clean_up(meta, store, name, options.now_ms, options.cleanup_grace_ms)
                        .await;
                if let Err(e) = cleaned {
                    tracing::warn!(datasource = name, error = %e, "could not clean up the datasource's replaces");
                }
            }
            driven.splits + driven.publishes
        }
        Err(e) => {
            tracing::warn!(datasource = name, error = %e, "could not drive the datasource's batch tasks");
            0
        }
    };
    // The timeline's head: written if missing, made ready once every writer writes it.
    let prepared = head::prepare(meta, name, options.now_ms, options.timeline_ready_after_ms).await;
    if let Err(e) = prepared {
        tracing::warn!(datasource = name, error = %e, "could not prepare the datasource's timeline head");
    }
    let mut pass = DatasourcePass { datasource: name.into(), batch_jobs, ..Default::default() };
    for _ in 0..options.max_steps.max(1) {
        let (step, again) = step(meta, store, invoker, options, name).await?;
        pass = pass.then(step);
        if !again {
            break;
        }
    }
    Ok(pass)
}
