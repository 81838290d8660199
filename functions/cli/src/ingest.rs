//! `sluice ingest`: a local batch run of the segment engine. Records from newline-delimited
//! files (gzip allowed) are parsed with a Druid spec, indexed per time chunk, persisted as
//! hydrants whenever `maxRowsInMemory` / `maxBytesInMemory` say so, merged into final segments
//! split at `maxRowsPerSegment`, and written under the output folder.

use anyhow::{anyhow, Context, Result};
use clap::Args;
use sluice_format::index::{IncrementalIndex, IndexConfig};
use sluice_format::input::{Parsed, RecordParser};
use sluice_format::merge::{merge, MergeOptions};
use sluice_format::segment::Segment;
use sluice_format::spec::load_spec;
use sluice_format::time::format_iso;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of `sluice ingest`.
#[derive(Args)]
pub struct IngestArgs {
    /// A Druid Kafka supervisor spec (JSON).
    #[arg(long)]
    spec: PathBuf,
    /// Input files, one record per line; `.gz` files are decompressed.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Where segments are written.
    #[arg(long, default_value = ".sluice/segments")]
    out: PathBuf,
    /// Prints one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// One parse exception kept for the report.
#[derive(serde::Serialize)]
struct Exception {
    file: String,
    line: u64,
    reason: String,
}

fn open(path: &Path) -> Result<Box<dyn BufRead>> {
    let file = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    Ok(Box::new(BufReader::new(reader)))
}

/// Runs `sluice ingest`.
pub fn run(args: IngestArgs) -> Result<()> {
    let text = std::fs::read_to_string(&args.spec).with_context(|| format!("read {}", args.spec.display()))?;
    let loaded = load_spec(&text).with_context(|| format!("spec {}", args.spec.display()))?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let spec = loaded.spec;
    let config = IndexConfig::from_spec(&spec);
    let tuning = &spec.tuning;
    let mut parser = RecordParser::new(&spec).map_err(|e| anyhow!("spec {}: {e}", args.spec.display()))?;
    let started = Instant::now();
    let mut indexes: BTreeMap<i64, IncrementalIndex> = BTreeMap::new();
    let mut hydrants: BTreeMap<i64, Vec<Segment>> = BTreeMap::new();
    let (mut processed, mut with_error, mut unparseable, mut thrown_away) = (0u64, 0u64, 0u64, 0u64);
    let mut exceptions: Vec<Exception> = Vec::new();
    let mut out = Vec::new();
    for path in &args.inputs {
        for (n, line) in open(path)?.split(b'\n').enumerate() {
            let line = line.with_context(|| format!("read {}", path.display()))?;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            out.clear();
            parser.parse_record(&line, &mut out);
            for o in out.drain(..) {
                match o {
                    Ok(Parsed::Row { row, errors }) => {
                        processed += 1;
                        if !errors.is_empty() {
                            with_error += 1;
                            exceptions.push(Exception {
                                file: path.display().to_string(),
                                line: n as u64 + 1,
                                reason: errors.join("; "),
                            });
                        }
                        let chunk = config.segment_granularity.bucket(row.time);
                        let index =
                            indexes.entry(chunk.start).or_insert_with(|| IncrementalIndex::new(config.clone(), chunk));
                        index.add(row, parser.dimensions());
                        let full = index.num_rows() as u64 >= tuning.max_rows_in_memory
                            || tuning.max_bytes_in_memory.is_some_and(|max| index.estimated_bytes() as u64 >= max);
                        if full {
                            let done = indexes.remove(&chunk.start).expect("index present");
                            let name =
                                format!("hydrant-{}-{}", chunk.start, hydrants.get(&chunk.start).map_or(0, Vec::len));
                            hydrants
                                .entry(chunk.start)
                                .or_default()
                                .push(Segment::from_bytes(&name, done.persist(tuning.intermediate_index)?)?);
                        }
                    }
                    Ok(Parsed::Filtered) => thrown_away += 1,
                    Ok(Parsed::Skipped) => {}
                    Err(e) => {
                        unparseable += 1;
                        exceptions.push(Exception {
                            file: path.display().to_string(),
                            line: n as u64 + 1,
                            reason: e.reason,
                        });
                    }
                }
            }
            if unparseable + with_error > tuning.max_parse_exceptions {
                return Err(anyhow!(
                    "more than maxParseExceptions ({}) parse exceptions; the last: {}:{}: {}",
                    tuning.max_parse_exceptions,
                    path.display(),
                    n + 1,
                    exceptions.last().map_or("", |e| e.reason.as_str())
                ));
            }
        }
    }
    for (start, index) in std::mem::take(&mut indexes) {
        let name = format!("hydrant-{start}-last");
        hydrants.entry(start).or_default().push(Segment::from_bytes(&name, index.persist(tuning.intermediate_index)?)?);
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("create {}", args.out.display()))?;
    let options = MergeOptions { max_rows_per_segment: tuning.max_rows_per_segment, compression: tuning.index };
    let mut segments = Vec::new();
    for (start, parts) in &hydrants {
        for (partition, bytes) in merge(parts, &options)?.into_iter().enumerate() {
            let seg = Segment::from_bytes("merged", bytes.clone())?;
            let interval = seg.directory().interval;
            let file = args.out.join(
                format!(
                    "{}_{}_{}_{partition}.seg",
                    spec.data_source,
                    format_iso(interval.start),
                    format_iso(interval.end)
                )
                .replace(':', "-"),
            );
            std::fs::write(&file, &bytes).with_context(|| format!("write {}", file.display()))?;
            segments.push(serde_json::json!({
                "interval": interval.to_string(), "partition": partition, "rows": seg.num_rows(),
                "bytes": bytes.len(), "hydrants": parts.len(), "file": file.display().to_string(), "chunk": start,
            }));
        }
    }
    let kept: Vec<&Exception> = exceptions.iter().rev().take(tuning.max_saved_parse_exceptions as usize).collect();
    let report = serde_json::json!({
        "dataSource": spec.data_source,
        "rowStats": {"processed": processed, "processedWithError": with_error, "unparseable": unparseable, "thrownAway": thrown_away},
        "segments": segments,
        "parseExceptions": kept,
        "seconds": started.elapsed().as_secs_f64(),
    });
    if args.json {
        println!("{report}");
        return Ok(());
    }
    println!("{}: {processed} rows processed ({with_error} with errors), {unparseable} unparseable, {thrown_away} thrown away in {:.2}s", spec.data_source, started.elapsed().as_secs_f64());
    println!("{:<50} {:>9} {:>10} {:>9}", "interval", "rows", "bytes", "hydrants");
    for s in &segments {
        println!(
            "{:<50} {:>9} {:>10} {:>9}",
            format!("{}#{}", s["interval"].as_str().unwrap_or(""), s["partition"]),
            s["rows"],
            s["bytes"],
            s["hydrants"]
        );
    }
    for e in kept {
        println!("parse exception {}:{}: {}", e.file, e.line, e.reason);
    }
    println!("segments written to {}", args.out.display());
    Ok(())
}
