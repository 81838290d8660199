//! The query worker: reads a request, opens its batch's segments (one of at most 16 MiB through
//! its segment cache: downloaded whole once into `/tmp`, memory-mapped; a larger one by the
//! parts the query reads, with ranged reads: `sluice_query::ranged`), computes the batch's
//! partial on every core with its partial cache, and answers it: in the answer, or past what a Lambda response holds,
//! as an object in deep storage that the answer names. A node of an invocation tree invokes a
//! worker per batch but its first, which it computes itself meanwhile, and answers their merged
//! partial. Whatever goes wrong in the query
//! is answered as the query's error; only a crash is the invocation's.

use crate::invoker::{InvokeError, WorkerInvoker};
use crate::protocol::BatchSegment;
use crate::protocol::{
    carry_partial, digest, pack_partial, Carried, WorkerAnswer, WorkerRequest, MAX_INLINE_PARTIAL_BYTES, VERSION,
};
use crate::scatter::{gather, Scatter};
use async_trait::async_trait;
use futures::{FutureExt, StreamExt, TryStreamExt};
use sluice_query::{parse_query, partial_within, Partial, QueryError, QuerySegment, SegmentCache};
use sluice_store::storage::ObjectStore;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Segments a worker downloads at once.
const PARALLEL_DOWNLOADS: usize = 8;
/// Largest segment downloaded whole and kept in `/tmp`: S3 serves a GET of up to 8–16 MB in
/// about one request's time ("Performance guidelines for Amazon S3"), so a smaller segment
/// costs no more whole than by its columns. A larger one (a compacted segment of millions of
/// rows) is read by the columns the query names, a fraction of its bytes.
pub const WHOLE_SEGMENT_BYTES: u64 = 16 << 20;
/// Most bytes of segments a worker opens at once: its `/tmp` (4 GB in the template) holds its
/// 2 GiB segment cache and this much more.
pub const OPEN_BYTES: u64 = 3 << 29;
/// Bytes of segments a worker computes at a time (at most half of what it opens): a batch is
/// computed a chunk at a time, the next chunk downloading meanwhile, the chunks' partials
/// merged in order. Large enough that a chunk's partial is merged rarely, small enough that
/// most of a batch's download overlaps its scan.
pub const CHUNK_BYTES: u64 = 64 << 20;
/// Time kept at the end of an invocation to send the answer.
const ANSWER_TIME: Duration = Duration::from_secs(1);

/// A query worker's clients, built once per process.
#[derive(Debug, Clone)]
pub struct Worker {
    store: Arc<dyn ObjectStore>,
    cache: SegmentCache,
    subtree: Option<Arc<dyn WorkerInvoker>>,
    inline_limit: usize,
    whole_segment_bytes: u64,
    open_bytes: u64,
}

impl Worker {
    /// A worker reading segments from `store` through `cache`.
    pub fn new(store: Arc<dyn ObjectStore>, cache: SegmentCache) -> Self {
        Self {
            store,
            cache,
            subtree: None,
            inline_limit: MAX_INLINE_PARTIAL_BYTES,
            whole_segment_bytes: WHOLE_SEGMENT_BYTES,
            open_bytes: OPEN_BYTES,
        }
    }

    /// The same worker, opening at most `bytes` of segments at once (by default
    /// [`OPEN_BYTES`]).
    pub fn with_open_bytes(self, bytes: u64) -> Self {
        Self { open_bytes: bytes.max(1), ..self }
    }

    /// The same worker, downloading whole only segments of at most `bytes` (by default
    /// [`WHOLE_SEGMENT_BYTES`]) and reading larger ones by their columns.
    pub fn with_whole_segment_bytes(self, bytes: u64) -> Self {
        Self { whole_segment_bytes: bytes, ..self }
    }

    /// The same worker, answering in deep storage every partial whose text passes `bytes`
    /// (by default what a Lambda response holds).
    pub fn with_inline_limit(self, bytes: usize) -> Self {
        Self { inline_limit: bytes.min(MAX_INLINE_PARTIAL_BYTES), ..self }
    }

