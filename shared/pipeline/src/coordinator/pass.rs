//! A compaction pass over one datasource, as Druid's coordinator runs auto-compaction and its
//! retention rules: segments the rules drop are replaced by nothing, and each time chunk the
//! compaction configuration finds awaiting compaction ([`super::plan`]) has its
//! segments merged (the merger's merge) into ceil(rows / `maxRowsPerSegment`) segments of a
//! newer version that replace exactly them ([`super::replace`]), or re-indexed when the
//! configuration changes the rows or cuts the chunk into finer ones. Rows tasks append
//! meanwhile stay visible beside. Then finished replaces are cleaned up after the grace period.

use super::config::{self as compaction, CompactionConfig};
use super::plan::plan;
use super::replace::MAX_REPLACE_RUN_MS;
use super::replace::{
    self, give_up, newer_version, Begun, Guards, Published, ReplaceError, ReplaceKind, MAX_GUARDS, MAX_REPLACED,
};
use super::rules::{self as retention, retained};
use crate::datasource;
use crate::item::DatasourceError;
use crate::timeline::{describe, mark_visible, put_record, segment_records, SegmentRecord};
use serde::Serialize;
use sluice_format::granularity::Granularity;
use sluice_format::merge::{merge_into, reindex, MergeError, MergeOptions, Reindex};
use sluice_format::segment::Segment;
use sluice_format::spec::{load_spec_value, Compression};
use sluice_format::time::{now_ms, Interval};
use sluice_store::metadata::{MetaError, MetadataStore};
use sluice_store::storage::{ObjectStore, StorageError};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// Bytes of segments one compaction reads at most (they are merged in memory).
pub const MAX_INPUT_BYTES: u64 = 512 << 20;
/// Rows one re-indexing compaction reads at most (each segment's rows are decoded in memory,
/// and the index holds what they roll up to).
pub const MAX_REINDEX_ROWS: u64 = 2_000_000;
/// Rounds of a pass at most: a chunk with more segments than one compaction takes is
/// compacted in parts, one per round.
const MAX_ROUNDS: usize = 8;
/// Segment objects fetched at once.
const FETCHES_IN_FLIGHT: usize = 16;

/// How a pass runs.
#[derive(Debug, Clone, Copy)]
pub struct CompactOptions {
    /// Now (ms): retention's reference and the version of compacted segments.
    pub now_ms: i64,
    /// How long finished replaces stay before cleanup (longer than queries in flight).
    pub grace_ms: i64,
    /// No compaction starts after this (a Lambda's deadline, less one compaction's time).
    pub deadline: Option<Instant>,
}

impl CompactOptions {
    /// Defaults at `now_ms`: the cleanup grace of finished tasks, no deadline.
    pub fn at(now_ms: i64) -> Self {
        CompactOptions { now_ms, grace_ms: crate::task::DEFAULT_CLEANUP_GRACE_MS, deadline: None }
    }

    fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// Runs a pass over every datasource with a compaction configuration or retention rules (or
/// only `only`), one after the other; a datasource's failure does not stop the others.
pub async fn compact_all(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    only: Option<&str>,
    options: &CompactOptions,
) -> Result<Vec<(String, Result<CompactReport, CompactError>)>, DatasourceError> {
    let names = match only {
        Some(name) => vec![name.to_string()],
        None => configured(meta).await?,
    };
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        if options.past_deadline() {
            break;
        }
        let report = compact(meta, store, &name, options).await;
        out.push((name, report));
    }
    Ok(out)
}

/// What a pass did to one datasource.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactReport {
    /// The datasource.
    pub datasource: String,
    /// Time chunks compacted (or compacted in part).
    pub chunks_compacted: u64,
    /// Segments replaced by compaction.
    pub segments_compacted: u64,
    /// Segments compaction wrote.
    pub segments_written: u64,
    /// Rows read by compaction.
    pub rows_compacted: u64,
    /// Segments dropped by the retention rules.
    pub segments_dropped: u64,
    /// Replaces refused because another replace published over the same segments first.
    pub conflicts: u64,
    /// Finished replaces cleaned up.
    pub replaces_cleaned: u64,
    /// Chunks left as they are, with why (not built, incompatible or corrupt segments).
    pub skipped: Vec<String>,
    /// Seconds spent merging or re-indexing (the segments read, not yet written).
    pub merge_secs: f64,
    /// Seconds the whole pass took.
    pub pass_secs: f64,
}

