//! The typed byte areas ("parts") columns are made of: block-compressed longs (frame of
//! reference, optional delta), doubles, floats and variable-length byte values. Layouts are
//! specified in `docs/segment-format.md`; every length is checked before it is used.

use super::{Codec, FormatError};

/// Part kind byte: longs.
pub const KIND_LONGS: u8 = 1;
/// Part kind byte: doubles.
pub const KIND_DOUBLES: u8 = 2;
/// Part kind byte: floats.
pub const KIND_FLOATS: u8 = 3;
/// Part kind byte: variable-length byte values.
pub const KIND_BYTES: u8 = 4;
/// Values per block of numeric parts written by this implementation.
pub const BLOCK_VALUES: u32 = 8192;
/// Largest number of values per numeric block a reader accepts.
pub const MAX_BLOCK_VALUES: u32 = 1 << 16;
/// Largest uncompressed block a reader accepts, in bytes.
pub const MAX_BLOCK_BYTES: usize = 16 << 20;
/// A bytes block is closed once it holds this many raw bytes.
const BYTES_BLOCK_TARGET: usize = 64 << 10;
/// ... or this many values.
const BYTES_BLOCK_MAX_VALUES: usize = 4096;
const FLAG_DELTA: u8 = 1;

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Numeric element types of fixed-width parts.
pub trait Element: Copy + Default {
    /// The part kind byte.
    const KIND: u8;
    /// Bytes per element in a raw block.
    const WIDTH: usize;
    /// Appends the little-endian bytes.
    fn put(self, out: &mut Vec<u8>);
    /// Reads from exactly `WIDTH` bytes.
    fn get(b: &[u8]) -> Self;
}

impl Element for f64 {
    const KIND: u8 = KIND_DOUBLES;
    const WIDTH: usize = 8;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }
}

impl Element for f32 {
    const KIND: u8 = KIND_FLOATS;
    const WIDTH: usize = 4;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
}

/// Writes a numeric part: longs (frame-of-reference packed, optionally delta-coded) or raw floats.
#[derive(Debug)]
pub struct NumericEncoder<T> {
    codec: Codec,
    delta: bool,
    pending: Vec<T>,
    data: Vec<u8>,
    ends: Vec<u32>,
    num_values: u32,
    scratch: Vec<u8>,
}

/// Longs encoder.
pub type LongsEncoder = NumericEncoder<i64>;

impl<T: Copy> NumericEncoder<T> {
    fn with(codec: Codec, delta: bool) -> Self {
        Self {
            codec,
            delta,
            pending: Vec::with_capacity(BLOCK_VALUES as usize),
            data: Vec::new(),
            ends: Vec::new(),
            num_values: 0,
            scratch: Vec::new(),
        }
    }

    /// The codec blocks are compressed with.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// Number of values pushed.
    pub fn len(&self) -> u32 {
        self.num_values
    }

    /// Returns true when nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.num_values == 0
    }

    fn close_block(&mut self) {
        let compressed = self.codec.compress(&self.scratch);
        self.data.extend_from_slice(&compressed);
        self.ends.push(self.data.len() as u32);
        self.pending.clear();
        self.scratch.clear();
    }

    fn part(self, kind: u8) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.ends.len() * 4 + self.data.len());
        out.push(kind);
        out.push(self.codec as u8);
        out.push(if self.delta { FLAG_DELTA } else { 0 });
        out.push(0);
        out.extend_from_slice(&self.num_values.to_le_bytes());
        out.extend_from_slice(&BLOCK_VALUES.to_le_bytes());
        out.extend_from_slice(&(self.ends.len() as u32).to_le_bytes());
        for e in &self.ends {
            out.extend_from_slice(&e.to_le_bytes());
        }
        out.extend_from_slice(&self.data);
        out
    }
}

