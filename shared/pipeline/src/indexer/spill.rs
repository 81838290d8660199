//! Hydrants spilled to the function's local disk between checkpoints, as Druid's intermediate
//! persists stay on the task's disk until handoff: the spill, what it admits, and where it lives
//! (what a hand-over writes into it is [`super::handover`]'s).
//!
//! A checkpoint is due when the rows since the last one could pass `maxRowsPerSegment` or
//! `maxTotalRows` with one more hand-over (as large as the largest so far, at most
//! `maxRowsInMemory`), when the spill holds [`SPILL_BYTES`] or
//! [`MAX_SPILL_CHUNKS`] time chunks, and whenever the attempt ends. Real-time tasks checkpoint
//! every hand-over (each checkpoint is what makes their rows queryable). A spill is in no
//! checkpoint: an attempt that dies loses it, and the next reads its records again from the
//! last checkpoint's positions.

use super::failure::Failure;
use super::IndexerError;
use crate::task::TaskId;
use sluice_format::index::IncrementalIndex;
use sluice_format::spec::DEFAULT_MAX_BYTES_IN_MEMORY;
use sluice_format::time::Interval;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Hydrant bytes a spill holds before a checkpoint is due: about 2M Wikipedia-shaped rows, whose
/// merge at the checkpoint builds the merged hydrant in memory (with a 64 MiB
/// `maxBytesInMemory`, the task peaked at 434 MiB above its process for 2M rows, 757 MiB for
/// 4M: `bench indexer` memory passes). A Lambda's `/tmp` holds 512 MB unless configured larger.
pub const SPILL_BYTES: u64 = 96 << 20;

/// The smallest spill worth keeping: a function with less memory to spare checkpoints every
/// hand-over.
const MIN_SPILL_BYTES: u64 = 8 << 20;

/// Memory a task needs beside its indexes and a checkpoint's merge: the prefetch, persist
/// buffers, the process itself.
const FIXED_BYTES: u64 = 256 << 20;

/// Memory a checkpoint's merge needs per byte of spill (the merged hydrant, the merge's
/// working memory, the spill's mapped pages): 637 MiB of peak task memory for a spill of
/// 96 MiB beside a 64 MiB index, rounded up.
const MERGE_BYTES_PER_SPILL_BYTE: u64 = 5;

/// The spill bound of a task in a function of `memory_mb` MB (Lambda's
/// `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`) whose indexes persist at `max_bytes_in_memory`:
/// [`SPILL_BYTES`], less where two indexes, the fixed part and the merge would not fit; 0
/// (no spilling) below [`MIN_SPILL_BYTES`]. Without a function size, [`SPILL_BYTES`].
pub fn spill_bound(memory_mb: Option<u64>, max_bytes_in_memory: Option<u64>) -> u64 {
    let Some(mb) = memory_mb else { return SPILL_BYTES };
    // Without a byte bound (`maxBytesInMemory` -1), indexes are taken to be of the default's.
    let index = max_bytes_in_memory.unwrap_or(DEFAULT_MAX_BYTES_IN_MEMORY);
    let spare = (mb << 20).saturating_sub(2 * index + FIXED_BYTES);
    let bound = (spare / MERGE_BYTES_PER_SPILL_BYTE).min(SPILL_BYTES);
    if bound < MIN_SPILL_BYTES {
        0
    } else {
        bound
    }
}

/// Time chunks a spill holds before a checkpoint is due: with the 1,000 of one hand-over,
/// a checkpoint lists at most 2,000 hydrants.
pub(super) const MAX_SPILL_CHUNKS: usize = 1_000;

/// Prefix of the spill directories under the temporary directory.
const SPILL_PREFIX: &str = "sluice-spill-";

/// One spilled hydrant.
pub(super) struct SpillFile {
    /// Its time chunk.
    pub(super) chunk: Interval,
    /// Rows it holds.
    pub(super) num_rows: u64,
    /// Its size in bytes.
    pub(super) num_bytes: u64,
    /// Where it is.
    pub(super) path: PathBuf,
}

/// What an attempt has spilled since its last checkpoint.
#[derive(Default)]
pub(super) struct Spill {
    dir: Option<tempfile::TempDir>,
    files: Vec<SpillFile>,
    rows: u64,
    bytes: u64,
    chunks: BTreeSet<Interval>,
    next: u32,
    /// Rows of the largest hand-over spilled by the attempt.
    largest: u64,
    /// Hydrant bytes the spill may hold ([`spill_bound`]); 0: none.
    max_bytes: u64,
}

impl Spill {
    /// A spill of at most `max_bytes` (0: every hand-over is checkpointed).
    pub(super) fn new(max_bytes: u64) -> Self {
        Self { max_bytes, ..Self::default() }
    }

    /// Whether a hand-over of `indexes` may be spilled rather than checkpointed: rows since
    /// the last checkpoint stay within `max_rows` even after one more hand-over as large as
    /// the largest so far (at most `max_rows_in_memory`: a persist due by bytes or time
    /// leaves `maxRowsInMemory` far away), and the spill within its bytes and chunks.
    pub(super) fn admits(&self, indexes: &[IncrementalIndex], max_rows: u64, max_rows_in_memory: u64) -> bool {
        let rows: u64 = indexes.iter().map(|i| i.num_rows() as u64).sum();
        let next = self.largest.max(rows).min(max_rows_in_memory);
        let new_chunks = indexes.iter().filter(|i| !self.chunks.contains(&i.interval())).count();
        self.rows + rows + next <= max_rows
            && self.bytes < self.max_bytes
            && self.chunks.len() + new_chunks <= MAX_SPILL_CHUNKS
    }

