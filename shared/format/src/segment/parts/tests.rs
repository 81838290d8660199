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
