//! The reader against truncated, bit-flipped and length-forged segments: every case gives an
//! error naming the object (or decodes), never a panic, and never allocates much more than the
//! input justifies. Mutations inside parts also get their checksums fixed, so that the part
//! decoders themselves are exercised, not just the CRC check.

mod common;

use common::alloc;
use proptest::prelude::*;
use sluice_format::segment::{Directory, Segment};
use std::sync::OnceLock;

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

/// The allocation counters are process-wide: one test measures at a time.
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn measuring() -> std::sync::MutexGuard<'static, ()> {
    MEASURING.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A segment using every column and metric kind.
fn sample() -> &'static Vec<u8> {
    static SAMPLE: OnceLock<Vec<u8>> = OnceLock::new();
    SAMPLE.get_or_init(|| {
        let spec = sluice_format::spec::load_spec_value(serde_json::json!({
            "type": "kafka",
            "spec": {
                "dataSchema": {
                    "dataSource": "f",
                    "timestampSpec": {"column": "t", "format": "millis"},
                    "dimensionsSpec": {"dimensions": ["s", "m", {"name": "l", "type": "long"}, {"name": "d", "type": "double"}, {"name": "f", "type": "float"}]},
                    "metricsSpec": [
                        {"type": "count", "name": "c"}, {"type": "doubleSum", "name": "ds", "fieldName": "x"},
                        {"type": "floatMax", "name": "fm", "fieldName": "x"}, {"type": "longFirst", "name": "lf", "fieldName": "x"},
                        {"type": "doubleLast", "name": "dl", "fieldName": "x"}, {"type": "floatFirst", "name": "ff", "fieldName": "x"},
                        {"type": "stringLast", "name": "sl", "fieldName": "s"}, {"type": "HLLSketchBuild", "name": "h", "fieldName": "s"}
                    ],
                    "granularitySpec": {"segmentGranularity": "day", "queryGranularity": "none", "rollup": true}
                },
                "ioConfig": {"topic": "f", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "b"}}
            }
        }))
        .expect("spec")
        .spec;
        let records: Vec<String> = (0..300)
            .map(|i| {
                serde_json::json!({"t": 1_000 + i * 7, "s": format!("v{}", i % 13), "m": [format!("a{}", i % 3), format!("b{}", i % 5)],
                    "l": if i % 4 == 0 { serde_json::Value::Null } else { (i % 9).into() }, "d": i as f64 / 3.0, "f": i % 2, "x": i})
                .to_string()
            })
            .collect();
        let (indexes, _) = common::index_records(&spec, records.iter().map(|r| r.as_bytes()));
        indexes.values().next().expect("index").persist(Default::default()).expect("persist")
    })
}

fn decode_everything(bytes: Vec<u8>) -> Result<usize, String> {
    let seg = Segment::from_bytes("fuzzed-object", bytes).map_err(|e| e.to_string())?;
    let rows = seg.read_rows().map_err(|e| e.to_string())?;
    for col in &seg.directory().columns {
        if let Ok(s) = seg.string_column(col) {
            for b in s.bitmaps.map(|b| b.all()).transpose().map_err(|e| e.to_string())?.unwrap_or_default() {
                seg.bitmap(&b, &col.name).map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(rows.len())
}

/// Rebuilds a segment from a directory and a data area, with fresh checksums for `fix`.
fn rebuild(dir: &mut Directory, data: &[u8], fix_all: bool) -> Vec<u8> {
    if fix_all {
        for col in &mut dir.columns {
            for part in col.parts.values_mut() {
                let (s, e) = (part.offset as usize, (part.offset + part.length) as usize);
                if e <= data.len() {
                    part.crc32 = crc32fast::hash(&data[s..e]);
                }
            }
        }
    }
    let d = serde_json::to_vec(dir).expect("directory json");
    let mut out = b"SLUICESG".to_vec();
    out.extend_from_slice(&sluice_format::segment::FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(d.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&d).to_le_bytes());
    out.extend_from_slice(&d);
    out.extend_from_slice(data);
    out
}

fn split(bytes: &[u8]) -> (Directory, Vec<u8>) {
    let len = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
    let dir: Directory = serde_json::from_slice(&bytes[20..20 + len]).expect("directory");
    (dir, bytes[20 + len..].to_vec())
}

fn assert_bounded(result: Result<usize, String>, input_len: usize) {
    if let Err(e) = &result {
        assert!(e.contains("fuzzed-object"), "error does not name the object: {e}");
    }
    // Decoding this segment legitimately needs a few MiB; a forged length must not ask for more.
    let used = alloc::peak().saturating_sub(alloc::current());
    assert!(used < 64 * input_len + (32 << 20), "peak allocation {used} bytes for a {input_len}-byte input");
}

#[test]
fn the_sample_decodes() {
    let _one_at_a_time = measuring();
    assert_eq!(decode_everything(sample().clone()), Ok(300));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn truncated_segments_fail_cleanly(cut in 0usize..100_000) {
        let bytes = sample();
        let cut = cut % bytes.len();
        let _one_at_a_time = measuring();
        alloc::reset_peak();
        let result = decode_everything(bytes[..cut].to_vec());
        prop_assert!(result.is_err());
        assert_bounded(result, cut);
    }

    #[test]
    fn bit_flips_in_parts_fail_cleanly(flips in prop::collection::vec((any::<usize>(), 0u8..8), 1..6), fix in any::<bool>()) {
        let (mut dir, mut data) = split(sample());
        for (at, bit) in flips {
            let i = at % data.len();
            data[i] ^= 1 << bit;
        }
        let bytes = rebuild(&mut dir, &data, fix);
        let len = bytes.len();
        let verified = Segment::from_bytes("fuzzed-object", bytes.clone()).and_then(|s| s.verify());
        prop_assert_eq!(verified.is_ok(), fix, "verify finds a flipped bit unless the checksums were fixed");
        let _one_at_a_time = measuring();
        alloc::reset_peak();
        let result = decode_everything(bytes);
        if !fix {
            prop_assert!(result.is_err(), "a flipped bit must fail its checksum");
        }
        assert_bounded(result, len);
    }

    #[test]
    fn forged_lengths_fail_cleanly(at in any::<usize>(), header_at in 0usize..48, value in prop_oneof![Just(u32::MAX), Just(1u32 << 31), Just(1u32 << 24), Just(70_000u32), any::<u32>()], target in 0u8..3) {
        let whole = target == 0;
        let bytes = sample().clone();
        let mutated = if whole {
            // Anywhere in the file, including the header's directory length.
            let mut b = bytes;
            let i = at % (b.len() - 4);
            b[i..i + 4].copy_from_slice(&value.to_le_bytes());
            b
        } else {
            // Inside a part (often in its header and block table, where the counts and
            // lengths live), with checksums fixed so the decoders see the forged value.
            let (mut dir, mut data) = split(&bytes);
            let parts: Vec<(u64, u64)> = dir.columns.iter().flat_map(|c| c.parts.values().map(|p| (p.offset, p.length))).collect();
            let (offset, length) = parts[at % parts.len()];
            let i = if target == 1 && length > 4 {
                (offset as usize + header_at % (length as usize - 4)).min(data.len() - 4)
            } else {
                at % (data.len() - 4)
            };
            data[i..i + 4].copy_from_slice(&value.to_le_bytes());
            rebuild(&mut dir, &data, true)
        };
        let len = mutated.len();
        let _one_at_a_time = measuring();
        alloc::reset_peak();
        let result = decode_everything(mutated);
        assert_bounded(result, len);
    }
}
