//! The typed byte areas ("parts") columns are made of: block-compressed longs (frame of
//! reference, optional delta and byte planes), doubles, floats and variable-length byte values
//! (optionally front coded). Layouts are specified in `docs/segment-format.md`; every length is checked before it is used.

mod bytes;
mod numeric;
#[cfg(test)]
mod tests;

pub use bytes::{BytesBlock, BytesEncoder, BytesPart};
pub use numeric::{LongsEncoder, NumericEncoder, NumericPart};

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
/// Longs flag: a block's offsets are stored byte plane by byte plane (every value's lowest
/// byte, then every value's next byte...), which compresses slowly varying values far better.
const FLAG_BYTE_PLANES: u8 = 2;
/// Bytes flag: each block's values are front coded (the length of the prefix shared with the
/// value before, then the rest), for sorted values such as dictionaries.
const FLAG_FRONT_CODED: u8 = 1;

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
            // Into a fresh buffer of `max_len` bytes that is not zeroed first: most blocks of
            // longs are a fraction of their bound (`9 + n * 8` for values of 1 or 2 bytes).
            Codec::Lz4 => lz4_flex::block::decompress(data, max_len).map_err(|e| err(format!("lz4: {e}"))),
            Codec::Zstd => zstd::bulk::decompress(data, max_len).map_err(|e| err(format!("zstd: {e}"))),
        }
    }
}
