//! Where a query's segments come from: the datasource's visible timeline in the metadata
//! store, each segment downloaded once from deep storage into a local cache folder and
//! memory-mapped from there (a segment is immutable under its key, so a cached copy of the
//! right size is the segment).

use super::{execute, parse_query, QueryError, QuerySegment};
use crate::metadata::MetadataStore;
use crate::segment::Segment;
use crate::storage::ObjectStore;
use crate::time::{format_iso, Interval};
use crate::timeline::{visible_segments, SegmentRecord};
use std::path::{Path, PathBuf};

/// A folder of downloaded segments, keyed by object key.
#[derive(Debug, Clone)]
pub struct SegmentCache {
    dir: PathBuf,
}

impl SegmentCache {
    /// A cache under `dir` (created on first download).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Opens the segment of `record`, downloading it first unless a copy of its size is cached.
    pub async fn open(&self, store: &dyn ObjectStore, record: &SegmentRecord) -> Result<Segment, QueryError> {
        let path = self.dir.join(&record.key);
        let cached = tokio::fs::metadata(&path).await.is_ok_and(|m| m.len() == record.num_bytes);
        if !cached {
            let bytes =
                store.get(&record.key).await.map_err(|e| QueryError::Source(format!("segment {}: {e}", record.key)))?;
            let io = |e: std::io::Error| QueryError::Source(format!("segment cache {}: {e}", path.display()));
            if let Some(parent) = path.parent() {
                tokio::fs::create_dir_all(parent).await.map_err(io)?;
            }
            let tmp = path.with_extension(format!("download-{}", std::process::id()));
            tokio::fs::write(&tmp, &bytes).await.map_err(io)?;
            tokio::fs::rename(&tmp, &path).await.map_err(io)?;
        }
        Ok(Segment::open_file_named(&path, &record.key)?)
    }
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

/// Opens the visible segments of `datasource` overlapping `intervals`, in timeline order;
/// without a cache they are read into memory.
pub async fn load_segments(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    cache: Option<&SegmentCache>,
    datasource: &str,
    intervals: &[Interval],
) -> Result<Vec<QuerySegment>, QueryError> {
    let records = visible_segments(meta, datasource).await.map_err(|e| QueryError::Source(e.to_string()))?;
    let mut out = Vec::new();
    for r in records.iter().filter(|r| intervals.iter().any(|i| i.start < r.interval.end && r.interval.start < i.end)) {
        let segment = match cache {
            Some(c) => c.open(store, r).await?,
            None => {
                let bytes =
                    store.get(&r.key).await.map_err(|e| QueryError::Source(format!("segment {}: {e}", r.key)))?;
                Segment::from_bytes(&r.key, bytes.to_vec())?
            }
        };
        out.push(QuerySegment { id: segment_id(datasource, r), interval: r.interval, segment });
    }
    Ok(out)
}

/// Parses and runs a query against the stores: Druid's JSON result.
pub async fn run_query(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    cache: Option<&SegmentCache>,
    text: &str,
) -> Result<serde_json::Value, QueryError> {
    let query = parse_query(text)?;
    let segments = load_segments(meta, store, cache, query.datasource(), &query.intervals()).await?;
    execute(&query, &segments)
}