/// Why a pass stopped.
pub type CompactError = ReplaceError;

/// Applies `datasource`'s retention rules and compaction configuration, in rounds while a
/// round leaves work it could not take (a chunk compacted in part, a span overlapping another)
/// and made progress (at most [`MAX_ROUNDS`]), then cleans up finished replaces. Each round
/// reads the timeline again; segments appended meanwhile wait for the next pass.
pub async fn compact(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    datasource: &str,
    options: &CompactOptions,
) -> Result<CompactReport, CompactError> {
    let started = Instant::now();
    let mut report = CompactReport { datasource: datasource.into(), ..Default::default() };
    let config = compaction::get(meta, datasource).await?;
    let rules = retention::get(meta, datasource).await?.map(|r| r.rules).unwrap_or_default();
    let compression = match datasource::load(meta, datasource).await {
        Ok((item, _)) => load_spec_value(item.spec).map(|l| l.spec.tuning.index).ok(),
        Err(DatasourceError::Unknown(_)) => None,
        Err(e) => return Err(e.into()),
    };
    if config.is_some() && compression.is_none() {
        report.skipped.push(format!("{datasource}: no spec, or one that no longer loads: nothing compacted"));
    }
    for _ in 0..MAX_ROUNDS {
        let guards = Guards::read(meta, datasource).await?;
        let visible: Vec<SegmentRecord> =
            segment_records(meta, datasource).await?.into_iter().filter(|(_, v)| *v).map(|(r, _)| r).collect();
        let (kept, doomed): (Vec<_>, Vec<_>) =
            visible.into_iter().partition(|s| retained(&rules, s.interval, options.now_ms));
        for batch in batches(&doomed) {
            if drop_segments(meta, store, datasource, batch, &guards, &mut report, options).await? {
                report.segments_dropped += batch.len() as u64;
            }
        }
        let (Some(config), Some(compression)) = (&config, compression) else { break };
        let round = Round { guards: &guards, config, compression, options };
        let (units, mut left) = units(config, &kept);
        let mut progress = false;
        for (span, segments) in units {
            if options.past_deadline() {
                report.skipped.push(format!("{datasource}: the pass reached its deadline; the next one goes on"));
                return finish(report, meta, store, datasource, options, started).await;
            }
            match round.compact_chunk(meta, store, datasource, span, segments, &mut report).await? {
                Chunk::Untouched => {}
                Chunk::Compacted { whole } => {
                    progress = true;
                    left |= !whole;
                }
            }
        }
        if !(progress && left) {
            break;
        }
    }
    finish(report, meta, store, datasource, options, started).await
}

/// Cleans up finished replaces and times the pass.
async fn finish(
    mut report: CompactReport,
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    datasource: &str,
    options: &CompactOptions,
    started: Instant,
) -> Result<CompactReport, CompactError> {
    report.replaces_cleaned +=
        replace::clean_up(meta, store, datasource, options.now_ms, options.grace_ms).await? as u64;
    report.pass_secs = started.elapsed().as_secs_f64();
    Ok(report)
}

/// What a round did to one chunk.
enum Chunk {
    /// Nothing: too few segments to gain, incompatible or corrupt ones, or a conflict.
    Untouched,
    /// Compacted: all its segments (`whole`) or as many as one compaction takes.
    Compacted { whole: bool },
}