impl NumericEncoder<i64> {
    /// A longs encoder; `delta` suits sorted columns such as `__time` and offsets.
    pub fn longs(codec: Codec, delta: bool) -> Self {
        Self::with(codec, delta)
    }

    /// Appends a value.
    pub fn push(&mut self, v: i64) {
        self.pending.push(v);
        self.num_values += 1;
        if self.pending.len() == BLOCK_VALUES as usize {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        if self.delta {
            for i in (1..self.pending.len()).rev() {
                self.pending[i] = self.pending[i].wrapping_sub(self.pending[i - 1]);
            }
        }
        let base = self.pending.iter().copied().min().unwrap_or(0);
        let max_offset = self.pending.iter().map(|v| v.wrapping_sub(base) as u64).max().unwrap_or(0);
        let width = match max_offset {
            0 => 0u8,
            1..=0xff => 1,
            0x100..=0xffff => 2,
            0x1_0000..=0xffff_ffff => 4,
            _ => 8,
        };
        self.scratch.extend_from_slice(&base.to_le_bytes());
        self.scratch.push(width);
        let offsets = self.pending.iter().map(|v| v.wrapping_sub(base) as u64);
        match width {
            0 => {}
            1 => self.scratch.extend(offsets.map(|o| o as u8)),
            2 => offsets.for_each(|o| self.scratch.extend_from_slice(&(o as u16).to_le_bytes())),
            4 => offsets.for_each(|o| self.scratch.extend_from_slice(&(o as u32).to_le_bytes())),
            _ => offsets.for_each(|o| self.scratch.extend_from_slice(&o.to_le_bytes())),
        }
        self.close_block();
    }

    /// Finishes the part.
    pub fn finish(mut self) -> Vec<u8> {
        self.flush();
        self.part(KIND_LONGS)
    }
}

impl<T: Element> NumericEncoder<T> {
    /// A floating-point encoder.
    pub fn floats(codec: Codec) -> Self {
        Self::with(codec, false)
    }

    /// Appends a value.
    pub fn push_float(&mut self, v: T) {
        self.pending.push(v);
        self.num_values += 1;
        if self.pending.len() == BLOCK_VALUES as usize {
            self.flush_float();
        }
    }

    fn flush_float(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        for v in &self.pending {
            v.put(&mut self.scratch);
        }
        self.close_block();
    }

    /// Finishes the part.
    pub fn finish_float(mut self) -> Vec<u8> {
        self.flush_float();
        self.part(T::KIND)
    }
}

/// Writes a part of variable-length byte values.
#[derive(Debug)]
pub struct BytesEncoder {
    codec: Codec,
    offsets: Vec<u32>,
    bytes: Vec<u8>,
    block_first: u32,
    table: Vec<(u32, u32, u32)>,
    data: Vec<u8>,
    num_values: u32,
}

impl BytesEncoder {
    /// A bytes encoder.
    pub fn new(codec: Codec) -> Self {
        Self {
            codec,
            offsets: vec![0],
            bytes: Vec::new(),
            block_first: 0,
            table: Vec::new(),
            data: Vec::new(),
            num_values: 0,
        }
    }