    /// The same worker, able to serve as a node of an invocation tree: `invoker` invokes the
    /// workers of the node's batches.
    pub fn with_subtree(self, invoker: Arc<dyn WorkerInvoker>) -> Self {
        Self { subtree: Some(invoker), ..self }
    }

    /// Answers one request (JSON) with the answer's JSON; `lambda_deadline` is when the
    /// invocation itself ends, if sooner than the broker's.
    pub async fn handle(&self, request: &[u8], lambda_deadline: Option<Instant>) -> Vec<u8> {
        serde_json::to_vec(&self.answer_to(request, lambda_deadline).await).unwrap_or_default()
    }

    /// Answers one request (JSON): the batch's partial, or the query's error.
    pub async fn answer_to(&self, request: &[u8], lambda_deadline: Option<Instant>) -> WorkerAnswer {
        self.answer(request, lambda_deadline).await.unwrap_or_else(|(e, digest)| WorkerAnswer {
            version: VERSION,
            partial: None,
            partial_key: None,
            error: Some((&e).into()),
            segments: 0,
            cached: 0,
            invocations: 0,
            digest,
        })
    }

    /// The answer, or the query's error with the digest of the request (empty when the
    /// request could not be read).
    async fn answer(
        &self,
        bytes: &[u8],
        lambda_deadline: Option<Instant>,
    ) -> Result<WorkerAnswer, (QueryError, String)> {
        let request = WorkerRequest::from_slice(bytes).map_err(|e| (e, String::new()))?;
        let digest = digest(&request.query, &request.lookups, &request.batches);
        let with = |e: QueryError| (e, digest.clone());
        self.compute(request, &digest, lambda_deadline).await.map_err(with)
    }

    async fn compute(
        &self,
        request: WorkerRequest,
        digest: &str,
        lambda_deadline: Option<Instant>,
    ) -> Result<WorkerAnswer, QueryError> {
        let mut query = parse_query(&request.query)?;
        if !request.lookups.is_empty() {
            let lookups =
                sluice_metastore::lookups::load_refs(self.store.as_ref(), self.cache.lookups(), &request.lookups)
                    .await
                    .map_err(|e| QueryError::Source(e.to_string()))?;
            query.bind_lookups(lookups);
        }
        let query = Arc::new(query);
        if !query.has_partials() {
            return Err(QueryError::Unsupported(format!("a {} query in a query worker", query.kind())));
        }
        let timeout_ms = query.timeout_ms()?;
        let left_ms = u64::try_from(request.deadline_ms.saturating_sub(sluice_format::time::now_ms())).unwrap_or(0);
        let mut deadline = Instant::now() + Duration::from_millis(left_ms.min(timeout_ms));
        // A second before the invocation's own end, to send the answer: a batch stopped there
        // is the worker's failure (retried), not the query's timeout.
        let lambda_end = lambda_deadline.map(|end| end.checked_sub(ANSWER_TIME).unwrap_or(end));
        let bound_by_lambda = lambda_end.is_some_and(|end| end < deadline);
        if let Some(end) = lambda_end {
            deadline = deadline.min(end);
        }
        let computed = match self.partial_of(query, request, deadline, timeout_ms).await {
            Err(QueryError::Timeout(_)) if bound_by_lambda => {
                Err(QueryError::Source("the worker's invocation ran out of time before the batch was computed".into()))
            }
            other => other,
        }?;
        let (partial, partial_key) =
            match carry_partial(self.store.as_ref(), digest, computed.packed, self.inline_limit).await? {
                Carried::Inline(text) => (Some(text), None),
                Carried::Stored(key) => (None, Some(key)),
            };
        Ok(WorkerAnswer {
            version: VERSION,
            partial,
            partial_key,
            error: None,
            segments: computed.segments,
            cached: computed.cached,
            invocations: computed.invocations,
            digest: digest.to_string(),
        })
    }

