//! A batch task's publish: once every split is done, the hydrants of each time chunk are merged
//! into segments of a version newer than the chunk's, written invisible under a replace of
//! their own (`Append`: replacing nothing; `Overwrite`: replacing the visible segments of the
//! chunks the task covers), and made visible by that replace's publish, whose transaction also
//! moves the task item from running (the version read) to published. A second publisher of the
//! same task (a retry, a duplicate invocation) loses that transaction and discards what it
//! wrote: a task publishes once.

use super::status::{load_spec, load_task, splits};
use super::BatchError;
use crate::coordinator::replace::{
    self, give_up, newer_version, Begun, Guards, Published, ReplaceKind, MAX_GUARDS, MAX_REPLACED, MAX_REPLACE_RUN_MS,
};
use crate::item::to_json;
use crate::keys::{batch_hydrant_prefix, batch_pk, batch_task_sk, datasource_pk, split_sk};
use crate::timeline::{describe, mark_visible, put_record, segment_records, SegmentRecord};
use sluice_format::merge::{merge, MergeOptions};
use sluice_format::meters::MeterTotals;
use sluice_format::segment::Segment;
use sluice_format::spec::batch::BatchSpec;
use sluice_format::time::{now_ms as clock_ms, Interval};
use sluice_layout::batch::{BatchHydrant, BatchState, BatchTaskItem, SplitItem, SplitState, MAX_PUBLISH_ATTEMPTS};
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore, TxOp};
use sluice_store::storage::{ObjectStore, StorageError};
use std::collections::{BTreeMap, BTreeSet};

/// Time chunks `granularitySpec.intervals` may cover.
const MAX_INTERVAL_CHUNKS: usize = 100_000;

/// How a publish ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchPublished {
    /// This publish made the task's segments visible.
    Published {
        /// Segments written.
        segments: u64,
        /// Segments the overwrite replaced.
        replaced: u64,
        /// Rows published.
        rows: u64,
    },
    /// Published or failed before: nothing to do.
    Finished,
    /// Splits are still being indexed.
    NotReady {
        /// Splits not done.
        pending: u32,
    },
    /// Another replace (a compaction, another task) published over the same segments, or a
    /// hydrant must be indexed again: a later publish tries again.
    Conflict(String),
    /// The task failed (a split failed, or its overwrite cannot be made): nothing published.
    Failed(String),
}