    /// Appends a value.
    pub fn push(&mut self, value: &[u8]) {
        self.bytes.extend_from_slice(value);
        self.offsets.push(self.bytes.len() as u32);
        self.num_values += 1;
        if self.bytes.len() >= BYTES_BLOCK_TARGET || self.offsets.len() > BYTES_BLOCK_MAX_VALUES {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.offsets.len() == 1 {
            return;
        }
        let mut raw = Vec::with_capacity(self.offsets.len() * 4 + self.bytes.len());
        for o in &self.offsets {
            raw.extend_from_slice(&o.to_le_bytes());
        }
        raw.extend_from_slice(&self.bytes);
        self.data.extend_from_slice(&self.codec.compress(&raw));
        self.table.push((self.block_first, raw.len() as u32, self.data.len() as u32));
        self.block_first = self.num_values;
        self.offsets.clear();
        self.offsets.push(0);
        self.bytes.clear();
    }

    /// Finishes the part.
    pub fn finish(mut self) -> Vec<u8> {
        self.flush();
        let mut out = Vec::with_capacity(12 + self.table.len() * 12 + self.data.len());
        out.push(KIND_BYTES);
        out.push(self.codec as u8);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.num_values.to_le_bytes());
        out.extend_from_slice(&(self.table.len() as u32).to_le_bytes());
        for (first, raw, end) in &self.table {
            out.extend_from_slice(&first.to_le_bytes());
            out.extend_from_slice(&raw.to_le_bytes());
            out.extend_from_slice(&end.to_le_bytes());
        }
        out.extend_from_slice(&self.data);
        out
    }
}

/// A numeric part opened for reading (header validated, blocks decoded on demand).
#[derive(Debug, Clone, Copy)]
pub struct NumericPart<'a> {
    kind: u8,
    codec: Codec,
    delta: bool,
    num_values: u32,
    block_values: u32,
    ends: &'a [u8],
    data: &'a [u8],
    object: &'a str,
    what: &'a str,
}

