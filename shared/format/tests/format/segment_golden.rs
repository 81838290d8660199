//! Golden segment files in `data/golden/`: the writer must reproduce them byte for byte, and a
//! reader written here from `docs/segment-format.md` alone (not the library's reader) must
//! decode them to Druid's rollup-tutorial rows. Regenerate with `SLUICE_BLESS=1` after a
//! deliberate format change (and bump the version); `data/golden/v1/` and `v2/` keep the
//! files of earlier versions, which must still read.

use crate::common::*;
use serde_json::Value as Json;
use sluice_format::merge::{merge, MergeOptions};
use sluice_format::segment::{Codec, Segment};
use sluice_format::spec::Compression;

fn rollup_segment(codec: Codec) -> Vec<u8> {
    let spec = spec("rollup-kafka-supervisor.json");
    let data = std::fs::read_to_string(data_path("rollup-data.json")).expect("data");
    let (indexes, _) = index_records(&spec, data.lines().map(str::as_bytes));
    let first_day = indexes.values().next().expect("index");
    let compression = Compression { dimensions: codec, metrics: codec };
    let hydrant = Segment::from_bytes("hydrant", first_day.persist(compression).expect("persist")).expect("open");
    let mut out = merge(&[hydrant], &MergeOptions { max_rows_per_segment: 1000, compression }).expect("merge");
    out.remove(0)
}

fn golden(name: &str, bytes: &[u8]) -> Vec<u8> {
    let path = data_path(&format!("golden/{name}"));
    if std::env::var_os("SLUICE_BLESS").is_some() {
        std::fs::write(&path, bytes).expect("write golden");
    }
    let stored = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e} (run with SLUICE_BLESS=1 to create)"));
    assert_eq!(stored, bytes, "{name}: the writer no longer produces the golden bytes");
    stored
}

fn u32_at(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes")) as usize
}

/// Decodes an uncompressed longs part as the format document specifies.
fn doc_longs(part: &[u8]) -> Vec<i64> {
    assert_eq!((part[0], part[1]), (1, 0), "longs part, codec none");
    let (delta, planes) = (part[2] & 1 == 1, part[2] & 2 == 2);
    let (num_values, block_values, num_blocks) = (u32_at(part, 4), u32_at(part, 8), u32_at(part, 12));
    let data = &part[16 + 4 * num_blocks..];
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..num_blocks {
        let end = u32_at(part, 16 + 4 * i);
        let block = &data[start..end];
        let n = block_values.min(num_values - i * block_values);
        let base = i64::from_le_bytes(block[..8].try_into().expect("base"));
        let width = block[8] as usize;
        assert_eq!(block.len(), 9 + n * width);
        let mut values: Vec<i64> = (0..n)
            .map(|j| {
                let mut b = [0u8; 8];
                match planes {
                    // Byte k of value j is at k * n + j.
                    true => (0..width).for_each(|k| b[k] = block[9 + k * n + j]),
                    false => b[..width].copy_from_slice(&block[9 + j * width..9 + (j + 1) * width]),
                }
                base.wrapping_add(u64::from_le_bytes(b) as i64)
            })
            .collect();
        if delta {
            for j in 1..n {
                values[j] = values[j].wrapping_add(values[j - 1]);
            }
        }
        out.extend(values);
        start = end;
    }
    out
}

/// Reads an unsigned LEB128 varint at `*at`.
fn doc_varint(raw: &[u8], at: &mut usize) -> usize {
    let (mut v, mut shift) = (0usize, 0);
    loop {
        let b = raw[*at];
        *at += 1;
        v |= ((b & 0x7f) as usize) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return v;
        }
    }
}

/// Decodes an uncompressed bytes part as the format document specifies.
fn doc_bytes(part: &[u8]) -> Vec<Vec<u8>> {
    assert_eq!((part[0], part[1]), (4, 0), "bytes part, codec none");
    let front_coded = part[2] & 1 == 1;
    let (num_values, num_blocks) = (u32_at(part, 4), u32_at(part, 8));
    let data = &part[12 + 12 * num_blocks..];
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..num_blocks {
        let first = u32_at(part, 12 + 12 * i);
        let raw_len = u32_at(part, 12 + 12 * i + 4);
        let end = u32_at(part, 12 + 12 * i + 8);
        let next = if i + 1 < num_blocks { u32_at(part, 12 + 12 * (i + 1)) } else { num_values };
        let raw = &data[start..end];
        assert_eq!(raw.len(), raw_len);
        let n = next - first;
        if front_coded {
            // Each value: the length of the prefix it shares with the value before, the length
            // of the rest, the rest.
            let (mut at, mut previous) = (0, Vec::new());
            for _ in 0..n {
                let (shared, rest) = (doc_varint(raw, &mut at), doc_varint(raw, &mut at));
                let value: Vec<u8> = previous[..shared].iter().chain(&raw[at..at + rest]).copied().collect();
                at += rest;
                out.push(value.clone());
                previous = value;
            }
            assert_eq!(at, raw.len());
        } else {
            let values_at = 4 * (n + 1);
            for j in 0..n {
                out.push(raw[values_at + u32_at(raw, 4 * j)..values_at + u32_at(raw, 4 * (j + 1))].to_vec());
            }
        }
        start = end;
    }
    out
}

