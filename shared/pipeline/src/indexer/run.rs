//! One attempt of an indexing task (Druid's SeekableStreamIndexTaskRunner, cut to a Lambda):
//!
//! ```text
//!  claim task# (attempt+1, lease; Version(v))      -- another live attempt: Busy
//!  fold ckpt# items -> hydrants so far, positions   -- resume reads only the rest
//!  loop: read records -> parse -> index per chunk   (blocking thread, one consumer)
//!        until persist due | deadline - reserve | every range ends
//!        hand the indexes over with the positions, ends, resets and meters of the pause
//!        beside the next read step, either
//!          spill (checkpoint not due): persist -> hydrants on local disk, or
//!          checkpoint: persist, merge each chunk's spilled and new hydrants into one
//!          -> put_if_absent under a key unique to the attempt; then, in hand-over order,
//!          transact [ckpt# Absent (parts: Absent ...), task# Version(v)]
//!                                                   -- fails: lease lost, nothing visible
//!  -> Complete (hydrants + end offsets) | Incomplete (continue later)
//! ```
//!
//! Records before a checkpoint's positions are in its hydrants (or were counted and dropped);
//! records after them are read again by the next attempt, so a kill at any instruction loses
//! nothing and duplicates nothing; a spill is in no checkpoint, so a kill loses it and the
//! next attempt reads its records again. One hand-over at most is persisting while the next step
//! reads (Druid's default `maxPendingPersists` 0), and a checkpoint records the pause's
//! positions, never the reader's later ones.

use super::failure::Failure;
use super::handover::{persist_merge_upload, persist_spill, HandedOver, Upload};
use super::lease::{claim, renew, renewing, Claim, Claimed};
use super::realtime::{closing, records_read, CloseReason, Realtime};
use super::spill::{spill_bound, Spill};
use super::{IndexerError, Ingester, RowMeters, StageTimes, TaskOptions, TaskOutcome, TaskReport};
use crate::function_memory_mb;
use crate::item::{to_json, DatasourceError};
use crate::task::{Checkpoint, HydrantRef, Progress, TaskId, TaskState, CHECKPOINT_ITEM_BYTES};
use sluice_format::index::IncrementalIndex;
use sluice_format::offsets::OPEN_END;
use sluice_format::spec::{load_spec_value, DatasourceSpec, TuningSettings};
use sluice_format::time::now_ms;
use sluice_kafka::{ConsumerSettings, Flow, OffsetRange, RangeReader, ReadError, ResetEvent, ResetPolicy, Stop};
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore, TxOp};
use sluice_store::storage::ObjectStore;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Items one checkpoint may be written as: ten of at most [`CHECKPOINT_ITEM_BYTES`] stay under
/// a transaction's 4 MB.
const MAX_CHECKPOINT_PARTS: usize = 10;

/// Runs one attempt of task `id`: claims it, resumes from its checkpoints, reads the rest of
/// its ranges into hydrants, and returns when it is complete, the deadline nears, or another
/// attempt has taken it over.
pub async fn run_task(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    id: &TaskId,
    options: &TaskOptions,
) -> Result<TaskOutcome, IndexerError> {
    let mut times = StageTimes::default();
    let started = Instant::now();
    let claim = match claim(meta, id, options).await? {
        Claimed::Now(c) => c,
        Claimed::Done(item) => {
            let progress = load_progress(meta, id).await?;
            return Ok(TaskOutcome::Complete(report(item.attempt, progress, 0, times)));
        }
        Claimed::Busy { attempt, lease_expires_ms, .. } => return Ok(TaskOutcome::Busy { attempt, lease_expires_ms }),
    };
    let progress = load_progress(meta, id).await?;
    times.metadata += started.elapsed();
    let next_hydrant = progress.hydrants.len() as u32;
    let mut attempt = Attempt {
        meta,
        store,
        id,
        claim,
        progress,
        times,
        num_checkpoints: 0,
        num_persists: 0,
        next_hydrant,
        spill: Spill::default(),
        options: *options,
        started,
    };
    match attempt.run().await {
        Ok(outcome) => Ok(outcome),
        Err(Failure::LeaseLost) => Ok(TaskOutcome::LeaseLost { attempt: attempt.claim.item.attempt }),
        Err(Failure::Fatal(reason)) => {
            attempt.release(TaskState::Failed, reason.clone()).await;
            Err(IndexerError::TaskFailed { id: id.clone(), reason })
        }
        Err(Failure::Retryable(e)) => {
            attempt.release(TaskState::Incomplete, e.to_string()).await;
            Err(*e)
        }
    }
}

