//! The broker's scatter and gather: one invocation per batch (or per node of an invocation
//! tree past `width` batches), all in flight at once up to `width`; each answer read and
//! checked as hostile input (a partial stored in deep storage read from the request's folder
//! only, then deleted); a worker that fails, times out or answers garbage is invoked once more,
//! then the query fails naming it. Never a partial answer: every batch's partial is merged, or
//! the query fails.

use crate::batches::tree;
use crate::invoker::{InvokeError, WorkerInvoker};
use crate::protocol::{
    decode_partial, digest, fetch_partial, read_answer, unpack_partial, BatchSegment, WorkerRequest, MAX_REQUEST_BYTES,
    MAX_REQUEST_SEGMENTS, VERSION,
};
use futures::StreamExt;
use sluice_query::{Partial, Query, QueryError};
use sluice_store::storage::ObjectStore;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the workers of one query returned, merged.
pub struct Gathered {
    /// The merged partial of every batch.
    pub partial: Partial,
    /// Segments the workers computed.
    pub segments: u64,
    /// Of those, segments answered from the workers' partial caches.
    pub cached: u64,
    /// Worker invocations, retries and the tree's own included.
    pub invocations: u64,
    /// Invocations that were a second attempt.
    pub retries: u64,
}

/// What one batch (or tree node) is: for errors.
struct Part {
    request: Vec<u8>,
    digest: String,
    label: String,
    segments: u64,
}

/// Invokes a worker per batch of `query` (`text` as the caller sent it) and merges their
/// partials, the batches grouped into tree nodes when there are more than `width`; partials
/// too large for an answer are read from `store`.
#[allow(clippy::too_many_arguments)]
pub async fn gather(
    query: &Arc<Query>,
    text: &str,
    batches: Vec<Vec<BatchSegment>>,
    invoker: &Arc<dyn WorkerInvoker>,
    store: &dyn ObjectStore,
    deadline: Instant,
    timeout_ms: u64,
    width: usize,
) -> Result<Gathered, QueryError> {
    let width = width.max(1);
    let total = batches.len();
    let nodes = if total > width { tree(batches, width) } else { batches.into_iter().map(|b| vec![b]).collect() };
    let nodes_count = nodes.len();
    // The workers' deadline comes a little before the broker's, so that a worker out of time
    // says so before the broker stops waiting.
    let left = deadline.saturating_duration_since(Instant::now());
    let worker_deadline =
        sluice_format::time::now_ms() + (left - (left / 10).min(Duration::from_millis(250))).as_millis() as i64;
    let parts: Vec<Part> = nodes
        .into_iter()
        .enumerate()
        .map(|(i, node)| {
            let segments: usize = node.iter().map(Vec::len).sum();
            let first = node.first().and_then(|b| b.first()).map(|s| s.id.as_str()).unwrap_or("");
            let label = if node.len() == 1 {
                format!("batch {} of {nodes_count} ({segments} segments from {first})", i + 1)
            } else {
                format!(
                    "tree node {} of {nodes_count} ({} batches, {segments} segments from {first})",
                    i + 1,
                    node.len()
                )
            };
            if segments > MAX_REQUEST_SEGMENTS {
                return Err(QueryError::Unsupported(format!(
                    "{label}: more than the {MAX_REQUEST_SEGMENTS} segments one worker request names"
                )));
            }
            let digest = digest(text, &node);
            let request = WorkerRequest {
                version: VERSION,
                query: text.to_string(),
                deadline_ms: worker_deadline,
                batches: node,
            };
            let request = serde_json::to_vec(&request).map_err(|e| QueryError::Source(format!("{label}: {e}")))?;
            if request.len() > MAX_REQUEST_BYTES {
                return Err(QueryError::Unsupported(format!(
                    "{label}: a worker request of {} bytes passes Lambda's {MAX_REQUEST_BYTES}-byte payload",
                    request.len()
                )));
            }
            Ok(Part { request, digest, label, segments: segments as u64 })
        })
        .collect::<Result<_, QueryError>>()?;
    // Answers are merged as they come, in batch order (`buffered`), so that the grouping of
    // the merges, and with it an HLL estimate past its exact modes, is the same on every run.
    let mut answers = futures::stream::iter(parts)
        .map(|part| attempt_twice(query, part, invoker, store, deadline, timeout_ms))
        .buffered(width);
    let mut merged: Option<Gathered> = None;
    while let Some(one) = answers.next().await {
        let one = one?;
        merged = Some(match merged {
            None => one,
            Some(mut into) => tokio::task::spawn_blocking(move || {
                into.partial.absorb(one.partial)?;
                into.segments += one.segments;
                into.cached += one.cached;
                into.invocations += one.invocations;
                into.retries += one.retries;
                Ok::<_, QueryError>(into)
            })
            .await
            .map_err(|e| QueryError::Source(format!("merging the workers' partials failed: {e}")))??,
        });
    }
    merged.ok_or_else(|| QueryError::Source("no batch to gather".into()))
}

