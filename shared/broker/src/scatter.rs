//! The broker's scatter and gather: one invocation per batch (or per node of an invocation
//! tree past `width` batches), all in flight at once up to `width`; each answer read and
//! checked as hostile input (a partial stored in deep storage read from the request's folder
//! only, then deleted); a worker that fails, times out or answers garbage is invoked once more,
//! then the query fails naming it. A batch still unanswered well past its siblings' median time
//! is invoked a second time and the first answer taken (`hedge`). Never a partial answer: every
//! batch's partial is merged, or the query fails.

use crate::batches::tree;
use crate::hedge::{Timings, CHECK_EVERY};
use crate::invoker::{InvokeError, WorkerInvoker};
use crate::protocol::{
    decode_partial, digest, fetch_partial, read_answer, unpack_partial, BatchSegment, WorkerRequest, MAX_REQUEST_BYTES,
    MAX_REQUEST_SEGMENTS, VERSION,
};
use futures::StreamExt;
use sluice_metastore::lookups::LookupRef;
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
    /// Invocations that were a second attempt after a failure.
    pub retries: u64,
    /// Invocations that were a second attempt at a late batch.
    pub hedges: u64,
}

/// How a query's batches are sent out.
#[derive(Clone, Copy)]
pub struct Scatter<'a> {
    /// Invokes the workers.
    pub invoker: &'a Arc<dyn WorkerInvoker>,
    /// Where workers leave partials too large for an answer.
    pub store: &'a dyn ObjectStore,
    /// When the caller stops waiting.
    pub deadline: Instant,
    /// The query's timeout, for its error.
    pub timeout_ms: u64,
    /// Most invocations in flight; more batches are grouped into tree nodes.
    pub width: usize,
    /// A batch unanswered at this multiple of the median answered batch's time (once half
    /// answered) is invoked a second time; `None`: never.
    pub hedge: Option<f64>,
}

/// What one batch (or tree node) is: for errors.
struct Part {
    request: Vec<u8>,
    digest: String,
    label: String,
    segments: u64,
}

/// Invokes a worker per batch of `query` (`text` as the caller sent it) and merges their
/// partials, the batches grouped into tree nodes when there are more than `how.width`.
pub async fn gather(
    query: &Arc<Query>,
    text: &str,
    lookups: &[LookupRef],
    batches: Vec<Vec<BatchSegment>>,
    how: Scatter<'_>,
) -> Result<Gathered, QueryError> {
    let Scatter { deadline, width, .. } = how;
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
            let digest = digest(text, lookups, &node);
            let request = WorkerRequest {
                version: VERSION,
                query: text.to_string(),
                deadline_ms: worker_deadline,
                batches: node,
                lookups: lookups.to_vec(),
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
    let timings = Timings::new(parts.len());
    let timings = &timings;
    let mut answers = futures::stream::iter(parts).map(|part| attempt_twice(query, part, how, timings)).buffered(width);
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
                into.hedges += one.hedges;
                Ok::<_, QueryError>(into)
            })
            .await
            .map_err(|e| QueryError::Source(format!("merging the workers' partials failed: {e}")))??,
        });
    }
    merged.ok_or_else(|| QueryError::Source("no batch to gather".into()))
}

/// One batch's partial: a second invocation when the first failed, timed out or answered
/// garbage and time is left, or when it is late (hedged: the first of the two answers is
/// taken); a query error the worker reports (invalid, unsupported, out of time) is the query's,
/// not retried. A batch is invoked at most twice.
async fn attempt_twice(
    query: &Arc<Query>,
    part: Part,
    how: Scatter<'_>,
    timings: &Timings,
) -> Result<Gathered, QueryError> {
    let name = how.invoker.name();
    let started = Instant::now();
    let first = attempt(query, &part, how);
    tokio::pin!(first);
    let late = async {
        loop {
            match how.hedge.and_then(|f| timings.late_after(f)) {
                Some(after) if started.elapsed() >= after => return,
                _ => tokio::time::sleep(CHECK_EVERY).await,
            }
        }
    };
    let first = tokio::select! {
        outcome = &mut first => outcome,
        () = late, if how.hedge.is_some() => return hedged(query, &part, how, first).await,
    };
    let failure = match first {
        Attempt::Done(answer) => {
            timings.answered(started.elapsed());
            return answer.map(|one| *one);
        }
        Attempt::Failed(failure) => failure,
    };
    tracing::warn!(worker = name, part = part.label, failure, "query worker failed; invoking it again");
    match attempt(query, &part, how).await {
        Attempt::Done(answer) => answer.map(|one| Gathered { retries: one.retries + 1, ..*one }),
        Attempt::Failed(second) => Err(both_failed(name, &part, &failure, &second)),
    }
}

/// A late batch: invoked again while its first invocation goes on; the first answer is taken,
/// and one that fails waits for the other.
async fn hedged(
    query: &Arc<Query>,
    part: &Part,
    how: Scatter<'_>,
    mut first: std::pin::Pin<&mut impl std::future::Future<Output = Attempt>>,
) -> Result<Gathered, QueryError> {
    let name = how.invoker.name();
    tracing::info!(worker = name, part = part.label, "query worker late; invoking it a second time");
    let second = attempt(query, part, how);
    tokio::pin!(second);
    let (winner, first_won) = tokio::select! {
        outcome = &mut first => (outcome, true),
        outcome = &mut second => (outcome, false),
    };
    let hedge = |one: Box<Gathered>| Gathered { hedges: one.hedges + 1, invocations: one.invocations + 1, ..*one };
    let failed = match winner {
        Attempt::Done(answer) => return answer.map(hedge),
        Attempt::Failed(failure) => failure,
    };
    let other = if first_won { second.await } else { first.await };
    match other {
        Attempt::Done(answer) => answer.map(hedge),
        Attempt::Failed(again) => Err(both_failed(name, part, &failed, &again)),
    }
}

/// The error of a batch whose two invocations failed.
fn both_failed(name: &str, part: &Part, first: &str, second: &str) -> QueryError {
    QueryError::Source(format!(
        "query worker {name}, {}: {second} (first attempt: {first}); the query is not answered from the other \
         batches alone",
        part.label
    ))
}

/// The outcome of one invocation.
enum Attempt {
    /// The batch's partial, or the query's own error.
    Done(Result<Box<Gathered>, QueryError>),
    /// Worth another attempt: why this one failed.
    Failed(String),
}

async fn attempt(query: &Arc<Query>, part: &Part, how: Scatter<'_>) -> Attempt {
    let Scatter { invoker, store, deadline, timeout_ms, .. } = how;
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
        hedges: 0,
    }))
}
