//! Where a query's segments come from: the datasource's visible timeline in the metadata
//! store, each segment downloaded once from deep storage into a local cache folder and
//! memory-mapped from there (a segment is immutable under its key, so a cached copy of the
//! right size is the segment), or, without a cache, only the parts the query reads, fetched
//! with ranged reads.

use super::opened::{Found, Opened, DEFAULT_DECODED_BYTES};
use super::ranged::{read_parts, ReadPlan};
use super::{execute_within, parse_query, PartialCache, Query, QueryError, QuerySegment};
use sluice_format::segment::Segment;
use sluice_format::summary::{SegmentPruner, SegmentSummary};
use sluice_format::time::{format_iso, Interval};
use sluice_metastore::lookups::{LookupCache, LookupRef, DEFAULT_TIER};
use sluice_metastore::timeline::kept::{queried_segments, TimelineCache};
use sluice_metastore::timeline::summaries::SummaryCache;
use sluice_metastore::timeline::SegmentRecord;
use sluice_store::metadata::MetadataStore;
use sluice_store::storage::ObjectStore;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

/// Size a segment cache keeps by default: half of the api function's 4 GiB of `/tmp`.
pub const DEFAULT_CACHE_BYTES: u64 = 2 << 30;
/// Summary items read at once.
const SUMMARY_READS_IN_FLIGHT: usize = 32;

/// A folder of downloaded segments, keyed by object key, holding at most a number of bytes:
/// past it, the segments used longest ago are deleted (a query that has one mapped keeps
/// reading it: the file goes when the mapping does). Beside it, in memory, the segments kept
/// open with what queries decoded from them ([`Opened`]), the partial results of segments
/// ([`PartialCache`]), the datasources' visible timelines ([`TimelineCache`]), the segments'
/// summaries ([`SummaryCache`]) and the lookups' maps ([`LookupCache`]), shared by every clone.
#[derive(Debug, Clone)]
pub struct SegmentCache {
    dir: PathBuf,
    max_bytes: u64,
    partials: Arc<PartialCache>,
    opened: Arc<Opened>,
    timelines: Arc<TimelineCache>,
    summaries: Arc<SummaryCache>,
    lookups: Arc<LookupCache>,
    /// What the folder holds, as of the last walk plus the downloads since (unknown until the
    /// first download): the folder is walked only when this passes `max_bytes`.
    held: Arc<Mutex<Option<u64>>>,
}

