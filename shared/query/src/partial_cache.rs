//! Per-segment partial results kept in memory, as Druid's per-segment result cache: the
//! groups and aggregator states one segment yields for one query shape (everything but the
//! post-aggregators, `having`, the ordering and the limit) over the query's intervals clipped
//! to the segment. A repeated dashboard query over a growing datasource computes only the
//! segments new since its last run.
//!
//! Never stale: a segment is immutable under its object key (a compaction or a new version
//! writes a new key; a dropped segment is no longer named by the timeline), and the key
//! holds the object key, its size and the clipped intervals. Bounded: past its byte limit the
//! partials used longest ago are dropped.

use sluice_format::time::Interval;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Bytes of partials a cache keeps by default: an eighth of the api function's 2,048 MB.
pub const DEFAULT_PARTIAL_CACHE_BYTES: u64 = 256 << 20;

/// What a cache weighs to keep within its bound.
pub trait Weighed {
    /// Estimated bytes held.
    fn approx_bytes(&self) -> usize;
}

/// A cache of per-segment partials (of type `T`), shared by the queries of one process.
pub struct PartialCache<T> {
    max_bytes: u64,
    inner: Mutex<Inner<T>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

struct Inner<T> {
    entries: HashMap<String, Entry<T>>,
    held: u64,
    clock: u64,
}

impl<T> Default for Inner<T> {
    fn default() -> Self {
        Self { entries: HashMap::new(), held: 0, clock: 0 }
    }
}

struct Entry<T> {
    partial: Arc<T>,
    bytes: u64,
    used: u64,
}

/// What a cache has served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Segments answered from the cache.
    pub hits: u64,
    /// Segments computed (and then kept, when they fit).
    pub misses: u64,
    /// Partials held.
    pub entries: usize,
    /// Their estimated bytes.
    pub bytes: u64,
}

impl<T: Weighed> std::fmt::Debug for PartialCache<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartialCache").field("max_bytes", &self.max_bytes).field("stats", &self.stats()).finish()
    }
}

impl<T: Weighed> Default for PartialCache<T> {
    fn default() -> Self {
        Self::new(DEFAULT_PARTIAL_CACHE_BYTES)
    }
}

impl<T: Weighed> PartialCache<T> {
    /// A cache holding at most `max_bytes` of partials (estimated).
    pub fn new(max_bytes: u64) -> Self {
        Self { max_bytes, inner: Mutex::default(), hits: AtomicU64::new(0), misses: AtomicU64::new(0) }
    }

    /// The partial kept under `key`, counted as a hit or a miss.
    pub fn get(&self, key: &str) -> Option<Arc<T>> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.clock += 1;
        let now = inner.clock;
        let hit = inner.entries.get_mut(key).map(|e| {
            e.used = now;
            e.partial.clone()
        });
        let counter = if hit.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        hit
    }

    /// Keeps `partial` under `key`, dropping the partials used longest ago past the limit; a
    /// partial over an eighth of the limit is not kept.
    pub fn put(&self, key: String, partial: Arc<T>) {
        let bytes = partial.approx_bytes() as u64 + key.len() as u64;
        if bytes > self.max_bytes / 8 {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.clock += 1;
        let used = inner.clock;
        if let Some(old) = inner.entries.insert(key, Entry { partial, bytes, used }) {
            inner.held -= old.bytes;
        }
        inner.held += bytes;
        if inner.held > self.max_bytes {
            let mut by_age: Vec<(u64, String)> = inner.entries.iter().map(|(k, e)| (e.used, k.clone())).collect();
            by_age.sort_unstable();
            for (_, k) in by_age {
                if inner.held <= self.max_bytes * 3 / 4 {
                    break;
                }
                if let Some(e) = inner.entries.remove(&k) {
                    inner.held -= e.bytes;
                }
            }
        }
    }

    /// Hits, misses and what is held.
    pub fn stats(&self) -> CacheStats {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            entries: inner.entries.len(),
            bytes: inner.held,
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<dyn std::any::Any + Send + Sync>>> = const { RefCell::new(None) };
}

/// Runs `work` on this thread with `cache` as the cache its queries read and fill.
pub fn enter<T: Send + Sync + 'static, R>(cache: Arc<PartialCache<T>>, work: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<dyn std::any::Any + Send + Sync>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| *c.borrow_mut() = self.0.take());
        }
    }
    let outer = CURRENT.with(|c| c.borrow_mut().replace(cache));
    let _restore = Restore(outer);
    work()
}

/// The cache of partials of type `T` this thread's query runs with ([`enter`]), if any.
pub fn current<T: Send + Sync + 'static>() -> Option<Arc<PartialCache<T>>> {
    CURRENT.with(|c| c.borrow().clone()).and_then(|any| any.downcast::<PartialCache<T>>().ok())
}

/// The key of one segment's partial: its object and size, the query's `shape` and its
/// intervals clipped to the segment's time chunk.
pub fn key(object: &str, size: usize, chunk: Interval, intervals: &[Interval], shape: &str) -> String {
    let mut clipped: Vec<(i64, i64)> =
        intervals.iter().map(|i| (i.start.max(chunk.start), i.end.min(chunk.end))).filter(|(a, b)| a < b).collect();
    clipped.sort_unstable();
    format!("{object}\u{0}{size}\u{0}{clipped:?}\u{0}{shape}")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Block;

    impl Weighed for Block {
        fn approx_bytes(&self) -> usize {
            100
        }
    }

    fn partial() -> Arc<Block> {
        Arc::new(Block)
    }

    #[test]
    fn hits_and_misses_are_counted_and_the_oldest_go_first() {
        let one = partial().approx_bytes() as u64 + 2;
        let cache = PartialCache::<Block>::new(one * 8 * 3);
        assert!(cache.get("k1").is_none());
        cache.put("k1".into(), partial());
        assert!(cache.get("k1").is_some());
        for k in ["k2", "k3", "k4"] {
            cache.put(k.into(), partial());
        }
        // Past its limit the cache drops to three quarters of it: the entries used longest ago.
        let stats = cache.stats();
        assert!(stats.bytes <= one * 8 * 3, "{stats:?}");
        assert_eq!((stats.hits, stats.misses), (1, 1));
    }

    #[test]
    fn a_thread_runs_with_the_cache_it_entered() {
        assert!(current::<Block>().is_none());
        let cache = Arc::new(PartialCache::<Block>::default());
        enter(cache.clone(), || {
            assert!(current::<Block>().is_some_and(|c| Arc::ptr_eq(&c, &cache)));
            assert!(current::<u8>().is_none(), "a cache of another type is not this one");
        });
        assert!(current::<Block>().is_none(), "left behind");
    }

    #[test]
    fn the_key_clips_the_intervals_to_the_time_chunk() {
        let chunk = Interval::new(100, 200);
        let a = key("s", 10, chunk, &[Interval::new(0, 1000)], "q");
        let b = key("s", 10, chunk, &[Interval::new(50, 300)], "q");
        assert_eq!(a, b, "both cover the whole chunk");
        assert_ne!(a, key("s", 10, chunk, &[Interval::new(150, 300)], "q"));
        assert_ne!(a, key("s", 11, chunk, &[Interval::new(0, 1000)], "q"), "another size is another object");
        assert_ne!(a, key("s", 10, chunk, &[Interval::new(0, 1000)], "q2"));
    }
}