/// The chunks to compact, oldest first, each with the visible segments it is made of: a chunk
/// awaiting compaction under its own interval; under the configuration's `segmentGranularity`,
/// the coarser chunk holding it, made of every segment within it (finer chunks compacted into
/// a coarser one), or for a chunk coarser than the granularity the span of the finer chunks it
/// is cut into. True beside them when spans were left for a later round.
fn units<'a>(
    config: &CompactionConfig,
    visible: &'a [SegmentRecord],
) -> (Vec<(Interval, Vec<&'a SegmentRecord>)>, bool) {
    let mut out: BTreeMap<Interval, Vec<&SegmentRecord>> = BTreeMap::new();
    for chunk in plan(config, visible).awaiting {
        let c = chunk.interval;
        let span = config.segment_granularity.map_or(c, |g| {
            let first = g.bucket(c.start);
            if c.end <= first.end {
                first
            } else {
                Interval::new(first.start, g.bucket(c.end - 1).end)
            }
        });
        out.entry(span).or_insert_with(|| {
            visible.iter().filter(|s| span.start <= s.interval.start && s.interval.end <= span.end).collect()
        });
    }
    // Overlapping spans (a chunk cut into finer ones, and one of those) would replace the same
    // segments and write the same chunks: one per round, the others in the next.
    let mut chosen: Vec<(Interval, Vec<&SegmentRecord>)> = Vec::new();
    let mut deferred = false;
    for (span, segments) in out {
        if chosen.iter().all(|(c, _)| c.end <= span.start || span.end <= c.start) {
            chosen.push((span, segments));
        } else {
            deferred = true;
        }
    }
    (chosen, deferred)
}

/// Records in groups one replace can take: at most [`MAX_REPLACED`] records starting at no
/// more than [`MAX_GUARDS`] instants.
fn batches(records: &[SegmentRecord]) -> Vec<&[SegmentRecord]> {
    let mut out = Vec::new();
    let mut rest = records;
    while !rest.is_empty() {
        let mut starts = BTreeSet::new();
        let mut n = 0;
        while n < rest.len() && n < MAX_REPLACED {
            starts.insert(rest[n].interval.start);
            if starts.len() > MAX_GUARDS {
                break;
            }
            n += 1;
        }
        out.push(&rest[..n]);
        rest = &rest[n..];
    }
    out
}

/// What a round of compaction shares.
struct Round<'a> {
    guards: &'a Guards,
    config: &'a CompactionConfig,
    compression: Compression,
    options: &'a CompactOptions,
}

