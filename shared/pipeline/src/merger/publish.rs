//! Merge a completed task's hydrants and publish them with its offsets.

use super::plan::{merge_batch_bound, ChunkPlan};
use crate::invoker::{Job, TaskInvoker};
use crate::item::{parse_body, to_json, DatasourceError};
use crate::keys::{datasource_pk, offsets_sk};
use crate::layout::datasource::OffsetsItem;
use crate::task::{load_progress, HydrantRef, TaskId, TaskItem, TaskState};
use crate::timeline::{allocate_partitions, describe, discard, mark_visible, put_record, SegmentRecord};
use bytes::Bytes;
use sluice_format::merge::{merge, MergeError, MergeOptions};
use sluice_format::segment::Segment;
use sluice_format::spec::load_spec_value;
use sluice_format::time::{format_iso, now_ms, Interval};
use sluice_layout::timeline_log::Change;
use sluice_metastore::timeline::head::transact_visible;
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore, TxOp};
use sluice_store::storage::{ObjectStore, StorageError};
use std::collections::BTreeMap;

/// How a merger runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergerOptions {
    /// Now (ms): the version of a time chunk that has none yet.
    pub now_ms: i64,
    /// Hydrant bytes merged together at most ([`merge_batch_bound`]).
    pub max_batch_bytes: u64,
}

impl MergerOptions {
    /// A merger at `now_ms`, its batches bounded by the function's memory.
    pub fn at(now_ms: i64) -> Self {
        Self { now_ms, max_batch_bytes: merge_batch_bound(crate::function_memory_mb()) }
    }
}

/// How a merge ended.
#[derive(Debug, Clone, PartialEq)]
pub enum MergeOutcome {
    /// The task's segments are visible and its offsets committed.
    Published {
        /// The segments.
        segments: Vec<SegmentRecord>,
    },
    /// The task was published before (a retry, or another merger): nothing changed.
    AlreadyPublished,
    /// An earlier task of the group has not published yet; retry later.
    Waiting {
        /// A partition whose committed offset is behind the task's start.
        partition: i32,
        /// Its committed offset.
        committed: i64,
        /// The task's start.
        start: i64,
    },
    /// The task is not complete (still indexing, or failed).
    NotComplete {
        /// Its state.
        state: TaskState,
    },
    /// The task can never publish: its range was published or replanned otherwise.
    Conflict {
        /// Why.
        reason: String,
    },
}

/// Why a merge failed.
#[derive(Debug, thiserror::Error)]
pub enum MergerError {
    /// The task item does not exist.
    #[error("task {0} does not exist")]
    TaskNotFound(TaskId),
    /// A hydrant is missing or corrupt: the task is failed (to be re-indexed), nothing
    /// published, no offset advanced.
    #[error("task {id}: hydrant {object}: {reason}")]
    Corrupt {
        /// The task.
        id: TaskId,
        /// The object.
        object: String,
        /// What is wrong.
        reason: String,
    },
    /// The task's items or spec cannot be read.
    #[error("task {id}: {reason}")]
    Invalid {
        /// The task.
        id: TaskId,
        /// Why.
        reason: String,
    },
    /// The metadata store failed (retryable).
    #[error("task {id}: metadata: {source}")]
    Metadata {
        /// The task.
        id: TaskId,
        /// The error.
        source: Box<DatasourceError>,
    },
    /// Deep storage failed (retryable).
    #[error("task {id}: storage: {source}")]
    Storage {
        /// The task.
        id: TaskId,
        /// The error.
        source: Box<StorageError>,
    },
}

impl MergerError {
    /// Whether a later attempt may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, MergerError::Metadata { .. } | MergerError::Storage { .. })
    }
}

