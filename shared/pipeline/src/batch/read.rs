//! Reading a piece of input as records, one per line: a byte range starts after the first
//! newline at or past its start (the line it cuts belongs to the range before) and ends with
//! the line that starts before its end, so ranges cut anywhere read every line once.
//!
//! Memory and time are bounded whatever the input: an object is fetched [`CHUNK_BYTES`] at a
//! time (the next while the last is read) and gzip is decompressed as it comes, so a split
//! holds a chunk and a record, not its input; nothing is read past the size the file had when
//! the task was planned, nor of an object another version than the one planned (each fetch
//! asks for its ETag); a line is kept up to [`MAX_LINE_BYTES`] and read up to
//! [`MAX_SKIPPED_LINE_BYTES`]; and the deadline is checked every [`DEADLINE_EVERY_BYTES`] read,
//! of the input as stored and as decompressed (gzip that decompresses to nothing is read in
//! time too).

use super::access::BatchAccess;
use super::BatchError;
use bytes::Bytes;
use sluice_layout::batch::{Piece, PieceSource};
use sluice_store::storage::{open_store, ObjectStore, StorageError};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Cursor, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use tokio::task::JoinHandle;

/// Bytes of one record at most: a longer line is one unparseable record.
pub const MAX_LINE_BYTES: usize = 16 << 20;
/// Bytes of one line read at most: past them no record ends (a line that never ends, a
/// decompressed stream without newlines), and the split fails.
pub const MAX_SKIPPED_LINE_BYTES: u64 = 1 << 30;
/// Bytes of an object fetched at once.
pub const CHUNK_BYTES: u64 = 8 << 20;
/// Bytes read between checks of the deadline.
pub const DEADLINE_EVERY_BYTES: u64 = 1 << 20;
/// Compressed bytes handed to the decompressor at once (it writes at most its own buffer's
/// worth of output per step, whatever the input).
const GZIP_FEED_BYTES: usize = 64 << 10;

/// Why a piece could not be read on.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file or the decompression failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// An object could not be fetched.
    #[error("fetching bytes {at}..: {source}")]
    Fetch {
        /// The first byte asked for.
        at: u64,
        /// The error.
        source: StorageError,
    },
    /// A fetch ahead stopped before it answered (its task panicked or was cancelled).
    #[error("fetching bytes {at}..: the fetch stopped: {reason}")]
    FetchStopped {
        /// The first byte asked for.
        at: u64,
        /// Why.
        reason: String,
    },
    /// The object is another version than the one the task planned: it was replaced since.
    #[error("replaced since the task was planned (another version at byte {0}): a task reads the objects it listed; submit a new task to read it")]
    Replaced(u64),
    /// The attempt's deadline passed.
    #[error("the deadline passed at byte {0}")]
    Deadline(u64),
    /// A line ran past [`MAX_SKIPPED_LINE_BYTES`].
    #[error("the line at byte {0} runs past {MAX_SKIPPED_LINE_BYTES} bytes: no record ends there")]
    EndlessLine(u64),
}

impl ReadError {
    /// Whether a later attempt may read on (out of time, a store failing), rather than the
    /// input being unreadable.
    pub fn is_transient(&self) -> bool {
        match self {
            ReadError::Deadline(_) | ReadError::FetchStopped { .. } => true,
            ReadError::Fetch { source, .. } => {
                !matches!(source, StorageError::NotFound { .. } | StorageError::Changed { .. })
            }
            ReadError::Io(_) | ReadError::EndlessLine(_) | ReadError::Replaced(_) => false,
        }
    }
}

/// The lines of one piece.
pub struct PieceReader {
    bytes: Source,
    /// Offset of the next byte `bytes` gives.
    pos: u64,
    /// Lines starting at or past this are the next piece's.
    end: Option<u64>,
    /// The first bytes up to a newline are the piece before's.
    skip_first: bool,
    /// Reading stops when it passes.
    deadline: Option<Instant>,
    /// `pos` when the deadline was last checked.
    checked_at: u64,
    /// Bytes of one line read at most.
    line_bound: u64,
}