impl<'a> NumericPart<'a> {
    /// Opens a numeric part, checking its header against its length.
    pub fn open(bytes: &'a [u8], expected_kind: u8, object: &'a str, what: &'a str) -> Result<Self, FormatError> {
        let err = |reason: String| FormatError::new(object, format!("{what}: {reason}"));
        if bytes.len() < 16 {
            return Err(err(format!("part of {} bytes is shorter than its 16-byte header", bytes.len())));
        }
        if bytes[0] != expected_kind {
            return Err(err(format!("part kind {} where {expected_kind} was expected", bytes[0])));
        }
        let codec = Codec::from_byte(bytes[1]).ok_or_else(|| err(format!("unknown codec {}", bytes[1])))?;
        let (num_values, block_values, num_blocks) = (le_u32(bytes, 4), le_u32(bytes, 8), le_u32(bytes, 12));
        if block_values == 0 || block_values > MAX_BLOCK_VALUES {
            return Err(err(format!("block size {block_values} outside 1..={MAX_BLOCK_VALUES}")));
        }
        if num_blocks as u64 != (num_values as u64).div_ceil(block_values as u64) {
            return Err(err(format!(
                "{num_blocks} blocks cannot hold {num_values} values of {block_values} per block"
            )));
        }
        let table_end = 16usize
            .checked_add(num_blocks as usize * 4)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| err(format!("block table of {num_blocks} entries overruns the part")))?;
        Ok(Self {
            kind: expected_kind,
            codec,
            delta: bytes[2] & FLAG_DELTA != 0,
            num_values,
            block_values,
            ends: &bytes[16..table_end],
            data: &bytes[table_end..],
            object,
            what,
        })
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.num_values as usize
    }

    /// Returns true when the part holds no values.
    pub fn is_empty(&self) -> bool {
        self.num_values == 0
    }

    /// Number of blocks.
    pub fn num_blocks(&self) -> usize {
        self.ends.len() / 4
    }

    /// Values per block (the last block may hold fewer).
    pub fn block_values(&self) -> usize {
        self.block_values as usize
    }

    fn err(&self, reason: String) -> FormatError {
        FormatError::new(self.object, format!("{}: {reason}", self.what))
    }

    fn raw_block(&self, i: usize, element_width: Option<usize>) -> Result<Vec<u8>, FormatError> {
        if i >= self.num_blocks() {
            return Err(self.err(format!("block {i} of {}", self.num_blocks())));
        }
        let start = if i == 0 { 0 } else { le_u32(self.ends, (i - 1) * 4) as usize };
        let end = le_u32(self.ends, i * 4) as usize;
        if start > end || end > self.data.len() {
            return Err(self.err(format!("block {i} spans {start}..{end} outside the {} data bytes", self.data.len())));
        }
        let n = self.values_in_block(i);
        let stored = &self.data[start..end];
        match element_width {
            Some(w) => self
                .codec
                .decompress(stored, n * w)
                .map_err(|r| FormatError::new(self.object, format!("{}: {r}", self.what))),
            None => {
                // Longs: a 9-byte header (base, width), then n values of that width.
                let raw = self.codec.decompress_up_to(stored, 9 + n * 8, self.object, self.what)?;
                let width =
                    raw.get(8).copied().ok_or_else(|| self.err(format!("block {i} is shorter than its header")))?
                        as usize;
                if !matches!(width, 0 | 1 | 2 | 4 | 8) || raw.len() != 9 + n * width {
                    return Err(
                        self.err(format!("block {i} holds {} bytes for {n} values of width {width}", raw.len()))
                    );
                }
                Ok(raw)
            }
        }
    }

    fn values_in_block(&self, i: usize) -> usize {
        let start = i * self.block_values as usize;
        (self.num_values as usize - start).min(self.block_values as usize)
    }

    /// Decodes block `i` of a longs part into `out` (cleared first).
    pub fn long_block(&self, i: usize, out: &mut Vec<i64>) -> Result<(), FormatError> {
        debug_assert_eq!(self.kind, KIND_LONGS);
        out.clear();
        let raw = self.raw_block(i, None)?;
        let base = i64::from_le_bytes([raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7]]);
        let width = raw[8] as usize;
        let n = self.values_in_block(i);
        out.reserve(n);
        let body = &raw[9..];
        let add = |o: u64| base.wrapping_add(o as i64);
        match width {
            0 => out.resize(n, base),
            1 => out.extend(body.iter().map(|&b| add(b as u64))),
            2 => out.extend(body.chunks_exact(2).map(|c| add(u16::from_le_bytes([c[0], c[1]]) as u64))),
            4 => out.extend(body.chunks_exact(4).map(|c| add(u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64))),
            _ => out.extend(
                body.chunks_exact(8).map(|c| add(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))),
            ),
        }
        debug_assert_eq!(out.len(), n);
        if self.delta {
            for j in 1..n {
                out[j] = out[j].wrapping_add(out[j - 1]);
            }
        }
        Ok(())
    }

    /// Decodes block `i` of a floating-point part into `out` (cleared first).
    pub fn float_block<T: Element>(&self, i: usize, out: &mut Vec<T>) -> Result<(), FormatError> {
        debug_assert_eq!(self.kind, T::KIND);
        out.clear();
        let raw = self.raw_block(i, Some(T::WIDTH))?;
        out.extend(raw.chunks_exact(T::WIDTH).map(T::get));
        Ok(())
    }

    /// Decodes every value of a longs part.
    pub fn all_longs(&self) -> Result<Vec<i64>, FormatError> {
        let mut all = Vec::new();
        let mut block = Vec::new();
        for i in 0..self.num_blocks() {
            self.long_block(i, &mut block)?;
            all.extend_from_slice(&block);
        }
        Ok(all)
    }

    /// Decodes every value of a floating-point part.
    pub fn all_floats<T: Element>(&self) -> Result<Vec<T>, FormatError> {
        let mut all = Vec::new();
        let mut block = Vec::new();
        for i in 0..self.num_blocks() {
            self.float_block(i, &mut block)?;
            all.extend_from_slice(&block);
        }
        Ok(all)
    }
}

/// A bytes part opened for reading.
#[derive(Debug, Clone, Copy)]
pub struct BytesPart<'a> {
    codec: Codec,
    num_values: u32,
    table: &'a [u8],
    data: &'a [u8],
    object: &'a str,
    what: &'a str,
}

/// One decoded block of a bytes part.
#[derive(Debug, Default)]
pub struct BytesBlock {
    first: usize,
    offsets: Vec<u32>,
    raw: Vec<u8>,
    values_at: usize,
}

