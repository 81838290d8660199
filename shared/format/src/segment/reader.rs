//! Opens a segment from bytes or a file (mmap) and hands out its columns one at a time; only
//! the parts a caller asks for are checksummed and decoded.

use super::decoded::Decoded;
use super::directory::{
    ColumnEntry, ColumnType, Directory, PartRef, FORMAT_VERSION, HEADER_LEN, MAGIC, MAX_DIRECTORY_BYTES,
    OLDEST_FORMAT_VERSION,
};
use super::parts::{BytesPart, NumericPart, KIND_LONGS};
use super::FormatError;
use super::StoredDictionary;
use roaring::RoaringBitmap;
use std::path::Path;
use std::sync::Arc;

/// The bytes of a segment: owned, memory-mapped, or shared with their owner.
#[derive(Clone)]
enum Bytes {
    Owned(Arc<[u8]>),
    Mapped(Arc<memmap2::Mmap>),
    Shared(Arc<dyn AsRef<[u8]> + Send + Sync>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Owned(b) => b,
            Bytes::Mapped(m) => m,
            Bytes::Shared(b) => b.as_ref().as_ref(),
        }
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            Bytes::Owned(_) => "owned",
            Bytes::Mapped(_) => "mapped",
            Bytes::Shared(_) => "shared",
        };
        write!(f, "{kind} {} bytes", self.as_slice().len())
    }
}

/// An opened segment.
#[derive(Debug, Clone)]
pub struct Segment {
    object: String,
    bytes: Bytes,
    dir: Directory,
    data_start: usize,
    /// What readers decoded from it, shared by clones.
    decoded: Arc<Decoded>,
}

/// A string dimension's parts.
#[derive(Debug, Clone, Copy)]
pub struct StringColumn<'a> {
    /// Sorted non-null values; id `k` is value `k - 1`, id 0 is null.
    pub dictionary: BytesPart<'a>,
    /// Ids, one per row (or per value of multi-value rows).
    pub ids: NumericPart<'a>,
    /// Multi-value rows: `num_rows + 1` offsets into `ids`.
    pub offsets: Option<NumericPart<'a>>,
    /// One portable Roaring bitmap per id (id 0: the null rows); none when the dimension
    /// was written without them (`createBitmapIndex: false`).
    pub bitmaps: Option<BytesPart<'a>>,
}

impl Segment {
    /// Opens a segment held in memory; `object` names it in errors.
    pub fn from_bytes(object: &str, bytes: impl Into<Arc<[u8]>>) -> Result<Self, FormatError> {
        Self::open(object, Bytes::Owned(bytes.into()))
    }

    /// Opens a segment from bytes its `owner` keeps (a `bytes::Bytes` being uploaded, say),
    /// without copying them.
    pub fn from_owner(object: &str, owner: impl AsRef<[u8]> + Send + Sync + 'static) -> Result<Self, FormatError> {
        Self::open(object, Bytes::Shared(Arc::new(owner)))
    }

    /// Opens a segment file by memory-mapping it.
    pub fn open_file(path: &Path) -> Result<Self, FormatError> {
        Self::open_file_named(path, &path.display().to_string())
    }

    /// Opens a segment file by memory-mapping it; `object` names it in errors (a local copy
    /// is named by the object it was downloaded from).
    pub fn open_file_named(path: &Path, object: &str) -> Result<Self, FormatError> {
        let object = object.to_string();
        let file = std::fs::File::open(path).map_err(|e| FormatError::new(&object, e.to_string()))?;
        // SAFETY: segment files are immutable once written (they are renamed into place and
        // never modified), so the mapping cannot change under the reader.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| FormatError::new(&object, e.to_string()))?;
        Self::open(&object, Bytes::Mapped(Arc::new(map)))
    }

    fn open(object: &str, bytes: Bytes) -> Result<Self, FormatError> {
        let (dir, data_start) = Self::parse(object, bytes.as_slice())?;
        Ok(Self { object: object.to_string(), data_start, dir, bytes, decoded: Arc::default() })
    }

    /// The column directory of segment bytes, checked as [`Segment::from_bytes`] checks it,
    /// without taking the bytes.
    pub fn directory_of(object: &str, bytes: &[u8]) -> Result<Directory, FormatError> {
        Self::parse(object, bytes).map(|(dir, _)| dir)
    }

    /// The column directory of segment bytes, every part's checksum checked (as
    /// [`Segment::verify`] checks them), without taking the bytes.
    pub fn verified_directory(object: &str, bytes: &[u8]) -> Result<Directory, FormatError> {
        let (dir, data_start) = Self::parse(object, bytes)?;
        check_parts(object, &dir, &bytes[data_start..])?;
        Ok(dir)
    }