/// Publishes batch task `id` once all its splits are done.
pub async fn publish_batch(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    id: &str,
    now_ms: i64,
) -> Result<BatchPublished, BatchError> {
    let (task, version) = load_task(meta, id).await?;
    if task.state != BatchState::Running {
        return Ok(BatchPublished::Finished);
    }
    let all = splits(meta, &task).await?;
    let mut meters = MeterTotals::default();
    for (s, _) in &all {
        meters.merge(&s.meters.unwrap_or_default());
    }
    if let Some((s, _)) = all.iter().find(|(s, _)| s.state == SplitState::Failed) {
        let why = format!("split {}: {}", s.n, s.error.as_deref().unwrap_or("failed"));
        return fail(meta, store, &task, version, why, meters, now_ms).await;
    }
    let pending = all.iter().filter(|(s, _)| s.state != SplitState::Done).count() as u32
        + task.splits.saturating_sub(all.len() as u32);
    if pending > 0 {
        return Ok(BatchPublished::NotReady { pending });
    }
    if task.publish_attempts >= MAX_PUBLISH_ATTEMPTS {
        let why = format!("{MAX_PUBLISH_ATTEMPTS} publishes began and none published");
        return fail(meta, store, &task, version, why, meters, now_ms).await;
    }
    // This publish counted: the transaction below is conditioned on the count it wrote.
    let task = BatchTaskItem { publish_attempts: task.publish_attempts + 1, ..task };
    let counted = Item::new(datasource_pk(&task.datasource), batch_task_sk(id), to_json(&task));
    let version = match meta.put(counted, Condition::Version(version)).await {
        Ok(v) => v,
        Err(MetaError::ConditionFailed { .. }) => {
            return Ok(BatchPublished::Conflict("another publish of the task began".into()))
        }
        Err(e) => return Err(e.into()),
    };
    let batch = load_spec(meta, id, &task.datasource).await?;
    let g = batch.spec.granularity.segment_granularity;
    let wanted = match interval_chunks(&batch) {
        Ok(chunks) => chunks,
        Err(why) => return fail(meta, store, &task, version, why.to_string(), meters, now_ms).await,
    };
    // Each chunk's hydrants, from every split; chunks outside `intervals` are thrown away.
    let mut chunks: BTreeMap<Interval, Vec<(&SplitItem, u64, &BatchHydrant)>> = BTreeMap::new();
    for (s, v) in &all {
        for h in &s.hydrants {
            let chunk = g.bucket(h.chunk_start);
            if wanted.as_ref().is_some_and(|w| !w.contains(&chunk)) {
                meters.processed = meters.processed.saturating_sub(h.rows);
                meters.thrown_away += h.rows;
                continue;
            }
            chunks.entry(chunk).or_default().push((s, *v, h));
        }
    }
    let mut covered: BTreeSet<Interval> = chunks.keys().copied().collect();
    if batch.drop_existing {
        covered.extend(wanted.iter().flatten().copied());
    }
    let guards = Guards::read(meta, &task.datasource).await?;
    let visible: Vec<SegmentRecord> =
        segment_records(meta, &task.datasource).await?.into_iter().filter(|(_, v)| *v).map(|(r, _)| r).collect();
    let replaced = if batch.append {
        Vec::new()
    } else {
        match overwritten(&visible, &covered).and_then(|r| guarded_within_limits(r, &covered)) {
            Ok(replaced) => replaced,
            Err(why) => return fail(meta, store, &task, version, why.to_string(), meters, now_ms).await,
        }
    };
    let in_chunks = visible.iter().filter(|s| covered.iter().any(|c| overlaps(c, &s.interval)));
    let segment_version = newer_version(now_ms, in_chunks.map(|s| s.version.as_str()));
    let kind = if batch.append { ReplaceKind::Append } else { ReplaceKind::Overwrite };
    let intervals: Vec<Interval> = covered.iter().copied().collect();
    let begun = replace::begin(meta, &task.datasource, kind, &replaced, intervals, now_ms).await?;
    let mut w =
        Writer { meta, store, task: &task, begun: &begun, version: segment_version, written: Vec::new(), now_ms };
    let mut rows = 0;
    for (chunk, parts) in &chunks {
        match w.write_chunk(&batch, *chunk, parts).await {
            Ok(n) => rows += n,
            Err(Write::Redo(why)) => {
                give_up(meta, store, &task.datasource, &begun, &w.written).await;
                return Ok(BatchPublished::Conflict(why));
            }
            Err(Write::Error(BatchError::Input(why))) => {
                // The hydrants do not merge into segments: no later publish would do better.
                give_up(meta, store, &task.datasource, &begun, &w.written).await;
                return fail(meta, store, &task, version, why, meters, now_ms).await;
            }
            Err(Write::Error(e)) => {
                give_up(meta, store, &task.datasource, &begun, &w.written).await;
                return Err(e);
            }
        }
    }
    let published = BatchTaskItem {
        state: BatchState::Published,
        finished_ms: Some(now_ms),
        replace: Some(begun.item.id),
        segments: w.written.len() as u64,
        replaced: replaced.len() as u64,
        meters: Some(meters),
        ..task.clone()
    };
    let mut also = vec![TxOp::Put {
        item: Item::new(datasource_pk(&task.datasource), batch_task_sk(id), to_json(&published)),
        condition: Condition::Version(version),
    }];
    if !batch.append {
        // The chunks it covers that no replaced segment starts: their guards too.
        let starts: BTreeSet<i64> = replaced.iter().map(|s| s.interval.start).collect();
        also.extend(
            covered
                .iter()
                .filter(|c| !starts.contains(&c.start))
                .map(|c| guards.bump(&task.datasource, c.start, begun.item.id)),
        );
    }
    match replace::publish(meta, &task.datasource, &begun, (&replaced, &w.written), &guards, now_ms, also).await? {
        Published::Done => {
            for r in &w.written {
                if let Err(e) = mark_visible(meta, &task.datasource, r).await {
                    tracing::warn!(segment = r.sk(), error = %e, "could not mark a batch segment visible; cleanup will");
                }
            }
            delete_hydrants(store, &task).await;
            Ok(BatchPublished::Published { segments: w.written.len() as u64, replaced: replaced.len() as u64, rows })
        }
        Published::Conflict(why) => {
            give_up(meta, store, &task.datasource, &begun, &w.written).await;
            Ok(BatchPublished::Conflict(why))
        }
    }
}