    async fn partial_of(
        &self,
        query: Arc<sluice_query::Query>,
        request: WorkerRequest,
        deadline: Instant,
        timeout_ms: u64,
    ) -> Result<Computed, QueryError> {
        let query_text = request.query;
        let lookups = request.lookups;
        let mut batches = request.batches;
        if batches.len() <= 1 {
            let batch = batches.pop().unwrap_or_default();
            let count = batch.len() as u64;
            let (partial, cached) = self.batch_partial(query, batch, deadline, timeout_ms).await?;
            let packed = packed(partial).await?;
            return Ok(Computed { packed, segments: count, cached, invocations: 0 });
        }
        let invoker = self.subtree.as_ref().ok_or_else(|| {
            QueryError::Unsupported(
                "a request of several batches (an invocation tree's node) in a worker that invokes no workers".into(),
            )
        })?;
        // A node computes its first batch itself while its workers compute the others (as
        // Lambada's tree does): it is billed while it waits for them anyway.
        let own = batches.remove(0);
        let own_count = own.len() as u64;
        let how = Scatter {
            invoker,
            store: self.store.as_ref(),
            deadline,
            timeout_ms,
            width: batches.len(),
            hedge: Some(crate::hedge::DEFAULT_HEDGE),
        };
        let (own, others) = tokio::join!(
            self.batch_partial(query.clone(), own, deadline, timeout_ms),
            gather(&query, &query_text, &lookups, batches, how)
        );
        let ((mut partial, own_cached), g) = (own?, others?);
        // Merged in batch order: the node's own batch is its first.
        let partial = tokio::task::spawn_blocking(move || partial.absorb(g.partial).map(|()| partial))
            .await
            .map_err(|e| QueryError::Source(format!("merging the node's partials failed: {e}")))??;
        Ok(Computed {
            packed: packed(partial).await?,
            segments: own_count + g.segments,
            cached: own_cached + g.cached,
            invocations: g.invocations,
        })
    }

    /// One batch's partial, its segments a chunk at a time (the next chunk downloading while
    /// one is computed), and how many of them the partial cache answered.
    async fn batch_partial(
        &self,
        query: Arc<sluice_query::Query>,
        batch: Vec<BatchSegment>,
        deadline: Instant,
        timeout_ms: u64,
    ) -> Result<(Partial, u64), QueryError> {
        let partials = self.cache.partials().clone();
        let hits = partials.stats().hits;
        let count = batch.len();
        let opener = Opener {
            store: self.store.clone(),
            cache: self.cache.clone(),
            plan: sluice_query::ReadPlan::of(&query),
            whole_segment_bytes: self.whole_segment_bytes,
        };
        // Two chunks open at most: one computed, the next downloading.
        let chunk_bytes = CHUNK_BYTES.min(self.open_bytes / 2).max(1);
        let mut pending = chunks(batch, chunk_bytes).into_iter();
        let open = |chunk: Vec<BatchSegment>| {
            // Dropping the handle (an error, the deadline) stops the download.
            let (opening, handle) = opener.clone().open(chunk, deadline, timeout_ms).remote_handle();
            tokio::spawn(opening);
            handle
        };
        let mut next = pending.next().map(open);
        let mut merged: Option<Partial> = None;
        let (started, mut waited, mut chunks_done) = (Instant::now(), Duration::ZERO, 0);
        while let Some(opening) = next.take() {
            let wait = Instant::now();
            let segments = opening.await?;
            waited += wait.elapsed();
            chunks_done += 1;
            next = pending.next().map(open);
            let (query, partials) = (query.clone(), partials.clone());
            let into = merged.take();
            merged = Some(
                tokio::task::spawn_blocking(move || {
                    let partial =
                        without_partials(partial_within(&query, &segments, deadline, timeout_ms, Some(&partials)))?;
                    // The chunk's segments are closed as soon as they are computed.
                    drop(segments);
                    match into {
                        None => Ok::<_, QueryError>(partial),
                        Some(mut into) => into.absorb(partial).map(|()| into),
                    }
                })
                .await
                .map_err(|e| QueryError::Source(format!("the query engine failed: {e}")))??,
            );
        }
        let cached = partials.stats().hits.saturating_sub(hits);
        tracing::info!(
            segments = count,
            chunks = chunks_done,
            cached,
            ms = started.elapsed().as_millis() as u64,
            waiting_for_segments_ms = waited.as_millis() as u64,
            "batch computed"
        );
        let partial = match merged {
            Some(partial) => partial,
            None => without_partials(partial_within(&query, &[], deadline, timeout_ms, Some(&partials)))?,
        };
        Ok((partial, cached))
    }
}