impl SegmentCache {
    /// A cache under `dir` (created on first download) of [`DEFAULT_CACHE_BYTES`].
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self::with_limit(dir, DEFAULT_CACHE_BYTES)
    }

    /// A cache under `dir` of at most `max_bytes`.
    pub fn with_limit(dir: impl Into<PathBuf>, max_bytes: u64) -> Self {
        Self {
            dir: dir.into(),
            max_bytes,
            held: Arc::default(),
            partials: Arc::default(),
            opened: Arc::new(Opened::new(DEFAULT_DECODED_BYTES)),
            timelines: Arc::default(),
            summaries: Arc::default(),
            lookups: Arc::default(),
        }
    }

    /// The same cache of segments, keeping at most `max_bytes` of partial results (none at 0:
    /// every query computes every segment).
    pub fn with_partials_limit(self, max_bytes: u64) -> Self {
        Self { partials: Arc::new(PartialCache::new(max_bytes)), ..self }
    }

    /// The same cache of segments, keeping no partial result.
    pub fn without_partials(self) -> Self {
        self.with_partials_limit(0)
    }

    /// The per-segment partial results kept beside the segments.
    pub fn partials(&self) -> &Arc<PartialCache> {
        &self.partials
    }

    /// The visible timelines kept beside the segments.
    pub fn timelines(&self) -> &Arc<TimelineCache> {
        &self.timelines
    }

    /// The segments' summaries kept between queries.
    pub fn summaries(&self) -> &Arc<SummaryCache> {
        &self.summaries
    }

    /// The lookups' maps kept between queries.
    pub fn lookups(&self) -> &Arc<LookupCache> {
        &self.lookups
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Opens the segment of `record`, downloading it first unless a copy of its size is cached.
    pub async fn open(&self, store: &dyn ObjectStore, record: &SegmentRecord) -> Result<Segment, QueryError> {
        self.open_object(store, &record.key, record.num_bytes).await
    }

    /// Opens the segment object `key` of `num_bytes`, downloading it first unless a copy of
    /// that size is cached. A key that would leave the cache folder (absolute, or with a
    /// `..`, `.` or empty component) is refused.
    pub async fn open_object(&self, store: &dyn ObjectStore, key: &str, num_bytes: u64) -> Result<Segment, QueryError> {
        if !is_relative_key(key) {
            return Err(QueryError::Source(format!("segment key {key:?} is not a relative object key")));
        }
        let path = self.dir.join(key);
        let io = |e: std::io::Error| QueryError::Source(format!("segment cache {}: {e}", path.display()));
        match self.opened.get(&path, num_bytes) {
            Found::Open(segment) => return Ok(segment),
            Found::Stale(segment) => {
                touch(&path);
                return Ok(segment);
            }
            Found::Missing => {}
        }
        let cached = tokio::fs::metadata(&path).await.is_ok_and(|m| m.len() == num_bytes);
        if cached {
            touch(&path);
        } else {
            let bytes = store.get(key).await.map_err(|e| QueryError::Source(format!("segment {key}: {e}")))?;
            if let Some(parent) = path.parent() {
                tokio::fs::create_dir_all(parent).await.map_err(io)?;
            }
            // Unique per download, so concurrent downloads of one segment never share a file.
            static DOWNLOADS: AtomicU64 = AtomicU64::new(0);
            let n = DOWNLOADS.fetch_add(1, Ordering::Relaxed);
            let tmp = path.with_extension(format!("{DOWNLOADING}{}-{n}", std::process::id()));
            tokio::fs::write(&tmp, &bytes).await.map_err(io)?;
            tokio::fs::rename(&tmp, &path).await.map_err(io)?;
            if self.holds_too_much(bytes.len() as u64) {
                let (dir, keep, max) = (self.dir.clone(), path.clone(), self.max_bytes);
                let (held, deleted) = tokio::task::spawn_blocking(move || evict(&dir, &keep, max))
                    .await
                    .map_err(|e| QueryError::Source(format!("segment cache eviction failed: {e}")))?
                    .map_err(io)?;
                self.opened.forget(&deleted);
                *self.held.lock().unwrap_or_else(PoisonError::into_inner) = Some(held);
            }
        }
        let segment = Segment::open_file_named(&path, key)?;
        self.opened.put(&path, num_bytes, segment.clone());
        Ok(segment)
    }
}

/// Marks the file at `path` used now, for eviction (best effort).
fn touch(path: &Path) {
    let _ = std::fs::File::options().append(true).open(path).and_then(|f| f.set_modified(SystemTime::now()));
}

/// Whether `key` names an object below the store's root: not empty, not absolute, no `.`,
/// `..` or empty component, no NUL; what may be joined to a cache folder.
pub fn is_relative_key(key: &str) -> bool {
    !key.is_empty() && !key.contains('\0') && key.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}

impl SegmentCache {
    /// Counts a download of `bytes`; true when the folder may now hold more than its limit.
    fn holds_too_much(&self, bytes: u64) -> bool {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        match held.as_mut() {
            Some(total) => {
                *total += bytes;
                *total > self.max_bytes
            }
            None => true,
        }
    }
}

/// Extension prefix of a segment being downloaded.
const DOWNLOADING: &str = "download-";

