//! One indexer invocation of a batch task: it takes a split (not begun, or its last attempt's
//! lease over), reads its pieces through the indexer's ingester (the stream's parse, rollup and
//! persist rules), persists hydrants under keys of its own attempt, and finishes the split
//! listing them, conditioned on still holding it: an attempt that lost the split (its lease
//! ended and another took over) changes nothing; its hydrants, never listed, go with the
//! task's at its end. An attempt runs only in one of the deployment's batch slots
//! ([`super::slots`]): the one its split was handed over in, else a free one; with every slot
//! held, it leaves its split to a later invocation. An invocation that will not run its split
//! (done, held by another attempt, its task finished) frees the slot it was handed over in.

use super::access::BatchAccess;
use super::read::{open_piece, Buckets, ReadError};
use super::slots;
use super::status::{load_spec, load_task};
use super::BatchError;
use crate::indexer::{Ingester, MessageWindow, RowMeters};
use crate::item::{parse_body, to_json};
use crate::keys::{batch_hydrant_key, batch_pk, split_sk};
use crate::schemas::descriptor_dir;
use sluice_format::meters::MeterTotals;
use sluice_format::spec::batch::BatchSpec;
use sluice_kafka::{Flow, Record};
use sluice_layout::batch::{
    BatchHydrant, BatchSlotItem, BatchState, BatchTaskItem, SplitItem, SplitState, MAX_SPLIT_ATTEMPTS,
    MAX_SPLIT_EXCEPTIONS, MAX_SPLIT_HYDRANTS, SPLIT_LEASE_MS,
};
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore};
use sluice_store::storage::ObjectStore;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

/// Records read between checks of the deadline (and yields to other tasks); the reader checks
/// it by bytes read too, whatever the records' length.
const CHECK_EVERY: u64 = 4_096;

/// How an invocation at a split ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SplitOutcome {
    /// This attempt indexed the split.
    Done {
        /// Rows indexed.
        rows: u64,
        /// Hydrants persisted.
        hydrants: usize,
    },
    /// Done before, failed, or its task is no longer running: nothing to do.
    Finished,
    /// Another attempt holds it.
    Busy,
    /// Every one of the deployment's batch slots is held: the split waits for a later
    /// invocation, handed over when a slot is free.
    Waiting,
    /// Another attempt took it over while this one ran: nothing of this one is listed.
    Lost,
    /// This attempt stopped (out of time, a store failing): the split is given back.
    Retry(String),
    /// The split cannot be indexed: the task fails.
    Failed(String),
}

/// Why ingestion stopped before the end of a split.
enum Stop {
    Retry(String),
    Fail(String),
}

impl From<BatchError> for Stop {
    fn from(e: BatchError) -> Self {
        if e.is_transient() {
            Stop::Retry(e.to_string())
        } else {
            Stop::Fail(e.to_string())
        }
    }
}

impl Stop {
    /// The split as this stop leaves it (given back, or failed), its reason, and the outcome.
    fn ending(self) -> (SplitState, String, SplitOutcome) {
        match self {
            Stop::Retry(why) => (SplitState::Pending, why.clone(), SplitOutcome::Retry(why)),
            Stop::Fail(why) => (SplitState::Failed, why.clone(), SplitOutcome::Failed(why)),
        }
    }
}

/// How an invocation at a split runs.
#[derive(Debug, Clone, Copy)]
pub struct SplitOptions {
    /// Now (ms).
    pub now_ms: i64,
    /// The attempt stops (the split given back) at this instant.
    pub deadline: Option<Instant>,
    /// How long the attempt holds the split: another may take it over after (ms).
    pub lease_ms: i64,
}

impl SplitOptions {
    /// At `now_ms` until `deadline`, with the default lease (Lambda's 15 minutes and a margin).
    pub fn until(now_ms: i64, deadline: Option<Instant>) -> Self {
        SplitOptions { now_ms, deadline, lease_ms: SPLIT_LEASE_MS }
    }
}

