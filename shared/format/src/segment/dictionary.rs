//! A string column's dictionary as merge reads it: every block decoded into one string, checked
//! UTF-8 once and ascending, its values borrowed from it rather than copied one by one. The
//! writer takes its dictionaries in the same form: one string for all values, not one each.

use super::parts::{BytesBlock, BytesPart};
use super::FormatError;

/// A dictionary whose values would pass 4 GiB.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a dictionary of more than 4 GiB of values")]
pub struct DictionaryTooLarge;

/// A stored dictionary: its values, ascending, as slices of one string.
#[derive(Debug, Default)]
pub struct StoredDictionary {
    text: String,
    /// Where each value ends in `text`.
    ends: Vec<u32>,
}

impl StoredDictionary {
    /// Reads the dictionary part of column `name` of `object`: its values must be UTF-8 and
    /// strictly ascending.
    pub fn read(part: &BytesPart<'_>, object: &str, name: &str) -> Result<Self, FormatError> {
        let err = |reason: &str| FormatError::new(object, format!("column {name:?}: {reason}"));
        let mut bytes = Vec::new();
        let mut ends = Vec::with_capacity(part.len().min(1 << 20));
        let mut block = BytesBlock::default();
        for i in 0..part.num_blocks() {
            part.block(i, &mut block)?;
            let (values, block_ends) = block.values();
            let base = u32::try_from(bytes.len()).map_err(|_| err("dictionary of more than 4 GiB"))?;
            base.checked_add(values.len() as u32).ok_or_else(|| err("dictionary of more than 4 GiB"))?;
            bytes.extend_from_slice(values);
            ends.extend(block_ends.iter().map(|&e| base + e));
        }
        if ends.len() != part.len() {
            return Err(err(&format!("dictionary blocks hold {} values, header says {}", ends.len(), part.len())));
        }
        let text = String::from_utf8(bytes).map_err(|_| err("dictionary value is not UTF-8"))?;
        // One check over the whole text; each value is UTF-8 too when it starts on a boundary.
        if !ends.iter().all(|&e| text.is_char_boundary(e as usize)) {
            return Err(err("dictionary value is not UTF-8"));
        }
        let dictionary = Self { text, ends };
        if (1..dictionary.len()).any(|i| dictionary.get(i - 1) >= dictionary.get(i)) {
            return Err(err("dictionary is not sorted"));
        }
        Ok(dictionary)
    }

    /// An empty dictionary with room for `values` values of `bytes` bytes in all.
    pub fn with_capacity(values: usize, bytes: usize) -> Self {
        Self { text: String::with_capacity(bytes), ends: Vec::with_capacity(values) }
    }

    /// Appends `value`, which sorts after every value before it (checked in debug builds).
    /// Fails when the values would pass 4 GiB.
    pub fn push(&mut self, value: &str) -> Result<(), DictionaryTooLarge> {
        debug_assert!(self.last().is_none_or(|last| last < value), "dictionary values must ascend");
        let end = u32::try_from(self.text.len() + value.len()).map_err(|_| DictionaryTooLarge)?;
        self.text.push_str(value);
        self.ends.push(end);
        Ok(())
    }

    /// The last value.
    #[inline]
    pub fn last(&self) -> Option<&str> {
        self.len().checked_sub(1).map(|i| self.get(i))
    }

    /// Bytes of all values.
    pub fn bytes(&self) -> usize {
        self.text.len()
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Returns true when the dictionary holds no values.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Value `i` (0-based: the column's id `i + 1`).
    #[inline]
    pub fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    /// The values in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// The first eight bytes of `s`, zero-padded, as a big-endian number: where the prefixes of
/// two strings differ, the strings compare as their prefixes do, so sorts and merges of
/// dictionary values compare the strings themselves only where prefixes tie.
#[inline]
pub(crate) fn sort_prefix(s: &str) -> u64 {
    let mut bytes = [0u8; 8];
    let n = s.len().min(8);
    bytes[..n].copy_from_slice(&s.as_bytes()[..n]);
    u64::from_be_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::parts::BytesEncoder;
    use crate::segment::Codec;
    use proptest::prelude::*;

    fn read(values: &[&[u8]]) -> Result<StoredDictionary, FormatError> {
        let mut enc = BytesEncoder::new(Codec::Lz4);
        values.iter().for_each(|v| enc.push(v));
        let bytes = enc.finish();
        let part = BytesPart::open(&bytes, "seg", "dictionary").expect("part");
        StoredDictionary::read(&part, "seg", "page")
    }

    proptest! {
        #[test]
        fn prefixes_order_as_their_strings(
            a in prop_oneof![".{0,12}", "[ab\u{0}]{0,10}"],
            b in prop_oneof![".{0,12}", "[ab\u{0}]{0,10}"],
        ) {
            let (pa, pb) = (sort_prefix(&a), sort_prefix(&b));
            if pa != pb {
                prop_assert_eq!(pa.cmp(&pb), a.cmp(&b), "{:?} {:?}", a, b);
            }
            if a < b {
                prop_assert!(pa <= pb, "{:?} {:?}", a, b);
            }
        }
    }

    #[test]
    fn values_read_back_in_order() {
        let many: Vec<String> = (0..20_000).map(|i| format!("value {i:06} é")).collect();
        let refs: Vec<&[u8]> = many.iter().map(|s| s.as_bytes()).collect();
        let d = read(&refs).expect("dictionary");
        assert_eq!(d.len(), 20_000);
        assert!(d.iter().eq(many.iter().map(String::as_str)));
        assert_eq!(d.get(0), "value 000000 é");
        assert!(read(&[]).expect("empty").is_empty());
    }

    #[test]
    fn pushed_values_read_as_written() {
        let mut d = StoredDictionary::with_capacity(2, 8);
        assert_eq!(d.last(), None);
        d.push("").and_then(|()| d.push("ab")).and_then(|()| d.push("é")).expect("push");
        assert_eq!((d.len(), d.last()), (3, Some("é")));
        assert!(d.iter().eq(["", "ab", "é"]));
    }

    #[test]
    fn unsorted_or_repeated_values_are_named() {
        for values in [&[b"b".as_slice(), b"a"][..], &[b"a", b"a"]] {
            let e = read(values).expect_err("unsorted");
            assert_eq!(e.object, "seg");
            assert!(e.reason.contains("column \"page\": dictionary is not sorted"), "{e}");
        }
    }

    #[test]
    fn invalid_utf8_is_named_even_when_split_across_values() {
        let e = read(&[b"a", b"b\xff"]).expect_err("not UTF-8");
        assert!(e.reason.contains("dictionary value is not UTF-8"), "{e}");
        // "é" is 0xC3 0xA9: together valid UTF-8, each half on its own not.
        let e = read(&[b"a\xc3", b"\xa9"]).expect_err("split character");
        assert!(e.reason.contains("dictionary value is not UTF-8"), "{e}");
    }
}