/// Buckets' stores, opened once per split.
pub type Buckets = HashMap<String, Arc<dyn ObjectStore>>;

/// Opens a piece: `inline` is the spec's inline data.
pub async fn open_piece(
    piece: &Piece,
    inline: &str,
    access: &BatchAccess,
    buckets: &mut Buckets,
) -> Result<PieceReader, BatchError> {
    let name = piece.name();
    let read_error = |e: std::io::Error| BatchError::Input(format!("{name}: {e}"));
    let from = piece.start.saturating_sub(1);
    if piece.gzip && piece.start > 0 {
        return Err(BatchError::Input(format!("{name}: a gzipped file is read whole")));
    }
    let limit = raw_limit(piece);
    let raw = match &piece.source {
        PieceSource::Inline => {
            let to = usize::try_from(limit.unwrap_or(u64::MAX)).unwrap_or(usize::MAX).min(inline.len());
            let from = usize::try_from(from).unwrap_or(usize::MAX).min(to);
            Raw::Buffered(Box::new(Cursor::new(Bytes::copy_from_slice(&inline.as_bytes()[from..to]))))
        }
        PieceSource::Local { path } => {
            let (mut file, _, _) = access.open_local(Path::new(path))?;
            file.seek(SeekFrom::Start(from)).map_err(read_error)?;
            let file = file.take(limit.map_or(u64::MAX, |l| l.saturating_sub(from)));
            Raw::Buffered(Box::new(BufReader::with_capacity(1 << 20, file)))
        }
        PieceSource::S3 { bucket, key } => {
            access.object(bucket, key)?;
            let store = match buckets.get(bucket) {
                Some(store) => store.clone(),
                None => {
                    let store =
                        open_store(&format!("s3://{bucket}")).await.map_err(|e| BatchError::Input(e.to_string()))?;
                    buckets.insert(bucket.clone(), store.clone());
                    store
                }
            };
            let chunks = Chunks::new(store, key.clone(), from, limit.unwrap_or(u64::MAX), CHUNK_BYTES);
            Raw::Object(chunks.of_version(piece.version.clone()))
        }
    };
    let gunzip = piece.gzip.then(|| Box::new(Gunzip::new()));
    Ok(PieceReader::new(Source { raw, gunzip }, from, piece.end, piece.start > 0))
}

