//! Unit tests of reading a piece: ranges cut anywhere, long and endless lines, gzip as it
//! comes, objects fetched a chunk at a time and never past their planned size nor of another
//! version, the deadline.

use super::*;
use async_trait::async_trait;
use sluice_store::storage::{LocalStore, ObjectMeta};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// A store that records the bytes each read asked for.
#[derive(Debug)]
struct Recording {
    inner: LocalStore,
    /// `(whole object?, bytes asked for)` of each read.
    reads: Mutex<Vec<(bool, u64)>>,
    /// Ranged reads panic (a fetch's task that stops without answering).
    panics: AtomicBool,
}

impl Recording {
    fn new(dir: &Path) -> Arc<Self> {
        let inner = LocalStore::open(&format!("file://{}", dir.display()), &dir.display().to_string()).expect("store");
        Arc::new(Recording { inner, reads: Mutex::new(Vec::new()), panics: AtomicBool::new(false) })
    }

    fn largest_read(&self) -> u64 {
        let reads = self.reads.lock().expect("reads");
        assert!(reads.iter().all(|(whole, _)| !whole), "an object was read whole: {reads:?}");
        reads.iter().map(|(_, n)| *n).max().unwrap_or(0)
    }
}

#[async_trait]
impl ObjectStore for Recording {
    fn url(&self) -> &str {
        self.inner.url()
    }
    async fn put(&self, key: &str, bytes: Bytes) -> Result<(), StorageError> {
        self.inner.put(key, bytes).await
    }
    async fn put_if_absent(&self, key: &str, bytes: Bytes) -> Result<(), StorageError> {
        self.inner.put_if_absent(key, bytes).await
    }
    async fn get(&self, key: &str) -> Result<Bytes, StorageError> {
        let bytes = self.inner.get(key).await?;
        self.reads.lock().expect("reads").push((true, bytes.len() as u64));
        Ok(bytes)
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes, StorageError> {
        self.reads.lock().expect("reads").push((false, range.end.saturating_sub(range.start)));
        assert!(!self.panics.load(Ordering::Relaxed), "a fetch that stops");
        self.inner.get_range(key, range).await
    }
    async fn get_range_if(&self, key: &str, range: Range<u64>, version: &str) -> Result<Bytes, StorageError> {
        self.reads.lock().expect("reads").push((false, range.end.saturating_sub(range.start)));
        self.inner.get_range_if(key, range, version).await
    }
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StorageError> {
        self.inner.head(key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StorageError> {
        self.inner.list(prefix).await
    }
    async fn delete(&self, key: &str) -> Result<(), StorageError> {
        self.inner.delete(key).await
    }
}

/// `n` numbered lines of `width` bytes each, newline included.
fn numbered(n: usize, width: usize) -> Vec<u8> {
    (0..n).flat_map(|i| format!("{i:0w$}\n", w = width - 1).into_bytes()).collect()
}

fn gzip(members: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in members {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(m).expect("gzip");
        out.extend(enc.finish().expect("gzip"));
    }
    out
}

fn s3_piece(key: &str, start: u64, end: Option<u64>, gzip: bool, size: Option<u64>) -> Piece {
    Piece { source: PieceSource::S3 { bucket: "in".into(), key: key.into() }, start, end, gzip, size, version: None }
}

#[tokio::test]
async fn ranges_cut_anywhere_read_every_line_once() {
    let text = b"aa\nbbbb\n\nc\r\ndddddd\ne";
    let whole = lines(PieceReader::over(text.to_vec(), 0, None)).await;
    let names: Vec<&str> = whole.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(names, ["aa", "bbbb", "", "c", "dddddd", "e"]);
    for a in 0..=text.len() as u64 {
        for b in a..=text.len() as u64 {
            let from = |s: u64| s.saturating_sub(1) as usize;
            let end = |e: u64| (e < text.len() as u64).then_some(e);
            let mut got = lines(PieceReader::over(text[from(0)..].to_vec(), 0, end(a))).await;
            got.extend(lines(PieceReader::over(text[from(a)..].to_vec(), a, end(b))).await);
            got.extend(lines(PieceReader::over(text[from(b)..].to_vec(), b, None)).await);
            assert_eq!(got, whole, "cut at {a} and {b}");
        }
    }
}

#[tokio::test]
async fn a_line_past_the_bound_is_cut_and_the_next_one_read() {
    let mut text = vec![b'x'; MAX_LINE_BYTES + 10];
    text.extend_from_slice(b"\nnext\n");
    let mut r = PieceReader::over(text, 0, None);
    let mut line = Vec::new();
    assert_eq!(r.next_line(&mut line).await.expect("read"), Some((0, true)));
    assert_eq!(line.len(), MAX_LINE_BYTES);
    assert_eq!(r.next_line(&mut line).await.expect("read"), Some((MAX_LINE_BYTES as u64 + 11, false)));
    assert_eq!(line, b"next");
    assert_eq!(r.next_line(&mut line).await.expect("read"), None);
}

#[tokio::test]
async fn a_line_that_never_ends_fails_at_its_bound_and_a_deadline_stops_any_line() {
    let mut endless = PieceReader::over(Vec::new(), 0, None);
    endless.bytes.raw = Raw::Buffered(Box::new(BufReader::new(std::io::repeat(b'x'))));
    endless.line_bound = 3 << 20;
    let mut line = Vec::new();
    match endless.next_line(&mut line).await {
        Err(e @ ReadError::EndlessLine(0)) => assert!(!e.is_transient(), "{e}"),
        other => panic!("{other:?}"),
    }
    // The piece before's cut line is skipped within the same bound.
    let mut skipped = PieceReader::over(Vec::new(), 5, None);
    skipped.bytes.raw = Raw::Buffered(Box::new(BufReader::new(std::io::repeat(b'x'))));
    skipped.line_bound = 3 << 20;
    assert!(matches!(skipped.next_line(&mut line).await, Err(ReadError::EndlessLine(4))));

    // A file read a buffer at a time: checked after the first megabyte.
    let mut late = PieceReader::over(Vec::new(), 0, None).until(Some(Instant::now()));
    late.bytes.raw = Raw::Buffered(Box::new(BufReader::new(std::io::Cursor::new(vec![b'x'; 3 << 20]))));
    match late.next_line(&mut line).await {
        Err(e @ ReadError::Deadline(at)) => assert!(e.is_transient() && at == DEADLINE_EVERY_BYTES, "{e}"),
        other => panic!("{other:?}"),
    }
    let short = PieceReader::over(b"a\nb\n".to_vec(), 0, None).until(Some(Instant::now()));
    assert_eq!(lines(short).await.len(), 2, "checked by bytes read: a short piece ends first");
}

#[tokio::test]
async fn gzipped_and_ranged_local_files_read_as_their_lines() {
    let dir = tempfile::tempdir().expect("dir");
    let plain = dir.path().join("p.json");
    std::fs::write(&plain, "one\ntwo\nthree\n").expect("write");
    let gz = dir.path().join("p.json.gz");
    std::fs::write(&gz, gzip(&[b"one\n", b"two\n"])).expect("write");
    std::fs::write(dir.path().join("empty.gz"), b"").expect("write");
    let access = BatchAccess::default().allow_dir(dir.path());
    let mut buckets = Buckets::new();
    let local = |path: &Path, start, end, gzip| Piece {
        source: PieceSource::Local { path: path.display().to_string() },
        start,
        end,
        gzip,
        size: None,
        version: None,
    };
    let r = open_piece(&local(&gz, 0, None, true), "", &access, &mut buckets).await.expect("open");
    assert_eq!(lines(r).await, vec![(0, "one".into()), (4, "two".into())], "every member");
    let empty = local(&dir.path().join("empty.gz"), 0, None, true);
    assert!(lines(open_piece(&empty, "", &access, &mut buckets).await.expect("open")).await.is_empty());
    let r = open_piece(&local(&plain, 5, Some(9), false), "", &access, &mut buckets).await.expect("open");
    assert_eq!(lines(r).await, vec![(8, "three".into())], "two starts before 5: the range before's");
    let inline = |start, end| Piece { source: PieceSource::Inline, start, end, gzip: false, size: None, version: None };
    let r = open_piece(&inline(0, None), "a\nb", &access, &mut buckets).await.expect("open");
    assert_eq!(lines(r).await, vec![(0, "a".into()), (2, "b".into())]);
    let r = open_piece(&inline(0, Some(3)), "aa\nbb\ncc", &access, &mut buckets).await.expect("open");
    assert_eq!(lines(r).await, vec![(0, "aa".into())], "inline data is cut like a file");
    let r = open_piece(&inline(3, Some(6)), "aa\nbb\ncc", &access, &mut buckets).await.expect("open");
    assert_eq!(lines(r).await, vec![(3, "bb".into())]);

    // Grown since it was planned at 8 bytes: read as planned, plain or gzipped.
    std::fs::write(&plain, "one\ntwo\nthree\nfour\n").expect("grow");
    let planned = Piece { size: Some(8), ..local(&plain, 0, None, false) };
    let r = open_piece(&planned, "", &access, &mut buckets).await.expect("open");
    assert_eq!(lines(r).await, vec![(0, "one".into()), (4, "two".into())]);
    let two = gzip(&[b"one\n"]);
    std::fs::write(&gz, [two.clone(), gzip(&[b"two\n"])].concat()).expect("grow");
    let planned = Piece { size: Some(two.len() as u64), ..local(&gz, 0, None, true) };
    let r = open_piece(&planned, "", &access, &mut buckets).await.expect("open");
    assert_eq!(lines(r).await, vec![(0, "one".into())]);
}

#[tokio::test]
async fn objects_are_fetched_a_chunk_at_a_time_and_never_whole() {
    let dir = tempfile::tempdir().expect("dir");
    let store = Recording::new(dir.path());
    // 20 MiB: two and a half chunks.
    let text = numbered(20 << 16, 16);
    store.put("rows.json", Bytes::from(text.clone())).await.expect("put");
    let access = BatchAccess::default().allow_bucket("in");
    let mut buckets = Buckets::new();
    buckets.insert("in".into(), store.clone());
    let size = Some(text.len() as u64);
    let whole = s3_piece("rows.json", 0, None, false, size);
    let got = lines(open_piece(&whole, "", &access, &mut buckets).await.expect("open")).await;
    assert_eq!(got.len(), 20 << 16);
    assert_eq!(got.last().map(|(at, l)| (*at, l.as_str())), Some((text.len() as u64 - 16, "000000001310719")));
    assert!(store.largest_read() <= CHUNK_BYTES, "{}", store.largest_read());

    // A range of 12 MiB reads its lines and one past, a chunk at a time.
    let (start, end) = (3 << 20, 15 << 20);
    let range = s3_piece("rows.json", start, Some(end), false, size);
    let got = lines(open_piece(&range, "", &access, &mut buckets).await.expect("open")).await;
    assert_eq!(got.first().map(|(at, _)| *at), Some(start));
    assert_eq!(got.len() as u64, (end - start) / 16);
    assert!(store.largest_read() <= CHUNK_BYTES, "{}", store.largest_read());

    // Grown past its planned size: read as planned.
    let mut grown = text.clone();
    grown.extend(numbered(4, 16));
    store.put("rows.json", Bytes::from(grown)).await.expect("grow");
    let got = lines(open_piece(&whole, "", &access, &mut buckets).await.expect("open")).await;
    assert_eq!(got.len(), 20 << 16, "the rows added after planning are not read");
}

#[tokio::test]
async fn gzip_decompresses_as_its_chunks_come() {
    let dir = tempfile::tempdir().expect("dir");
    let store = Recording::new(dir.path());
    let first = numbered(30_000, 12);
    let second = numbered(1_000, 40);
    let gz = gzip(&[&first, &second]);
    store.put("rows.json.gz", Bytes::from(gz.clone())).await.expect("put");
    // Chunks of 1,000 bytes: members and headers cut anywhere.
    let raw = Raw::Object(Chunks::new(store.clone(), "rows.json.gz".into(), 0, gz.len() as u64, 1_000));
    let reader = PieceReader::new(Source { raw, gunzip: Some(Box::new(Gunzip::new())) }, 0, None, false);
    let got = lines(reader).await;
    assert_eq!(got.len(), 31_000);
    assert_eq!(got[30_000], (first.len() as u64, format!("{:039}", 0)));
    assert!(store.largest_read() <= 1_000);

    let access = BatchAccess::default().allow_bucket("in");
    let mut buckets = Buckets::new();
    buckets.insert("in".into(), store.clone());
    store.put("cut.json.gz", Bytes::from(gz[..gz.len() / 2].to_vec())).await.expect("put");
    let cut = s3_piece("cut.json.gz", 0, None, true, None);
    let mut r = open_piece(&cut, "", &access, &mut buckets).await.expect("open");
    let mut line = Vec::new();
    let e = loop {
        match r.next_line(&mut line).await {
            Ok(Some(_)) => {}
            Ok(None) => panic!("a gzip stream cut short reads as complete"),
            Err(e) => break e,
        }
    };
    assert!(!e.is_transient(), "{e}");
}

#[tokio::test]
async fn deep_storage_is_refused_before_it_is_fetched() {
    let dir = tempfile::tempdir().expect("dir");
    let store = Recording::new(dir.path());
    store.put("sluice/hydrants/a.hyd", Bytes::from_static(b"h\n")).await.expect("put");
    let access = BatchAccess::default().allow_bucket("in").own_storage("s3://in/sluice");
    let mut buckets = Buckets::new();
    buckets.insert("in".into(), store.clone());
    let piece = s3_piece("sluice/hydrants/a.hyd", 0, None, false, Some(2));
    let e = open_piece(&piece, "", &access, &mut buckets).await.err().expect("deep storage");
    assert!(e.to_string().contains("own deep storage"), "{e}");
    assert!(store.reads.lock().expect("reads").is_empty());
}

#[tokio::test]
async fn gzip_that_decompresses_to_nothing_is_read_within_the_deadline() {
    // 2 MiB of empty members: not a byte of output, so nothing for the reader to count.
    let empty = gzip(&[b""]);
    let stream: Vec<u8> = empty.iter().copied().cycle().take(empty.len() * ((2 << 20) / empty.len())).collect();
    let raw = Raw::Buffered(Box::new(BufReader::new(Cursor::new(stream.clone()))));
    let source = Source { raw, gunzip: Some(Box::new(Gunzip::new())) };
    let mut late = PieceReader::new(source, 0, None, false).until(Some(Instant::now()));
    let mut line = Vec::new();
    match late.next_line(&mut line).await {
        Err(e @ ReadError::Deadline(at)) => assert!(e.is_transient() && at < stream.len() as u64, "{e}"),
        other => panic!("read to its end past the deadline: {other:?}"),
    }
    // In time, the same stream reads as no line.
    let raw = Raw::Buffered(Box::new(BufReader::new(Cursor::new(stream))));
    let source = Source { raw, gunzip: Some(Box::new(Gunzip::new())) };
    assert!(lines(PieceReader::new(source, 0, None, false)).await.is_empty());
}

#[tokio::test]
async fn an_object_replaced_while_it_is_read_fails_its_split_naming_it() {
    let dir = tempfile::tempdir().expect("dir");
    let store = Recording::new(dir.path());
    let text = numbered(1_000, 10);
    store.put("rows.json", Bytes::from(text.clone())).await.expect("put");
    let planned = store.head("rows.json").await.expect("head").and_then(|m| m.version).expect("a version");
    // Chunks of 1,000 bytes: the object is replaced after the first lines are read.
    let chunks = Chunks::new(store.clone(), "rows.json".into(), 0, text.len() as u64, 1_000);
    let raw = Raw::Object(chunks.of_version(Some(planned.clone())));
    let mut r = PieceReader::new(Source { raw, gunzip: None }, 0, None, false);
    let mut line = Vec::new();
    assert_eq!(r.next_line(&mut line).await.expect("read"), Some((0, false)));
    assert_eq!(line, b"000000000");
    store
        .put("rows.json", Bytes::from(numbered(1_000, 10).iter().map(|b| b ^ 1).collect::<Vec<_>>()))
        .await
        .expect("put");
    let e = loop {
        match r.next_line(&mut line).await {
            Ok(Some(_)) => assert!(line.iter().all(u8::is_ascii_digit), "a line of the new version: {line:?}"),
            Ok(None) => panic!("read to the end across two versions"),
            Err(e) => break e,
        }
    };
    assert!(matches!(e, ReadError::Replaced(_)) && !e.is_transient(), "{e}");
    assert!(e.to_string().contains("replaced since the task was planned"), "{e}");

    // Planned at a version no longer stored: refused from the first byte.
    let access = BatchAccess::default().allow_bucket("in");
    let mut buckets = Buckets::new();
    buckets.insert("in".into(), store.clone());
    let piece = Piece { version: Some(planned), ..s3_piece("rows.json", 0, None, false, Some(text.len() as u64)) };
    let mut r = open_piece(&piece, "", &access, &mut buckets).await.expect("open");
    assert!(matches!(r.next_line(&mut line).await, Err(ReadError::Replaced(0))));
}

#[tokio::test]
async fn a_fetch_that_stops_gives_the_split_back() {
    let dir = tempfile::tempdir().expect("dir");
    let store = Recording::new(dir.path());
    store.put("rows.json", Bytes::from(numbered(10, 10))).await.expect("put");
    store.panics.store(true, Ordering::Relaxed);
    let raw = Raw::Object(Chunks::new(store.clone(), "rows.json".into(), 0, 100, 1_000));
    let mut r = PieceReader::new(Source { raw, gunzip: None }, 0, None, false);
    match r.next_line(&mut Vec::new()).await {
        Err(e @ ReadError::FetchStopped { at: 0, .. }) => assert!(e.is_transient(), "{e}"),
        other => panic!("{other:?}"),
    }
}