/// Why a task's segments cannot be published as its spec asks: the task fails with it, having
/// published nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Unpublishable {
    /// `granularitySpec.intervals` cover more chunks than a task may.
    #[error("granularitySpec.intervals cover over {MAX_INTERVAL_CHUNKS} time chunks")]
    TooManyChunks,
    /// A visible segment reaches past the chunks the overwrite covers.
    #[error(
        "segment {sk} ({interval}) reaches past the chunks this overwrite covers: overwrite with the \
         datasource's segmentGranularity, or compact it to this task's first"
    )]
    ReachesPast {
        /// The segment's sort key.
        sk: String,
        /// Its interval.
        interval: Interval,
    },
    /// The overwrite would replace more segments, or segments starting at more instants, than
    /// one replace may.
    #[error(
        "an overwrite replaces at most {MAX_REPLACED} segments starting at {MAX_GUARDS} instants, not {segments} \
         at {starts}: cut the task's intervals into smaller tasks"
    )]
    TooManyReplaced {
        /// Segments it would replace.
        segments: usize,
        /// Their start times.
        starts: usize,
    },
    /// The guards of the overwrite's publish would not fit one transaction.
    #[error(
        "an overwrite covers at most {MAX_GUARDS} time chunks and segment start times, not {0}: cut the task's \
         intervals into smaller tasks"
    )]
    TooManyGuards(usize),
}

/// The chunks of `granularitySpec.intervals` (`None`: no intervals, every chunk is kept).
fn interval_chunks(batch: &BatchSpec) -> Result<Option<BTreeSet<Interval>>, Unpublishable> {
    if batch.intervals.is_empty() {
        return Ok(None);
    }
    let g = batch.spec.granularity.segment_granularity;
    let mut out = BTreeSet::new();
    for i in &batch.intervals {
        let mut t = i.start;
        while t < i.end {
            let chunk = g.bucket(t);
            out.insert(chunk);
            if out.len() > MAX_INTERVAL_CHUNKS {
                return Err(Unpublishable::TooManyChunks);
            }
            t = chunk.end;
        }
    }
    Ok(Some(out))
}

fn overlaps(a: &Interval, b: &Interval) -> bool {
    a.start < b.end && b.start < a.end
}

/// The visible segments an overwrite of `covered` replaces: every one overlapping a covered
/// chunk, each wholly within the covered chunks (a segment reaching past them would lose the
/// rows outside).
fn overwritten(visible: &[SegmentRecord], covered: &BTreeSet<Interval>) -> Result<Vec<SegmentRecord>, Unpublishable> {
    let mut out = Vec::new();
    for s in visible.iter().filter(|s| covered.iter().any(|c| overlaps(c, &s.interval))) {
        let mut t = s.interval.start;
        while t < s.interval.end {
            match covered.iter().find(|c| c.start <= t && t < c.end) {
                Some(c) => t = c.end,
                None => return Err(Unpublishable::ReachesPast { sk: s.sk(), interval: s.interval }),
            }
        }
        out.push(s.clone());
    }
    let starts: BTreeSet<i64> = out.iter().map(|s| s.interval.start).collect();
    if out.len() > MAX_REPLACED || starts.len() > MAX_GUARDS {
        return Err(Unpublishable::TooManyReplaced { segments: out.len(), starts: starts.len() });
    }
    Ok(out)
}

/// `replaced`, when the guards its publish writes (one per start time of a replaced segment or
/// of a covered chunk) fit one transaction.
fn guarded_within_limits(
    replaced: Vec<SegmentRecord>,
    covered: &BTreeSet<Interval>,
) -> Result<Vec<SegmentRecord>, Unpublishable> {
    let mut starts: BTreeSet<i64> = replaced.iter().map(|s| s.interval.start).collect();
    starts.extend(covered.iter().map(|c| c.start));
    if starts.len() > MAX_GUARDS {
        return Err(Unpublishable::TooManyGuards(starts.len()));
    }
    Ok(replaced)
}