async fn load_progress(meta: &dyn MetadataStore, id: &TaskId) -> Result<Progress, IndexerError> {
    crate::task::load_progress(meta, id).await.map_err(|e| match e {
        DatasourceError::Metadata(source) => IndexerError::Metadata { id: id.clone(), source },
        e => IndexerError::Corrupt { id: id.clone(), sk: id.checkpoint_prefix(), reason: e.to_string() },
    })
}

fn report(attempt: u32, progress: Progress, num_records_read: u64, times: StageTimes) -> TaskReport {
    let last = progress.last;
    TaskReport {
        attempt,
        hydrants: progress.hydrants,
        positions: last.as_ref().map(|c| c.positions.clone()).unwrap_or_default(),
        meters: last.as_ref().map_or_else(|| RowMeters::new(0, 0), |c| c.meters.clone()),
        resets: last.map(|c| c.resets).unwrap_or_default(),
        num_records_read,
        num_persists: 0,
        times,
        next: None,
        open: false,
    }
}

/// One step of reading on the blocking pool: what it ended with, and the indexes it filled.
struct Step {
    reader: RangeReader,
    ingester: Ingester,
    stop: Result<Stop, ReadError>,
    indexes: Vec<IncrementalIndex>,
    read_index: Duration,
}

/// The task as of a pause: what the checkpoint of the indexes taken then records.
struct Pause {
    positions: BTreeMap<i32, i64>,
    ends: BTreeMap<i32, i64>,
    resets: Vec<ResetEvent>,
    meters: RowMeters,
}

/// Persisting one hand-over's hydrants: spilled, or merged and uploaded.
type PendingWork<'s> = std::pin::Pin<Box<dyn Future<Output = Result<HandedOver, Failure>> + Send + 's>>;

/// A hand-over being persisted beside the next read step.
struct Pending<'s> {
    pause: Pause,
    work: PendingWork<'s>,
    /// Checkpointed once uploaded; else spilled.
    checkpoint: bool,
}

struct Attempt<'a> {
    meta: &'a dyn MetadataStore,
    store: &'a dyn ObjectStore,
    id: &'a TaskId,
    claim: Claim,
    progress: Progress,
    times: StageTimes,
    num_checkpoints: u32,
    /// Hydrants persisted by this attempt.
    num_persists: u64,
    /// The number of the next hydrant this attempt writes (its keys are unique to it).
    next_hydrant: u32,
    /// Hydrants on local disk since the last checkpoint.
    spill: Spill,
    options: TaskOptions,
    started: Instant,
}

