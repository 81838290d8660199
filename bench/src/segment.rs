//! `sluice bench segment`: the segment engine's figures on Druid's Wikipedia sample repeated to
//! ~400k rows with shifted times (dictionaries keep the sample's realistic sizes).

use anyhow::{anyhow, Context, Result};
use clap::Args;
use sluice_format::index::{IncrementalIndex, IndexConfig};
use sluice_format::input::{DimPlan, Parsed, RecordParser};
use sluice_format::merge::{merge, MergeOptions};
use sluice_format::row::{DimValue, Row};
use sluice_format::segment::{Codec, Segment};
use sluice_format::spec::{load_spec, Compression, DatasourceSpec};
use sluice_format::time::Interval;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{best, default_sample, wikipedia_records, TUTORIAL_SPEC};

/// Options of `bench segment`.
#[derive(Args)]
pub struct SegmentArgs {
    /// Rows to generate from the sample.
    #[arg(long, default_value_t = 400_000)]
    rows: usize,
    /// Runs per stage; the best is reported.
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    /// Hydrants merged by the merge stage.
    #[arg(long, default_value_t = 8)]
    hydrants: usize,
    /// The Wikipedia sample (newline-delimited JSON, gzipped).
    #[arg(long)]
    sample: Option<PathBuf>,
    /// Writes the merged segment's rows as newline-delimited JSON (for the Parquet comparison).
    #[arg(long)]
    export_rows: Option<PathBuf>,
    /// Writes the merged segment (zstd) to this file.
    #[arg(long)]
    write_segment: Option<PathBuf>,
    /// String dimensions measured a second time written without bitmaps (Druid's
    /// `createBitmapIndex: false`): by default the three with more than 10,000 values.
    #[arg(long, value_delimiter = ',', default_value = "comment,page,user")]
    without_bitmaps: Vec<String>,
    /// Prints one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// `plans` with `names` written without bitmaps.
pub(super) fn without_bitmaps(plans: &[DimPlan], names: &[String]) -> Vec<DimPlan> {
    plans
        .iter()
        .cloned()
        .map(|mut p| {
            p.bitmap_index &= !names.contains(&p.name);
            p
        })
        .collect()
}

pub(super) fn parse_all(spec: &DatasourceSpec, records: &[Vec<u8>]) -> Result<(Vec<Row>, RecordParser)> {
    let mut parser = RecordParser::new(spec).map_err(|e| anyhow!(e.to_string()))?;
    let mut rows = Vec::with_capacity(records.len());
    let mut out = Vec::with_capacity(2);
    for r in records {
        out.clear();
        parser.parse_record(r, &mut out);
        for o in out.drain(..) {
            match o {
                Ok(Parsed::Row { row, .. }) => rows.push(row),
                other => return Err(anyhow!("sample record did not parse: {other:?}")),
            }
        }
    }
    Ok((rows, parser))
}

pub(super) fn build_indexes(config: &IndexConfig, rows: Vec<Row>, plans: &[DimPlan]) -> Vec<IncrementalIndex> {
    let mut indexes: Vec<IncrementalIndex> = Vec::new();
    for row in rows {
        let pos = match indexes.iter().position(|i| i.interval().contains(row.time)) {
            Some(p) => p,
            None => {
                indexes.push(IncrementalIndex::new(config.clone(), config.segment_granularity.bucket(row.time)));
                indexes.len() - 1
            }
        };
        indexes[pos].add(row, plans);
    }
    indexes
}

/// `rows` of the time chunk `chunk` persisted as `parts` consecutive hydrants.
fn persist_parts(
    config: &IndexConfig,
    chunk: Interval,
    rows: &[Row],
    parts: usize,
    plans: &[DimPlan],
) -> Result<Vec<Segment>> {
    let per = rows.len().div_ceil(parts.max(1)).max(1);
    let mut hydrants = Vec::new();
    for (i, part) in rows.chunks(per).enumerate() {
        let mut index = IncrementalIndex::new(config.clone(), chunk);
        part.iter().for_each(|r| index.add(r.clone(), plans));
        hydrants.push(Segment::from_bytes(&format!("hydrant-{i}"), index.persist(Compression::default())?)?);
    }
    Ok(hydrants)
}

/// Merge options writing one segment with `codec`.
fn options(codec: Codec) -> MergeOptions {
    MergeOptions { max_rows_per_segment: u64::MAX, compression: Compression { dimensions: codec, metrics: codec } }
}

/// Runs `bench segment`.
pub fn run(args: SegmentArgs) -> Result<()> {
    let sample = args.sample.clone().unwrap_or_else(default_sample);
    let records = wikipedia_records(&sample, args.rows)?;
    let spec = load_spec(TUTORIAL_SPEC)?.spec;
    let config = IndexConfig::from_spec(&spec);
    let n = records.len();
    let input_bytes: usize = records.iter().map(Vec::len).sum();

    let (parse_time, (rows, parser)) = best(args.repeat, || parse_all(&spec, &records))?;
    // The same rows as Avro datums (`avro_stream`, schema inline).
    let avro_records = super::avro_rows::encode(&records)?;
    let mut avro_spec: serde_json::Value = serde_json::from_str(TUTORIAL_SPEC)?;
    avro_spec["ioConfig"]["inputFormat"] = serde_json::json!({"type": "avro_stream",
        "avroBytesDecoder": {"type": "schema_inline", "schema": super::avro_rows::schema_json()}});
    let avro_spec = sluice_format::spec::load_spec_value(avro_spec)?.spec;
    let (avro_parse_time, (avro_rows, _)) = best(args.repeat, || parse_all(&avro_spec, &avro_records))?;
    if avro_rows != rows {
        return Err(anyhow!("the Avro records parsed into other rows than the JSON ones"));
    }
    let avro_bytes: usize = avro_records.iter().map(Vec::len).sum();
    // And as Protobuf messages (`protobuf`, descriptor set inline).
    let protobuf_records = super::protobuf_rows::encode(&records)?;
    let mut protobuf_spec: serde_json::Value = serde_json::from_str(TUTORIAL_SPEC)?;
    protobuf_spec["ioConfig"]["inputFormat"] =
        serde_json::json!({"type": "protobuf", "protoBytesDecoder": super::protobuf_rows::decoder()});
    let protobuf_spec = sluice_format::spec::load_spec_value(protobuf_spec)?.spec;
    let (protobuf_parse_time, (protobuf_rows, _)) = best(args.repeat, || parse_all(&protobuf_spec, &protobuf_records))?;
    if protobuf_rows != rows {
        return Err(anyhow!("the Protobuf records parsed into other rows than the JSON ones"));
    }
    let protobuf_bytes: usize = protobuf_records.iter().map(Vec::len).sum();
    let (index_time, indexes) = best(args.repeat, || {
        let copy = rows.clone();
        let start = Instant::now();
        let built = build_indexes(&config, copy, parser.dimensions());
        Ok((start.elapsed(), built))
    })
    .map(|(_, (t, i))| (t, i))?;
    let main = indexes.iter().max_by_key(|i| i.num_rows()).ok_or_else(|| anyhow!("no rows"))?;
    let main_rows = main.num_rows();
    let (persist_time, hydrant) = best(args.repeat, || Ok(main.persist(Compression::default())?))?;

    // The merge stage: the main chunk's rows as `hydrants` consecutive persists.
    let main_chunk = main.interval();
    let chunk_rows: Vec<Row> = rows.iter().filter(|r| main_chunk.contains(r.time)).cloned().collect();
    let hydrants = persist_parts(&config, main_chunk, &chunk_rows, args.hydrants, parser.dimensions())?;
    let (merge_time, merged) = best(args.repeat, || Ok(merge(&hydrants, &options(Codec::Lz4))?))?;
    let merged_lz4: usize = merged.iter().map(Vec::len).sum();
    let merged_zstd_bytes = merge(&hydrants, &options(Codec::Zstd))?;
    let merged_zstd: usize = merged_zstd_bytes.iter().map(Vec::len).sum();
    if let Some(path) = &args.write_segment {
        std::fs::write(path, &merged_zstd_bytes[0]).with_context(|| format!("write {}", path.display()))?;
    }
    let breakdown = part_sizes(&Segment::from_bytes("merged-zstd", merged_zstd_bytes[0].clone())?);
    let merged_rows = chunk_rows.len();

    // The same hydrants with some dimensions written without bitmaps.
    let plans = without_bitmaps(parser.dimensions(), &args.without_bitmaps);
    let sparse = persist_parts(&config, main_chunk, &chunk_rows, args.hydrants, &plans)?;
    let (sparse_merge_time, _) = best(args.repeat, || Ok(merge(&sparse, &options(Codec::Lz4))?))?;
    let sparse_zstd_bytes = merge(&sparse, &options(Codec::Zstd))?;
    let sparse_zstd: usize = sparse_zstd_bytes.iter().map(Vec::len).sum();
    let sparse_breakdown = part_sizes(&Segment::from_bytes("sparse-zstd", sparse_zstd_bytes[0].clone())?);

    if let Some(path) = &args.export_rows {
        let seg = Segment::from_bytes("merged", merged[0].clone())?;
        export_rows(&seg, path)?;
    }

    let rate = |rows: usize, d: Duration| rows as f64 / d.as_secs_f64();
    let report = serde_json::json!({
        "source": sample.display().to_string(),
        "rows": n,
        "input_bytes": input_bytes,
        "time_chunks": indexes.len(),
        "parse_rows_per_s": rate(n, parse_time),
        "parse_mb_per_s": input_bytes as f64 / 1e6 / parse_time.as_secs_f64(),
        "parse_avro_rows_per_s": rate(n, avro_parse_time),
        "avro_input_bytes": avro_bytes,
        "parse_protobuf_rows_per_s": rate(n, protobuf_parse_time),
        "protobuf_input_bytes": protobuf_bytes,
        "index_rows_per_s": rate(n, index_time),
        "persist_rows_per_s": rate(main_rows, persist_time),
        "persist_rows": main_rows,
        "hydrant_bytes": hydrant.len(),
        "merge_rows_per_s": rate(merged_rows, merge_time),
        "merge_input_hydrants": hydrants.len(),
        "merge_rows": merged_rows,
        "segment_bytes_lz4": merged_lz4,
        "segment_bytes_zstd": merged_zstd,
        "segment_bytes_per_row_lz4": merged_lz4 as f64 / merged_rows as f64,
        "segment_bytes_per_row_zstd": merged_zstd as f64 / merged_rows as f64,
        "segment_zstd_bytes_by_part": breakdown,
        "without_bitmaps": args.without_bitmaps,
        "sparse_merge_rows_per_s": rate(merged_rows, sparse_merge_time),
        "sparse_segment_bytes_zstd": sparse_zstd,
        "sparse_segment_bytes_per_row_zstd": sparse_zstd as f64 / merged_rows as f64,
        "sparse_segment_zstd_bytes_by_part": sparse_breakdown,
    });
    if args.json {
        println!("{report}");
    } else {
        let f = |k: &str| report[k].as_f64().unwrap_or(0.0);
        println!(
            "segment engine, single thread, {n} rows of Druid's Wikipedia sample ({} time chunks), best of {}",
            indexes.len(),
            args.repeat
        );
        println!("  parse JSON -> rows      {:>12.0} rows/s  ({:.1} MB/s)", f("parse_rows_per_s"), f("parse_mb_per_s"));
        println!(
            "  parse Avro -> rows      {:>12.0} rows/s  ({:.0} bytes/record, JSON {:.0})",
            f("parse_avro_rows_per_s"),
            avro_bytes as f64 / n as f64,
            input_bytes as f64 / n as f64
        );
        println!(
            "  parse Protobuf -> rows  {:>12.0} rows/s  ({:.0} bytes/record)",
            f("parse_protobuf_rows_per_s"),
            protobuf_bytes as f64 / n as f64
        );
        println!("  build incremental index {:>12.0} rows/s", f("index_rows_per_s"));
        println!(
            "  persist hydrant         {:>12.0} rows/s  ({main_rows} rows, {} bytes)",
            f("persist_rows_per_s"),
            hydrant.len()
        );
        println!(
            "  merge {} hydrants        {:>12.0} rows/s  ({merged_rows} rows)",
            hydrants.len(),
            f("merge_rows_per_s")
        );
        println!("  segment size (lz4)      {:>12.1} bytes/row ({merged_lz4} bytes)", f("segment_bytes_per_row_lz4"));
        println!("  segment size (zstd)     {:>12.1} bytes/row ({merged_zstd} bytes)", f("segment_bytes_per_row_zstd"));
        println!("  without bitmaps on {}:", args.without_bitmaps.join(", "));
        println!("    merge {} hydrants      {:>12.0} rows/s", sparse.len(), f("sparse_merge_rows_per_s"));
        println!(
            "    segment size (zstd)   {:>12.1} bytes/row ({sparse_zstd} bytes)",
            f("sparse_segment_bytes_per_row_zstd")
        );
    }
    Ok(())
}

/// Bytes per part name (dictionary, ids, bitmaps, values, ...) summed over columns.
fn part_sizes(seg: &Segment) -> serde_json::Value {
    let mut sizes = std::collections::BTreeMap::<String, u64>::new();
    for c in &seg.directory().columns {
        for (name, p) in &c.parts {
            *sizes.entry(name.clone()).or_default() += p.length;
        }
    }
    serde_json::to_value(sizes).unwrap_or_default()
}

/// Writes a segment's rows as newline-delimited JSON: `__time` in ISO-8601, then each
/// dimension under its name (multi-values as arrays, nulls omitted as JSON null).
pub(super) fn export_rows(seg: &Segment, path: &std::path::Path) -> Result<()> {
    let names: Vec<String> = seg.directory().columns[1..].iter().map(|c| c.name.clone()).collect();
    let mut out =
        std::io::BufWriter::new(std::fs::File::create(path).with_context(|| format!("create {}", path.display()))?);
    for (t, dims, _) in seg.read_rows()? {
        let mut obj = serde_json::Map::new();
        obj.insert("__time".into(), sluice_format::time::format_iso(t).into());
        for (name, d) in names.iter().zip(dims) {
            let v = match d {
                DimValue::Null => serde_json::Value::Null,
                DimValue::Str(s) => s.into(),
                DimValue::Multi(v) => v.into(),
                DimValue::Long(x) => x.into(),
                DimValue::Double(x) => x.into(),
                DimValue::Float(x) => (x as f64).into(),
            };
            obj.insert(name.clone(), v);
        }
        serde_json::to_writer(&mut out, &obj)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}
