//! Numeric parts: longs (frame-of-reference packed, optionally delta-coded and stored byte plane
//! by byte plane), doubles and floats in blocks of [`BLOCK_VALUES`] values.

use super::{
    le_u32, Codec, Element, FormatError, BLOCK_VALUES, FLAG_BYTE_PLANES, FLAG_DELTA, KIND_LONGS, MAX_BLOCK_VALUES,
};

/// Writes a numeric part: longs (frame-of-reference packed, optionally delta-coded) or raw floats.
#[derive(Debug)]
pub struct NumericEncoder<T> {
    codec: Codec,
    delta: bool,
    byte_planes: bool,
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
            byte_planes: false,
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
        let delta = if self.delta { FLAG_DELTA } else { 0 };
        out.push(delta | if self.byte_planes { FLAG_BYTE_PLANES } else { 0 });
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

    /// Stores blocks byte plane by byte plane: for timestamps and metric values, whose high
    /// bytes vary slowly (on the Wikipedia sample, zstd `__time` 0.71x and metrics 0.78-0.91x;
    /// dictionary ids, whose bytes vary alike, do not gain).
    pub fn byte_planes(mut self) -> Self {
        self.byte_planes = true;
        self
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
            w if self.byte_planes && w > 1 => {
                for k in 0..w {
                    let shift = 8 * k as u32;
                    self.scratch.extend(self.pending.iter().map(|v| (v.wrapping_sub(base) as u64 >> shift) as u8));
                }
            }
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

/// A numeric part opened for reading (header validated, blocks decoded on demand).
#[derive(Debug, Clone, Copy)]
pub struct NumericPart<'a> {
    kind: u8,
    codec: Codec,
    delta: bool,
    byte_planes: bool,
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
        if bytes[2] & !(FLAG_DELTA | FLAG_BYTE_PLANES) != 0 {
            return Err(err(format!("unknown flags {:#04x}", bytes[2])));
        }
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
            byte_planes: bytes[2] & FLAG_BYTE_PLANES != 0,
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
        out.clear();
        self.append_long_block(i, out)
    }

    /// Decodes block `i` of a longs part onto the end of `out`.
    fn append_long_block(&self, i: usize, all: &mut Vec<i64>) -> Result<(), FormatError> {
        debug_assert_eq!(self.kind, KIND_LONGS);
        let start = all.len();
        let raw = self.raw_block(i, None)?;
        let base = i64::from_le_bytes([raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7]]);
        let width = raw[8] as usize;
        let n = self.values_in_block(i);
        all.reserve(n);
        let body = &raw[9..];
        let add = |o: u64| base.wrapping_add(o as i64);
        match width {
            0 => all.resize(start + n, base),
            // Two or four planes, the widths the writer gives most columns: each value
            // gathered from its bytes in one pass.
            w @ (2 | 4) if self.byte_planes && body.len() >= w * n => {
                let plane = |k: usize| &body[k * n..(k + 1) * n];
                let (p0, p1) = (plane(0), plane(1));
                if w == 2 {
                    all.extend(p0.iter().zip(p1).map(|(&a, &b)| add(u64::from(a) | u64::from(b) << 8)));
                } else {
                    all.extend(p0.iter().zip(p1).zip(plane(2)).zip(plane(3)).map(|(((&a, &b), &c), &d)| {
                        add(u64::from(a) | u64::from(b) << 8 | u64::from(c) << 16 | u64::from(d) << 24)
                    }));
                }
            }
            w if self.byte_planes && w > 1 => {
                // Plane by plane, each a sequential pass over the values.
                all.resize(start + n, 0);
                let out = &mut all[start..];
                for (k, plane) in body.chunks_exact(n.max(1)).take(w).enumerate() {
                    let shift = 8 * k as u32;
                    out.iter_mut().zip(plane).for_each(|(v, &b)| *v |= (b as i64) << shift);
                }
                out.iter_mut().for_each(|v| *v = base.wrapping_add(*v));
            }
            1 => all.extend(body.iter().map(|&b| add(b as u64))),
            2 => all.extend(body.chunks_exact(2).map(|c| add(u16::from_le_bytes([c[0], c[1]]) as u64))),
            4 => all.extend(body.chunks_exact(4).map(|c| add(u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64))),
            _ => all.extend(
                body.chunks_exact(8).map(|c| add(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))),
            ),
        }
        let out = &mut all[start..];
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
        let mut all = Vec::with_capacity(self.len().min(1 << 20));
        for i in 0..self.num_blocks() {
            self.append_long_block(i, &mut all)?;
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