/// Fails a task (a failed split, an overwrite that cannot be made): nothing is published.
async fn fail(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    task: &BatchTaskItem,
    version: u64,
    why: String,
    meters: MeterTotals,
    now_ms: i64,
) -> Result<BatchPublished, BatchError> {
    let failed = BatchTaskItem {
        state: BatchState::Failed,
        finished_ms: Some(now_ms),
        error: Some(why.clone()),
        meters: Some(meters),
        ..task.clone()
    };
    let item = Item::new(datasource_pk(&task.datasource), batch_task_sk(&task.id), to_json(&failed));
    match meta.put(item, Condition::Version(version)).await {
        Ok(_) => {
            delete_hydrants(store, task).await;
            Ok(BatchPublished::Failed(why))
        }
        Err(MetaError::ConditionFailed { .. }) => Ok(BatchPublished::Finished),
        Err(e) => Err(e.into()),
    }
}

/// Deletes every hydrant of a finished task (what a failure here leaves, or an attempt still
/// uploading writes after, stays: nothing deletes it yet).
async fn delete_hydrants(store: &dyn ObjectStore, task: &BatchTaskItem) {
    let prefix = batch_hydrant_prefix(&task.datasource, &task.id);
    match store.list(&prefix).await {
        Ok(objects) => {
            for o in objects {
                if let Err(e) = store.delete(&o.key).await {
                    tracing::warn!(object = o.key, error = %e, "could not delete a batch hydrant");
                }
            }
        }
        Err(e) => tracing::warn!(prefix, error = %e, "could not list a batch task's hydrants"),
    }
}

enum Write {
    /// A hydrant is missing or corrupt (its split is given back to be indexed again), or
    /// another publish writes the same segments: a later publish tries again.
    Redo(String),
    Error(BatchError),
}

impl From<BatchError> for Write {
    fn from(e: BatchError) -> Self {
        Write::Error(e)
    }
}

/// The segments of one publish, written under its replace.
struct Writer<'a> {
    meta: &'a dyn MetadataStore,
    store: &'a dyn ObjectStore,
    task: &'a BatchTaskItem,
    begun: &'a Begun,
    version: String,
    written: Vec<SegmentRecord>,
    now_ms: i64,
}