/// Deletes the least recently used segments under `dir` until they hold at most `max_bytes`,
/// never `keep` (just downloaded) nor a download in progress; returns what they hold then and
/// the files deleted.
fn evict(dir: &Path, keep: &Path, max_bytes: u64) -> std::io::Result<(u64, Vec<PathBuf>)> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    // Downloads beside this walk rename their files and create folders: an entry gone
    // between listing and reading it is skipped, not an error.
    let gone = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
    while let Some(folder) = folders.pop() {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if gone(&e) => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let meta = match entry.metadata() {
                Ok(meta) => meta,
                Err(e) if gone(&e) => continue,
                Err(e) => return Err(e),
            };
            let path = entry.path();
            if meta.is_dir() {
                folders.push(path);
            } else if !path.extension().is_some_and(|e| e.to_string_lossy().starts_with(DOWNLOADING)) {
                files.push((meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), meta.len(), path));
            }
        }
    }
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    files.sort();
    let mut deleted = Vec::new();
    for (_, size, path) in files {
        if total <= max_bytes {
            break;
        }
        if path != keep && std::fs::remove_file(&path).is_ok() {
            total -= size;
            deleted.push(path);
        }
    }
    Ok((total, deleted))
}

/// Druid's id of a segment: `datasource_start_end_version`, `_partition` when not 0.
pub fn segment_id(datasource: &str, record: &SegmentRecord) -> String {
    let base = format!(
        "{datasource}_{}_{}_{}",
        format_iso(record.interval.start),
        format_iso(record.interval.end),
        record.version
    );
    if record.partition == 0 {
        base
    } else {
        format!("{base}_{}", record.partition)
    }
}

/// Opens the visible segments of `datasource` overlapping `intervals`, in timeline order.
/// With a cache, whole segments are downloaded once and memory-mapped; without one, only the
/// header, the directory and the parts `plan` names (all when `None`) are read, with ranged
/// reads ([`read_parts`]).
pub async fn load_segments(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    cache: Option<&SegmentCache>,
    datasource: &str,
    intervals: &[Interval],
    plan: Option<&ReadPlan>,
) -> Result<Vec<QuerySegment>, QueryError> {
    Ok(load_pruned(meta, store, cache, datasource, intervals, plan, None).await?.0)
}

/// How many of a query's segments its filter let it skip.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruning {
    /// Visible segments overlapping the query's intervals.
    pub considered: usize,
    /// Of those, segments whose summaries show the filter matches none of their rows: not read.
    pub skipped: usize,
}

/// [`load_segments`], skipping the segments whose records' summaries show that `pruner`'s
/// filter matches none of their rows (before any of their bytes is read).
pub async fn load_pruned(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    cache: Option<&SegmentCache>,
    datasource: &str,
    intervals: &[Interval],
    plan: Option<&ReadPlan>,
    pruner: Option<&SegmentPruner>,
) -> Result<(Vec<QuerySegment>, Pruning), QueryError> {
    let (records, pruning) = visible_records(meta, cache, datasource, intervals, pruner).await?;
    Ok((open_records(store, cache, datasource, &records, plan).await?, pruning))
}

/// The visible segment records of `datasource` overlapping `intervals`, in timeline order,
/// without those whose summaries show that `pruner`'s filter matches none of their rows. With
/// a cache, the timeline it kept, when still current ([`TimelineCache::segments`]).
pub async fn visible_records(
    meta: &dyn MetadataStore,
    cache: Option<&SegmentCache>,
    datasource: &str,
    intervals: &[Interval],
    pruner: Option<&SegmentPruner>,
) -> Result<(Vec<SegmentRecord>, Pruning), QueryError> {
    let records = match cache {
        Some(c) => c.timelines.segments(meta, datasource, intervals).await,
        None => queried_segments(meta, datasource, intervals).await.map(Arc::new),
    }
    .map_err(|e| QueryError::Source(e.to_string()))?;
    Ok(select_records(meta, cache, datasource, &records, intervals, pruner).await)
}