/// Merges the hydrants of the completed task `id` into segments and publishes them with the
/// task's offsets; then, with an invoker, hands the group's next task to a merger if it is
/// complete.
pub async fn merge_and_publish(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    invoker: Option<&dyn TaskInvoker>,
    id: &TaskId,
    options: &MergerOptions,
) -> Result<MergeOutcome, MergerError> {
    let m = |e: MetaError| MergerError::Metadata { id: id.clone(), source: Box::new(e.into()) };
    let d = |e: DatasourceError| MergerError::Metadata { id: id.clone(), source: Box::new(e) };
    let task_item =
        meta.get(&id.pk(), &id.sk()).await.map_err(m)?.ok_or_else(|| MergerError::TaskNotFound(id.clone()))?;
    let task: TaskItem = parse_body(&id.datasource, &task_item).map_err(d)?;
    match task.state {
        TaskState::Published => return Ok(MergeOutcome::AlreadyPublished),
        TaskState::Complete => {}
        state => return Ok(MergeOutcome::NotComplete { state }),
    }
    let offsets_item =
        meta.get(&datasource_pk(&id.datasource), &offsets_sk(id.group)).await.map_err(m)?.ok_or_else(|| {
            MergerError::Invalid { id: id.clone(), reason: format!("no {} item", offsets_sk(id.group)) }
        })?;
    let offsets: OffsetsItem = parse_body(&id.datasource, &offsets_item).map_err(d)?;
    if let Some(outcome) = check_order(&task, &offsets) {
        if let MergeOutcome::Conflict { reason } = &outcome {
            // It can never publish: failed, its group is planned again from the committed offsets.
            mark_failed(meta, id, &task_item, format!("can never publish: {reason}")).await;
        }
        return Ok(outcome);
    }
    let spec = load_spec_value(task.spec.clone())
        .map_err(|e| MergerError::Invalid { id: id.clone(), reason: format!("the task's spec is invalid: {e}") })?
        .spec;
    let progress = load_progress(meta, id).await.map_err(d)?;
    let mut chunks: BTreeMap<Interval, Vec<&HydrantRef>> = BTreeMap::new();
    for h in &progress.hydrants {
        chunks.entry(h.chunk).or_default().push(h);
    }
    let merge_options =
        MergeOptions { max_rows_per_segment: spec.tuning.max_rows_per_segment, compression: spec.tuning.index };
    let version = format_iso(options.now_ms);
    let merge_id = format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
    let mut written = Vec::new();
    let result = async {
        for (chunk, hydrants) in chunks {
            let plan = ChunkPlan::of(&hydrants, &spec.tuning, options.max_batch_bytes);
            let batch_of = Batch { meta, store, id, task_item: &task_item, chunk, options: merge_options };
            // One batch (the usual case) is merged before partition numbers are reserved, so
            // they are its segments'; several reserve as many as their rows could fill, and a
            // number their merges leave unused is a gap, as a losing merger's are.
            let max_rows = spec.tuning.max_rows_per_segment;
            let most: u64 = plan.batches.iter().map(|b| ChunkPlan::most_segments(b, max_rows)).sum();
            let mut batches = plan.batches.into_iter();
            let mut merged = Vec::new();
            let mut count = plan.as_persisted.len() as u64;
            if batches.len() == 1 {
                merged = batch_of.merge(&batches.next().expect("one batch")).await?;
                count += merged.len() as u64;
            } else {
                count += most;
            }
            let count = u32::try_from(count).map_err(|_| MergerError::Invalid {
                id: id.clone(),
                reason: format!("chunk {chunk:?} would take {count} segments"),
            })?;
            let (version, first) =
                allocate_partitions(meta, &id.datasource, chunk, count, &version).await.map_err(d)?;
            let segment = SegmentOf { id, chunk, version: &version, merge_id: &merge_id };
            let mut partition = first;
            loop {
                for bytes in std::mem::take(&mut merged) {
                    if partition - first >= count {
                        let reason = format!("the merge of {chunk:?} gave more segments than its rows could fill");
                        return Err(MergerError::Invalid { id: id.clone(), reason });
                    }
                    written.push(segment.write(meta, store, partition, bytes.into()).await?);
                    partition += 1;
                }
                // The next batch is fetched once the one before is written and dropped.
                match batches.next() {
                    Some(batch) => merged = batch_of.merge(&batch).await?,
                    None => break,
                }
            }
            // One at a time: the merger holds one such hydrant in memory, however many there are.
            for h in plan.as_persisted {
                let bytes = fetch_hydrant(meta, store, id, &task_item, h).await?;
                // A merge of one gives back its bytes (shared/format/tests/merge_single.rs).
                written.push(segment.write(meta, store, partition, bytes).await?);
                partition += 1;
            }
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        discard(meta, store, &id.datasource, &written).await;
        return Err(e);
    }
    let publish =
        Publish { task: &task, task_version: task_item.version, offsets, offsets_version: offsets_item.version };
    publish.run(meta, store, invoker, id, &merge_id, written, progress.last.map(|c| c.meters), options.now_ms).await
}

/// What a merge of one batch of a chunk's hydrants reads.
struct Batch<'a> {
    meta: &'a dyn MetadataStore,
    store: &'a dyn ObjectStore,
    id: &'a TaskId,
    task_item: &'a Item,
    chunk: Interval,
    options: MergeOptions,
}