impl<'a> Attempt<'a> {
    async fn run(&mut self) -> Result<TaskOutcome, Failure> {
        let spec = load_spec_value(self.claim.item.spec.clone())
            .map_err(|e| Failure::Fatal(format!("the task's spec is invalid: {e}")))?
            .spec;
        let tuning = &spec.tuning;
        let meters = match &self.progress.last {
            Some(c) => c.meters.clone().resume(tuning.max_saved_parse_exceptions, tuning.max_parse_exceptions),
            None => RowMeters::new(tuning.max_saved_parse_exceptions, tuning.max_parse_exceptions),
        };
        self.spill = Spill::new(spill_bound(function_memory_mb(), tuning.max_bytes_in_memory));
        let ingester = match crate::schemas::schema_sources(&spec, &crate::schemas::descriptor_dir()).await {
            Ok(sources) => Ingester::with_sources(&spec, sources, self.claim.item.window, meters),
            Err(e) => Err(e.into()),
        }
        .map_err(|e| Failure::Fatal(format!("the task's spec is invalid: {e}")))?;
        let opening = Instant::now();
        let topic = self.claim.item.topic.clone();
        let open = open_reader(self.id, &spec, &topic, self.remaining_ranges());
        let mut reader = renewing(self.meta, self.id, &mut self.claim, &self.options, open).await??;
        self.times.open += opening.elapsed();
        // The attempt ends at the caller's deadline or after the spec's taskTimeBudget, the
        // earlier of the two, keeping the reserve for the last persist.
        let budget = sluice_format::time::Period::parse(&spec.sluice.task_time_budget)
            .ok()
            .and_then(|p| p.fixed_millis())
            .map(|ms| self.started + Duration::from_millis(ms.max(0) as u64));
        let deadline = match (self.options.deadline, budget) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let read_deadline = deadline.map(|d| d.checked_sub(self.options.reserve).unwrap_or_else(Instant::now));
        let start_delivered = reader.delivered();
        let mut realtime = Realtime::for_task(&spec, &self.claim.item);
        let (mut last_record, mut delivered) = (Instant::now(), reader.delivered());
        let mut ingester = Some(ingester);
        let mut pending: Option<Pending<'a>> = None;
        loop {
            // A real-time task's step also ends when its checkpoint period does.
            let step_deadline = match &realtime {
                Some(rt) => {
                    let period = Instant::now() + rt.checkpoint_period;
                    Some(read_deadline.map_or(period, |d| d.min(period)))
                }
                None => read_deadline,
            };
            let cancel = Arc::new(AtomicBool::new(false));
            let read = read_step(reader, ingester.take().expect("ingester present"), step_deadline, &cancel);
            let step = match self.read_beside(read, &mut pending).await {
                Ok(step) => step,
                Err(failure) => {
                    // The reading thread stops at its next record; what it read is dropped.
                    cancel.store(true, Ordering::Relaxed);
                    return Err(failure);
                }
            };
            // The hand-over before this step is checkpointed before this step's is made.
            let waiting = Instant::now();
            self.finish(pending.take()).await?;
            self.times.persist_wait += waiting.elapsed();
            self.times.read_index += step.read_index;
            reader = step.reader;
            let stop = match step.stop {
                Ok(stop) => stop,
                Err(e) => {
                    if let Some(fatal) = &step.ingester.fatal {
                        return Err(Failure::Fatal(fatal.to_string()));
                    }
                    return Err(match e {
                        ReadError::OutOfRange { .. } | ReadError::Invalid(_) => Failure::Fatal(e.to_string()),
                        e => Failure::Retryable(Box::new(IndexerError::Read { id: self.id.clone(), source: e })),
                    });
                }
            };
            let mut state = match stop {
                Stop::Paused => TaskState::Running,
                Stop::Deadline if read_deadline.is_none_or(|d| Instant::now() < d) => TaskState::Running,
                Stop::Deadline => TaskState::Incomplete,
                Stop::Complete => TaskState::Complete,
            };
            if reader.delivered() != delivered {
                (last_record, delivered) = (Instant::now(), reader.delivered());
            }
            let mut close = None;
            if let (Some(rt), TaskState::Running) = (realtime.as_mut(), state) {
                let read = records_read(&self.claim.item, reader.positions());
                let bytes = step.ingester.meters.processed_bytes;
                close = match rt.due(now_ms(), read, bytes, last_record.elapsed()) {
                    Some(reason) => Some(reason),
                    None => rt.plan_changed(self.meta, &self.claim.item).await?,
                };
                if close.is_some() {
                    state = TaskState::Complete;
                } else if step.indexes.is_empty() && reader.positions() == self.last_positions() {
                    // Nothing new since the last checkpoint: the heartbeats hold the lease.
                    ingester = Some(step.ingester);
                    continue;
                }
            }
            let pause = Pause {
                positions: reader.positions().clone(),
                ends: reader.ends().clone(),
                resets: self.all_resets(&reader),
                meters: step.ingester.meters.clone(),
            };
            // Real-time tasks checkpoint every hand-over: the checkpoint makes rows queryable.
            let spill = state == TaskState::Running && realtime.is_none() && self.spill_admits(&step.indexes, tuning);
            let work = self.hand_over(step.indexes, tuning, !spill)?;
            if state == TaskState::Running {
                // Persisted (and uploaded) while the next step reads.
                pending = Some(Pending { pause, work, checkpoint: !spill });
                realtime = realtime.filter(|_| self.claim.item.is_open());
                ingester = Some(step.ingester);
                continue;
            }
            let uploaded = renewing(self.meta, self.id, &mut self.claim, &self.options, work).await??;
            self.add_times(&uploaded);
            let next = self.checkpoint(uploaded.hydrants, pause, state, close).await?;
            let read = reader.delivered() - start_delivered;
            let mut r = report(self.claim.item.attempt, std::mem::take(&mut self.progress), read, self.times);
            r.next = next;
            r.open = realtime.is_some();
            r.num_persists = self.num_persists;
            tracing::info!(task = %self.id, attempt = r.attempt, ?state, ?close, records = read, hydrants = r.hydrants.len(), "attempt ends");
            // Closing a consumer waits for librdkafka's threads to wind down (a few hundred
            // ms): the attempt's result does not wait for it.
            std::thread::spawn(move || drop(reader));
            return Ok(if state == TaskState::Complete {
                TaskOutcome::Complete(r)
            } else {
                TaskOutcome::Incomplete(r)
            });
        }
    }