impl BytesBlock {
    /// Index of the first value in the block.
    pub fn first(&self) -> usize {
        self.first
    }

    /// Number of values in the block.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Returns true for an empty block.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `j` of the block (0-based within the block).
    pub fn get(&self, j: usize) -> &[u8] {
        &self.raw[self.values_at + self.offsets[j] as usize..self.values_at + self.offsets[j + 1] as usize]
    }
}

impl<'a> BytesPart<'a> {
    /// Opens a bytes part, checking its header against its length.
    pub fn open(bytes: &'a [u8], object: &'a str, what: &'a str) -> Result<Self, FormatError> {
        let err = |reason: String| FormatError::new(object, format!("{what}: {reason}"));
        if bytes.len() < 12 {
            return Err(err(format!("part of {} bytes is shorter than its 12-byte header", bytes.len())));
        }
        if bytes[0] != KIND_BYTES {
            return Err(err(format!("part kind {} where {KIND_BYTES} was expected", bytes[0])));
        }
        let codec = Codec::from_byte(bytes[1]).ok_or_else(|| err(format!("unknown codec {}", bytes[1])))?;
        let (num_values, num_blocks) = (le_u32(bytes, 4), le_u32(bytes, 8) as usize);
        let table_end = 12usize
            .checked_add(num_blocks.checked_mul(12).ok_or_else(|| err("block table size overflows".into()))?)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| err(format!("block table of {num_blocks} entries overruns the part")))?;
        if (num_blocks == 0) != (num_values == 0) || num_blocks > num_values as usize {
            return Err(err(format!("{num_blocks} blocks cannot hold {num_values} values")));
        }
        Ok(Self { codec, num_values, table: &bytes[12..table_end], data: &bytes[table_end..], object, what })
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.num_values as usize
    }

    /// Returns true when the part holds no values.
    pub fn is_empty(&self) -> bool {
        self.num_values == 0
    }

    /// Number of blocks.
    pub fn num_blocks(&self) -> usize {
        self.table.len() / 12
    }

    fn err(&self, reason: String) -> FormatError {
        FormatError::new(self.object, format!("{}: {reason}", self.what))
    }

    /// Index of the first value of block `i`.
    pub fn block_first(&self, i: usize) -> usize {
        le_u32(self.table, i * 12) as usize
    }

    /// Decodes block `i` into `out`.
    pub fn block(&self, i: usize, out: &mut BytesBlock) -> Result<(), FormatError> {
        if i >= self.num_blocks() {
            return Err(self.err(format!("block {i} of {}", self.num_blocks())));
        }
        let first = self.block_first(i);
        let raw_len = le_u32(self.table, i * 12 + 4) as usize;
        let end = le_u32(self.table, i * 12 + 8) as usize;
        let start = if i == 0 { 0 } else { le_u32(self.table, (i - 1) * 12 + 8) as usize };
        let next_first = if i + 1 < self.num_blocks() { self.block_first(i + 1) } else { self.num_values as usize };
        if i == 0 && first != 0 {
            return Err(self.err(format!("first block starts at value {first}")));
        }
        if next_first <= first || next_first > self.num_values as usize {
            return Err(self.err(format!("block {i} covers values {first}..{next_first} of {}", self.num_values)));
        }
        let n = next_first - first;
        if start > end || end > self.data.len() {
            return Err(self.err(format!("block {i} spans {start}..{end} outside the {} data bytes", self.data.len())));
        }
        if raw_len > MAX_BLOCK_BYTES || raw_len < (n + 1) * 4 {
            return Err(self.err(format!("block {i} declares {raw_len} raw bytes for {n} values")));
        }
        let raw = self
            .codec
            .decompress(&self.data[start..end], raw_len)
            .map_err(|r| FormatError::new(self.object, format!("{}: {r}", self.what)))?;
        let values_at = (n + 1) * 4;
        let mut offsets = Vec::with_capacity(n + 1);
        let mut prev = 0u32;
        for j in 0..=n {
            let o = le_u32(&raw, j * 4);
            if o < prev || values_at + o as usize > raw.len() || (j == 0 && o != 0) {
                return Err(self.err(format!("block {i} value offset {o} out of order or out of bounds")));
            }
            prev = o;
            offsets.push(o);
        }
        *out = BytesBlock { first, offsets, raw, values_at };
        Ok(())
    }

    /// Decodes every value.
    pub fn all(&self) -> Result<Vec<Vec<u8>>, FormatError> {
        let mut out = Vec::new();
        let mut block = BytesBlock::default();
        for i in 0..self.num_blocks() {
            self.block(i, &mut block)?;
            out.extend((0..block.len()).map(|j| block.get(j).to_vec()));
        }
        if out.len() != self.num_values as usize {
            return Err(self.err(format!("blocks hold {} values, header says {}", out.len(), self.num_values)));
        }
        Ok(out)
    }
}