impl Batch<'_> {
    /// Fetches `hydrants` and merges them into segments.
    async fn merge(&self, hydrants: &[&HydrantRef]) -> Result<Vec<Vec<u8>>, MergerError> {
        let (id, chunk, options) = (self.id, self.chunk, self.options);
        let parts = fetch_hydrants(self.meta, self.store, id, self.task_item, hydrants).await?;
        let merged = tokio::task::spawn_blocking(move || merge(&parts, &options))
            .await
            .map_err(|e| MergerError::Invalid { id: id.clone(), reason: format!("merge panicked: {e}") })?;
        // A hydrant whose checksums hold but whose contents do not decode, or do not merge with
        // the others, fails the task as a damaged one does: every retry would fail the same way.
        let (object, reason) = match merged {
            Ok(segments) => return Ok(segments),
            Err(MergeError::Format(e)) => (e.object, e.reason),
            Err(MergeError::Incompatible { object, reason }) => (object, reason),
            Err(e) => return Err(MergerError::Invalid { id: id.clone(), reason: format!("merge of {chunk:?}: {e}") }),
        };
        if !hydrants.iter().any(|h| h.key == object) {
            let reason = format!("merge of {chunk:?}: {object}: {reason}");
            return Err(MergerError::Invalid { id: id.clone(), reason });
        }
        Err(fail(self.meta, id, self.task_item, &object, reason).await)
    }
}

/// Where a merge's segments of one time chunk go.
struct SegmentOf<'a> {
    id: &'a TaskId,
    chunk: Interval,
    version: &'a str,
    merge_id: &'a str,
}

impl SegmentOf<'_> {
    /// Uploads `bytes` as partition `partition` and writes its record, not yet visible.
    async fn write(
        &self,
        meta: &dyn MetadataStore,
        store: &dyn ObjectStore,
        partition: u32,
        bytes: Bytes,
    ) -> Result<SegmentRecord, MergerError> {
        let id = self.id;
        let record = describe(
            &id.datasource,
            self.chunk,
            self.version,
            partition,
            &bytes,
            (Some(id.clone()), None),
            self.merge_id,
        )
        .map_err(|e| MergerError::Invalid { id: id.clone(), reason: format!("merged segment: {e}") })?;
        store
            .put_if_absent(&record.key, bytes)
            .await
            .map_err(|source| MergerError::Storage { id: id.clone(), source: Box::new(source) })?;
        put_record(meta, &id.datasource, &record)
            .await
            .map_err(|e| MergerError::Metadata { id: id.clone(), source: Box::new(e.into()) })
    }
}

