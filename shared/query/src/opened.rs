//! Segments a cache folder keeps open between queries, as Druid's historicals keep theirs
//! loaded: a warm query finds each segment mapped, with the dictionaries and time range
//! earlier queries decoded from it, instead of checking, reopening and decoding its file again.
//!
//! Bounded two ways: at most [`MAX_OPEN`] segments, and at most a number of bytes of decoded
//! values among them; past either, the segments used longest ago are closed (a query holding
//! one keeps it until it is done). A segment whose file the folder evicts is closed too.

use sluice_format::segment::Segment;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Most segments kept open.
pub const MAX_OPEN: usize = 8192;

/// Bytes of decoded values the open segments keep by default.
pub const DEFAULT_DECODED_BYTES: usize = 256 << 20;

/// How long a file's modification time stands for its last use: a segment used again within
/// this is not touched again (the folder evicts by modification time).
pub const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// Open segments by file path.
#[derive(Debug)]
pub struct Opened {
    max_decoded: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    segments: HashMap<PathBuf, Entry>,
    /// Ticks of use: the entry with the lowest was used longest ago.
    tick: u64,
    /// Uses since the limits were last enforced.
    since_check: u32,
}

#[derive(Debug)]
struct Entry {
    segment: Segment,
    size: u64,
    used: u64,
    touched: Instant,
}

/// What [`Opened::get`] found.
pub enum Found {
    /// The segment, open.
    Open(Segment),
    /// The segment, open, whose file should be marked used now.
    Stale(Segment),
    /// Not open.
    Missing,
}

impl Opened {
    /// Nothing open; at most `max_decoded` bytes of decoded values kept.
    pub fn new(max_decoded: usize) -> Self {
        Self { max_decoded, state: Mutex::default() }
    }

    /// The segment of file `path` of `size` bytes, if open.
    pub fn get(&self, path: &Path, size: u64) -> Found {
        let mut state = self.lock();
        state.tick += 1;
        let tick = state.tick;
        let found = match state.segments.get_mut(path) {
            Some(e) if e.size == size => {
                e.used = tick;
                if e.touched.elapsed() < TOUCH_EVERY {
                    Found::Open(e.segment.clone())
                } else {
                    e.touched = Instant::now();
                    Found::Stale(e.segment.clone())
                }
            }
            _ => Found::Missing,
        };
        state.since_check += 1;
        if state.since_check >= 256 {
            self.enforce(&mut state);
        }
        found
    }

    /// Keeps `segment`, opened from file `path` of `size` bytes (just checked or written).
    pub fn put(&self, path: &Path, size: u64, segment: Segment) {
        let mut state = self.lock();
        state.tick += 1;
        let entry = Entry { segment, size, used: state.tick, touched: Instant::now() };
        state.segments.insert(path.to_path_buf(), entry);
        self.enforce(&mut state);
    }

    /// Closes the segments of `paths` (files the folder deleted).
    pub fn forget(&self, paths: &[PathBuf]) {
        let mut state = self.lock();
        for p in paths {
            state.segments.remove(p);
        }
    }

    /// Number of segments open.
    pub fn len(&self) -> usize {
        self.lock().segments.len()
    }

    /// Returns true when no segment is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Closes the segments used longest ago until the limits hold.
    fn enforce(&self, state: &mut State) {
        state.since_check = 0;
        let decoded: usize = state.segments.values().map(|e| e.segment.decoded_bytes()).sum();
        if state.segments.len() <= MAX_OPEN && decoded <= self.max_decoded {
            return;
        }
        let mut by_use: Vec<(u64, PathBuf, usize)> =
            state.segments.iter().map(|(p, e)| (e.used, p.clone(), e.segment.decoded_bytes())).collect();
        by_use.sort_unstable();
        let (mut open, mut decoded) = (state.segments.len(), decoded);
        for (_, path, bytes) in by_use {
            if open <= MAX_OPEN && decoded <= self.max_decoded {
                break;
            }
            state.segments.remove(&path);
            open -= 1;
            decoded -= bytes;
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(dir: &Path, name: &str) -> (PathBuf, Segment) {
        let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/golden/rollup-2018-01-01.lz4.seg");
        let path = dir.join(name);
        std::fs::copy(golden, &path).expect("copy");
        let segment = Segment::open_file(&path).expect("open");
        (path, segment)
    }

    #[test]
    fn a_segment_stays_open_until_its_decoded_values_pass_the_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let opened = Opened::new(0);
        let (path, seg) = segment(dir.path(), "a.seg");
        let size = seg.size() as u64;
        opened.put(&path, size, seg.clone());
        assert!(matches!(opened.get(&path, size), Found::Open(_)), "kept: nothing decoded yet");
        assert!(matches!(opened.get(&path, size + 1), Found::Missing), "another size is another object");
        let col = seg.directory().columns.iter().find(|c| c.kind == sluice_format::segment::ColumnType::String);
        seg.decoded_dictionary(col.expect("a string column")).expect("decode");
        assert!(seg.decoded_bytes() > 0);
        let (other, seg2) = segment(dir.path(), "b.seg");
        opened.put(&other, size, seg2);
        assert!(matches!(opened.get(&path, size), Found::Missing), "over the limit: the older segment is closed");
        assert_eq!(opened.len(), 1);
        opened.forget(&[other]);
        assert!(opened.is_empty());
    }
}
