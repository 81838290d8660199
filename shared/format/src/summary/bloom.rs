//! The membership filter of a dimension's values: Parquet's split-block bloom filter
//! (`parquet-format/BloomFilter.md`), with values keyed as Parquet keys a `BYTE_ARRAY`: the
//! xxHash64 (seed 0) of their UTF-8 bytes.
//!
//! The stored form is the filter's bitset as Parquet stores it: blocks of 32 bytes, each eight
//! little-endian 32-bit words; a key's block is `((hash >> 32) * num_blocks) >> 32`, and in
//! each word `i` it sets bit `((hash as u32) * SALT[i]) >> 27` (Parquet's eight salts). The
//! layout and the hash are fixed by that specification, not by a crate version, so a filter
//! written today reads the same in any later version; `tests` pins it against a plain
//! transcription of the specification.

use base64::Engine;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bytes of one block of the filter.
pub const BLOCK_BYTES: usize = 32;

/// A split-block bloom filter of string values: `may_contain` is true for every value
/// inserted, and false for most others.
#[derive(Clone)]
pub struct BloomFilter(sbbf_rs_safe::Filter);

/// The key of `value` in a filter.
fn key(value: &str) -> u64 {
    xxhash_rust::xxh64::xxh64(value.as_bytes(), 0)
}

impl BloomFilter {
    /// An empty filter of `num_blocks` blocks (at least one).
    pub fn with_blocks(num_blocks: usize) -> Self {
        Self(sbbf_rs_safe::Filter::new(8, num_blocks.max(1) * BLOCK_BYTES))
    }

    /// Reads a filter from its bitset; `None` unless it is a whole number of blocks.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        sbbf_rs_safe::Filter::from_bytes(bytes).map(Self)
    }

    /// The bitset, as stored.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// Number of blocks.
    pub fn num_blocks(&self) -> usize {
        self.as_bytes().len() / BLOCK_BYTES
    }

    /// Adds `value`.
    pub fn insert(&mut self, value: &str) {
        self.0.insert_hash(key(value));
    }

    /// Returns false only when `value` was never inserted.
    pub fn may_contain(&self, value: &str) -> bool {
        self.0.contains_hash(key(value))
    }
}

impl std::fmt::Debug for BloomFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BloomFilter({} blocks)", self.num_blocks())
    }
}

impl PartialEq for BloomFilter {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Serialize for BloomFilter {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(self.as_bytes()))
    }
}

impl<'de> Deserialize<'de> for BloomFilter {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let text = String::deserialize(d)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map_err(|e| D::Error::custom(format!("bloom filter: {e}")))?;
        let n = bytes.len();
        Self::from_bytes(&bytes)
            .ok_or_else(|| D::Error::custom(format!("bloom filter of {n} bytes is not a whole number of blocks")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parquet's salts.
    const SALT: [u32; 8] =
        [0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31];

    /// The specification's insert, transcribed word for word.
    fn spec_insert(bits: &mut [u8], value: &str) {
        let hash = key(value);
        let num_blocks = (bits.len() / BLOCK_BYTES) as u64;
        let block = (((hash >> 32) * num_blocks) >> 32) as usize;
        for (i, salt) in SALT.iter().enumerate() {
            let bit = ((hash as u32).wrapping_mul(*salt)) >> 27;
            let at = block * BLOCK_BYTES + i * 4;
            let word = u32::from_le_bytes([bits[at], bits[at + 1], bits[at + 2], bits[at + 3]]) | (1 << bit);
            bits[at..at + 4].copy_from_slice(&word.to_le_bytes());
        }
    }

    #[test]
    fn the_stored_form_is_parquets() {
        for num_blocks in [1, 3, 32] {
            let mut filter = BloomFilter::with_blocks(num_blocks);
            let mut expected = vec![0u8; num_blocks * BLOCK_BYTES];
            for i in 0..200 {
                let value = format!("value {i} é");
                filter.insert(&value);
                spec_insert(&mut expected, &value);
            }
            assert_eq!(filter.as_bytes(), expected.as_slice(), "{num_blocks} blocks");
        }
        // xxHash64 with seed 0, as Parquet keys its values (the reference's test vector).
        assert_eq!(key(""), 0xef46db3751d8e999);
    }

    #[test]
    fn inserted_values_are_found_and_most_others_are_not() {
        let mut filter = BloomFilter::with_blocks(32);
        (0..800).for_each(|i| filter.insert(&format!("page {i}")));
        assert!((0..800).all(|i| filter.may_contain(&format!("page {i}"))));
        let false_positives = (0..10_000).filter(|i| filter.may_contain(&format!("other {i}"))).count();
        // 10 bits per value: about 1.3% false positives.
        assert!(false_positives < 300, "{false_positives} false positives in 10000");
    }

    #[test]
    fn reads_back_from_json_and_refuses_partial_blocks() {
        let mut filter = BloomFilter::with_blocks(2);
        filter.insert("a");
        let json = serde_json::to_string(&filter).expect("json");
        let back: BloomFilter = serde_json::from_str(&json).expect("read back");
        assert_eq!(back, filter);
        assert!(back.may_contain("a"));
        let short = base64::engine::general_purpose::STANDARD.encode([0u8; 31]);
        let e = serde_json::from_str::<BloomFilter>(&format!("{short:?}")).expect_err("31 bytes");
        assert!(e.to_string().contains("bloom filter of 31 bytes is not a whole number of blocks"), "{e}");
    }
}