/// `None` when the task is next in its group's offset order.
fn check_order(task: &TaskItem, offsets: &OffsetsItem) -> Option<MergeOutcome> {
    if task.epoch != offsets.epoch {
        return Some(MergeOutcome::Conflict {
            reason: format!(
                "the task was planned in grouping epoch {}, its group's offsets are of epoch {}",
                task.epoch, offsets.epoch
            ),
        });
    }
    for r in &task.ranges {
        match offsets.offsets.get(&r.partition).copied() {
            Some(c) if c == r.start => {}
            Some(c) if c < r.start => {
                return Some(MergeOutcome::Waiting { partition: r.partition, committed: c, start: r.start })
            }
            Some(c) => {
                return Some(MergeOutcome::Conflict {
                    reason: format!(
                        "partition {} is published up to {c}, past this task's start {}",
                        r.partition, r.start
                    ),
                })
            }
            None => {
                return Some(MergeOutcome::Conflict {
                    reason: format!("partition {} has no committed offset in its group", r.partition),
                })
            }
        }
    }
    None
}

/// Reads a chunk's hydrants; a missing or corrupt one fails the task, naming the object.
async fn fetch_hydrants(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    id: &TaskId,
    task_item: &Item,
    hydrants: &[&HydrantRef],
) -> Result<Vec<Segment>, MergerError> {
    let mut parts = Vec::with_capacity(hydrants.len());
    for h in hydrants {
        let bytes = fetch_hydrant(meta, store, id, task_item, h).await?;
        match Segment::from_bytes(&h.key, bytes.to_vec()) {
            Ok(s) => parts.push(s),
            Err(e) => return Err(fail(meta, id, task_item, &h.key, e.to_string()).await),
        }
    }
    Ok(parts)
}

/// Reads one hydrant's bytes, its checksums checked and its rows those checkpointed; a missing
/// or corrupt one fails the task, naming the object.
async fn fetch_hydrant(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    id: &TaskId,
    task_item: &Item,
    h: &HydrantRef,
) -> Result<Bytes, MergerError> {
    let reason = match store.get(&h.key).await {
        // Every part's checksum: a hydrant published as persisted is not decoded before a query
        // reads it, and a damaged part found by a merge would fail the merge, not the task.
        Ok(bytes) => match Segment::verified_directory(&h.key, &bytes) {
            Ok(d) if u64::from(d.num_rows) == h.num_rows => return Ok(bytes),
            Ok(d) => format!("holds {} rows, checkpointed {}", d.num_rows, h.num_rows),
            Err(e) => e.to_string(),
        },
        Err(StorageError::NotFound { .. }) => "the object is missing".to_string(),
        Err(source) => return Err(MergerError::Storage { id: id.clone(), source: Box::new(source) }),
    };
    Err(fail(meta, id, task_item, &h.key, reason).await)
}

/// Marks the task failed because of a hydrant (fenced by its version) and returns the error.
async fn fail(meta: &dyn MetadataStore, id: &TaskId, task_item: &Item, object: &str, reason: String) -> MergerError {
    let error = MergerError::Corrupt { id: id.clone(), object: object.into(), reason };
    mark_failed(meta, id, task_item, error.to_string()).await;
    tracing::error!(task = %id, %error, "corrupt hydrant: the task fails and will be indexed again");
    error
}

/// Marks the task failed, fenced by the version read; a failure to write is only logged (the
/// next merger finds the same reason).
async fn mark_failed(meta: &dyn MetadataStore, id: &TaskId, task_item: &Item, reason: String) {
    if let Ok(mut task) = serde_json::from_value::<TaskItem>(task_item.body.clone()) {
        task.fail(reason, now_ms());
        let item = Item::new(id.pk(), id.sk(), to_json(&task));
        if let Err(e) = meta.put(item, Condition::Version(task_item.version)).await {
            tracing::warn!(task = %id, error = %e, "could not mark the task failed");
        }
    }
}