    /// Waits for a read step while the previous hand-over is persisted, uploaded and then
    /// checkpointed beside it, renewing the lease every heartbeat.
    async fn read_beside(
        &mut self,
        read: impl Future<Output = Result<Step, Failure>>,
        pending: &mut Option<Pending<'a>>,
    ) -> Result<Step, Failure> {
        tokio::pin!(read);
        let every = self.options.heartbeat();
        let mut next = tokio::time::Instant::now() + every;
        loop {
            let persisting = async {
                match pending.as_mut() {
                    Some(p) => p.work.as_mut().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                step = &mut read => return step,
                handed = persisting => {
                    let Pending { pause, checkpoint, .. } = pending.take().expect("a pending hand-over");
                    if self.handed_over(handed?, pause, checkpoint).await? {
                        // The checkpoint renewed the lease.
                        next = tokio::time::Instant::now() + every;
                    }
                }
                () = tokio::time::sleep_until(next) => {
                    renew(self.meta, self.id, &mut self.claim, &self.options).await?;
                    next = tokio::time::Instant::now() + every;
                }
            }
        }
    }

    /// Finishes a pending hand-over: spilled, or uploaded and then checkpointed.
    async fn finish(&mut self, pending: Option<Pending<'a>>) -> Result<(), Failure> {
        let Some(Pending { pause, work, checkpoint }) = pending else {
            return Ok(());
        };
        let handed = renewing(self.meta, self.id, &mut self.claim, &self.options, work).await??;
        self.handed_over(handed, pause, checkpoint).await.map(|_| ())
    }

    /// Takes in a persisted hand-over: its spill kept, or its hydrants checkpointed (true).
    async fn handed_over(&mut self, handed: HandedOver, pause: Pause, checkpoint: bool) -> Result<bool, Failure> {
        self.add_times(&handed);
        if !checkpoint {
            self.spill.add(handed.spilled);
            return Ok(false);
        }
        self.checkpoint(handed.hydrants, pause, TaskState::Running, None).await?;
        Ok(true)
    }

    fn add_times(&mut self, handed: &HandedOver) {
        self.times.persist += handed.persist;
        self.times.merge += handed.merge;
        self.times.upload += handed.upload;
    }

    /// Whether a hand-over may be spilled: the checkpoint is not due (Druid hands off at
    /// `maxRowsPerSegment` or `maxTotalRows`).
    fn spill_admits(&self, indexes: &[IncrementalIndex], tuning: &TuningSettings) -> bool {
        let max_rows = tuning.max_rows_per_segment.min(tuning.max_total_rows);
        self.spill.admits(indexes, max_rows, tuning.max_rows_in_memory)
    }

    /// Starts persisting indexes taken at a pause: to the spill, or with the spill merged
    /// into one hydrant per time chunk and uploaded for a checkpoint. Hydrants are numbered
    /// now, so hand-overs in flight never share a key.
    fn hand_over(
        &mut self,
        indexes: Vec<IncrementalIndex>,
        tuning: &TuningSettings,
        checkpoint: bool,
    ) -> Result<PendingWork<'a>, Failure> {
        let compression = tuning.intermediate_index;
        self.num_persists += indexes.len() as u64;
        if !checkpoint {
            let dir = self.spill.dir(self.id)?;
            let first = self.spill.number(indexes.len());
            return Ok(Box::pin(persist_spill(self.id, dir, first, indexes, compression)));
        }
        let first = self.next_hydrant;
        self.next_hydrant += self.spill.chunks_with(&indexes) as u32;
        let to = Upload { store: self.store, id: self.id, attempt: self.claim.item.attempt, first, compression };
        Ok(Box::pin(persist_merge_upload(to, indexes, self.spill.take())))
    }