impl Codec {
    /// Decompresses a block whose size is not recorded but is at most `max_len`.
    pub fn decompress_up_to(
        self,
        data: &[u8],
        max_len: usize,
        object: &str,
        what: &str,
    ) -> Result<Vec<u8>, FormatError> {
        let err = |reason: String| FormatError::new(object, format!("{what}: {reason}"));
        match self {
            Codec::None if data.len() <= max_len => Ok(data.to_vec()),
            Codec::None => Err(err(format!("stored block of {} bytes exceeds {max_len}", data.len()))),
            Codec::Lz4 => {
                let mut buf = vec![0u8; max_len];
                let n = lz4_flex::block::decompress_into(data, &mut buf).map_err(|e| err(format!("lz4: {e}")))?;
                buf.truncate(n);
                Ok(buf)
            }
            Codec::Zstd => zstd::bulk::decompress(data, max_len).map_err(|e| err(format!("zstd: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longs_round_trip_every_width_and_codec() {
        for codec in [Codec::None, Codec::Lz4, Codec::Zstd] {
            for delta in [false, true] {
                let values: Vec<i64> = (0..20_000i64)
                    .map(|i| match i % 5 {
                        0 => i,
                        1 => i * 1000,
                        2 => -i * 7_000_000_000,
                        3 => i64::MAX - i,
                        _ => 42,
                    })
                    .collect();
                let mut enc = LongsEncoder::longs(codec, delta);
                values.iter().for_each(|v| enc.push(*v));
                let part = enc.finish();
                let p = NumericPart::open(&part, KIND_LONGS, "t", "longs").expect("open");
                assert_eq!(p.all_longs().expect("decode"), values);
            }
        }
    }

    #[test]
    fn constant_blocks_take_no_value_bytes() {
        let mut enc = LongsEncoder::longs(Codec::None, false);
        (0..8192).for_each(|_| enc.push(7));
        assert_eq!(enc.finish().len(), 16 + 4 + 9);
    }

    #[test]
    fn floats_and_bytes_round_trip() {
        let mut enc = NumericEncoder::<f32>::floats(Codec::Lz4);
        (0..10_000).for_each(|i| enc.push_float(i as f32 * 0.5));
        let part = enc.finish_float();
        let p = NumericPart::open(&part, KIND_FLOATS, "t", "floats").expect("open");
        assert_eq!(p.all_floats::<f32>().expect("decode")[9_999], 4_999.5);
        let mut enc = BytesEncoder::new(Codec::Zstd);
        let values: Vec<Vec<u8>> =
            (0..10_000).map(|i| format!("value-{i}").into_bytes()).chain([vec![], vec![7u8; 100_000]]).collect();
        values.iter().for_each(|v| enc.push(v));
        let part = enc.finish();
        let p = BytesPart::open(&part, "t", "bytes").expect("open");
        assert!(p.num_blocks() > 1);
        assert_eq!(p.all().expect("decode"), values);
    }
}
