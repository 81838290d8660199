//! Reading a piece of input as records, one per line: a byte range starts after the first
//! newline at or past its start (the line it cuts belongs to the range before) and ends with
//! the line that starts before its end, so ranges cut anywhere read every line once.

use super::access::BatchAccess;
use super::BatchError;
use bytes::Bytes;
use sluice_layout::batch::{Piece, PieceSource};
use sluice_store::storage::{open_store, ObjectStore, StorageError};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Cursor, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

/// Bytes of one record at most: a longer line is one unparseable record.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// The lines of one piece.
pub struct PieceReader {
    inner: Box<dyn BufRead + Send>,
    /// Offset of the next byte `inner` gives.
    pos: u64,
    /// Lines starting at or past this are the next piece's.
    end: Option<u64>,
    /// The first bytes up to a newline are the piece before's.
    skip_first: bool,
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
    let skip_first = piece.start > 0;
    if piece.gzip && piece.start > 0 {
        return Err(BatchError::Input(format!("{name}: a gzipped file is read whole")));
    }
    let raw: Box<dyn BufRead + Send> = match &piece.source {
        PieceSource::Inline => {
            let from = usize::try_from(from).unwrap_or(usize::MAX).min(inline.len());
            Box::new(Cursor::new(Bytes::copy_from_slice(&inline.as_bytes()[from..])))
        }
        PieceSource::Local { path } => {
            let path = access.local_path(Path::new(path))?;
            let mut file = std::fs::File::open(&path).map_err(read_error)?;
            file.seek(SeekFrom::Start(from)).map_err(read_error)?;
            Box::new(BufReader::with_capacity(1 << 20, file))
        }
        PieceSource::S3 { bucket, key } => {
            access.bucket(bucket)?;
            let store = match buckets.get(bucket) {
                Some(store) => store.clone(),
                None => {
                    let store =
                        open_store(&format!("s3://{bucket}")).await.map_err(|e| BatchError::Input(e.to_string()))?;
                    buckets.insert(bucket.clone(), store.clone());
                    store
                }
            };
            let fetched = match piece.end {
                None if from == 0 => store.get(key).await,
                // The last line may run past the end: up to one record's bytes more.
                end => store.get_range(key, from..end.map_or(u64::MAX, |e| e + MAX_LINE_BYTES as u64 + 1)).await,
            };
            let bytes = fetched.map_err(|e| match e {
                StorageError::NotFound { .. } => BatchError::Input(format!("{name} does not exist")),
                e => BatchError::Storage { object: name.clone(), source: e },
            })?;
            Box::new(Cursor::new(bytes))
        }
    };
    let inner: Box<dyn BufRead + Send> = if piece.gzip {
        Box::new(BufReader::with_capacity(1 << 20, flate2::read::MultiGzDecoder::new(raw)))
    } else {
        raw
    };
    Ok(PieceReader { inner, pos: from, end: piece.end, skip_first })
}

impl PieceReader {
    /// A reader over `bytes` as the piece `[start, end)` of a file whose byte `start - 1`
    /// (when `start > 0`) is the first of `bytes`.
    pub fn over(bytes: Vec<u8>, start: u64, end: Option<u64>) -> Self {
        PieceReader { inner: Box::new(Cursor::new(bytes)), pos: start.saturating_sub(1), end, skip_first: start > 0 }
    }

    /// The next record into `line` (cut at [`MAX_LINE_BYTES`]): its offset and whether it was
    /// cut, or `None` past the piece.
    pub fn next_line(&mut self, line: &mut Vec<u8>) -> std::io::Result<Option<(u64, bool)>> {
        if self.skip_first {
            self.skip_first = false;
            let mut sink = Vec::new();
            if self.read_line(&mut sink, 0)?.is_none() {
                return Ok(None);
            }
        }
        if self.end.is_some_and(|end| self.pos >= end) {
            return Ok(None);
        }
        let start = self.pos;
        line.clear();
        let Some(cut) = self.read_line(line, MAX_LINE_BYTES)? else { return Ok(None) };
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Ok(Some((start, cut)))
    }

