//! The query worker as a Lambda function: built once from the environment (deep storage from
//! `SLUICE_STORAGE`, the segment cache under `SLUICE_CACHE` with `SLUICE_QUERY_PARTIAL_CACHE_MB`
//! of partial results, and with the `aws` feature and
//! `SLUICE_QUERY_WORKER_FUNCTION` set, the invoker a node of an invocation tree uses), then
//! one answer per invocation from the Runtime API. The deployment's `query-worker` binary and
//! `sluice query-worker` (the local worker processes of `--workers N`) both run this.

use crate::protocol::WorkerAnswer;
use crate::worker::Worker;
use sluice_query::SegmentCache;
use std::time::{Duration, Instant};

/// Deep storage URL (`s3://BUCKET/PREFIX`, or `file:///DIR` locally).
pub const STORAGE_ENV: &str = "SLUICE_STORAGE";
/// Folder of the worker's segment cache (default `/tmp/sluice-cache`).
pub const CACHE_ENV: &str = "SLUICE_CACHE";
/// Megabytes of partial results the worker keeps in memory (default 256; 0 keeps none).
pub const PARTIAL_CACHE_ENV: &str = "SLUICE_QUERY_PARTIAL_CACHE_MB";

/// Why the worker of this process's environment cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum WorkerSettingsError {
    /// No deep storage is named.
    #[error("{STORAGE_ENV} is not set")]
    NoStorage,
    /// The deep storage named cannot be opened.
    #[error("{STORAGE_ENV}: {0}")]
    Storage(#[from] sluice_store::storage::StorageError),
    /// The partial cache's size is not a whole number of megabytes.
    #[error("{PARTIAL_CACHE_ENV}={value:?}: {source}")]
    PartialCache {
        /// The value given.
        value: String,
        /// Why it is refused.
        source: std::num::ParseIntError,
    },
}

/// The worker of this process's environment.
pub async fn worker_from_env() -> Result<Worker, WorkerSettingsError> {
    let url = std::env::var(STORAGE_ENV).ok().filter(|v| !v.is_empty()).ok_or(WorkerSettingsError::NoStorage)?;
    let store = sluice_store::storage::open_store(&url).await?;
    let mut cache = SegmentCache::new(std::env::var(CACHE_ENV).unwrap_or_else(|_| "/tmp/sluice-cache".into()));
    if let Some(mb) = std::env::var(PARTIAL_CACHE_ENV).ok().filter(|v| !v.is_empty()) {
        let mb: u64 = mb.parse().map_err(|source| WorkerSettingsError::PartialCache { value: mb.clone(), source })?;
        cache = cache.with_partials_limit(mb << 20);
    }
    let worker = Worker::new(store, cache);
    #[cfg(feature = "aws")]
    if let Some(function) = std::env::var(crate::WORKER_FUNCTION_ENV).ok().filter(|v| !v.is_empty()) {
        let invoker = crate::LambdaWorkers::from_env(&function).await;
        return Ok(worker.with_subtree(std::sync::Arc::new(invoker)));
    }
    Ok(worker)
}

/// Serves invocations from the Runtime API (`AWS_LAMBDA_RUNTIME_API`) until the process ends;
/// a worker that cannot be built logs why and exits with status 1 (a failed initialisation).
pub async fn serve() -> Result<(), lambda_runtime::Error> {
    let worker = match worker_from_env().await {
        Ok(w) => w,
        Err(e) => {
            tracing::error!(error = %e, "initialisation failed");
            std::process::exit(1)
        }
    };
    let worker = &worker;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: lambda_runtime::LambdaEvent<serde_json::Value>| async move {
            let request = serde_json::to_vec(&event.payload)?;
            let left = (event.context.deadline as i64).saturating_sub(sluice_format::time::now_ms()).max(0);
            let deadline = (event.context.deadline != 0).then(|| Instant::now() + Duration::from_millis(left as u64));
            let answer: WorkerAnswer = worker.answer_to(&request, deadline).await;
            Ok::<_, lambda_runtime::Error>(answer)
        },
    ))
    .await
}
