//! Parts of variable-length byte values, in blocks of about 64 KB: each block's values after
//! their offsets, or front coded (sorted values share their prefixes with the value before).

use super::{
    le_u32, Codec, FormatError, BYTES_BLOCK_MAX_VALUES, BYTES_BLOCK_TARGET, FLAG_FRONT_CODED, KIND_BYTES,
    MAX_BLOCK_BYTES,
};

/// Writes a part of variable-length byte values.
#[derive(Debug)]
pub struct BytesEncoder {
    codec: Codec,
    front_coded: bool,
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
            front_coded: false,
            offsets: vec![0],
            bytes: Vec::new(),
            block_first: 0,
            table: Vec::new(),
            data: Vec::new(),
            num_values: 0,
        }
    }

    /// A bytes encoder whose blocks are front coded: far smaller for sorted values that share
    /// prefixes (dictionaries); a block is decoded whole, copying each shared prefix.
    pub fn front_coded(codec: Codec) -> Self {
        Self { front_coded: true, ..Self::new(codec) }
    }

    /// Appends a value.
    pub fn push(&mut self, value: &[u8]) {
        self.push_with(|bytes| bytes.extend_from_slice(value));
    }

    /// Appends the value `write` appends to the buffer it is given (written in place, not
    /// copied; it must only append).
    pub fn push_with(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        let before = self.bytes.len();
        write(&mut self.bytes);
        debug_assert!(self.bytes.len() >= before, "a value may only be appended");
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
        if self.front_coded {
            let mut previous: &[u8] = &[];
            for w in self.offsets.windows(2) {
                let value = &self.bytes[w[0] as usize..w[1] as usize];
                let shared = previous.iter().zip(value).take_while(|(a, b)| a == b).count();
                put_varint(&mut raw, shared as u32);
                put_varint(&mut raw, (value.len() - shared) as u32);
                raw.extend_from_slice(&value[shared..]);
                previous = value;
            }
        } else {
            for o in &self.offsets {
                raw.extend_from_slice(&o.to_le_bytes());
            }
            raw.extend_from_slice(&self.bytes);
        }
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
        out.extend_from_slice(&[if self.front_coded { FLAG_FRONT_CODED } else { 0 }, 0]);
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

fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Why a front-coded block does not decode; the caller names the object, part and block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum FrontCodedError {
    /// A length's varint runs past the block.
    #[error("a length runs past the block")]
    LengthPastBlock,
    /// A length's varint takes more than 5 bytes.
    #[error("a length takes more than 5 bytes")]
    LengthBytes,
    /// A length that does not fit 32 bits.
    #[error("length {length} does not fit 32 bits")]
    LengthWidth {
        /// The length read.
        length: u64,
    },
    /// A value sharing more bytes than the value before it has.
    #[error("value {value} shares {shared} bytes with a value of {previous}")]
    Shared {
        /// The value's index in the block.
        value: usize,
        /// Bytes it shares.
        shared: usize,
        /// Bytes of the value before it.
        previous: usize,
    },
    /// A value whose bytes run past the block.
    #[error("value {value}'s {bytes} bytes run past the block")]
    ValuePastBlock {
        /// The value's index in the block.
        value: usize,
        /// Its own bytes.
        bytes: usize,
    },
    /// Values of more than [`MAX_BLOCK_BYTES`] bytes.
    #[error("values of more than {MAX_BLOCK_BYTES} bytes")]
    TooLarge,
    /// Bytes left after the block's values.
    #[error("{bytes} bytes after its {values} values")]
    Trailing {
        /// Bytes left.
        bytes: usize,
        /// Values the block holds.
        values: usize,
    },
}

/// Reads an unsigned LEB128 varint of at most 5 bytes at `*at`, moving `*at` past it.
#[inline]
fn varint(raw: &[u8], at: &mut usize) -> Result<u32, FrontCodedError> {
    if let Some(&b) = raw.get(*at).filter(|&&b| b < 0x80) {
        *at += 1;
        return Ok(b.into());
    }
    let mut v = 0u64;
    for k in 0..5 {
        let b = *raw.get(*at).ok_or(FrontCodedError::LengthPastBlock)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << (7 * k);
        if b & 0x80 == 0 {
            return u32::try_from(v).map_err(|_| FrontCodedError::LengthWidth { length: v });
        }
    }
    Err(FrontCodedError::LengthBytes)
}

/// Decodes a front-coded block of `n` values: their offsets (from 0) and bytes, at most
/// [`MAX_BLOCK_BYTES`] of them.
fn front_decoded(raw: &[u8], n: usize) -> Result<(Vec<u32>, Vec<u8>), FrontCodedError> {
    let mut offsets = Vec::with_capacity(n + 1);
    offsets.push(0u32);
    // Blocks close at 64 KiB of values: room for that, or for twice the stored bytes.
    let mut values = Vec::with_capacity((2 * raw.len()).clamp(BYTES_BLOCK_TARGET + 4096, MAX_BLOCK_BYTES));
    let (mut at, mut previous) = (0usize, 0usize..0usize);
    for j in 0..n {
        let (shared, rest) = (varint(raw, &mut at)? as usize, varint(raw, &mut at)? as usize);
        if shared > previous.len() {
            return Err(FrontCodedError::Shared { value: j, shared, previous: previous.len() });
        }
        if rest > raw.len() - at {
            return Err(FrontCodedError::ValuePastBlock { value: j, bytes: rest });
        }
        if values.len() + shared + rest > MAX_BLOCK_BYTES {
            return Err(FrontCodedError::TooLarge);
        }
        let start = values.len();
        values.extend_from_within(previous.start..previous.start + shared);
        values.extend_from_slice(&raw[at..at + rest]);
        at += rest;
        previous = start..values.len();
        offsets.push(values.len() as u32);
    }
    if at != raw.len() {
        return Err(FrontCodedError::Trailing { bytes: raw.len() - at, values: n });
    }
    Ok((offsets, values))
}

/// A bytes part opened for reading.
#[derive(Debug, Clone, Copy)]
pub struct BytesPart<'a> {
    codec: Codec,
    front_coded: bool,
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

    /// Every value of the block back to back, with where each one ends in it.
    pub fn values(&self) -> (&[u8], &[u32]) {
        let end = self.offsets.last().map_or(0, |&e| e as usize);
        (&self.raw[self.values_at..self.values_at + end], self.offsets.get(1..).unwrap_or_default())
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
        if bytes[2] & !FLAG_FRONT_CODED != 0 {
            return Err(err(format!("unknown flags {:#04x}", bytes[2])));
        }
        let (num_values, num_blocks) = (le_u32(bytes, 4), le_u32(bytes, 8) as usize);
        let table_end = 12usize
            .checked_add(num_blocks.checked_mul(12).ok_or_else(|| err("block table size overflows".into()))?)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| err(format!("block table of {num_blocks} entries overruns the part")))?;
        if (num_blocks == 0) != (num_values == 0) || num_blocks > num_values as usize {
            return Err(err(format!("{num_blocks} blocks cannot hold {num_values} values")));
        }
        Ok(Self {
            codec,
            front_coded: bytes[2] & FLAG_FRONT_CODED != 0,
            num_values,
            table: &bytes[12..table_end],
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
        // A front-coded value takes two bytes at least (its two lengths).
        let least = if self.front_coded { 2 * n } else { (n + 1) * 4 };
        if raw_len > MAX_BLOCK_BYTES || raw_len < least {
            return Err(self.err(format!("block {i} declares {raw_len} raw bytes for {n} values")));
        }
        let raw = self
            .codec
            .decompress(&self.data[start..end], raw_len)
            .map_err(|r| FormatError::new(self.object, format!("{}: {r}", self.what)))?;
        if self.front_coded {
            let (offsets, values) = front_decoded(&raw, n).map_err(|r| self.err(format!("block {i}: {r}")))?;
            *out = BytesBlock { first, offsets, raw: values, values_at: 0 };
            return Ok(());
        }
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