#[test]
fn golden_files_match_the_writer_and_the_document() {
    let bytes = golden("rollup-2018-01-01.none.seg", &rollup_segment(Codec::None));
    assert_eq!(&bytes[..8], b"SLUICESG");
    assert_eq!(u32_at(&bytes, 8), 3);
    let dir_len = u32_at(&bytes, 12);
    let dir_bytes = &bytes[20..20 + dir_len];
    assert_eq!(crc32fast::hash(dir_bytes) as usize, u32_at(&bytes, 16));
    let dir: Json = serde_json::from_slice(dir_bytes).expect("directory JSON");
    let data = &bytes[20 + dir_len..];
    assert_eq!(dir["num_rows"], 3);
    let part = |col: &str, name: &str| -> &[u8] {
        let c = dir["columns"].as_array().expect("columns").iter().find(|c| c["name"] == col).expect("column");
        let p = &c["parts"][name];
        let (off, len) =
            (p["offset"].as_u64().expect("offset") as usize, p["length"].as_u64().expect("length") as usize);
        let bytes = &data[off..off + len];
        assert_eq!(crc32fast::hash(bytes) as u64, p["crc32"].as_u64().expect("crc"), "{col}.{name} checksum");
        bytes
    };
    let times = doc_longs(part("__time", "values"));
    assert_eq!(times, vec![1_514_768_460_000, 1_514_768_520_000, 1_514_768_580_000]);
    let dictionary: Vec<String> =
        doc_bytes(part("srcIP", "dictionary")).into_iter().map(|v| String::from_utf8(v).expect("utf8")).collect();
    assert_eq!(dictionary, vec!["1.1.1.1"]);
    let ids = doc_longs(part("srcIP", "ids"));
    assert_eq!(ids, vec![1, 1, 1]);
    let bitmaps = doc_bytes(part("srcIP", "bitmaps"));
    let rows_of_value_1 = roaring::RoaringBitmap::deserialize_from(&bitmaps[1][..]).expect("portable roaring");
    assert_eq!(rows_of_value_1.iter().collect::<Vec<_>>(), vec![0, 1, 2]);
    assert_eq!(doc_longs(part("count", "values")), vec![3, 2, 1]);
    assert_eq!(doc_longs(part("packets", "values")), vec![286, 415, 49]);
    assert_eq!(doc_longs(part("bytes", "values")), vec![35_937, 366_260, 10_204]);
}

#[test]
fn the_document_decodes_front_coded_dictionaries() {
    // The golden dictionaries hold one value each: sorted values sharing prefixes, some past
    // 127 bytes (two-byte lengths), over several blocks, written by the library.
    let mut values: Vec<String> = (0..9_000).map(|i| format!("Talk:Page {:05}", i * 7)).collect();
    values.push(format!("Talk:Page {}", "z".repeat(300)));
    values.push(format!("User:{}", "ü".repeat(100)));
    let mut enc = sluice_format::segment::parts::BytesEncoder::front_coded(Codec::None);
    values.iter().for_each(|v| enc.push(v.as_bytes()));
    let part = enc.finish();
    assert_eq!(part[2], 1, "the front-coded flag");
    assert!(u32_at(&part, 8) > 1, "several blocks");
    let decoded: Vec<String> = doc_bytes(&part).into_iter().map(|v| String::from_utf8(v).expect("utf8")).collect();
    assert_eq!(decoded, values);
}

#[test]
fn compressed_golden_files_match_and_decode() {
    for (codec, name) in [(Codec::Lz4, "rollup-2018-01-01.lz4.seg"), (Codec::Zstd, "rollup-2018-01-01.zstd.seg")] {
        let bytes = golden(name, &rollup_segment(codec));
        let seg = Segment::from_bytes(name, bytes).expect("open");
        assert_eq!(
            comparable(&seg),
            comparable(&Segment::from_bytes("none", rollup_segment(Codec::None)).expect("open"))
        );
    }
}

#[test]
fn segments_of_earlier_versions_still_read() {
    for (version, codec) in [1, 2].into_iter().flat_map(|v| ["none", "lz4", "zstd"].map(|c| (v, c))) {
        let name = format!("v{version}/rollup-2018-01-01.{codec}.seg");
        let old = std::fs::read(data_path(&format!("golden/{name}"))).expect("an earlier version's golden file");
        assert_eq!(u32_at(&old, 8), version, "{name}");
        let old = Segment::from_bytes(&name, old).unwrap_or_else(|e| panic!("{name} opens: {e}"));
        let new = Segment::from_bytes("none", rollup_segment(Codec::None)).expect("open");
        assert_eq!(comparable(&old), comparable(&new), "{name}: the same rows as this version");
    }
}