    /// The positions of the last checkpoint, or the task's starts.
    fn last_positions(&self) -> &BTreeMap<i32, i64> {
        match &self.progress.last {
            Some(c) => &c.positions,
            None => &self.claim.item.positions,
        }
    }

    /// What is left to read: from the last checkpoint, or the task's ranges.
    fn remaining_ranges(&self) -> Vec<OffsetRange> {
        match &self.progress.last {
            Some(c) => c
                .ends
                .iter()
                .map(|(&partition, &end)| OffsetRange {
                    partition,
                    start: c.positions.get(&partition).copied().unwrap_or(end),
                    end,
                })
                .collect(),
            None => self.claim.item.ranges.clone(),
        }
    }

    /// Records the hydrants and the offsets they cover, fenced by the claim's version.
    /// With `close`, an open task closes its ranges at the positions reached, in the same
    /// transaction as the group's plan (and the group's next open task, returned).
    async fn checkpoint(
        &mut self,
        hydrants: Vec<HydrantRef>,
        pause: Pause,
        state: TaskState,
        close: Option<CloseReason>,
    ) -> Result<Option<TaskId>, Failure> {
        let started = Instant::now();
        let attempt = self.claim.item.attempt;
        let Pause { positions, mut ends, resets, meters } = pause;
        if close.is_some() {
            for (p, end) in ends.iter_mut().filter(|(_, e)| **e == OPEN_END) {
                *end = positions.get(p).copied().unwrap_or(*end);
            }
        }
        let checkpoint =
            Checkpoint { attempt, n: self.num_checkpoints, part: 0, hydrants, positions, ends, meters, resets };
        let mut task = self.claim.item.clone();
        let positions = checkpoint.positions.clone();
        match state {
            TaskState::Complete if close.is_some() => task.close(positions),
            TaskState::Complete => task.complete(positions),
            TaskState::Incomplete => task.stop_at_deadline(positions),
            _ => task.checkpoint(positions, now_ms(), self.options.lease.as_millis() as i64),
        }
        debug_assert_eq!(task.num_checkpoints, self.num_checkpoints + 1);
        let mut ops: Vec<TxOp> = checkpoint
            .clone()
            .into_parts(CHECKPOINT_ITEM_BYTES)
            .into_iter()
            .map(|part| TxOp::Put {
                item: Item::new(self.id.pk(), self.id.checkpoint_sk(attempt, part.n, part.part), to_json(&part)),
                condition: Condition::Absent,
            })
            .collect();
        if ops.len() > MAX_CHECKPOINT_PARTS {
            // Unreachable with the ingester's chunk bound; said plainly rather than retried.
            return Err(Failure::Fatal(format!(
                "a checkpoint of {} hydrants needs {} items, more than one transaction holds",
                checkpoint.hydrants.len(),
                ops.len()
            )));
        }
        ops.push(TxOp::Put {
            item: Item::new(self.id.pk(), self.id.sk(), to_json(&task)),
            condition: Condition::Version(self.claim.version),
        });
        let fixed = ops.len();
        let mut next = None;
        // The plan may move under a close (a supervisor adding partitions, freezing the group):
        // read again and retry; anything else failing means the lease is lost.
        let mut tries = 0;
        loop {
            let mut all = ops.clone();
            if let Some(reason) = close {
                let open = &self.claim.item;
                let closing = closing(self.meta, open, &checkpoint.positions, reason, now_ms()).await?;
                all.extend(closing.ops);
                next = closing.next;
            }
            match self.meta.transact(all).await {
                Err(MetaError::TransactionFailed { index, .. }) if index == fixed && tries < 5 => tries += 1,
                result => break ops_result(result, self.id, attempt)?,
            }
        }
        self.claim = Claim { item: task, version: self.claim.version + 1 };
        self.num_checkpoints += 1;
        self.progress.hydrants.extend(checkpoint.hydrants.iter().cloned());
        self.progress.last = Some(checkpoint);
        self.times.metadata += started.elapsed();
        if let Some(next) = &next {
            tracing::info!(task = %self.id, %next, "closed; the group's next task is planned");
        }
        Ok(next)
    }

