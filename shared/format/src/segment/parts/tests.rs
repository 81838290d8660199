use super::*;

#[test]
fn longs_round_trip_every_width_and_codec() {
    for codec in [Codec::None, Codec::Lz4, Codec::Zstd] {
        for delta in [false, true] {
            let values: Vec<i64> = (0..20_000i64)
                .map(|i| match i % 5 {
                    0 => i,
                    1 => i * 1000,
                    2 => -i * 7_000_000_000,
                    3 => i64::MAX - i,
                    _ => 42,
                })
                .collect();
            let mut enc = LongsEncoder::longs(codec, delta);
            values.iter().for_each(|v| enc.push(*v));
            let part = enc.finish();
            let p = NumericPart::open(&part, KIND_LONGS, "t", "longs").expect("open");
            assert_eq!(p.all_longs().expect("decode"), values);
        }
    }
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