/// Runs `work` over what [`visible_records`] gives. With a kept timeline (read within
/// [`MAX_KEPT_AGE`](sluice_metastore::timeline::kept::MAX_KEPT_AGE)), `work` starts on it at once
/// while the cache checks that it is still current, and its answer is taken only once the
/// check says so; when the timeline changed, `work` is dropped (or its answer, even an error)
/// and runs again on the current one. A query answers as of the check either way
/// (`docs/exactly-once.md#the-timeline-kept-between-queries`); the check's reads leave the
/// critical path of every query whose datasource did not change.
pub async fn with_visible_records<T, F, Fut>(
    meta: &dyn MetadataStore,
    cache: Option<&SegmentCache>,
    datasource: &str,
    intervals: &[Interval],
    pruner: Option<&SegmentPruner>,
    work: F,
) -> Result<T, QueryError>
where
    F: Fn(Vec<SegmentRecord>, Pruning) -> Fut,
    Fut: std::future::Future<Output = Result<T, QueryError>>,
{
    let kept = cache.and_then(|c| c.timelines.kept(datasource, intervals).map(|k| (c, k)));
    let Some((c, kept)) = kept else {
        let (records, pruning) = visible_records(meta, cache, datasource, intervals, pruner).await?;
        return work(records, pruning).await;
    };
    let (records, pruning) = select_records(meta, cache, datasource, &kept, intervals, pruner).await;
    let current = c.timelines.segments(meta, datasource, intervals);
    let answer = work(records, pruning);
    let (current, answer) = match futures::future::select(Box::pin(current), Box::pin(answer)).await {
        futures::future::Either::Left((current, answer)) => {
            let current = current.map_err(|e| QueryError::Source(e.to_string()))?;
            if !Arc::ptr_eq(&current, &kept) {
                // Changed: the speculative work is dropped unfinished.
                let (records, pruning) = select_records(meta, cache, datasource, &current, intervals, pruner).await;
                return work(records, pruning).await;
            }
            (current, answer.await)
        }
        futures::future::Either::Right((answer, current)) => {
            (current.await.map_err(|e| QueryError::Source(e.to_string()))?, answer)
        }
    };
    if Arc::ptr_eq(&current, &kept) {
        return answer;
    }
    let (records, pruning) = select_records(meta, cache, datasource, &current, intervals, pruner).await;
    work(records, pruning).await
}

/// The records of `records` overlapping `intervals` that `pruner` does not rule out by their
/// summaries, read for those records only (kept by `cache`). A summary that cannot be read
/// rules nothing out.
async fn select_records(
    meta: &dyn MetadataStore,
    cache: Option<&SegmentCache>,
    datasource: &str,
    records: &[SegmentRecord],
    intervals: &[Interval],
    pruner: Option<&SegmentPruner>,
) -> (Vec<SegmentRecord>, Pruning) {
    use futures::StreamExt;
    let overlapping: Vec<&SegmentRecord> = records
        .iter()
        .filter(|r| intervals.iter().any(|i| i.start < r.interval.end && r.interval.start < i.end))
        .collect();
    let mut pruning = Pruning { considered: overlapping.len(), skipped: 0 };
    let Some(pruner) = pruner else {
        return (overlapping.into_iter().cloned().collect(), pruning);
    };
    let own = SummaryCache::default();
    let summaries = cache.map_or(&own, |c| c.summaries.as_ref());
    // Collected first: a lazy map held across the await is not `Send` for every lifetime.
    let reads: Vec<_> = overlapping.iter().map(|r| summary_of(summaries, meta, datasource, r)).collect();
    let found: Vec<_> = futures::stream::iter(reads).buffered(SUMMARY_READS_IN_FLIGHT).collect().await;
    let mut out = Vec::with_capacity(overlapping.len());
    for (r, read) in overlapping.into_iter().zip(found) {
        if r.summary.as_ref().or(read.as_deref()).is_some_and(|s| !pruner.may_match(s)) {
            pruning.skipped += 1;
            continue;
        }
        out.push(r.clone());
    }
    (out, pruning)
}

