//! The query broker and the query worker: a query that reads more bytes than one function
//! should is split between workers, each computing the partial of one batch of segments,
//! and the broker merges the partials and finishes the answer once.
//!
//! ```text
//!  broker: query -> visible records (catalog; a kept timeline at once, checked
//!          meanwhile), pruned by their summaries                            (lib)
//!          small, or no partials (scan, metadata)? -> answered here, as before
//!          else k batches by rendezvous hashing of the keys                 (batches)
//!          -> one invocation per batch (a tree past `width`), retried once  (scatter)
//!             or invoked again when late                                    (hedge)
//!  worker: request -> segments from deep storage via /tmp -> partial on every core (worker)
//!          -> zstd + base64 wire bytes                                      (protocol)
//!  broker: answers checked against the query -> absorbed -> finish -> Druid's JSON
//! ```
//!
//! The merge is exact for every aggregator but HLL sketches past their exact modes
//! (docs/queries.md), so the answer is the single function's, whatever the split.

pub mod batches;
pub mod hedge;
pub mod invoker;
pub mod protocol;
pub mod runtime;
pub mod scatter;
pub mod worker;

#[cfg(feature = "aws")]
pub use invoker::LambdaWorkers;
pub use invoker::{InvokeError, WorkerInvoker};
pub use worker::{InProcess, Worker};

use protocol::BatchSegment;
use sluice_metastore::timeline::SegmentRecord;
use sluice_query::source::segment_id;
use sluice_query::{execute_records, parse_bound, with_visible_records, Pruning, QueryError, SegmentCache};
use sluice_store::metadata::MetadataStore;
use sluice_store::storage::ObjectStore;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Environment variable naming the query-worker function (unset: no fan-out).
pub const WORKER_FUNCTION_ENV: &str = "SLUICE_QUERY_WORKER_FUNCTION";
/// Environment variable: most workers one query keeps busy (at most the worker function's
/// reserved concurrency in the template).
pub const MAX_WORKERS_ENV: &str = "SLUICE_QUERY_MAX_WORKERS";
/// Environment variable: a query over more bytes of segments than this fans out.
pub const MIN_BYTES_ENV: &str = "SLUICE_QUERY_FANOUT_MIN_BYTES";
/// Environment variable: bytes of segments per batch.
pub const BATCH_BYTES_ENV: &str = "SLUICE_QUERY_BATCH_BYTES";

/// When and how a broker fans a query out.
#[derive(Debug, Clone)]
pub struct FanOut {
    /// Invokes the workers.
    pub invoker: Arc<dyn WorkerInvoker>,
    /// A query whose segments hold at most this many bytes is answered by the broker alone.
    pub min_bytes: u64,
    /// Bytes of segments per batch the broker aims at.
    pub batch_bytes: u64,
    /// Most batches of one query: the workers it may keep busy at once.
    pub max_batches: usize,
    /// Most invocations one broker or tree node makes; more batches form an invocation tree.
    pub width: usize,
    /// Longest the broker waits for its workers (the api function's own timeout, less the
    /// time to answer), whatever the query's timeout.
    pub max_wait: Duration,
    /// A batch unanswered at this multiple of the median answered batch's time, once half
    /// answered, is invoked a second time (`None`: never).
    pub hedge: Option<f64>,
}

impl FanOut {
    /// A fan-out through `invoker` with the deployment's defaults: queries over 1 GiB of
    /// segments split into batches of 512 MiB, at most `max_batches` of them (past that, the
    /// batches grow, and a worker computes a large one [`worker::OPEN_BYTES`] at a time), 128
    /// invocations per node of the tree, 55 s of waiting (the api function's 60 s timeout),
    /// late batches invoked again at [`hedge::DEFAULT_HEDGE`] times the median.
    pub fn new(invoker: Arc<dyn WorkerInvoker>, max_batches: usize) -> Self {
        Self {
            invoker,
            min_bytes: 1 << 30,
            batch_bytes: 512 << 20,
            max_batches: max_batches.max(1),
            width: 128,
            max_wait: Duration::from_secs(55),
            hedge: Some(hedge::DEFAULT_HEDGE),
        }
    }