/// The items a publish conditions on, as the merger read them.
struct Publish<'a> {
    task: &'a TaskItem,
    task_version: u64,
    offsets: OffsetsItem,
    offsets_version: u64,
}

impl Publish<'_> {
    /// Publishes `written` (the segments of merge `merge_id`) with the task's end offsets.
    #[allow(clippy::too_many_arguments)]
    async fn run(
        self,
        meta: &dyn MetadataStore,
        store: &dyn ObjectStore,
        invoker: Option<&dyn TaskInvoker>,
        id: &TaskId,
        merge_id: &str,
        written: Vec<SegmentRecord>,
        meters: Option<crate::indexer::RowMeters>,
        now_ms: i64,
    ) -> Result<MergeOutcome, MergerError> {
        let Publish { task, task_version, mut offsets, offsets_version } = self;
        for r in &task.ranges {
            let end = task.positions.get(&r.partition).copied().unwrap_or(r.end);
            offsets.offsets.insert(r.partition, end);
        }
        offsets.last_seq = Some(id.seq);
        if let Some(m) = &meters {
            offsets.totals.add(m);
        }
        let mut published = task.clone();
        published.publish(merge_id, now_ms);
        let ops = vec![
            TxOp::Put {
                item: Item::new(datasource_pk(&id.datasource), offsets_sk(id.group), to_json(&offsets)),
                condition: Condition::Version(offsets_version),
            },
            TxOp::Put {
                item: Item::new(id.pk(), id.sk(), to_json(&published)),
                condition: Condition::Version(task_version),
            },
        ];
        // The timeline's head, entry and trim follow the two actions: a head moved by another
        // change of the datasource is read again, and the indices 0 and 1 keep their meaning.
        let change = Change::Task { task: id.clone(), merge: merge_id.to_string() };
        let added: Vec<Interval> = written.iter().map(|r| r.interval).collect();
        match transact_visible(meta, &id.datasource, ops, change, (&added, &[]), now_ms).await {
            Ok(_) => {}
            Err(DatasourceError::Metadata(MetaError::TransactionFailed { index, .. })) => {
                discard(meta, store, &id.datasource, &written).await;
                let now = meta.get(&id.pk(), &id.sk()).await.ok().flatten();
                let state = now.and_then(|i| serde_json::from_value::<TaskItem>(i.body).ok()).map(|t| t.state);
                if state == Some(TaskState::Published) {
                    return Ok(MergeOutcome::AlreadyPublished);
                }
                let what = if index == 0 { "the group's committed offsets moved" } else { "the task changed" };
                return Ok(MergeOutcome::Conflict { reason: format!("publish refused: {what} (task now {state:?})") });
            }
            Err(e) => {
                // Unknown outcome (e.g. a timeout): the segment records stay; they are visible
                // exactly if the publish happened, and a retry finds out.
                return Err(MergerError::Metadata { id: id.clone(), source: Box::new(e) });
            }
        }
        tracing::info!(task = %id, segments = written.len(), "published");
        let mut segments = Vec::with_capacity(written.len());
        for r in written {
            if let Err(e) = mark_visible(meta, &id.datasource, &r).await {
                // Visible anyway through the published task; cleanup marks it later.
                tracing::warn!(segment = r.sk(), error = %e, "could not mark a published segment visible");
            }
            segments.push(SegmentRecord { visible: true, ..r });
        }
        if let Some(invoker) = invoker {
            let next = TaskId { seq: id.seq + 1, ..id.clone() };
            if let Ok(Some(item)) = meta.get(&next.pk(), &next.sk()).await {
                if serde_json::from_value::<TaskItem>(item.body).is_ok_and(|t| t.state == TaskState::Complete) {
                    if let Err(e) = invoker.invoke(Job::Merge { task: next }).await {
                        tracing::warn!(error = %e, "could not hand the next task to a merger; the supervisor will");
                    }
                }
            }
        }
        Ok(MergeOutcome::Published { segments })
    }
}