/// The summary item of `record` when it carries none inline, `None` when it cannot be read
/// (its segment is then not pruned).
async fn summary_of(
    summaries: &SummaryCache,
    meta: &dyn MetadataStore,
    datasource: &str,
    record: &SegmentRecord,
) -> Option<Arc<SegmentSummary>> {
    if record.summary.is_some() {
        return None;
    }
    summaries.summary(meta, datasource, record).await.unwrap_or_else(|e| {
        tracing::warn!(segment = record.sk(), error = %e, "could not read a segment's summary; it is not pruned");
        None
    })
}

/// Opens the segments of `records` (see [`load_segments`] for how).
pub async fn open_records(
    store: &dyn ObjectStore,
    cache: Option<&SegmentCache>,
    datasource: &str,
    records: &[SegmentRecord],
    plan: Option<&ReadPlan>,
) -> Result<Vec<QuerySegment>, QueryError> {
    let mut out = Vec::with_capacity(records.len());
    for r in records {
        let segment = match cache {
            Some(c) => c.open(store, r).await?,
            None => fetch_parts(store, r, plan).await?,
        };
        out.push(QuerySegment { id: segment_id(datasource, r), interval: r.interval, segment });
    }
    Ok(out)
}

/// Reads the parts `plan` names of a segment with ranged reads ([`read_parts`]).
async fn fetch_parts(
    store: &dyn ObjectStore,
    record: &SegmentRecord,
    plan: Option<&ReadPlan>,
) -> Result<Segment, QueryError> {
    read_parts(store, &record.key, record.num_bytes, plan).await
}

/// Parses and runs a query against the stores: Druid's JSON result, or
/// [`QueryError::Timeout`] past the query's timeout. The engine runs on a blocking thread,
/// never on the runtime's workers, so a long query cannot stall the server's other requests.
pub async fn run_query(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    cache: Option<&SegmentCache>,
    text: &str,
) -> Result<serde_json::Value, QueryError> {
    Ok(run_query_pruned(meta, store, cache, text).await?.0)
}

/// Parses a query and binds the lookups of the default tier as they are now, with the refs
/// that name those versions to its workers. A query whose text never says `lookup` can read
/// none, and the lookups' items are not read for it.
pub async fn parse_bound(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    cache: Option<&SegmentCache>,
    text: &str,
) -> Result<(Query, Vec<LookupRef>), QueryError> {
    let mut query = parse_query(text)?;
    if !text.contains("lookup") {
        return Ok((query, Vec::new()));
    }
    let fresh;
    let lookup_cache = match cache {
        Some(c) => c.lookups.as_ref(),
        None => {
            fresh = LookupCache::default();
            &fresh
        }
    };
    let names = serde_json::from_str(text).map(|v| sluice_metastore::lookups::names_in_json(&v)).unwrap_or_default();
    let (lookups, refs) = sluice_metastore::lookups::load(meta, store, lookup_cache, DEFAULT_TIER, &names)
        .await
        .map_err(|e| QueryError::Source(e.to_string()))?;
    query.bind_lookups(lookups);
    Ok((query, refs))
}

/// [`run_query`], with how many segments the query's filter let it skip.
pub async fn run_query_pruned(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    cache: Option<&SegmentCache>,
    text: &str,
) -> Result<(serde_json::Value, Pruning), QueryError> {
    let query = Arc::new(parse_bound(meta, store, cache, text).await?.0);
    let timeout = query.timeout_ms()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(timeout);
    within(timeout, async {
        let pruner = query.pruner();
        let run = |records: Vec<SegmentRecord>, pruning| {
            let query = query.clone();
            async move { Ok((execute_records(store, cache, query, &records, deadline, timeout).await?, pruning)) }
        };
        with_visible_records(meta, cache, query.datasource(), &query.intervals(), pruner.as_ref(), run).await
    })
    .await
}

