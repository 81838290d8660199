//! Roaring bitmaps written straight from ascending row numbers, in the portable format without
//! run containers (the bytes `RoaringBitmap::serialize_into` writes for the same rows), with
//! no bitmap built in between: a segment writes one per dictionary value, and most values of a
//! large dictionary hold a row or two.

/// The portable format's cookie for bitmaps without run containers.
const COOKIE_NO_RUNS: u32 = 12346;
/// A container of at most this many rows is an array of 16-bit values; past it, 8 KiB of bits.
const ARRAY_LIMIT: usize = 4096;
/// 64-bit words of a bitmap container.
const BITMAP_WORDS: usize = 1024;

/// Appends the serialized bitmap of `rows`, which must be strictly ascending.
pub fn write_sorted(rows: &[u32], out: &mut Vec<u8>) {
    debug_assert!(rows.windows(2).all(|w| w[0] < w[1]), "rows must be strictly ascending");
    let containers = containers(rows);
    let count = containers.clone().count();
    out.extend_from_slice(&COOKIE_NO_RUNS.to_le_bytes());
    out.extend_from_slice(&(count as u32).to_le_bytes());
    for (key, rows) in containers.clone() {
        out.extend_from_slice(&key.to_le_bytes());
        out.extend_from_slice(&((rows.len() - 1) as u16).to_le_bytes());
    }
    let mut offset = (8 + 8 * count) as u32;
    for (_, rows) in containers.clone() {
        out.extend_from_slice(&offset.to_le_bytes());
        offset += if rows.len() <= ARRAY_LIMIT { rows.len() as u32 * 2 } else { BITMAP_WORDS as u32 * 8 };
    }
    for (_, rows) in containers {
        if rows.len() <= ARRAY_LIMIT {
            out.reserve(rows.len() * 2);
            rows.iter().for_each(|&r| out.extend_from_slice(&(r as u16).to_le_bytes()));
        } else {
            let mut words = [0u64; BITMAP_WORDS];
            for &r in rows {
                let low = (r & 0xffff) as usize;
                words[low / 64] |= 1 << (low % 64);
            }
            out.reserve(BITMAP_WORDS * 8);
            words.iter().for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
        }
    }
}

/// The rows split by their high 16 bits: (key, rows of that key).
fn containers(rows: &[u32]) -> impl Iterator<Item = (u16, &[u32])> + Clone {
    let mut rest = rows;
    std::iter::from_fn(move || {
        let first = *rest.first()?;
        let key = first >> 16;
        let n = match rest.last() {
            Some(&last) if last >> 16 == key => rest.len(),
            _ => rest.partition_point(|&r| r >> 16 == key),
        };
        let (these, others) = rest.split_at(n);
        rest = others;
        Some((key as u16, these))
    })
}

#[cfg(test)]
mod tests {
    use super::write_sorted;
    use proptest::prelude::*;
    use roaring::RoaringBitmap;

    fn roaring_bytes(rows: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        RoaringBitmap::from_sorted_iter(rows.iter().copied())
            .expect("ascending")
            .serialize_into(&mut out)
            .expect("serialize");
        out
    }

    fn written(rows: &[u32]) -> Vec<u8> {
        let mut out = vec![7u8];
        write_sorted(rows, &mut out);
        assert_eq!(out[0], 7, "what was in the buffer before stays");
        out.split_off(1)
    }

    #[test]
    fn the_bytes_are_roarings_at_the_container_boundaries() {
        let cases: Vec<Vec<u32>> = vec![
            vec![],
            vec![0],
            vec![u32::MAX],
            (0..4096).collect(),
            (0..4097).collect(),
            (0..65_536).collect(),
            (65_530..65_545).collect(),
            (0..10_000).map(|i| i * 3).collect(),
            vec![1, 70_000, 140_000, 4_000_000_000],
        ];
        for rows in cases {
            assert_eq!(written(&rows), roaring_bytes(&rows), "{} rows from {:?}", rows.len(), rows.first());
        }
    }

    #[test]
    fn roaring_reads_what_is_written() {
        let rows: Vec<u32> = (0..9_000).map(|i| i * 7 + (i % 3)).collect();
        let back = RoaringBitmap::deserialize_from(&written(&rows)[..]).expect("reads");
        assert_eq!(back.iter().collect::<Vec<_>>(), rows);
    }

    proptest! {
        #[test]
        fn the_bytes_are_roarings(rows in prop::collection::btree_set(
            prop_oneof![0u32..5_000, 60_000u32..140_000, any::<u32>()], 0..6_000)) {
            let rows: Vec<u32> = rows.into_iter().collect();
            prop_assert_eq!(written(&rows), roaring_bytes(&rows));
        }

        #[test]
        fn dense_containers_are_roarings(start in 0u32..200_000, len in 4_000usize..9_000, step in 1u32..3) {
            let rows: Vec<u32> = (0..len as u32).map(|i| start + i * step).collect();
            prop_assert_eq!(written(&rows), roaring_bytes(&rows));
        }
    }
}