    /// A fan-out through `invoker` set by [`MAX_WORKERS_ENV`] (default 100), [`MIN_BYTES_ENV`]
    /// and [`BATCH_BYTES_ENV`] (defaults of [`FanOut::new`]); a value that is not a whole
    /// number is refused naming its variable.
    pub fn from_env(invoker: Arc<dyn WorkerInvoker>) -> Result<Self, BadSetting> {
        let read = |name: &'static str| -> Result<Option<u64>, BadSetting> {
            match std::env::var(name).ok().filter(|v| !v.is_empty()) {
                None => Ok(None),
                Some(value) => value.parse().map(Some).map_err(|e: std::num::ParseIntError| BadSetting {
                    name,
                    value,
                    reason: e.to_string(),
                }),
            }
        };
        let max = read(MAX_WORKERS_ENV)?.unwrap_or(100);
        let workers = usize::try_from(max).map_err(|e| BadSetting {
            name: MAX_WORKERS_ENV,
            value: max.to_string(),
            reason: e.to_string(),
        })?;
        let mut f = Self::new(invoker, workers);
        f.min_bytes = read(MIN_BYTES_ENV)?.unwrap_or(f.min_bytes);
        f.batch_bytes = read(BATCH_BYTES_ENV)?.unwrap_or(f.batch_bytes).max(1);
        Ok(f)
    }
}

/// A fan-out setting of the environment that is not a whole number (of the right size).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}={value:?}: {reason}")]
pub struct BadSetting {
    /// The variable.
    pub name: &'static str,
    /// Its value.
    pub value: String,
    /// Why it is refused.
    pub reason: String,
}

/// A query's answer and how it was computed.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Druid's JSON result.
    pub result: serde_json::Value,
    /// Segments considered and skipped by their summaries.
    pub pruning: Pruning,
    /// How the query was fanned out (`None`: answered here).
    pub fanned_out: Option<FanOutStats>,
}

/// What a fanned-out query cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FanOutStats {
    /// Batches the segments were split into.
    pub batches: usize,
    /// Worker invocations (tree nodes and second attempts included).
    pub invocations: u64,
    /// Second attempts after a failure.
    pub retries: u64,
    /// Second attempts at a late batch.
    pub hedges: u64,
    /// Segments the workers computed.
    pub segments: u64,
    /// Of those, answered from the workers' partial caches.
    pub cached: u64,
    /// Bytes of the segments the batches name.
    pub bytes: u64,
}

/// Parses and runs a query against the stores: fanned out to workers when `fanout` is given,
/// the query has partials (timeseries, topN, groupBy) and its segments hold more than
/// `fanout.min_bytes`; answered here otherwise, as `sluice_query::run_query_pruned` does.
pub async fn run_query(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    cache: Option<&SegmentCache>,
    fanout: Option<&FanOut>,
    text: &str,
) -> Result<Answer, QueryError> {
    let (query, lookups) = parse_bound(meta, store, cache, text).await?;
    let query = Arc::new(query);
    let lookups = &lookups;
    let timeout_ms = query.timeout_ms()?;
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    let pruner = query.pruner();
    let answer = |records: Vec<SegmentRecord>, pruning: Pruning| {
        let query = query.clone();
        async move {
            let bytes: u64 = records.iter().map(|r| r.num_bytes).sum();
            let Some(f) = fanout.filter(|f| query.has_partials() && bytes > f.min_bytes) else {
                let result = execute_records(store, cache, query.clone(), &records, deadline, timeout_ms).await?;
                return Ok(Answer { result, pruning, fanned_out: None });
            };
            let datasource = query.datasource();
            let segments: Vec<BatchSegment> = records
                .iter()
                .map(|r| BatchSegment {
                    id: segment_id(datasource, r),
                    key: r.key.clone(),
                    num_bytes: r.num_bytes,
                    interval: r.interval,
                })
                .collect();
            let k = batches::batch_count(bytes, f.batch_bytes, f.max_batches);
            let batches = batches::split(segments, k);
            let count = batches.len();
            // The broker's own invocation ends before a long query's timeout.
            let wait_ms = timeout_ms.min(f.max_wait.as_millis() as u64);
            let until = deadline.min(Instant::now() + Duration::from_millis(wait_ms));
            let how = scatter::Scatter {
                invoker: &f.invoker,
                store,
                deadline: until,
                timeout_ms: wait_ms,
                width: f.width,
                hedge: f.hedge,
            };
            let g = scatter::gather(&query, text, lookups, batches, how).await?;
            let stats = FanOutStats {
                batches: count,
                invocations: g.invocations,
                retries: g.retries,
                hedges: g.hedges,
                segments: g.segments,
                cached: g.cached,
                bytes,
            };
            let q = query.clone();
            let result = tokio::task::spawn_blocking(move || sluice_query::finish(&q, g.partial))
                .await
                .map_err(|e| QueryError::Source(format!("finishing the query failed: {e}")))??;
            Ok(Answer { result, pruning, fanned_out: Some(stats) })
        }
    };
    let intervals = query.intervals();
    let work = with_visible_records(meta, cache, query.datasource(), &intervals, pruner.as_ref(), answer);
    tokio::time::timeout_at(deadline.into(), work).await.unwrap_or(Err(QueryError::Timeout(timeout_ms)))
}
