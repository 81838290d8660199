//! The timeline a query reads, kept between queries: a datasource's visible segment records are
//! read again only when one of the few items every visibility change writes has changed
//! (`docs/exactly-once.md#the-timeline-kept-between-queries`).
//!
//! Reading the timeline reads every `seg#` record of the datasource (hundreds of thousands at a
//! few billion rows), which costs more than a warm query's compute. Every write that changes
//! what is visible also writes one of these items, in the same transaction or as the write
//! itself:
//!
//! ```text
//!  a task's publish                 offsets#<group>   Version(v) -> v+1, same transaction
//!  a replace's publish (compaction, retention drop)
//!                                   replace#<n>       its state, the write itself
//!  a replace begun or cleaned up    replaces, replace#<n>
//!  a regroup (offsets# moved)       grouping          every step
//!  the spec resubmitted (real time or not)   spec
//! ```
//!
//! So the cache keeps, beside the records, these items as read *before* the records (and the
//! `plan#` items: an offsets reset deletes an `offsets#` item in a transaction that writes its
//! group's `plan#`): a later read of the same items (versions and bodies) proves that nothing
//! visible changed from that read to this one, and the kept records are the timeline now.
//! Versions only grow while an item lives; an item deleted and written again starts over at 1,
//! so bodies are compared too, and whatever deletes one writes another compared item (a
//! `replace#` number is never reused; `offsets#` and `plan#` items are otherwise deleted only by
//! regroup steps, which write the grouping). A real-time datasource's view changes with every
//! checkpoint and is never kept.

use crate::datasource::{parse_body, DatasourceError};
use crate::timeline::{realtime_segments, visible_segments, SegmentRecord};
use sluice_layout::datasource::SpecItem;
use sluice_layout::keys::{datasource_pk, GROUPING_SK, OFFSETS_PREFIX, PLAN_PREFIX, SPEC_SK};
use sluice_store::metadata::{Item, MetadataStore};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Datasources whose timelines a cache keeps; past it, the one read longest ago is dropped.
pub const MAX_KEPT_TIMELINES: usize = 64;

/// How long a timeline is kept at most, current or not: records copied back by hand (undoing
/// a retention drop) change what is visible without writing any item of the signal.
pub const MAX_KEPT_AGE: Duration = Duration::from_secs(60);

/// The sort key prefix that holds both the replace counter and the replace items.
const REPLACES: &str = "replace";

/// Visible timelines kept by datasource, each with the items that prove it current.
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
    signal: Signal,
    records: Arc<Vec<SegmentRecord>>,
    used: u64,
    read_at: Instant,
}

/// The items every visibility change writes, as read: sort key, version, body.
#[derive(Debug, Clone, PartialEq)]
struct Signal(Vec<(String, u64, serde_json::Value)>);

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

    /// The segment records a query of `datasource` reads, in timeline order: for a real-time
    /// datasource its real-time view (read every time), otherwise its visible segments, kept
    /// while the items every visibility change writes are unchanged.
    pub async fn segments(
        &self,
        meta: &dyn MetadataStore,
        datasource: &str,
    ) -> Result<Arc<Vec<SegmentRecord>>, DatasourceError> {
        let (signal, spec) = read_signal(meta, datasource).await?;
        {
            let mut kept = self.lock();
            kept.tick += 1;
            let tick = kept.tick;
            // Only timelines of datasources not in real time are kept.
            let current = |e: &&mut Entry| e.signal == signal && e.read_at.elapsed() < MAX_KEPT_AGE;
            if let Some(entry) = kept.by_datasource.get_mut(datasource).filter(current) {
                entry.used = tick;
                let records = entry.records.clone();
                kept.hits += 1;
                return Ok(records);
            }
        }
        if is_realtime(datasource, spec.as_ref())? {
            self.lock().by_datasource.remove(datasource);
            return Ok(Arc::new(realtime_segments(meta, datasource).await?));
        }
        // Read after the signal: a change after the signal's read shows in the next one.
        let read_at = Instant::now();
        let records = Arc::new(visible_segments(meta, datasource).await?);
        let mut kept = self.lock();
        kept.reads += 1;
        if kept.by_datasource.len() >= MAX_KEPT_TIMELINES && !kept.by_datasource.contains_key(datasource) {
            let oldest = kept.by_datasource.iter().min_by_key(|(_, e)| e.used).map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                kept.by_datasource.remove(&oldest);
            }
        }
        let used = kept.tick;
        kept.by_datasource.insert(datasource.to_string(), Entry { signal, records: records.clone(), used, read_at });
        Ok(records)
    }

    /// The timeline kept for `datasource`, read within [`MAX_KEPT_AGE`], without checking that
    /// it is still current: what a query may start on while [`TimelineCache::segments`] checks
    /// (it returns this very `Arc` when the timeline is current).
    pub fn kept(&self, datasource: &str) -> Option<Arc<Vec<SegmentRecord>>> {
        let kept = self.lock();
        kept.by_datasource.get(datasource).filter(|e| e.read_at.elapsed() < MAX_KEPT_AGE).map(|e| e.records.clone())
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

/// The segment records a query of `datasource` reads, read now ([`TimelineCache::segments`]
/// without a cache).
pub async fn queried_segments(
    meta: &dyn MetadataStore,
    datasource: &str,
) -> Result<Vec<SegmentRecord>, DatasourceError> {
    let spec = meta.get(&datasource_pk(datasource), SPEC_SK).await?;
    if is_realtime(datasource, spec.as_ref())? {
        realtime_segments(meta, datasource).await
    } else {
        visible_segments(meta, datasource).await
    }
}

/// Reads the spec, the grouping, the plans, the committed offsets and the replaces, at once;
/// the spec item also on its own.
async fn read_signal(meta: &dyn MetadataStore, datasource: &str) -> Result<(Signal, Option<Item>), DatasourceError> {
    let pk = datasource_pk(datasource);
    let (spec, grouping, plans, offsets, replaces) = futures::try_join!(
        meta.get(&pk, SPEC_SK),
        meta.get(&pk, GROUPING_SK),
        meta.query(&pk, PLAN_PREFIX),
        meta.query(&pk, OFFSETS_PREFIX),
        meta.query(&pk, REPLACES),
    )?;
    let items = spec.iter().chain(&grouping).chain(&plans).chain(&offsets).chain(&replaces);
    let signal = Signal(items.map(|i| (i.sk.clone(), i.version, i.body.clone())).collect());
    Ok((signal, spec))
}

/// Whether a datasource's spec item asks for real-time tasks (`sluiceConfig.realtime`): its
/// queries also read what running tasks checkpointed. No spec, or a spec that no longer
/// loads: not.
fn is_realtime(datasource: &str, spec: Option<&Item>) -> Result<bool, DatasourceError> {
    let Some(item) = spec else { return Ok(false) };
    let spec: SpecItem = parse_body(datasource, item)?;
    Ok(sluice_format::spec::load_spec_value(spec.spec).is_ok_and(|s| s.spec.sluice.realtime.is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_layout::keys::{REPLACE_COUNTER_SK, REPLACE_PREFIX};

    #[test]
    fn one_prefix_reads_the_counter_and_the_replaces() {
        assert!(REPLACE_COUNTER_SK.starts_with(REPLACES));
        assert!(REPLACE_PREFIX.starts_with(REPLACES));
    }
}