impl Round<'_> {
    /// Compacts the smallest of a chunk's visible segments (as many as one compaction takes).
    async fn compact_chunk(
        &self,
        meta: &dyn MetadataStore,
        store: &dyn ObjectStore,
        datasource: &str,
        interval: Interval,
        mut segments: Vec<&SegmentRecord>,
        report: &mut CompactReport,
    ) -> Result<Chunk, CompactError> {
        // Above every version in the span: its chunks may already hold this pass's segments
        // (a chunk compacted in parts), whose keys a new version must not repeat.
        let version = newer_version(self.options.now_ms, segments.iter().map(|s| s.version.as_str()));
        segments.sort_by_cached_key(|s| (s.num_rows, s.sk()));
        let changes = self.config.row_changes();
        let split = split_by(self.config, interval);
        let reindexed = changes.is_some() || split.is_some();
        let (mut bytes, mut rows) = (0, 0);
        let mut starts = BTreeSet::new();
        let mut taken: Vec<SegmentRecord> = Vec::new();
        let considered = segments.len();
        for s in segments.into_iter().take(MAX_REPLACED) {
            bytes += s.num_bytes;
            rows += s.num_rows;
            starts.insert(s.interval.start);
            // A merge needs two segments, a re-index one.
            let too_big = bytes > MAX_INPUT_BYTES || (reindexed && rows > MAX_REINDEX_ROWS);
            if (too_big && taken.len() >= if reindexed { 1 } else { 2 }) || starts.len() > MAX_GUARDS {
                break;
            }
            taken.push(s.clone());
        }
        let rows: u64 = taken.iter().map(|s| s.num_rows).sum();
        let regranulated = split.is_some() || taken.iter().any(|s| s.interval != interval);
        let restated = changes.is_some() && taken.iter().any(|s| s.compaction_state != changes);
        let fewer = rows.div_ceil(self.config.max_rows_per_segment).max(1) < taken.len() as u64;
        if !(fewer || regranulated || restated) {
            return Ok(Chunk::Untouched);
        }
        let inputs = match fetch(store, &taken).await {
            Ok(inputs) => inputs,
            Err(Fetch::Corrupt(reason)) => {
                report.skipped.push(format!("{datasource} {interval}: {reason}"));
                return Ok(Chunk::Untouched);
            }
            Err(Fetch::Storage(object, source)) => return Err(ReplaceError::Storage { object, source }),
        };
        let (config, compression) = (self.config.clone(), self.compression);
        let started = Instant::now();
        let merged = tokio::task::spawn_blocking(move || rewrite(&inputs, interval, &config, compression)).await;
        report.merge_secs += started.elapsed().as_secs_f64();
        let outputs = match merged {
            Ok(Ok(outputs)) => outputs,
            Ok(Err(e)) => {
                report.skipped.push(format!("{datasource} {interval}: {e}"));
                return Ok(Chunk::Untouched);
            }
            Err(e) => {
                report.skipped.push(format!("{datasource} {interval}: merge panicked: {e}"));
                return Ok(Chunk::Untouched);
            }
        };
        let mut intervals: Vec<Interval> = outputs.iter().map(|(i, _)| *i).collect();
        intervals.dedup();
        let begun =
            replace::begin(meta, datasource, ReplaceKind::Compact, &taken, intervals, self.options.now_ms).await?;
        let mut written: Vec<SegmentRecord> = Vec::new();
        for (chunk, bytes) in outputs {
            let bytes = bytes::Bytes::from(bytes);
            let partition = written.iter().filter(|w| w.interval == chunk).count() as u32;
            let origin = (None, Some(begun.item.id));
            let record = match describe(
                datasource,
                chunk,
                &version,
                partition,
                &bytes,
                origin,
                &format!("replace{}", begun.item.id),
            ) {
                Ok(record) => SegmentRecord { compaction_state: changes.clone(), ..record },
                Err(e) => {
                    give_up(meta, store, datasource, &begun, &written).await;
                    report.skipped.push(format!("{datasource} {chunk}: compacted segment: {e}"));
                    return Ok(Chunk::Untouched);
                }
            };
            let wrote = async {
                if self.options.now_ms + MAX_REPLACE_RUN_MS <= now_ms() {
                    return Err(ReplaceError::from(MetaError::Invalid(format!(
                        "compaction of {datasource} {chunk} ran past {} minutes",
                        MAX_REPLACE_RUN_MS / 60_000
                    ))));
                }
                store
                    .put_if_absent(&record.key, bytes)
                    .await
                    .map_err(|source| ReplaceError::Storage { object: record.key.clone(), source })?;
                put_record(meta, datasource, &record).await.map_err(|e| ReplaceError::from(DatasourceError::from(e)))
            }
            .await;
            match wrote {
                Ok(bare) => written.push(bare),
                Err(e) => {
                    give_up(meta, store, datasource, &begun, &written).await;
                    return Err(e);
                }
            }
        }
        let published =
            replace_publish(meta, store, datasource, &begun, &taken, &written, self.guards, self.options, report)
                .await?;
        if !published {
            return Ok(Chunk::Untouched);
        }
        report.chunks_compacted += 1;
        report.segments_compacted += taken.len() as u64;
        report.segments_written += written.len() as u64;
        report.rows_compacted += rows;
        Ok(Chunk::Compacted { whole: taken.len() == considered })
    }
}

/// The granularity a compaction of `span` cuts it by: the configuration's, when `span` is
/// coarser than it.
fn split_by(config: &CompactionConfig, span: Interval) -> Option<Granularity> {
    config.segment_granularity.filter(|g| g.bucket(span.start) != span)
}

