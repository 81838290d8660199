//! The timeline a query reads, kept between queries: the visible records of the intervals
//! queries asked for, at the timeline version they were read at
//! (`docs/exactly-once.md#the-timeline-kept-between-queries`).
//!
//! Every change of what is visible moves the datasource's timeline head (in its own
//! transaction: a task's publish, a replace's, a change of the spec's mode), so a query reads
//! the head (one small item) and, when its version is the one kept and its intervals are
//! covered, answers from what is kept. Otherwise it reads its intervals
//! ([`visible_in`]: what it asks for, not the history) and keeps them at the version that read
//! is anchored to. A datasource whose head is not ready yet is read whole every time, and a
//! real-time datasource's view (it changes with every checkpoint) is read every time.

use crate::datasource::{parse_body, DatasourceError};
use crate::timeline::head::HeadRead;
use crate::timeline::interval::{overlaps, visible_in};
use crate::timeline::{in_order, realtime_segments, SegmentRecord};
use sluice_format::time::Interval;
use sluice_layout::datasource::SpecItem;
use sluice_layout::keys::{datasource_pk, SPEC_SK};
use sluice_layout::timeline_log::{merge_intervals, HeadState};
use sluice_store::metadata::{Item, MetadataStore};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Datasources whose timelines a cache keeps; past it, the one read longest ago is dropped.
pub const MAX_KEPT_TIMELINES: usize = 64;

/// Records a datasource's kept timeline holds at most: intervals read beyond it replace what
/// was kept instead of joining it.
pub const MAX_KEPT_RECORDS: usize = 200_000;

/// Distinct intervals a kept timeline covers at most (as for records).
pub const MAX_KEPT_INTERVALS: usize = 1_024;

/// How long a timeline is kept at most, current or not: records copied back by hand (undoing
/// a retention drop) change what is visible without moving the head.
pub const MAX_KEPT_AGE: Duration = Duration::from_secs(60);

/// Visible timelines kept by datasource, each at the version it was read at.
#[derive(Debug, Default)]
pub struct TimelineCache {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    tick: u64,
    by_datasource: HashMap<String, Entry>,
    /// Reads answered from a kept timeline, and reads of the records.
    hits: u64,
    reads: u64,
}

#[derive(Debug)]
struct Entry {
    /// The timeline version the records are visible at.
    version: u64,
    /// The intervals read, merged and in order.
    covered: Vec<Interval>,
    records: Arc<Vec<SegmentRecord>>,
    used: u64,
    read_at: Instant,
}

impl Entry {
    /// Whether every interval of `intervals` was read.
    fn covers(&self, intervals: &[Interval]) -> bool {
        intervals
            .iter()
            .filter(|i| i.end > i.start)
            .all(|i| self.covered.iter().any(|c| c.start <= i.start && i.end <= c.end))
    }
}

/// How often a cache's timelines were current.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimelineStats {
    /// Reads answered from a kept timeline.
    pub hits: u64,
    /// Reads of the records.
    pub reads: u64,
}

