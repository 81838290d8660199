//! A hand-over: the indexes a read step filled, persisted to hydrant bytes, either into the
//! spill on local disk or, when a checkpoint is due, merged per time chunk with the spilled
//! hydrants of that chunk and uploaded to deep storage.
//!
//! ```text
//!  checkpoint not due:  persist -> <spill dir>/<n>.hyd         (no checkpoint)
//!  checkpoint due:      persist; per time chunk: spilled + new hydrants
//!                       -> merge into one -> put_if_absent -> checkpoint
//! ```

use super::failure::Failure;
use super::spill::{spill_error, SpillFile};
use super::IndexerError;
use crate::task::{HydrantRef, TaskId};
use sluice_format::index::IncrementalIndex;
use sluice_format::merge::{merge, MergeOptions};
use sluice_format::segment::Segment;
use sluice_format::spec::Compression;
use sluice_format::time::Interval;
use sluice_store::storage::ObjectStore;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What persisting one hand-over gave, and the time spent on it.
#[derive(Default)]
pub(super) struct HandedOver {
    /// Hydrants on deep storage, for a checkpoint.
    pub(super) hydrants: Vec<HydrantRef>,
    /// Hydrants on local disk, for the spill.
    pub(super) spilled: Vec<SpillFile>,
    pub(super) persist: Duration,
    pub(super) merge: Duration,
    pub(super) upload: Duration,
}

/// Persists the indexes of a hand-over into `dir`, files numbered from `first`.
pub(super) async fn persist_spill(
    id: &TaskId,
    dir: PathBuf,
    first: u32,
    indexes: Vec<IncrementalIndex>,
    compression: Compression,
) -> Result<HandedOver, Failure> {
    let mut out = HandedOver::default();
    for (i, index) in indexes.into_iter().enumerate() {
        let started = Instant::now();
        let path = dir.join(format!("{}.hyd", first + i as u32));
        let task = id.clone();
        let file = tokio::task::spawn_blocking(move || {
            let (chunk, num_rows) = (index.interval(), index.num_rows() as u64);
            let bytes = persist(index, compression)?;
            std::fs::write(&path, &bytes).map_err(|e| spill_error(&task, &path, e))?;
            Ok::<_, Failure>(SpillFile { chunk, num_rows, num_bytes: bytes.len() as u64, path })
        })
        .await
        .map_err(|e| Failure::Fatal(format!("the persisting thread panicked: {e}")))??;
        out.persist += started.elapsed();
        out.spilled.push(file);
    }
    Ok(out)
}

/// A hand-over's hydrant bytes and their rows.
type Persisted = (Vec<u8>, u64);

/// Where a checkpoint's hydrants go and how they are written.
pub(super) struct Upload<'s> {
    pub(super) store: &'s dyn ObjectStore,
    pub(super) id: &'s TaskId,
    pub(super) attempt: u32,
    /// The number of the first hydrant: one per time chunk follows.
    pub(super) first: u32,
    pub(super) compression: Compression,
}

/// Persists the indexes of a hand-over, merges each time chunk's with the spilled hydrants
/// of that chunk into one hydrant, and uploads it under a key unique to the attempt. A chunk
/// with one hydrant uploads it as persisted.
pub(super) async fn persist_merge_upload(
    to: Upload<'_>,
    indexes: Vec<IncrementalIndex>,
    spilled: Vec<SpillFile>,
) -> Result<HandedOver, Failure> {
    let mut out = HandedOver::default();
    // Per chunk: its spilled files, and the hand-over's hydrants.
    let mut chunks: BTreeMap<Interval, (Vec<SpillFile>, Vec<Persisted>)> = BTreeMap::new();
    for f in spilled {
        chunks.entry(f.chunk).or_default().0.push(f);
    }
    for index in indexes {
        let started = Instant::now();
        let (chunk, num_rows) = (index.interval(), index.num_rows() as u64);
        let compression = to.compression;
        let bytes = tokio::task::spawn_blocking(move || persist(index, compression))
            .await
            .map_err(|e| Failure::Fatal(format!("the persisting thread panicked: {e}")))??;
        out.persist += started.elapsed();
        chunks.entry(chunk).or_default().1.push((bytes, num_rows));
    }
    for (i, (chunk, (files, mut persisted))) in chunks.into_iter().enumerate() {
        let key = to.id.hydrant_key(to.attempt, chunk, to.first + i as u32);
        let started = Instant::now();
        let (bytes, num_rows) = match (files.is_empty(), persisted.len()) {
            (true, 1) => persisted.pop().expect("one hydrant"),
            (false, 0) if files.len() == 1 => {
                let (id, f) = (to.id.clone(), files.into_iter().next().expect("one file"));
                tokio::task::spawn_blocking(move || {
                    let bytes = std::fs::read(&f.path).map_err(|e| spill_error(&id, &f.path, e))?;
                    let _ = std::fs::remove_file(&f.path);
                    Ok::<_, Failure>((bytes, f.num_rows))
                })
                .await
                .map_err(|e| Failure::Fatal(format!("the reading thread panicked: {e}")))??
            }
            _ => {
                let (id, compression, object) = (to.id.clone(), to.compression, key.clone());
                let persisted = persisted.into_iter().map(|(bytes, _)| bytes).collect();
                let merged =
                    tokio::task::spawn_blocking(move || merge_chunk(&id, &object, &files, persisted, compression))
                        .await
                        .map_err(|e| Failure::Fatal(format!("the merging thread panicked: {e}")))??;
                out.merge += started.elapsed();
                merged
            }
        };
        let started = Instant::now();
        let num_bytes = bytes.len() as u64;
        to.store
            .put_if_absent(&key, bytes.into())
            .await
            .map_err(|source| Failure::Retryable(Box::new(IndexerError::Storage { id: to.id.clone(), source })))?;
        out.upload += started.elapsed();
        out.hydrants.push(HydrantRef { key, chunk, num_rows, num_bytes });
    }
    Ok(out)
}