/// The segments of `inputs` rewritten into the chunk `span` (or the finer chunks it is cut
/// into): merged, or re-indexed when the configuration changes the rows (`queryGranularity`,
/// `rollup`, `dimensionsSpec`, `metricsSpec`) or cuts the chunk.
fn rewrite(
    inputs: &[Segment],
    span: Interval,
    config: &CompactionConfig,
    compression: Compression,
) -> Result<Vec<(Interval, Vec<u8>)>, MergeError> {
    let split = split_by(config, span);
    if config.row_changes().is_none() && split.is_none() {
        let options = MergeOptions { max_rows_per_segment: config.max_rows_per_segment, compression };
        return Ok(merge_into(inputs, span, &options)?.into_iter().map(|b| (span, b)).collect());
    }
    let how = Reindex {
        interval: span,
        split,
        query_granularity: config.query_granularity,
        rollup: config.rollup,
        dimensions: config.dimensions.as_deref(),
        metrics: config.metrics.as_deref(),
        max_rows_per_segment: config.max_rows_per_segment,
        compression,
    };
    reindex(inputs, &how)
}

/// Drops `segments` (a replace with no segments of its own); false on a conflict.
async fn drop_segments(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    datasource: &str,
    segments: &[SegmentRecord],
    guards: &Guards,
    report: &mut CompactReport,
    options: &CompactOptions,
) -> Result<bool, CompactError> {
    let begun = replace::begin(meta, datasource, ReplaceKind::Drop, segments, Vec::new(), options.now_ms).await?;
    replace_publish(meta, store, datasource, &begun, segments, &[], guards, options, report).await
}

/// Publishes a begun replace and marks its segments visible; on a conflict abandons it and
/// deletes what it wrote. False on a conflict.
#[allow(clippy::too_many_arguments)]
async fn replace_publish(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    datasource: &str,
    begun: &Begun,
    replaced: &[SegmentRecord],
    written: &[SegmentRecord],
    guards: &Guards,
    options: &CompactOptions,
    report: &mut CompactReport,
) -> Result<bool, CompactError> {
    match replace::publish(meta, datasource, begun, (replaced, written), guards, options.now_ms, Vec::new()).await? {
        Published::Done => {
            for r in written {
                if let Err(e) = mark_visible(meta, datasource, r).await {
                    tracing::warn!(segment = r.sk(), error = %e, "could not mark a compacted segment visible; cleanup will");
                }
            }
            Ok(true)
        }
        Published::Conflict(reason) => {
            tracing::info!(datasource, %reason, "replace refused");
            report.conflicts += 1;
            give_up(meta, store, datasource, begun, written).await;
            Ok(false)
        }
    }
}

enum Fetch {
    Corrupt(String),
    Storage(String, StorageError),
}

/// Reads the segments to compact; a missing or corrupt one is named.
async fn fetch(store: &dyn ObjectStore, segments: &[SegmentRecord]) -> Result<Vec<Segment>, Fetch> {
    let mut out = Vec::with_capacity(segments.len());
    for batch in segments.chunks(FETCHES_IN_FLIGHT) {
        let reads = batch.iter().map(|s| fetch_one(store, s));
        for segment in futures::future::join_all(reads).await {
            out.push(segment?);
        }
    }
    Ok(out)
}

/// Reads one segment to compact.
async fn fetch_one(store: &dyn ObjectStore, s: &SegmentRecord) -> Result<Segment, Fetch> {
    let bytes = match store.get(&s.key).await {
        Ok(bytes) => bytes,
        Err(StorageError::NotFound { .. }) => return Err(Fetch::Corrupt(format!("segment {} is missing", s.key))),
        Err(e) => return Err(Fetch::Storage(s.key.clone(), e)),
    };
    let segment = Segment::from_bytes(&s.key, bytes.to_vec()).map_err(|e| Fetch::Corrupt(e.to_string()))?;
    if segment.num_rows() as u64 != s.num_rows {
        return Err(Fetch::Corrupt(format!(
            "segment {} holds {} rows, its record says {}",
            s.key,
            segment.num_rows(),
            s.num_rows
        )));
    }
    Ok(segment)
}