    /// Reads through the next newline, keeping at most `keep` bytes of it: `None` at the end
    /// of the input, else whether bytes were dropped.
    fn read_line(&mut self, out: &mut Vec<u8>, keep: usize) -> std::io::Result<Option<bool>> {
        let mut any = false;
        let mut cut = false;
        loop {
            let buf = self.inner.fill_buf()?;
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
            self.inner.consume(take);
            self.pos += take as u64;
            if done {
                return Ok(Some(cut));
            }
        }
    }
}

/// Reads all of `r` (tests).
#[cfg(test)]
fn lines(mut r: PieceReader) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut line = Vec::new();
    while let Some((at, _)) = r.next_line(&mut line).expect("read") {
        out.push((at, String::from_utf8(line.clone()).expect("utf-8")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cut_anywhere_read_every_line_once() {
        let text = b"aa\nbbbb\n\nc\r\ndddddd\ne";
        let whole = lines(PieceReader::over(text.to_vec(), 0, None));
        let names: Vec<&str> = whole.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(names, ["aa", "bbbb", "", "c", "dddddd", "e"]);
        for a in 0..=text.len() as u64 {
            for b in a..=text.len() as u64 {
                let piece = |s: u64, e: u64| {
                    let from = s.saturating_sub(1) as usize;
                    let end = (e < text.len() as u64).then_some(e);
                    lines(PieceReader::over(text[from..].to_vec(), s, end))
                };
                let mut got = piece(0, a);
                got.extend(piece(a, b));
                got.extend(piece(b, text.len() as u64));
                assert_eq!(got, whole, "cut at {a} and {b}");
            }
        }
    }

    #[test]
    fn a_line_past_the_bound_is_cut_and_the_next_one_read() {
        let mut text = vec![b'x'; MAX_LINE_BYTES + 10];
        text.extend_from_slice(b"\nnext\n");
        let mut r = PieceReader::over(text, 0, None);
        let mut line = Vec::new();
        assert_eq!(r.next_line(&mut line).expect("read"), Some((0, true)));
        assert_eq!(line.len(), MAX_LINE_BYTES);
        assert_eq!(r.next_line(&mut line).expect("read"), Some((MAX_LINE_BYTES as u64 + 11, false)));
        assert_eq!(line, b"next");
        assert_eq!(r.next_line(&mut line).expect("read"), None);
    }

    #[tokio::test]
    async fn gzipped_and_ranged_local_files_read_as_their_lines() {
        let dir = tempfile::tempdir().expect("dir");
        let plain = dir.path().join("p.json");
        std::fs::write(&plain, "one\ntwo\nthree\n").expect("write");
        let gz = dir.path().join("p.json.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, b"one\ntwo\n").expect("gzip");
        std::fs::write(&gz, enc.finish().expect("gzip")).expect("write");
        let access = BatchAccess::default().allow_dir(dir.path());
        let mut buckets = Buckets::new();
        let local = |path: &Path, start, end, gzip| Piece {
            source: PieceSource::Local { path: path.display().to_string() },
            start,
            end,
            gzip,
        };
        let r = open_piece(&local(&gz, 0, None, true), "", &access, &mut buckets).await.expect("open");
        assert_eq!(lines(r), vec![(0, "one".into()), (4, "two".into())]);
        let r = open_piece(&local(&plain, 5, Some(9), false), "", &access, &mut buckets).await.expect("open");
        assert_eq!(lines(r), vec![(8, "three".into())], "two starts before 5: the range before's");
        let inline = |start, end| Piece { source: PieceSource::Inline, start, end, gzip: false };
        let r = open_piece(&inline(0, None), "a\nb", &access, &mut buckets).await.expect("open");
        assert_eq!(lines(r), vec![(0, "a".into()), (2, "b".into())]);
        let r = open_piece(&inline(0, Some(3)), "aa\nbb\ncc", &access, &mut buckets).await.expect("open");
        assert_eq!(lines(r), vec![(0, "aa".into())], "inline data is cut like a file");
        let r = open_piece(&inline(3, Some(6)), "aa\nbb\ncc", &access, &mut buckets).await.expect("open");
        assert_eq!(lines(r), vec![(3, "bb".into())]);
    }
}
