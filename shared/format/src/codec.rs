//! Block compression codecs: none, LZ4 and zstd, chosen by `indexSpec`.

use serde::{Deserialize, Serialize};

/// A block compression codec; the byte is what the format stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Codec {
    /// Stored as is.
    None = 0,
    /// LZ4 block format (lz4_flex, no size prefix).
    Lz4 = 1,
    /// zstd frame, level 3.
    Zstd = 2,
}

/// Why a block did not decompress to the size the format recorded.
#[derive(Debug, thiserror::Error)]
pub enum DecompressError {
    /// An uncompressed block of another size than recorded.
    #[error("stored block holds {found} bytes, expected {expected}")]
    StoredSize {
        /// Bytes the block holds.
        found: usize,
        /// Bytes recorded.
        expected: usize,
    },
    /// An LZ4 block that does not decode.
    #[error("lz4: {0}")]
    Lz4(#[source] lz4_flex::block::DecompressError),
    /// An LZ4 block that decodes to another size than recorded.
    #[error("lz4 block decompressed to {found} bytes, expected {expected}")]
    Lz4Size {
        /// Bytes it decoded to.
        found: usize,
        /// Bytes recorded.
        expected: usize,
    },
    /// A zstd frame that does not decode.
    #[error("zstd: {0}")]
    Zstd(#[source] std::io::Error),
    /// A zstd frame that decodes to another size than recorded.
    #[error("zstd block decompressed to {found} bytes, expected {expected}")]
    ZstdSize {
        /// Bytes it decoded to.
        found: usize,
        /// Bytes recorded.
        expected: usize,
    },
}

/// zstd level used for segments: the library default, balanced for write speed.
const ZSTD_LEVEL: i32 = 3;

impl Codec {
    /// The codec stored as byte `b`.
    pub fn from_byte(b: u8) -> Option<Codec> {
        match b {
            0 => Some(Codec::None),
            1 => Some(Codec::Lz4),
            2 => Some(Codec::Zstd),
            _ => None,
        }
    }

    /// Compresses a block.
    pub fn compress(self, data: &[u8]) -> Vec<u8> {
        match self {
            Codec::None => data.to_vec(),
            Codec::Lz4 => lz4_flex::block::compress(data),
            // Compressing an in-memory buffer cannot fail except on allocation failure.
            Codec::Zstd => zstd::bulk::compress(data, ZSTD_LEVEL).unwrap_or_else(|_| data.to_vec()),
        }
    }

    /// Decompresses a block whose uncompressed size the format recorded as `len`; the size
    /// was bounds-checked by the caller, so no allocation exceeds it. The error says why the
    /// block does not decode; the caller names the object and part.
    pub fn decompress(self, data: &[u8], len: usize) -> Result<Vec<u8>, DecompressError> {
        match self {
            Codec::None => {
                if data.len() != len {
                    return Err(DecompressError::StoredSize { found: data.len(), expected: len });
                }
                Ok(data.to_vec())
            }
            Codec::Lz4 => {
                // Into a fresh buffer of `len` bytes that is not zeroed first.
                let out = lz4_flex::block::decompress(data, len).map_err(DecompressError::Lz4)?;
                if out.len() != len {
                    return Err(DecompressError::Lz4Size { found: out.len(), expected: len });
                }
                Ok(out)
            }
            Codec::Zstd => {
                let out = zstd::bulk::decompress(data, len).map_err(DecompressError::Zstd)?;
                if out.len() != len {
                    return Err(DecompressError::ZstdSize { found: out.len(), expected: len });
                }
                Ok(out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Codec;

    #[test]
    fn a_block_decodes_to_its_recorded_size_and_no_further() {
        let data: Vec<u8> = (0..10_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        for codec in [Codec::None, Codec::Lz4, Codec::Zstd] {
            let block = codec.compress(&data);
            assert_eq!(codec.decompress(&block, data.len()).expect("decodes"), data, "{codec:?}");
            let short = codec.decompress(&block, data.len() - 1).expect_err("a block larger than recorded").to_string();
            let long = codec.decompress(&block, data.len() + 1).expect_err("a block smaller than recorded").to_string();
            assert!(!short.is_empty() && !long.is_empty(), "{codec:?}: {short}; {long}");
        }
        let mut corrupt = Codec::Lz4.compress(&data);
        corrupt.truncate(corrupt.len() / 2);
        assert!(Codec::Lz4.decompress(&corrupt, data.len()).is_err(), "a truncated block");
    }
}