/// Every datasource with a compaction configuration or retention rules, by name.
pub async fn configured(meta: &dyn MetadataStore) -> Result<Vec<String>, DatasourceError> {
    let mut names: BTreeMap<String, ()> = BTreeMap::new();
    for c in compaction::list(meta).await? {
        names.insert(c.data_source, ());
    }
    for (name, _) in retention::list(meta).await? {
        names.insert(name, ());
    }
    Ok(names.into_keys().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::config::load_compaction_value;

    fn record(start: i64, partition: u32, version: &str) -> SegmentRecord {
        SegmentRecord {
            interval: Interval::new(start, start + 1),
            version: version.into(),
            partition,
            key: format!("k{start}/{partition}"),
            num_rows: 1,
            num_bytes: 1,
            dimensions: Vec::new(),
            metrics: Vec::new(),
            task: None,
            replace: Some(1),
            merge: String::new(),
            compaction_state: None,
            visible: true,
            summary: None,
        }
    }

    #[test]
    fn batches_respect_both_bounds() {
        let many_starts: Vec<SegmentRecord> = (0..150).map(|i| record(i, 0, "v")).collect();
        let sizes: Vec<usize> = batches(&many_starts).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, vec![MAX_GUARDS, MAX_GUARDS, 150 - 2 * MAX_GUARDS]);
        let one_start: Vec<SegmentRecord> = (0..2_500).map(|p| record(0, p, "v")).collect();
        let sizes: Vec<usize> = batches(&one_start).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, vec![MAX_REPLACED, MAX_REPLACED, 500]);
        assert!(batches(&[]).is_empty());
    }

    #[test]
    fn chunks_are_compacted_into_the_coarser_chunk_holding_them_or_cut_into_finer_ones() {
        const HOUR: i64 = 3_600_000;
        let hourly = |hour: i64, p: u32| SegmentRecord {
            interval: Interval::new(hour * HOUR, (hour + 1) * HOUR),
            ..record(0, p, "v")
        };
        let daily = |day: i64| SegmentRecord {
            interval: Interval::new(day * 24 * HOUR, (day + 1) * 24 * HOUR),
            ..record(0, 0, "v")
        };
        let config = |g: &str| {
            let json = serde_json::json!({"dataSource": "w", "skipOffsetFromLatest": "PT0S", "granularitySpec": {"segmentGranularity": g}});
            load_compaction_value(json).expect("config").config
        };
        // Day 0: hours 0 and 5 and the day's own segment; day 1: hour 30.
        let visible = vec![hourly(0, 0), hourly(0, 1), hourly(5, 0), daily(0), hourly(30, 0)];
        let (got, deferred) = units(&config("DAY"), &visible);
        assert!(!deferred, "nothing left for a later round");
        let got: Vec<(Interval, usize)> = got.into_iter().map(|(t, s)| (t, s.len())).collect();
        let day = |d: i64| Interval::new(d * 24 * HOUR, (d + 1) * 24 * HOUR);
        assert_eq!(got, vec![(day(0), 4), (day(1), 1)], "every segment within its day, once per day");
        let coarse = [daily(0)];
        let (finer, _) = units(&config("HOUR"), &coarse);
        assert_eq!(finer.iter().map(|(t, s)| (*t, s.len())).collect::<Vec<_>>(), vec![(day(0), 1)], "cut by hour");
        assert_eq!(split_by(&config("HOUR"), day(0)), config("HOUR").segment_granularity);
        let overlapping = [daily(0), hourly(0, 0), hourly(0, 1)];
        let (one, deferred) = units(&config("HOUR"), &overlapping);
        let one: Vec<(Interval, usize)> = one.into_iter().map(|(t, s)| (t, s.len())).collect();
        assert_eq!(one, vec![(Interval::new(0, HOUR), 2)], "the day is cut in the next round");
        assert!(deferred, "and the round says so");
        assert_eq!(split_by(&config("DAY"), day(0)), None);
    }
}