    /// The directory and where the data starts.
    fn parse(object: &str, b: &[u8]) -> Result<(Directory, usize), FormatError> {
        let err = |reason: String| FormatError::new(object, reason);
        if b.len() < HEADER_LEN {
            return Err(err(format!("{} bytes is shorter than the {HEADER_LEN}-byte header (truncated?)", b.len())));
        }
        if &b[..8] != MAGIC {
            return Err(err("not a Sluice segment (bad magic)".into()));
        }
        let version = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
        if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(err(format!(
                "format version {version} is not supported (this reader reads {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION})"
            )));
        }
        let dir_len = u32::from_le_bytes([b[12], b[13], b[14], b[15]]) as usize;
        let dir_crc = u32::from_le_bytes([b[16], b[17], b[18], b[19]]);
        if dir_len > MAX_DIRECTORY_BYTES || HEADER_LEN + dir_len > b.len() {
            return Err(err(format!("directory of {dir_len} bytes does not fit in {} bytes (truncated?)", b.len())));
        }
        let dir_bytes = &b[HEADER_LEN..HEADER_LEN + dir_len];
        if crc32fast::hash(dir_bytes) != dir_crc {
            return Err(err("directory checksum mismatch".into()));
        }
        let dir: Directory = serde_json::from_slice(dir_bytes).map_err(|e| err(format!("directory: {e}")))?;
        let data_len = (b.len() - HEADER_LEN - dir_len) as u64;
        for c in &dir.columns {
            for (name, p) in &c.parts {
                if p.offset.checked_add(p.length).is_none_or(|end| end > data_len) {
                    return Err(err(format!(
                        "column {:?} part {name} ({}+{}) lies outside the {data_len} data bytes (truncated?)",
                        c.name, p.offset, p.length
                    )));
                }
            }
        }
        if dir.columns.first().map(|c| c.kind) != Some(ColumnType::Time) {
            return Err(err("first column is not __time".into()));
        }
        Ok((dir, HEADER_LEN + dir_len))
    }

    /// The same segment seen without the bitmap indexes of the string columns `unindexed`
    /// names: a reader that fetched only some parts leaves those out, and the engine treats
    /// such a column as one written without them (`createBitmapIndex: false`), filtering it
    /// by its ids. The bytes are not changed; the directory the segment hands out is.
    pub fn without_bitmaps<'n>(mut self, unindexed: impl IntoIterator<Item = &'n str>) -> Self {
        for name in unindexed {
            if let Some(c) = self.dir.columns.iter_mut().find(|c| c.name == name && c.kind.is_dictionary()) {
                c.parts.remove("bitmaps");
            }
        }
        self
    }

    /// The object name given at open.
    pub fn object(&self) -> &str {
        &self.object
    }

    /// The whole file, as opened.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// The column directory.
    pub fn directory(&self) -> &Directory {
        &self.dir
    }

    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.dir.num_rows as usize
    }

    /// Total size in bytes.
    pub fn size(&self) -> usize {
        self.bytes.as_slice().len()
    }

    /// The column named `name`.
    pub fn column(&self, name: &str) -> Option<&ColumnEntry> {
        self.dir.columns.iter().find(|c| c.name == name)
    }

    fn err(&self, reason: String) -> FormatError {
        FormatError::new(&self.object, reason)
    }

    /// The bytes of part `part` of column `col`, checksum verified; `None` if absent.
    pub fn part_opt(&self, col: &ColumnEntry, part: &str) -> Result<Option<&[u8]>, FormatError> {
        let Some(r) = col.parts.get(part) else {
            return Ok(None);
        };
        checked(&self.object, &col.name, part, r, &self.bytes.as_slice()[self.data_start..]).map(Some)
    }

    /// Checks every part's checksum: the whole segment is as written, not only the parts a
    /// reader happens to open.
    pub fn verify(&self) -> Result<(), FormatError> {
        check_parts(&self.object, &self.dir, &self.bytes.as_slice()[self.data_start..])
    }

    /// Like [`Segment::part_opt`], but a missing part is an error.
    pub fn part(&self, col: &ColumnEntry, part: &str) -> Result<&[u8], FormatError> {
        self.part_opt(col, part)?.ok_or_else(|| self.err(format!("column {:?} has no {part} part", col.name)))
    }

    /// Opens a numeric part and checks it holds `expected` values.
    pub fn numeric<'a>(
        &'a self,
        col: &'a ColumnEntry,
        part: &'a str,
        kind: u8,
        expected: Option<usize>,
    ) -> Result<NumericPart<'a>, FormatError> {
        let p = NumericPart::open(self.part(col, part)?, kind, &self.object, part)?;
        if let Some(n) = expected {
            if p.len() != n {
                return Err(self.err(format!(
                    "column {:?} part {part} holds {} values for {n} rows",
                    col.name,
                    p.len()
                )));
            }
        }
        Ok(p)
    }

    /// The `__time` values.
    pub fn times(&self) -> Result<NumericPart<'_>, FormatError> {
        let col = &self.dir.columns[0];
        self.numeric(col, "values", KIND_LONGS, Some(self.num_rows()))
    }

    /// The null bitmap of a numeric column (empty when it has no nulls).
    pub fn nulls(&self, col: &ColumnEntry) -> Result<RoaringBitmap, FormatError> {
        match self.part_opt(col, "nulls")? {
            None => Ok(RoaringBitmap::new()),
            Some(bytes) => {
                let part = BytesPart::open(bytes, &self.object, "nulls")?;
                let values = part.all()?;
                let [only] = values.as_slice() else {
                    return Err(self.err(format!("column {:?} nulls part holds {} bitmaps", col.name, values.len())));
                };
                self.bitmap(only, &col.name)
            }
        }
    }

    /// Deserializes a portable Roaring bitmap, naming the column on failure.
    pub fn bitmap(&self, bytes: &[u8], column: &str) -> Result<RoaringBitmap, FormatError> {
        let b = RoaringBitmap::deserialize_from(bytes)
            .map_err(|e| self.err(format!("column {column:?}: bad bitmap: {e}")))?;
        if b.max().is_some_and(|m| m as usize >= self.num_rows()) {
            return Err(self.err(format!("column {column:?}: bitmap names a row past {}", self.num_rows())));
        }
        Ok(b)
    }

    /// The parts of string dimension `col`, with their sizes cross-checked.
    pub fn string_column<'a>(&'a self, col: &'a ColumnEntry) -> Result<StringColumn<'a>, FormatError> {
        if !col.kind.is_dictionary() {
            return Err(self.err(format!("column {:?} is not a string dimension", col.name)));
        }
        let dictionary = BytesPart::open(self.part(col, "dictionary")?, &self.object, "dictionary")?;
        if col.cardinality.is_some_and(|c| c as usize != dictionary.len()) {
            return Err(self.err(format!(
                "column {:?}: cardinality {:?} but {} dictionary values",
                col.name,
                col.cardinality,
                dictionary.len()
            )));
        }
        let bitmaps = match col.parts.contains_key("bitmaps") {
            false => None,
            true => {
                let bitmaps = BytesPart::open(self.part(col, "bitmaps")?, &self.object, "bitmaps")?;
                if bitmaps.len() != dictionary.len() + 1 {
                    return Err(self.err(format!(
                        "column {:?}: {} bitmaps for {} dictionary values",
                        col.name,
                        bitmaps.len(),
                        dictionary.len()
                    )));
                }
                Some(bitmaps)
            }
        };
        let offsets = if col.multi_value {
            Some(self.numeric(col, "offsets", KIND_LONGS, Some(self.num_rows() + 1))?)
        } else {
            None
        };
        let ids = self.numeric(col, "ids", KIND_LONGS, if col.multi_value { None } else { Some(self.num_rows()) })?;
        Ok(StringColumn { dictionary, ids, offsets, bitmaps })
    }
}