/// One past the last byte of its file a piece may read: a range reads on through the line
/// that starts before its end (a record's bytes at most); nothing past the size the file had
/// when the task was planned; a gzipped file whole (its compressed bytes).
fn raw_limit(piece: &Piece) -> Option<u64> {
    let past_end = piece.end.filter(|_| !piece.gzip).map(|e| e.saturating_add(MAX_LINE_BYTES as u64 + 1));
    match (past_end, piece.size) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl PieceReader {
    fn new(bytes: Source, pos: u64, end: Option<u64>, skip_first: bool) -> Self {
        PieceReader { bytes, pos, end, skip_first, deadline: None, checked_at: pos, line_bound: MAX_SKIPPED_LINE_BYTES }
    }

    /// A reader over `bytes` as the piece `[start, end)` of a file whose byte `start - 1`
    /// (when `start > 0`) is the first of `bytes`.
    pub fn over(bytes: Vec<u8>, start: u64, end: Option<u64>) -> Self {
        let raw = Raw::Buffered(Box::new(Cursor::new(bytes)));
        PieceReader::new(Source { raw, gunzip: None }, start.saturating_sub(1), end, start > 0)
    }

    /// The reader, stopping with [`ReadError::Deadline`] once `deadline` passed.
    pub fn until(mut self, deadline: Option<Instant>) -> Self {
        self.deadline = deadline;
        if let Some(g) = &mut self.bytes.gunzip {
            g.deadline = deadline;
        }
        self
    }

    /// The next record into `line` (cut at [`MAX_LINE_BYTES`]): its offset and whether it was
    /// cut, or `None` past the piece.
    pub async fn next_line(&mut self, line: &mut Vec<u8>) -> Result<Option<(u64, bool)>, ReadError> {
        if self.skip_first {
            self.skip_first = false;
            let mut sink = Vec::new();
            if self.read_line(&mut sink, 0).await?.is_none() {
                return Ok(None);
            }
        }
        if self.end.is_some_and(|end| self.pos >= end) {
            return Ok(None);
        }
        let start = self.pos;
        line.clear();
        let Some(cut) = self.read_line(line, MAX_LINE_BYTES).await? else { return Ok(None) };
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Ok(Some((start, cut)))
    }

    /// Reads through the next newline, keeping at most `keep` bytes of it: `None` at the end
    /// of the input, else whether bytes were dropped.
    async fn read_line(&mut self, out: &mut Vec<u8>, keep: usize) -> Result<Option<bool>, ReadError> {
        let start = self.pos;
        let mut any = false;
        let mut cut = false;
        loop {
            if self.pos - self.checked_at >= DEADLINE_EVERY_BYTES {
                self.checked_at = self.pos;
                if self.deadline.is_some_and(|d| Instant::now() >= d) {
                    return Err(ReadError::Deadline(self.pos));
                }
            }
            if self.pos - start > self.line_bound {
                return Err(ReadError::EndlessLine(start));
            }
            let buf = self.bytes.fill().await?;
            if buf.is_empty() {
                return Ok(any.then_some(cut));
            }
            any = true;
            let (take, done) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            let content = if done { take - 1 } else { take };
            let room = keep.saturating_sub(out.len());
            out.extend_from_slice(&buf[..content.min(room)]);
            cut |= content > room;
            self.bytes.consume(take);
            self.pos += take as u64;
            if done {
                return Ok(Some(cut));
            }
        }
    }
}

/// A piece's bytes: raw, or decompressed as they come.
struct Source {
    raw: Raw,
    gunzip: Option<Box<Gunzip>>,
}

impl Source {
    /// The bytes available next (empty at the end).
    async fn fill(&mut self) -> Result<&[u8], ReadError> {
        let Source { raw, gunzip } = self;
        match gunzip {
            None => raw.fill().await,
            Some(g) => g.fill(raw).await,
        }
    }

    /// Marks `n` of the bytes [`Source::fill`] gave as read.
    fn consume(&mut self, n: usize) {
        match &mut self.gunzip {
            None => self.raw.consume(n),
            Some(g) => g.at += n,
        }
    }
}

/// A file's bytes as stored.
enum Raw {
    /// Read in place (inline data, a local file).
    Buffered(Box<dyn BufRead + Send>),
    /// Fetched a chunk at a time.
    Object(Chunks),
}

impl Raw {
    async fn fill(&mut self) -> Result<&[u8], ReadError> {
        match self {
            Raw::Buffered(r) => Ok(r.fill_buf()?),
            Raw::Object(c) => c.fill().await,
        }
    }

    fn consume(&mut self, n: usize) {
        match self {
            Raw::Buffered(r) => r.consume(n),
            Raw::Object(c) => c.at += n,
        }
    }
}

/// An object's bytes `[next, limit)`, fetched `size` bytes ([`CHUNK_BYTES`]) at a time, one
/// chunk ahead.
struct Chunks {
    store: Arc<dyn ObjectStore>,
    key: String,
    /// The first byte not fetched.
    next: u64,
    /// One past the last byte to fetch.
    limit: u64,
    /// Bytes fetched at once.
    size: u64,
    /// The object's version every fetch asks for (`None`: whichever is stored).
    version: Option<String>,
    chunk: Bytes,
    /// Bytes of `chunk` read.
    at: usize,
    /// The next chunk, being fetched.
    ahead: Option<(u64, JoinHandle<Result<Bytes, StorageError>>)>,
}

impl Chunks {
    fn new(store: Arc<dyn ObjectStore>, key: String, from: u64, limit: u64, size: u64) -> Self {
        Chunks { store, key, next: from, limit, size, version: None, chunk: Bytes::new(), at: 0, ahead: None }
    }

    /// The chunks of `version` of the object only (`None`: of whichever is stored).
    fn of_version(mut self, version: Option<String>) -> Self {
        self.version = version;
        self
    }

    /// Starts fetching the chunk at `next`, if any is left.
    fn fetch_ahead(&mut self) {
        if self.next >= self.limit || self.ahead.is_some() {
            return;
        }
        let range = self.next..self.limit.min(self.next.saturating_add(self.size));
        let (store, key, version, at) = (self.store.clone(), self.key.clone(), self.version.clone(), self.next);
        let fetch = async move {
            match version {
                Some(v) => store.get_range_if(&key, range, &v).await,
                None => store.get_range(&key, range).await,
            }
        };
        self.ahead = Some((at, tokio::spawn(fetch)));
    }

    async fn fill(&mut self) -> Result<&[u8], ReadError> {
        if self.at == self.chunk.len() {
            self.fetch_ahead();
            if let Some((at, fetch)) = self.ahead.take() {
                // A fetch that stopped (cancelled, panicked) says nothing of the object: a
                // later attempt fetches again.
                let fetched = fetch.await.map_err(|e| ReadError::FetchStopped { at, reason: e.to_string() })?;
                let bytes = fetched.map_err(|source| match source {
                    StorageError::Changed { .. } => ReadError::Replaced(at),
                    source => ReadError::Fetch { at, source },
                })?;
                let asked = self.limit.min(at.saturating_add(self.size)) - at;
                // A short chunk is the object's end (it shrank since it was planned).
                self.next = if (bytes.len() as u64) < asked { self.limit } else { at + asked };
                self.chunk = bytes;
                self.at = 0;
                self.fetch_ahead();
            }
        }
        Ok(&self.chunk[self.at..])
    }
}

impl Drop for Chunks {
    fn drop(&mut self) {
        if let Some((_, fetch)) = self.ahead.take() {
            fetch.abort();
        }
    }
}

/// Gzip members decompressed as their bytes come, a step at a time.
struct Gunzip {
    decoder: flate2::write::MultiGzDecoder<Vec<u8>>,
    /// Decompressed bytes not yet read past `at`.
    out: Vec<u8>,
    at: usize,
    /// Compressed bytes handed over.
    fed: u64,
    /// `fed` when the deadline was last checked.
    checked_at: u64,
    /// Decompressing stops when it passes, however little comes out.
    deadline: Option<Instant>,
    done: bool,
}

impl Gunzip {
    fn new() -> Self {
        Gunzip {
            decoder: flate2::write::MultiGzDecoder::new(Vec::new()),
            out: Vec::new(),
            at: 0,
            fed: 0,
            checked_at: 0,
            deadline: None,
            done: false,
        }
    }

    async fn fill(&mut self, raw: &mut Raw) -> Result<&[u8], ReadError> {
        while self.at == self.out.len() && !self.done {
            self.out.clear();
            self.at = 0;
            let input = raw.fill().await?;
            if input.is_empty() {
                // An empty file holds no member to finish.
                if self.fed > 0 {
                    self.decoder.try_finish()?;
                }
                self.done = true;
            } else {
                let feed = input.len().min(GZIP_FEED_BYTES);
                let n = self.decoder.write(&input[..feed])?;
                if n == 0 {
                    return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "the gzip stream stalled").into());
                }
                raw.consume(n);
                self.fed += n as u64;
                // Counted in compressed bytes: members that decompress to nothing give the
                // reader no byte to count.
                if self.fed - self.checked_at >= DEADLINE_EVERY_BYTES {
                    self.checked_at = self.fed;
                    if self.deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(ReadError::Deadline(self.fed));
                    }
                    tokio::task::yield_now().await;
                }
            }
            std::mem::swap(&mut self.out, self.decoder.get_mut());
        }
        Ok(&self.out[self.at..])
    }
}

/// Reads all of `r` (tests).
#[cfg(test)]
async fn lines(mut r: PieceReader) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut line = Vec::new();
    while let Some((at, _)) = r.next_line(&mut line).await.expect("read") {
        out.push((at, String::from_utf8(line.clone()).expect("utf-8")));
    }
    out
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
