//! Unit tests of the segment parts: each encoding written and read back.

use super::*;

#[test]
fn longs_round_trip_every_width_and_codec() {
    let mixed: Vec<i64> = (0..20_000i64)
        .map(|i| match i % 5 {
            0 => i,
            1 => i * 1000,
            2 => -i * 7_000_000_000,
            3 => i64::MAX - i,
            _ => 42,
        })
        .collect();
    // Blocks of each width: 1, 2, 4 and 8 bytes per offset, and a partial last block.
    let widths: Vec<i64> = [200i64, 60_000, 4_000_000_000, i64::MAX / 3]
        .iter()
        .flat_map(|&span| (0..8192i64).map(move |i| 1_000 + (i * 7919) % span))
        .chain(0..100)
        .collect();
    for codec in [Codec::None, Codec::Lz4, Codec::Zstd] {
        for (delta, planes) in [(false, false), (true, false), (false, true), (true, true)] {
            for values in [&mixed, &widths] {
                let mut enc = LongsEncoder::longs(codec, delta);
                if planes {
                    enc = enc.byte_planes();
                }
                values.iter().for_each(|v| enc.push(*v));
                let part = enc.finish();
                assert_eq!(part[2], u8::from(delta) | if planes { 2 } else { 0 }, "flags");
                let p = NumericPart::open(&part, KIND_LONGS, "t", "longs").expect("open");
                assert_eq!(&p.all_longs().expect("decode"), values, "{codec:?} delta {delta} planes {planes}");
            }
        }
    }
}

#[test]
fn byte_planes_compress_slowly_varying_values_better() {
    let times: Vec<i64> = (0..65_536i64).map(|i| 1_442_016_000_000 + i * 37 + (i * 7919) % 1000).collect();
    let size = |planes: bool| {
        let mut enc = LongsEncoder::longs(Codec::Zstd, false);
        if planes {
            enc = enc.byte_planes();
        }
        times.iter().for_each(|v| enc.push(*v));
        enc.finish().len()
    };
    let (flat, planes) = (size(false), size(true));
    assert!(planes < flat, "byte planes {planes} bytes, flat {flat}");
}

#[test]
fn unknown_flags_are_refused() {
    let mut part = LongsEncoder::longs(Codec::None, false).finish();
    part[2] = 4;
    let e = NumericPart::open(&part, KIND_LONGS, "t", "longs").expect_err("unknown flag");
    assert!(e.to_string().contains("unknown flags"), "{e}");
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

#[test]
fn front_coded_bytes_round_trip_smaller() {
    // Sorted values sharing prefixes (a dictionary), an empty first value, a value longer than
    // the block target, values past 127 bytes (two-byte lengths).
    let mut values: Vec<Vec<u8>> = (0..20_000).map(|i| format!("Wikipedia:Page/{i:06}").into_bytes()).collect();
    values.extend([vec![b'x'; 200], [b'x'; 200].iter().chain(b"yz").copied().collect(), vec![b'z'; 100_000]]);
    values.insert(0, vec![]);
    for codec in [Codec::None, Codec::Lz4, Codec::Zstd] {
        let (mut plain, mut front) = (BytesEncoder::new(codec), BytesEncoder::front_coded(codec));
        values.iter().for_each(|v| {
            plain.push(v);
            front.push(v);
        });
        let (plain, front) = (plain.finish(), front.finish());
        let p = BytesPart::open(&front, "t", "bytes").expect("open");
        assert!(p.num_blocks() > 1);
        assert_eq!(p.all().expect("decode"), values, "{codec:?}");
        assert!(front.len() < plain.len() * 3 / 4, "{codec:?}: {} front coded, {} not", front.len(), plain.len());
    }
}

/// A front-coded part of `codec` none holding `raw` as its one block of `n` values.
fn front_part(raw: &[u8], n: u32) -> Vec<u8> {
    let mut part = vec![KIND_BYTES, Codec::None as u8, FLAG_FRONT_CODED, 0];
    for v in [n, 1, 0, raw.len() as u32, raw.len() as u32] {
        part.extend_from_slice(&v.to_le_bytes());
    }
    part.extend_from_slice(raw);
    part
}

#[test]
fn corrupt_front_coded_blocks_are_named() {
    let decode = |raw: &[u8], n: u32| {
        let part = front_part(raw, n);
        let p = BytesPart::open(&part, "seg-1", "dictionary").expect("open");
        p.all().map(|_| ()).expect_err("corrupt").to_string()
    };
    let ok = front_part(&[0, 2, b'a', b'b', 1, 1, b'c'], 2);
    assert_eq!(
        BytesPart::open(&ok, "t", "d").expect("open").all().expect("decode"),
        vec![b"ab".to_vec(), b"ac".to_vec()]
    );
    for (raw, n, says) in [
        (&[0, 2, b'a', b'b', 3, 1, b'c'][..], 2, "shares 3 bytes with a value of 2"),
        (&[1, 1, b'a', 0, 0][..], 2, "shares 1 bytes with a value of 0"),
        (&[0, 9, b'a', 0][..], 2, "run past the block"),
        (&[0, 1, b'a', 0, 0, 7][..], 2, "1 bytes after its 2 values"),
        (&[0, 0xff, 0xff, 0xff, 0xff, 0x7f][..], 2, "does not fit 32 bits"),
        (&[0, 0x80, 0x80, 0x80, 0x80, 0x80, 0][..], 2, "more than 5 bytes"),
        (&[0, 0xff, 0xff, 0xff, 0x7f, 0][..], 3, "run past the block"),
    ] {
        let e = decode(raw, n);
        assert!(e.contains("seg-1") && e.contains("dictionary") && e.contains(says), "{raw:?}: {e}");
    }
    let mut part = front_part(&[0, 0], 1);
    part[2] = 2;
    let e = BytesPart::open(&part, "t", "bytes").expect_err("unknown flag");
    assert!(e.to_string().contains("unknown flags"), "{e}");
}

#[test]
fn front_coded_values_cannot_outgrow_a_block() {
    // Each value repeats the whole previous one and adds 64 KiB: 300 of them would decode to
    // gigabytes from a block of 20 MB; the decoder stops at 16 MiB.
    let mut raw = Vec::new();
    let mut previous = 0u32;
    for _ in 0..300 {
        for v in [previous, 1 << 16] {
            let mut v = v;
            while v >= 0x80 {
                raw.push(v as u8 | 0x80);
                v >>= 7;
            }
            raw.push(v as u8);
        }
        raw.extend(std::iter::repeat_n(b'q', 1 << 16));
        previous += 1 << 16;
        if raw.len() > MAX_BLOCK_BYTES - (1 << 17) {
            break;
        }
    }
    let part = front_part(&raw, 300);
    let e = BytesPart::open(&part, "t", "d").expect("open").all().expect_err("too large").to_string();
    assert!(e.contains("values of more than"), "{e}");
}