impl TimelineCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The segment records a query of `datasource` over `intervals` reads, in timeline order
    /// (at least those overlapping `intervals`): for a real-time datasource its real-time view
    /// (read every time), otherwise its visible segments, kept while the head's version is
    /// the one they were read at.
    pub async fn segments(
        &self,
        meta: &dyn MetadataStore,
        datasource: &str,
        intervals: &[Interval],
    ) -> Result<Arc<Vec<SegmentRecord>>, DatasourceError> {
        let head = HeadRead::read(meta, datasource).await?;
        if head.head.state == HeadState::Ready {
            let mut kept = self.lock();
            kept.tick += 1;
            let tick = kept.tick;
            let current =
                |e: &&mut Entry| e.version == head.version && e.covers(intervals) && e.read_at.elapsed() < MAX_KEPT_AGE;
            if let Some(entry) = kept.by_datasource.get_mut(datasource).filter(current) {
                entry.used = tick;
                let records = entry.records.clone();
                kept.hits += 1;
                return Ok(records);
            }
        }
        let spec = meta.get(&datasource_pk(datasource), SPEC_SK).await?;
        if is_realtime(datasource, spec.as_ref())? {
            self.lock().by_datasource.remove(datasource);
            return Ok(Arc::new(realtime_segments(meta, datasource).await?));
        }
        let read = visible_in(meta, datasource, intervals).await?;
        let mut kept = self.lock();
        kept.reads += 1;
        // Kept only when read at the version the mode was decided at: a change of the mode
        // (a `reset` entry) between the two would be kept under the version after it.
        match read.version {
            Some(version) if version == head.version => Ok(kept.keep(datasource, version, intervals, read.records)),
            _ => Ok(Arc::new(read.records)),
        }
    }

    /// The timeline kept for `datasource`, covering `intervals` and read within
    /// [`MAX_KEPT_AGE`], without checking that it is still current: what a query may start on
    /// while [`TimelineCache::segments`] checks (it returns this very `Arc` when the timeline
    /// is current).
    pub fn kept(&self, datasource: &str, intervals: &[Interval]) -> Option<Arc<Vec<SegmentRecord>>> {
        let kept = self.lock();
        kept.by_datasource
            .get(datasource)
            .filter(|e| e.covers(intervals) && e.read_at.elapsed() < MAX_KEPT_AGE)
            .map(|e| e.records.clone())
    }

    /// Reads answered from kept timelines, and reads of the records.
    pub fn stats(&self) -> TimelineStats {
        let kept = self.lock();
        TimelineStats { hits: kept.hits, reads: kept.reads }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Kept {
    /// Keeps `records`, the visible records of `intervals` at `version`: beside what is kept of
    /// the same version, within the bounds, or in its place.
    fn keep(
        &mut self,
        datasource: &str,
        version: u64,
        intervals: &[Interval],
        records: Vec<SegmentRecord>,
    ) -> Arc<Vec<SegmentRecord>> {
        let (mut covered, mut all, mut read_at) = (Vec::new(), BTreeMap::new(), Instant::now());
        if let Some(e) = self.by_datasource.get(datasource).filter(|e| e.version == version) {
            if e.records.len() + records.len() <= MAX_KEPT_RECORDS && e.covered.len() < MAX_KEPT_INTERVALS {
                covered.clone_from(&e.covered);
                all.extend(e.records.iter().map(|r| (r.sk(), r.clone())));
                // The age of what is kept is its oldest read's.
                read_at = e.read_at;
            }
        }
        covered.extend(intervals.iter().copied());
        all.extend(records.into_iter().map(|r| (r.sk(), r)));
        let records = Arc::new(in_order(all.into_values()));
        if self.by_datasource.len() >= MAX_KEPT_TIMELINES && !self.by_datasource.contains_key(datasource) {
            let oldest = self.by_datasource.iter().min_by_key(|(_, e)| e.used).map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                self.by_datasource.remove(&oldest);
            }
        }
        let entry =
            Entry { version, covered: merge_intervals(covered), records: records.clone(), used: self.tick, read_at };
        self.by_datasource.insert(datasource.to_string(), entry);
        records
    }
}

/// The segment records a query of `datasource` over `intervals` reads, read now
/// ([`TimelineCache::segments`] without a cache).
pub async fn queried_segments(
    meta: &dyn MetadataStore,
    datasource: &str,
    intervals: &[Interval],
) -> Result<Vec<SegmentRecord>, DatasourceError> {
    let spec = meta.get(&datasource_pk(datasource), SPEC_SK).await?;
    if is_realtime(datasource, spec.as_ref())? {
        let all = realtime_segments(meta, datasource).await?;
        Ok(all.into_iter().filter(|r| overlaps(intervals, &r.interval)).collect())
    } else {
        Ok(visible_in(meta, datasource, intervals).await?.records)
    }
}

/// Whether a datasource's spec item asks for real-time tasks (`sluiceConfig.realtime`): its
/// queries also read what running tasks checkpointed. No spec, or a spec that no longer
/// loads: not.
fn is_realtime(datasource: &str, spec: Option<&Item>) -> Result<bool, DatasourceError> {
    let Some(item) = spec else { return Ok(false) };
    let spec: SpecItem = parse_body(datasource, item)?;
    Ok(sluice_format::spec::load_spec_value(spec.spec).is_ok_and(|s| s.spec.sluice.realtime.is_some()))
}