/// One batch's partial: a second invocation when the first failed, timed out or answered
/// garbage and time is left; a query error the worker reports (invalid, unsupported, out of
/// time) is the query's, not retried.
async fn attempt_twice(
    query: &Arc<Query>,
    part: Part,
    invoker: &Arc<dyn WorkerInvoker>,
    store: &dyn ObjectStore,
    deadline: Instant,
    timeout_ms: u64,
) -> Result<Gathered, QueryError> {
    let name = invoker.name();
    let first = match attempt(query, &part, invoker.as_ref(), store, deadline, timeout_ms).await {
        Attempt::Done(answer) => return answer.map(|one| *one),
        Attempt::Failed(failure) => failure,
    };
    tracing::warn!(worker = name, part = part.label, failure = first, "query worker failed; invoking it again");
    match attempt(query, &part, invoker.as_ref(), store, deadline, timeout_ms).await {
        Attempt::Done(answer) => answer.map(|one| Gathered { retries: one.retries + 1, ..*one }),
        Attempt::Failed(second) => Err(QueryError::Source(format!(
            "query worker {name}, {}: {second} (first attempt: {first}); the query is not answered from the \
             other batches alone",
            part.label
        ))),
    }
}

/// The outcome of one invocation.
enum Attempt {
    /// The batch's partial, or the query's own error.
    Done(Result<Box<Gathered>, QueryError>),
    /// Worth another attempt: why this one failed.
    Failed(String),
}

async fn attempt(
    query: &Arc<Query>,
    part: &Part,
    invoker: &dyn WorkerInvoker,
    store: &dyn ObjectStore,
    deadline: Instant,
    timeout_ms: u64,
) -> Attempt {
    let within = deadline.saturating_duration_since(Instant::now());
    if within.is_zero() {
        return Attempt::Done(Err(QueryError::Timeout(timeout_ms)));
    }
    match invoker.invoke(part.request.clone(), within).await {
        Ok(bytes) => match read(query, bytes, &part.digest, store).await {
            Ok(Ok(one)) if one.segments != part.segments => {
                Attempt::Failed(format!("it computed {} of the batch's {} segments", one.segments, part.segments))
            }
            Ok(Ok(mut one)) => {
                one.invocations += 1;
                Attempt::Done(Ok(Box::new(one)))
            }
            Ok(Err(query_error)) => Attempt::Done(Err(query_error)),
            Err(garbage) => Attempt::Failed(garbage.to_string()),
        },
        Err(InvokeError::TimedOut(_)) if deadline <= Instant::now() => {
            Attempt::Done(Err(QueryError::Timeout(timeout_ms)))
        }
        Err(e) => Attempt::Failed(e.to_string()),
    }
}

/// Reads an answer: `Err` when it is garbage or a transient error (worth another attempt),
/// `Ok(Err)` when the worker reports a query error of its own (invalid, unsupported, timeout).
async fn read(
    query: &Arc<Query>,
    bytes: Vec<u8>,
    digest: &str,
    store: &dyn ObjectStore,
) -> Result<Result<Gathered, QueryError>, QueryError> {
    let answer = read_answer(&bytes, digest)?;
    drop(bytes);
    if let Some(error) = answer.error {
        if error.is_transient() {
            return Err(error.into_query_error());
        }
        return Ok(Err(error.into_query_error()));
    }
    let stored = match &answer.partial_key {
        Some(key) => Some(fetch_partial(store, digest, key).await?),
        None => None,
    };
    let query = query.clone();
    let partial = tokio::task::spawn_blocking(move || match stored {
        Some(packed) => unpack_partial(&query, &packed),
        None => decode_partial(&query, answer.partial.as_deref().unwrap_or_default()),
    })
    .await
    .map_err(|e| QueryError::Source(format!("reading a worker's answer failed: {e}")))??;
    Ok(Ok(Gathered {
        partial,
        segments: answer.segments,
        cached: answer.cached,
        invocations: answer.invocations,
        retries: 0,
    }))
}