/// Indexes split `n` of batch task `id`.
pub async fn index_split(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    access: &BatchAccess,
    id: &str,
    n: u32,
    options: &SplitOptions,
) -> Result<SplitOutcome, BatchError> {
    let now_ms = options.now_ms;
    let (task, _) = load_task(meta, id).await?;
    if task.state != BatchState::Running {
        return Ok(not_run(meta, id, n, now_ms, SplitOutcome::Finished).await);
    }
    let pk = batch_pk(id);
    let item = meta.get(&pk, &split_sk(n)).await?.ok_or_else(|| BatchError::Unknown(format!("{id} split {n}")))?;
    let split: SplitItem = parse_body(&task.datasource, &item)?;
    if !split.takeable(now_ms) {
        let outcome =
            if matches!(split.state, SplitState::Running) { SplitOutcome::Busy } else { SplitOutcome::Finished };
        return Ok(not_run(meta, id, n, now_ms, outcome).await);
    }
    if split.attempt >= MAX_SPLIT_ATTEMPTS {
        let why = format!(
            "split {n} failed {} attempts; the last: {}",
            split.attempt,
            split.error.as_deref().unwrap_or("it never finished")
        );
        let failed = SplitItem { state: SplitState::Failed, error: Some(why.clone()), ..split };
        let outcome = finish(meta, &pk, failed, item.version, SplitOutcome::Failed(why)).await?;
        return Ok(not_run(meta, id, n, now_ms, outcome).await);
    }
    let attempt = split.attempt + 1;
    let holder =
        BatchSlotItem { task: id.to_string(), split: n, attempt, until_ms: now_ms.saturating_add(options.lease_ms) };
    let Some(slot) = slots::take(meta, access.max_splits(), holder, now_ms).await? else {
        return Ok(SplitOutcome::Waiting);
    };
    // Boxed: the attempt's future (reading, decompressing, fetching ahead) is not laid out
    // inside every caller's, a supervisor's or a runner's, however deep they nest.
    let attempt: Pin<Box<dyn Future<Output = Result<SplitOutcome, BatchError>> + Send + '_>> =
        Box::pin(attempt_split(meta, store, access, &task, split, item.version, options));
    let outcome = attempt.await;
    // Freed back to when the attempt began: no later reading of the slot sees it held.
    if let Err(e) = slots::free(meta, slot, now_ms).await {
        tracing::warn!(task = id, split = n, error = %e, "could not free a batch slot; its lease frees it");
    }
    outcome
}

/// `outcome` of an invocation that does not run split `n` of `id`, once the slot it was handed
/// over in is freed (if it was: a failure to free it is logged, and the slot's lease frees it).
async fn not_run(meta: &dyn MetadataStore, id: &str, n: u32, now_ms: i64, outcome: SplitOutcome) -> SplitOutcome {
    if let Err(e) = slots::release_handed_over(meta, id, n, now_ms).await {
        tracing::warn!(task = id, split = n, error = %e, "could not free a batch slot; its lease frees it");
    }
    outcome
}

/// Attempt `split.attempt + 1` at `split` (its item at `version`), in a slot.
async fn attempt_split(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    access: &BatchAccess,
    task: &BatchTaskItem,
    split: SplitItem,
    version: u64,
    options: &SplitOptions,
) -> Result<SplitOutcome, BatchError> {
    let (now_ms, deadline, id, n) = (options.now_ms, options.deadline, task.id.as_str(), split.n);
    let pk = batch_pk(id);
    let attempt = split.attempt + 1;
    let running = SplitItem {
        state: SplitState::Running,
        attempt,
        started_ms: Some(now_ms),
        lease_ms: options.lease_ms,
        error: None,
        ..split.clone()
    };
    let version = match meta.put(Item::new(&pk, split_sk(n), to_json(&running)), Condition::Version(version)).await {
        Ok(v) => v,
        Err(MetaError::ConditionFailed { .. }) => return Ok(SplitOutcome::Busy),
        Err(e) => return Err(e.into()),
    };
    let spec = match load_spec(meta, id, &task.datasource).await {
        Ok(spec) => spec,
        Err(e) => {
            // A store failing gives the split back; a spec that no longer loads fails it.
            let (state, why, outcome) = Stop::from(e).ending();
            let ended = SplitItem { state, error: Some(why), ..running };
            return finish(meta, &pk, ended, version, outcome).await;
        }
    };
    let mut run =
        Run { store, datasource: &task.datasource, id, n, attempt, hydrants: Vec::new(), counts: BTreeMap::new() };
    let (ended, outcome) = match run.ingest(&spec, &running, access, deadline).await {
        Ok((meters, exceptions)) => {
            let outcome = SplitOutcome::Done { rows: meters.processed, hydrants: run.hydrants.len() };
            let done = SplitItem {
                state: SplitState::Done,
                error: None,
                meters: Some(meters),
                exceptions,
                hydrants: std::mem::take(&mut run.hydrants),
                ..running
            };
            (done, outcome)
        }
        Err(stop) => {
            let (state, why, outcome) = stop.ending();
            (SplitItem { state, error: Some(why), ..running }, outcome)
        }
    };
    // Hydrants the split does not list (a lost, given back or failed attempt) are deleted with
    // the task's at its end: an indexer may not delete objects.
    finish(meta, &pk, ended, version, outcome).await
}

/// Writes the split as it ended, if this attempt still holds it.
async fn finish(
    meta: &dyn MetadataStore,
    pk: &str,
    split: SplitItem,
    version: u64,
    outcome: SplitOutcome,
) -> Result<SplitOutcome, BatchError> {
    match meta.put(Item::new(pk, split_sk(split.n), to_json(&split)), Condition::Version(version)).await {
        Ok(_) => Ok(outcome),
        Err(MetaError::ConditionFailed { .. }) => Ok(SplitOutcome::Lost),
        Err(e) => Err(e.into()),
    }
}