impl Writer<'_> {
    /// Merges a chunk's hydrants and writes its segments (invisible): the rows written.
    async fn write_chunk(
        &mut self,
        batch: &BatchSpec,
        chunk: Interval,
        parts: &[(&SplitItem, u64, &BatchHydrant)],
    ) -> Result<u64, Write> {
        let ds = self.task.datasource.as_str();
        let mut hydrants = Vec::with_capacity(parts.len());
        for (split, version, h) in parts {
            let read = match self.store.get(&h.key).await {
                Ok(bytes) => Segment::from_bytes(&h.key, bytes.to_vec()).map_err(|e| e.to_string()),
                Err(StorageError::NotFound { .. }) => Err(format!("hydrant {} is missing", h.key)),
                Err(source) => return Err(BatchError::Storage { object: h.key.clone(), source }.into()),
            };
            match read {
                Ok(segment) if segment.num_rows() as u64 == h.rows => hydrants.push(segment),
                Ok(segment) => {
                    return Err(self
                        .redo(
                            split,
                            *version,
                            format!("hydrant {} holds {} rows, its split says {}", h.key, segment.num_rows(), h.rows),
                        )
                        .await)
                }
                Err(why) => return Err(self.redo(split, *version, why).await),
            }
        }
        let tuning = &batch.spec.tuning;
        let options = MergeOptions { max_rows_per_segment: tuning.max_rows_per_segment, compression: tuning.index };
        let merged = merge(&hydrants, &options)
            .map_err(|e| Write::Error(BatchError::Input(format!("merge of {chunk}: {e}"))))?;
        drop(hydrants);
        let mut rows = 0;
        for bytes in merged {
            if self.now_ms + MAX_REPLACE_RUN_MS <= clock_ms() {
                return Err(BatchError::Input(format!(
                    "the publish of {} ran past {} minutes",
                    self.task.id,
                    MAX_REPLACE_RUN_MS / 60_000
                ))
                .into());
            }
            let bytes = bytes::Bytes::from(bytes);
            let partition = self.written.iter().filter(|w| w.interval == chunk).count() as u32;
            let origin = (None, Some(self.begun.item.id));
            let record =
                describe(ds, chunk, &self.version, partition, &bytes, origin, &format!("batch-{}", self.task.id))
                    .map_err(|e| Write::Error(BatchError::Input(format!("segment of {chunk}: {e}"))))?;
            // Another publish of the task in the same millisecond writes the same keys: the one
            // that finds them taken gives up.
            let taken = || Write::Redo(format!("segment {} is being written by another publish", record.key));
            match self.store.put_if_absent(&record.key, bytes).await {
                Ok(()) => {}
                Err(StorageError::AlreadyExists { .. }) => return Err(taken()),
                Err(source) => return Err(BatchError::Storage { object: record.key.clone(), source }.into()),
            }
            let bare = match put_record(self.meta, ds, &record).await {
                Ok(bare) => bare,
                Err(MetaError::ConditionFailed { .. }) => return Err(taken()),
                Err(e) => return Err(BatchError::from(e).into()),
            };
            rows += bare.num_rows;
            self.written.push(bare);
        }
        Ok(rows)
    }

    /// Gives a split whose hydrant cannot be read back to a new attempt.
    async fn redo(&self, split: &SplitItem, version: u64, why: String) -> Write {
        let again = SplitItem {
            state: SplitState::Pending,
            hydrants: Vec::new(),
            meters: None,
            exceptions: Vec::new(),
            error: Some(why.clone()),
            ..split.clone()
        };
        let item = Item::new(batch_pk(&self.task.id), split_sk(split.n), to_json(&again));
        match self.meta.put(item, Condition::Version(version)).await {
            Ok(_) | Err(MetaError::ConditionFailed { .. }) => {
                Write::Redo(format!("{why}: split {} is indexed again", split.n))
            }
            Err(e) => Write::Error(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;

    fn segment(start: i64, end: i64, partition: u32) -> SegmentRecord {
        serde_json::from_value(serde_json::json!({
            "interval": {"start": start, "end": end}, "version": "v1", "partition": partition, "key": "k",
            "numRows": 1, "numBytes": 1, "dimensions": [], "metrics": [], "merge": "m", "visible": true
        }))
        .expect("a segment record")
    }

    fn hours(range: std::ops::Range<i64>) -> BTreeSet<Interval> {
        range.map(|h| Interval { start: h * HOUR, end: (h + 1) * HOUR }).collect()
    }

    #[test]
    fn an_overwrite_replaces_the_segments_within_its_chunks_and_refuses_one_reaching_past() {
        let visible = vec![segment(0, HOUR, 0), segment(HOUR, 2 * HOUR, 0), segment(5 * HOUR, 6 * HOUR, 0)];
        let replaced = overwritten(&visible, &hours(0..2)).expect("within");
        assert_eq!(replaced.iter().map(|s| s.interval.start / HOUR).collect::<Vec<_>>(), vec![0, 1]);
        let day = vec![segment(0, 24 * HOUR, 0)];
        let refused = overwritten(&day, &hours(5..6)).expect_err("a day's segment reaches past hour 5");
        assert!(matches!(&refused, Unpublishable::ReachesPast { interval, .. } if interval.end == 24 * HOUR));
        assert!(refused.to_string().contains("reaches past the chunks this overwrite covers"), "{refused}");
        let many: Vec<SegmentRecord> = (0..=MAX_GUARDS as i64).map(|h| segment(h * HOUR, (h + 1) * HOUR, 0)).collect();
        let refused = overwritten(&many, &hours(0..MAX_GUARDS as i64 + 1)).expect_err("too many start times");
        assert_eq!(refused, Unpublishable::TooManyReplaced { segments: MAX_GUARDS + 1, starts: MAX_GUARDS + 1 });
        let refused = guarded_within_limits(Vec::new(), &hours(0..MAX_GUARDS as i64 + 1)).expect_err("guards");
        assert_eq!(refused, Unpublishable::TooManyGuards(MAX_GUARDS + 1));
    }
}