/// Opens the segments of `records` and runs `query` over them on a blocking thread, never on
/// the runtime's workers (a long query cannot stall a server's other requests), reading and
/// filling the cache's partials when there is a cache; stopped with [`QueryError::Timeout`]
/// (naming `timeout_ms`) once `deadline` passes.
pub async fn execute_records(
    store: &dyn ObjectStore,
    cache: Option<&SegmentCache>,
    query: Arc<Query>,
    records: &[SegmentRecord],
    deadline: std::time::Instant,
    timeout_ms: u64,
) -> Result<serde_json::Value, QueryError> {
    let plan = ReadPlan::of(&query);
    let segments = open_records(store, cache, query.datasource(), records, plan.as_ref()).await?;
    let partials = cache.map(|c| c.partials.clone());
    tokio::task::spawn_blocking(move || execute_within(&query, &segments, deadline, timeout_ms, partials.as_ref()))
        .await
        .map_err(|e| QueryError::Source(format!("the query engine failed: {e}")))?
}

/// `work`'s outcome, or [`QueryError::Timeout`] after `timeout_ms`. An engine already running
/// on its blocking thread stops at the next segment it opens (its deadline is the same).
async fn within<T>(
    timeout_ms: u64,
    work: impl std::future::Future<Output = Result<T, QueryError>>,
) -> Result<T, QueryError> {
    tokio::time::timeout(std::time::Duration::from_millis(timeout_ms), work)
        .await
        .unwrap_or(Err(QueryError::Timeout(timeout_ms)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_keeps_the_cache_under_its_limit_newest_first() {
        let dir = tempfile::tempdir().expect("temp dir");
        let write = |name: &str, age_secs: u64| {
            let path = dir.path().join("ds").join(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
            std::fs::write(&path, vec![0u8; 1000]).expect("write");
            let when = SystemTime::now() - std::time::Duration::from_secs(age_secs);
            std::fs::File::options().append(true).open(&path).and_then(|f| f.set_modified(when)).expect("mtime");
            path
        };
        let (oldest, old, new) = (write("a.seg", 300), write("b.seg", 200), write("c.seg", 100));
        let downloading = dir.path().join("ds").join(format!("d.{DOWNLOADING}1-0"));
        std::fs::write(&downloading, vec![0u8; 5000]).expect("download in progress");
        let just = write("e.seg", 400);
        let (held, deleted) = evict(dir.path(), &just, 2_500).expect("evict");
        assert_eq!(held, 2_000, "c.seg and e.seg are left");
        assert_eq!(deleted, [oldest.clone(), old.clone()]);
        assert!(!oldest.exists() && !old.exists(), "the least recently used go first");
        assert!(new.exists() && just.exists() && downloading.exists());
    }

    #[test]
    fn the_folder_is_walked_only_when_downloads_may_pass_the_limit() {
        let cache = SegmentCache::with_limit("/nonexistent", 1_000);
        assert!(cache.holds_too_much(10), "unknown until the first walk");
        *cache.held.lock().expect("held") = Some(500);
        assert!(!cache.holds_too_much(400));
        assert!(cache.holds_too_much(200), "900 + 200 passes 1,000");
    }

    #[tokio::test]
    async fn work_past_the_timeout_fails_naming_it() {
        let never = std::future::pending::<Result<serde_json::Value, QueryError>>();
        let err = within(20, never).await.expect_err("timed out");
        assert!(matches!(err, QueryError::Timeout(20)), "{err}");
        assert!(err.to_string().contains("20 ms"), "{err}");
        let quick = within(60_000, async { Ok(serde_json::json!([])) }).await.expect("in time");
        assert_eq!(quick, serde_json::json!([]));
    }
}
