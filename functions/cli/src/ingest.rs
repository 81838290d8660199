//! `sluice ingest`: a local batch run of the segment engine. Records from newline-delimited
//! files (gzip allowed) go through the indexer's ingester: parsed with a Druid spec, indexed
//! per time chunk, persisted as hydrants whenever `maxRowsInMemory`, `maxBytesInMemory` or
//! `intermediatePersistPeriod` say so (the indexing task's rules), then merged into final
//! segments split at `maxRowsPerSegment` and written under the output folder.

use anyhow::{anyhow, Context, Result};
use clap::Args;
use sluice_format::merge::{merge, MergeOptions};
use sluice_format::meters::RowMeters;
use sluice_format::segment::Segment;
use sluice_format::spec::{load_spec, Compression};
use sluice_format::time::format_iso;
use sluice_format::window::MessageWindow;
use sluice_kafka::{Flow, Record};
use sluice_pipeline::indexer::Ingester;
use sluice_pipeline::schemas::descriptor_dir;
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

/// A record of the input files as the indexer's ingester takes it: the file's number stands
/// for the partition and the line number for the offset, so meters and parse exceptions name
/// where a record came from.
fn record(file: usize, line: u64, bytes: &[u8]) -> Record<'_> {
    Record::value(file as i32, line as i64, Some(bytes), None)
}

/// Persists the ingester's indexes as hydrants of their time chunks.
fn persist(
    ingester: &mut Ingester,
    compression: Compression,
    hydrants: &mut BTreeMap<i64, Vec<Segment>>,
) -> Result<()> {
    for index in ingester.take_indexes() {
        let start = index.interval().start;
        let parts = hydrants.entry(start).or_default();
        let name = format!("hydrant-{start}-{}", parts.len());
        parts.push(Segment::from_bytes(&name, index.persist(compression)?)?);
    }
    Ok(())
}

/// Runs `sluice ingest`: the records of the files through the indexer's ingester (the same
/// parse, window, rollup and persist rules as an indexing task), then a merge per time chunk.
pub fn run(args: IngestArgs) -> Result<()> {
    let text = std::fs::read_to_string(&args.spec).with_context(|| format!("read {}", args.spec.display()))?;
    let loaded = load_spec(&text).with_context(|| format!("spec {}", args.spec.display()))?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let spec = loaded.spec;
    let tuning = &spec.tuning;
    let meters = RowMeters::new(tuning.max_saved_parse_exceptions, tuning.max_parse_exceptions);
    let mut ingester = Ingester::new(&spec, &descriptor_dir(), MessageWindow::default(), meters)
        .map_err(|e| anyhow!("spec {}: {e}", args.spec.display()))?;
    let started = Instant::now();
    let mut hydrants: BTreeMap<i64, Vec<Segment>> = BTreeMap::new();
    let where_ = |partition: i32, offset: i64| (args.inputs[partition as usize].display().to_string(), offset as u64);
    for (file, path) in args.inputs.iter().enumerate() {
        for (n, line) in open(path)?.split(b'\n').enumerate() {
            let line = line.with_context(|| format!("read {}", path.display()))?;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match ingester.ingest(record(file, n as u64 + 1, &line)) {
                Ok(Flow::Pause) => persist(&mut ingester, tuning.intermediate_index, &mut hydrants)?,
                Ok(Flow::Continue) => {}
                Err(_) => {
                    let e = ingester.fatal.take().expect("the ingester keeps the error that stopped it");
                    let (file, line) = where_(e.last.partition, e.last.offset);
                    return Err(anyhow!(
                        "more than maxParseExceptions ({}) parse exceptions; the last: {file}:{line}: {}",
                        e.max,
                        e.last.reason
                    ));
                }
            }
        }
    }
    persist(&mut ingester, tuning.intermediate_index, &mut hydrants)?;
    let m = &ingester.meters;
    let (processed, with_error, unparseable, thrown_away) =
        (m.processed, m.processed_with_error, m.unparseable, m.thrown_away);
    let exceptions: Vec<Exception> = m
        .saved_exceptions
        .iter()
        .map(|e| {
            let (file, line) = where_(e.partition, e.offset);
            Exception { file, line, reason: e.reason.clone() }
        })
        .collect();
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
    let kept: Vec<&Exception> = exceptions.iter().rev().collect();
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