    /// Resets of earlier attempts and of this one.
    fn all_resets(&self, reader: &RangeReader) -> Vec<ResetEvent> {
        let mut resets = self.progress.last.as_ref().map(|c| c.resets.clone()).unwrap_or_default();
        resets.extend(reader.resets().iter().copied());
        resets
    }

    /// Gives the task up after a failure: `Failed` with the reason, or `Incomplete` with the
    /// lease released so the next attempt need not wait. Fenced like every write; a failure
    /// to write is only logged (the lease expires anyway).
    async fn release(&self, state: TaskState, reason: String) {
        let mut task = self.claim.item.clone();
        if state == TaskState::Failed {
            task.fail(reason.clone(), now_ms());
        } else {
            task.release(reason.clone());
        }
        let item = Item::new(self.id.pk(), self.id.sk(), to_json(&task));
        match self.meta.put(item, Condition::Version(self.claim.version)).await {
            Ok(_) => tracing::warn!(task = %self.id, ?state, reason, "attempt gave the task up"),
            Err(e) => tracing::warn!(task = %self.id, error = %e, "could not record the task's failure"),
        }
    }
}

/// A checkpoint transaction's result as the attempt sees it.
fn ops_result(result: Result<(), MetaError>, id: &TaskId, attempt: u32) -> Result<(), Failure> {
    match result {
        Ok(()) => Ok(()),
        Err(MetaError::TransactionFailed { .. }) => {
            tracing::warn!(task = %id, attempt, "lease lost: another attempt holds the task");
            Err(Failure::LeaseLost)
        }
        Err(MetaError::Invalid(reason)) => Err(Failure::Fatal(format!("the checkpoint cannot be written: {reason}"))),
        Err(source) => Err(Failure::Retryable(Box::new(IndexerError::Metadata { id: id.clone(), source }))),
    }
}

/// The consumer over `ranges`, opened on the blocking pool.
async fn open_reader(
    id: &TaskId,
    spec: &DatasourceSpec,
    topic: &str,
    ranges: Vec<OffsetRange>,
) -> Result<RangeReader, Failure> {
    let policy = ResetPolicy {
        reset_automatically: spec.tuning.reset_offset_automatically,
        use_earliest: spec.io.use_earliest_offset,
    };
    let settings = ConsumerSettings::new(&spec.io.consumer_properties).map_err(|e| Failure::Fatal(e.to_string()))?;
    let topic = topic.to_string();
    let opened = tokio::task::spawn_blocking(move || RangeReader::open(&settings, &topic, &ranges, policy))
        .await
        .map_err(|e| Failure::Fatal(format!("the reader panicked: {e}")))?;
    opened.map_err(|e| match e {
        ReadError::OutOfRange { .. } | ReadError::Invalid(_) => Failure::Fatal(e.to_string()),
        e => Failure::Retryable(Box::new(IndexerError::Read { id: id.clone(), source: e })),
    })
}

/// Reads on the blocking pool until the step stops, and takes the indexes it filled.
/// Once `cancel` is set the step ends at the next record.
async fn read_step(
    mut reader: RangeReader,
    mut ingester: Ingester,
    deadline: Option<Instant>,
    cancel: &Arc<AtomicBool>,
) -> Result<Step, Failure> {
    let cancel = Arc::clone(cancel);
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let stop = reader.read(deadline, |r| {
            if cancel.load(Ordering::Relaxed) {
                return Ok(Flow::Pause);
            }
            Ok(ingester.ingest(r)?)
        });
        let indexes = if stop.is_ok() { ingester.take_indexes() } else { Vec::new() };
        Step { reader, ingester, stop, indexes, read_index: started.elapsed() }
    })
    .await
    .map_err(|e| Failure::Fatal(format!("the indexing thread panicked: {e}")))
}