    /// The directory spills go to, made on first use (removed with the attempt).
    pub(super) fn dir(&mut self, id: &TaskId) -> Result<PathBuf, Failure> {
        if self.dir.is_none() {
            let dir = tempfile::Builder::new()
                .prefix(SPILL_PREFIX)
                .tempdir()
                .map_err(|e| spill_error(id, &std::env::temp_dir(), e))?;
            tracing::debug!(task = %id, dir = %dir.path().display(), "spilling hydrants");
            self.dir = Some(dir);
        }
        Ok(self.dir.as_ref().expect("made above").path().to_path_buf())
    }

    /// Numbers for `n` more spilled files.
    pub(super) fn number(&mut self, n: usize) -> u32 {
        let first = self.next;
        self.next += n as u32;
        first
    }

    /// Adds the files a hand-over spilled.
    pub(super) fn add(&mut self, files: Vec<SpillFile>) {
        self.largest = self.largest.max(files.iter().map(|f| f.num_rows).sum());
        for f in &files {
            self.rows += f.num_rows;
            self.bytes += f.num_bytes;
            self.chunks.insert(f.chunk);
        }
        self.files.extend(files);
    }

    /// The time chunks a checkpoint of the spill and `indexes` lists.
    pub(super) fn chunks_with(&self, indexes: &[IncrementalIndex]) -> usize {
        let mut chunks = self.chunks.clone();
        chunks.extend(indexes.iter().map(|i| i.interval()));
        chunks.len()
    }

    /// Everything spilled, for a checkpoint; the spill starts again empty.
    pub(super) fn take(&mut self) -> Vec<SpillFile> {
        (self.rows, self.bytes) = (0, 0);
        self.chunks.clear();
        std::mem::take(&mut self.files)
    }
}

/// Removes the spill directories left by attempts that died in this environment. Only for a
/// process that runs one attempt at a time and has none running (a Lambda starting up).
pub fn remove_stale_spills() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(SPILL_PREFIX) {
            match std::fs::remove_dir_all(entry.path()) {
                Ok(()) => tracing::info!(dir = %entry.path().display(), "removed a stale spill"),
                Err(e) => tracing::warn!(dir = %entry.path().display(), error = %e, "stale spill not removed"),
            }
        }
    }
}

pub(super) fn spill_error(id: &TaskId, path: &Path, source: std::io::Error) -> Failure {
    Failure::Retryable(Box::new(IndexerError::Spill { id: id.clone(), path: path.display().to_string(), source }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::indexer::test_hydrants::{indexes, spec};

    const HOUR: i64 = 3_600_000;

    #[test]
    fn a_spill_admits_hand_overs_until_one_more_could_pass_the_rows_bytes_or_chunks() {
        let spec = spec(serde_json::json!({}));
        let seven = indexes(&spec, &[0, 1, 2, 3, HOUR, HOUR + 1, HOUR + 2]);
        let file = |chunk: i64, rows: u64, bytes: u64| SpillFile {
            chunk: Interval { start: chunk, end: chunk + HOUR },
            num_rows: rows,
            num_bytes: bytes,
            path: PathBuf::new(),
        };
        let mut spill = Spill::new(SPILL_BYTES);
        assert!(spill.admits(&seven, 30, 7), "0 + 7 + 7 rows");
        spill.add(vec![file(0, 10, 1), file(HOUR, 6, 1)]);
        assert!(spill.admits(&seven, 30, 7), "16 + 7 + 7 rows");
        assert!(!spill.admits(&seven, 29, 7), "16 + 7 + 7 rows pass 29");
        // maxRowsInMemory out of the way: the next hand-over is taken to be the largest, 16.
        assert!(!spill.admits(&seven, 38, 1_000_000), "16 + 7 + 16 rows pass 38");
        assert!(spill.admits(&seven, 39, 1_000_000), "16 + 7 + 16 rows");
        spill.add(vec![file(2 * HOUR, 0, SPILL_BYTES)]);
        assert!(!spill.admits(&seven, 1_000, 7), "the spill holds its bytes");
        assert_eq!(spill.chunks_with(&seven), 3);
        let taken = spill.take();
        assert_eq!((taken.len(), spill.rows, spill.bytes, spill.chunks_with(&seven)), (3, 0, 0, 2));
        assert!(spill.admits(&seven, 30, 7), "empty again");
        spill.add((0..MAX_SPILL_CHUNKS as i64 - 1).map(|h| file((h + 10) * HOUR, 0, 0)).collect());
        assert!(!spill.admits(&seven, 1_000, 7), "two new chunks pass the spill's 1,000");
        spill.take();
        spill.add((0..MAX_SPILL_CHUNKS as i64 - 2).map(|h| file((h + 10) * HOUR, 0, 0)).collect());
        spill.add(vec![file(0, 0, 0), file(HOUR, 0, 0)]);
        assert!(spill.admits(&seven, 1_000, 7), "1,000 chunks it already holds");
        assert!(!Spill::new(0).admits(&seven, 1_000, 7), "no spill bound: every hand-over checkpoints");
    }

    #[test]
    fn a_functions_memory_bounds_its_spill() {
        let mib = 1 << 20;
        assert_eq!(spill_bound(None, None), SPILL_BYTES, "no function size: the bound");
        assert_eq!(spill_bound(Some(1024), None), SPILL_BYTES, "the template's 1,024 MB: (1,024 - 384) / 5 MiB");
        assert_eq!(spill_bound(Some(512), None), (512 - 128 - 256) * mib / 5);
        assert_eq!(spill_bound(Some(1024), Some(256 * mib)), (1024 - 512 - 256) * mib / 5);
        assert_eq!(spill_bound(Some(1024), Some(384 * mib)), 0, "two 384 MiB indexes leave no room");
        assert_eq!(spill_bound(Some(256), None), 0, "the smallest indexer does not spill");
    }
}