/// One time chunk's spilled and new hydrants merged into one; the spilled files are removed.
fn merge_chunk(
    id: &TaskId,
    object: &str,
    files: &[SpillFile],
    persisted: Vec<Vec<u8>>,
    compression: Compression,
) -> Result<(Vec<u8>, u64), Failure> {
    let mut parts = Vec::with_capacity(files.len() + persisted.len());
    for f in files {
        let named = f.path.display().to_string();
        parts.push(Segment::open_file_named(&f.path, &named).map_err(|e| {
            Failure::Retryable(Box::new(IndexerError::Spill {
                id: id.clone(),
                path: named.clone(),
                source: std::io::Error::other(e.to_string()),
            }))
        })?);
    }
    for (n, bytes) in persisted.into_iter().enumerate() {
        let named = format!("{object} (hand-over {n})");
        parts.push(Segment::from_bytes(&named, bytes).map_err(|e| Failure::Fatal(e.to_string()))?);
    }
    let options = MergeOptions { max_rows_per_segment: u64::MAX, compression };
    let mut merged = merge(&parts, &options).map_err(|e| Failure::Fatal(format!("merge of spilled hydrants: {e}")))?;
    drop(parts);
    for f in files {
        // Gone with the attempt's directory in any case.
        let _ = std::fs::remove_file(&f.path);
    }
    if merged.len() != 1 {
        return Err(Failure::Fatal(format!(
            "merge of spilled hydrants into {object} gave {} outputs, not one",
            merged.len()
        )));
    }
    let bytes = merged.pop().expect("one output");
    let rows = Segment::directory_of(object, &bytes).map_err(|e| Failure::Fatal(e.to_string()))?.num_rows;
    Ok((bytes, u64::from(rows)))
}

/// One index persisted to hydrant bytes.
fn persist(index: IncrementalIndex, compression: Compression) -> Result<Vec<u8>, Failure> {
    let chunk = index.interval();
    index.persist(compression).map_err(|e| Failure::Fatal(format!("persist of chunk {chunk:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::indexer::spill::{Spill, SPILL_BYTES};
    use crate::indexer::test_hydrants::{indexes, spec};

    const HOUR: i64 = 3_600_000;

    #[tokio::test]
    async fn a_checkpoint_merges_each_chunks_spilled_and_new_hydrants_into_one() {
        let spec = spec(serde_json::json!({}));
        let compression = spec.tuning.intermediate_index;
        let dir = tempfile::tempdir().expect("temp dir");
        let store =
            sluice_store::storage::open_store(&format!("file://{}", dir.path().display())).await.expect("store");
        let id = TaskId { datasource: "d".into(), group: 0, seq: 1 };
        let mut spill = Spill::new(SPILL_BYTES);
        let spill_dir = spill.dir(&id).unwrap_or_else(|_| panic!("spill dir"));
        // Two hand-overs spilled: hours 0 and 1, then hour 0 again; the third adds hour 2.
        for (n, times) in [vec![1, 2, HOUR + 1], vec![3, 4, 5]].into_iter().enumerate() {
            let first = spill.number(2);
            let handed = persist_spill(&id, spill_dir.clone(), first, indexes(&spec, &times), compression).await;
            let handed = handed.unwrap_or_else(|_| panic!("hand-over {n} spilled"));
            assert!(handed.hydrants.is_empty(), "a spill uploads nothing");
            spill.add(handed.spilled);
        }
        assert_eq!(std::fs::read_dir(&spill_dir).expect("spill").count(), 3);
        let new = indexes(&spec, &[6, 2 * HOUR]);
        let first = 4;
        assert_eq!(spill.chunks_with(&new), 3);
        let to = Upload { store: store.as_ref(), id: &id, attempt: 1, first, compression };
        let handed = persist_merge_upload(to, new, spill.take()).await.unwrap_or_else(|_| panic!("checkpoint"));
        let rows: Vec<(i64, u64)> = handed.hydrants.iter().map(|h| (h.chunk.start / HOUR, h.num_rows)).collect();
        assert_eq!(rows, vec![(0, 6), (1, 1), (2, 1)], "one hydrant per chunk, every row once");
        for (n, h) in handed.hydrants.iter().enumerate() {
            assert_eq!(h.key, id.hydrant_key(1, h.chunk, first + n as u32));
            let bytes = store.get(&h.key).await.expect("uploaded");
            let segment = Segment::from_bytes(&h.key, bytes.to_vec()).expect("a hydrant");
            assert_eq!((segment.num_rows() as u64, bytes.len() as u64), (h.num_rows, h.num_bytes));
        }
        assert_eq!(std::fs::read_dir(&spill_dir).expect("spill").count(), 0, "spilled files removed");
        drop(spill);
        assert!(!spill_dir.exists(), "the spill's directory goes with it");
    }
}