impl Segment {
    /// The dictionary of string dimension `col`, checked as [`StoredDictionary::read`] checks
    /// it, decoded on first use and kept while this segment or a clone of it is open.
    pub fn decoded_dictionary(&self, col: &ColumnEntry) -> Result<Arc<StoredDictionary>, FormatError> {
        self.decoded.dictionary(&col.name, || {
            let s = self.string_column(col)?;
            StoredDictionary::read(&s.dictionary, &self.object, &col.name)
        })
    }

    /// The first and last `__time`, reading only the blocks that hold them, once while this
    /// segment or a clone of it is open; `None` without rows.
    pub fn time_range(&self) -> Result<Option<(i64, i64)>, FormatError> {
        self.decoded.time_range(|| {
            let part = self.times()?;
            if part.is_empty() {
                return Ok(None);
            }
            let mut block = Vec::new();
            part.long_block(0, &mut block)?;
            let first = block.first().copied();
            let last = part.num_blocks() - 1;
            if last > 0 {
                part.long_block(last, &mut block)?;
            }
            Ok(first.zip(block.last().copied()))
        })
    }

    /// Bytes of what readers decoded and this segment keeps ([`Segment::decoded_dictionary`]).
    pub fn decoded_bytes(&self) -> usize {
        self.decoded.bytes()
    }
}

/// Checks the checksum of every part of `dir` in `data` (the bytes after the directory, whose
/// extents [`Segment::parse`] checked).
fn check_parts(object: &str, dir: &Directory, data: &[u8]) -> Result<(), FormatError> {
    for col in &dir.columns {
        for (name, r) in &col.parts {
            checked(object, &col.name, name, r, data)?;
        }
    }
    Ok(())
}

/// Part `r` of `data` (the bytes after the directory), its checksum checked.
fn checked<'a>(object: &str, column: &str, part: &str, r: &PartRef, data: &'a [u8]) -> Result<&'a [u8], FormatError> {
    let bytes = &data[r.offset as usize..(r.offset + r.length) as usize];
    if crc32fast::hash(bytes) != r.crc32 {
        return Err(FormatError::new(object, format!("column {column:?} part {part}: checksum mismatch")));
    }
    Ok(bytes)
}
