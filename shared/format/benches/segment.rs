//! Kernels of the segment engine on Druid's Wikipedia sample (39,244 rows): parse, index
//! build, persist and merge. `sluice bench segment` prints the issue-level figures at 400k rows.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sluice_format::index::{IncrementalIndex, IndexConfig};
use sluice_format::input::{Parsed, RecordParser};
use sluice_format::merge::{merge, MergeOptions};
use sluice_format::row::Row;
use sluice_format::segment::Segment;
use sluice_format::spec::load_spec;
use std::io::BufRead;

/// mimalloc, as the Lambda functions and the `sluice` command link: the kernels allocate as
/// deployed (with the system allocator, fresh pages' faults were a fifth of the merge's time).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn sample() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/wikiticker-2015-09-12-sampled.json.gz");
    let file = std::fs::File::open(path).expect("sample");
    std::io::BufReader::new(flate2::read::GzDecoder::new(file)).lines().map(|l| l.expect("line")).collect()
}

/// Parse, index build, persist and merge on the sample.
fn kernels(c: &mut Criterion) {
    let spec = load_spec(include_str!("../../../data/specs/wikipedia-kafka-supervisor.json")).expect("spec").spec;
    let config = IndexConfig::from_spec(&spec);
    let lines = sample();
    let mut parser = RecordParser::new(&spec).expect("parser");
    let mut out = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    for l in &lines {
        parser.parse_record(l.as_bytes(), &mut out);
        for o in out.drain(..) {
            if let Ok(Parsed::Row { row, .. }) = o {
                rows.push(row);
            }
        }
    }
    let day = config.segment_granularity.bucket(sluice_format::time::parse_iso_instant("2015-09-12").expect("day"));
    let day_rows: Vec<Row> = rows.iter().filter(|r| day.contains(r.time)).cloned().collect();
    let build = |rows: &[Row]| {
        let mut index = IncrementalIndex::new(config.clone(), day);
        rows.iter().for_each(|r| index.add(r.clone(), parser.dimensions()));
        index
    };

    let mut g = c.benchmark_group("wikipedia");
    g.sample_size(10);
    g.throughput(Throughput::Elements(lines.len() as u64));
    g.bench_function("parse_json", |b| {
        b.iter(|| {
            let mut p = RecordParser::new(&spec).expect("parser");
            let mut out = Vec::new();
            for l in &lines {
                out.clear();
                p.parse_record(l.as_bytes(), &mut out);
            }
        })
    });
    // The indexing task's loop without Kafka: parse each record and index its row, the
    // row's strings and vectors handed back to the parser.
    g.bench_function("parse_and_index", |b| {
        b.iter(|| {
            let mut p = RecordParser::new(&spec).expect("parser");
            let (mut out, mut spare) = (Vec::new(), sluice_format::row::Spare::default());
            let mut indexes: std::collections::BTreeMap<i64, IncrementalIndex> = Default::default();
            for l in &lines {
                p.parse_record(l.as_bytes(), &mut out);
                for o in out.drain(..) {
                    if let Ok(Parsed::Row { row, .. }) = o {
                        let chunk = config.segment_granularity.bucket(row.time);
                        let index =
                            indexes.entry(chunk.start).or_insert_with(|| IncrementalIndex::new(config.clone(), chunk));
                        index.add_recycling(row, p.dimensions(), &mut spare);
                    }
                }
                p.recycle(&mut spare);
            }
            indexes
        })
    });
    g.throughput(Throughput::Elements(day_rows.len() as u64));
    g.bench_function("index_build", |b| {
        b.iter_batched(
            || day_rows.clone(),
            |rows| {
                let mut index = IncrementalIndex::new(config.clone(), day);
                rows.into_iter().for_each(|r| index.add(r, parser.dimensions()));
                index
            },
            criterion::BatchSize::LargeInput,
        )
    });
    let whole = build(&day_rows);
    g.bench_function("persist", |b| b.iter(|| whole.persist(Default::default()).expect("persist")));
    let hydrants: Vec<Segment> = day_rows
        .chunks(day_rows.len().div_ceil(8))
        .enumerate()
        .map(|(i, part)| {
            Segment::from_bytes(&format!("h{i}"), build(part).persist(Default::default()).expect("persist"))
                .expect("open")
        })
        .collect();
    let options = MergeOptions { max_rows_per_segment: u64::MAX, compression: Default::default() };
    g.bench_function("merge_8_hydrants", |b| b.iter(|| merge(&hydrants, &options).expect("merge")));
    g.finish();
}

criterion_group!(benches, kernels);
criterion_main!(benches);