/// `partial` packed for the wire, off the async threads.
async fn packed(partial: Partial) -> Result<Vec<u8>, QueryError> {
    tokio::task::spawn_blocking(move || pack_partial(&partial))
        .await
        .map_err(|e| QueryError::Source(format!("packing the partial failed: {e}")))?
}

/// What a worker opens a chunk of segments with, owned, so that a chunk downloads on its own
/// task while the one before it is computed.
#[derive(Clone)]
struct Opener {
    store: Arc<dyn ObjectStore>,
    cache: SegmentCache,
    plan: Option<sluice_query::ReadPlan>,
    whole_segment_bytes: u64,
}

impl Opener {
    /// Opens `chunk`'s segments, [`PARALLEL_DOWNLOADS`] at once: through the segment cache when
    /// small, by the parts the query reads when large.
    async fn open(
        self,
        chunk: Vec<BatchSegment>,
        deadline: Instant,
        timeout_ms: u64,
    ) -> Result<Vec<QuerySegment>, QueryError> {
        let this = &self;
        let opening = futures::stream::iter(chunk)
            .map(|s| async move {
                let store = this.store.as_ref();
                let segment = if s.num_bytes <= this.whole_segment_bytes {
                    this.cache.open_object(store, &s.key, s.num_bytes).await?
                } else {
                    sluice_query::ranged::read_parts(store, &s.key, s.num_bytes, this.plan.as_ref()).await?
                };
                Ok::<_, QueryError>(QuerySegment { id: s.id, interval: s.interval, segment })
            })
            .buffered(PARALLEL_DOWNLOADS)
            .try_collect::<Vec<_>>();
        tokio::time::timeout_at(deadline.into(), opening).await.map_err(|_| QueryError::Timeout(timeout_ms))?
    }
}

/// The partial, or an error for a query without partials.
fn without_partials(partial: Result<Option<Partial>, QueryError>) -> Result<Partial, QueryError> {
    partial?.ok_or_else(|| QueryError::Unsupported("a query without partials".into()))
}

/// `batch` in chunks of consecutive segments holding at most `bytes` each (a segment larger
/// than that alone), none empty.
fn chunks(batch: Vec<BatchSegment>, bytes: u64) -> Vec<Vec<BatchSegment>> {
    let mut out: Vec<Vec<BatchSegment>> = Vec::new();
    let mut held = 0u64;
    for s in batch {
        match out.last_mut() {
            Some(last) if held.saturating_add(s.num_bytes) <= bytes => {
                held += s.num_bytes;
                last.push(s);
            }
            _ => {
                held = s.num_bytes;
                out.push(vec![s]);
            }
        }
    }
    out
}

/// A batch's partial, packed, with what computing it took.
struct Computed {
    packed: Vec<u8>,
    segments: u64,
    cached: u64,
    invocations: u64,
}

/// The worker's handler run in this process, one invocation at a time or many, as asked.
#[derive(Debug)]
pub struct InProcess {
    /// The worker.
    pub worker: Worker,
}

#[async_trait]
impl WorkerInvoker for InProcess {
    fn name(&self) -> &str {
        "in-process worker"
    }

    async fn invoke(&self, request: Vec<u8>, within: Duration) -> Result<Vec<u8>, InvokeError> {
        let deadline = std::time::Instant::now() + within;
        tokio::time::timeout(within, self.worker.handle(&request, Some(deadline)))
            .await
            .map_err(|_| InvokeError::TimedOut(within.as_millis() as u64))
    }
}