/// One attempt's reading and persisting.
struct Run<'a> {
    store: &'a dyn ObjectStore,
    datasource: &'a str,
    id: &'a str,
    n: u32,
    attempt: u32,
    hydrants: Vec<BatchHydrant>,
    /// Hydrants persisted per time chunk.
    counts: BTreeMap<i64, u32>,
}

impl Run<'_> {
    /// Reads every piece of `split` into hydrants: the split's meters and kept exceptions.
    async fn ingest(
        &mut self,
        batch: &BatchSpec,
        split: &SplitItem,
        access: &BatchAccess,
        deadline: Option<Instant>,
    ) -> Result<(MeterTotals, Vec<sluice_format::meters::ParseException>), Stop> {
        let spec = &batch.spec;
        let tuning = &spec.tuning;
        let meters = RowMeters::new(
            tuning.max_saved_parse_exceptions.max(MAX_SPLIT_EXCEPTIONS as u64),
            tuning.max_parse_exceptions,
        );
        let window = MessageWindow {
            min: batch.intervals.iter().map(|i| i.start).min(),
            max: batch.intervals.iter().map(|i| i.end - 1).max(),
        };
        let mut ingester =
            Ingester::new(spec, &descriptor_dir(), window, meters).map_err(|e| Stop::Fail(e.to_string()))?;
        let inline = match &batch.input {
            sluice_format::spec::InputSource::Inline { data } => data.as_str(),
            _ => "",
        };
        let mut buckets = Buckets::new();
        let mut line = Vec::new();
        let mut read = 0u64;
        let n = self.n;
        let out_of_time = move || Stop::Retry(format!("split {n} ran out of time; the next attempt starts over"));
        for (p, piece) in split.pieces.iter().enumerate() {
            let mut reader = open_piece(piece, inline, access, &mut buckets).await?.until(deadline);
            loop {
                let next = match reader.next_line(&mut line).await {
                    Ok(next) => next,
                    Err(ReadError::Deadline(_)) => return Err(out_of_time()),
                    Err(e) if e.is_transient() => return Err(Stop::Retry(format!("{}: {e}", piece.name()))),
                    Err(e) => return Err(Stop::Fail(format!("{}: {e}", piece.name()))),
                };
                let Some((offset, cut)) = next else { break };
                read += 1;
                if read % CHECK_EVERY == 0 {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(out_of_time());
                    }
                    tokio::task::yield_now().await;
                }
                let flow = if cut {
                    let why = format!("a record longer than {} bytes", super::read::MAX_LINE_BYTES);
                    ingester.meters.unparseable(p as i32, offset as i64, why).map(|_| Flow::Continue).map_err(|e| {
                        ingester.fatal = Some(e);
                    })
                } else if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                } else {
                    ingester.ingest(Record::value(p as i32, offset as i64, Some(&line), None)).map_err(|_| ())
                };
                match flow {
                    Ok(Flow::Pause) => self.persist(&mut ingester, tuning.intermediate_index).await?,
                    Ok(_) => {}
                    Err(()) => {
                        let e = ingester.fatal.take();
                        let last = e.map(|e| {
                            let at = split.pieces.get(e.last.partition as usize).map(|p| p.name()).unwrap_or_default();
                            format!(
                                "more than maxParseExceptions ({}); the last at {at} byte {}: {}",
                                e.max, e.last.offset, e.last.reason
                            )
                        });
                        return Err(Stop::Fail(last.unwrap_or_else(|| "too many parse exceptions".into())));
                    }
                }
            }
        }
        self.persist(&mut ingester, tuning.intermediate_index).await?;
        let mut totals = MeterTotals::default();
        totals.add(&ingester.meters);
        let kept = ingester.meters.saved_exceptions.iter().rev().take(MAX_SPLIT_EXCEPTIONS).cloned().collect();
        Ok((totals, kept))
    }

    /// Persists the ingester's indexes as hydrants of this attempt.
    async fn persist(
        &mut self,
        ingester: &mut Ingester,
        compression: sluice_format::spec::Compression,
    ) -> Result<(), Stop> {
        for index in ingester.take_indexes() {
            let start = index.interval().start;
            let count = self.counts.entry(start).or_default();
            let key = batch_hydrant_key(self.datasource, self.id, self.n, self.attempt, start, *count);
            *count += 1;
            let bytes = index.persist(compression).map_err(|e| Stop::Fail(format!("persist: {e}")))?;
            self.store
                .put_if_absent(&key, bytes.into())
                .await
                .map_err(|source| Stop::from(BatchError::Storage { object: key.clone(), source }))?;
            self.hydrants.push(BatchHydrant { chunk_start: start, key, rows: index.num_rows() as u64 });
            if self.hydrants.len() > MAX_SPLIT_HYDRANTS {
                return Err(Stop::Fail(format!(
                    "split {} persisted over {MAX_SPLIT_HYDRANTS} hydrants: its rows span too many time chunks, or \
                     maxRowsInMemory is too small; lower splitHintSpec.maxSplitSize",
                    self.n
                )));
            }
        }
        Ok(())
    }
}
