//! `sluice bench fragments`: what compaction buys queries. The query benchmark's five queries
//! over the same day of Druid's Wikipedia sample laid out two ways, measured in one run: as a
//! stream that publishes every minute leaves it (`--per-chunk` segments per time chunk, 1,440 by
//! default, each a consecutive slice of the chunk's rows in time order), and as compaction
//! leaves it (one segment per `maxRowsPerSegment` rows of a chunk). Both layouts must give the
//! same answers; the run fails if they do not.

use super::query::{best_run, queries};
use super::segment::{build_indexes, parse_all};
use super::{default_sample, Sample, TUTORIAL_SPEC};
use anyhow::{bail, Result};
use clap::Args;
use sluice_format::index::IndexConfig;
use sluice_format::merge::{merge, MergeOptions};
use sluice_format::row::Row;
use sluice_format::segment::Segment;
use sluice_format::spec::load_spec;
use sluice_query::QuerySegment;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Options of `bench fragments`.
#[derive(Args)]
pub struct FragmentsArgs {
    /// Rows of the sample, all moved into its main day (39,244 is the sample once).
    #[arg(long, default_value_t = 39_244)]
    rows: usize,
    /// Segments per time chunk as the stream leaves them (1,440: one a minute for a day).
    #[arg(long, default_value_t = 1_440)]
    per_chunk: usize,
    /// Runs per query; the best is reported.
    #[arg(long, default_value_t = 20)]
    repeat: usize,
    /// The Wikipedia sample (newline-delimited JSON, gzipped).
    #[arg(long)]
    sample: Option<PathBuf>,
}

/// Runs `bench fragments`.
pub fn run(args: FragmentsArgs) -> Result<()> {
    let sample = args.sample.clone().unwrap_or_else(default_sample);
    let records = Sample::load(&sample)?.records_in_one_day(0, args.rows)?;
    let spec = load_spec(TUTORIAL_SPEC)?.spec;
    let config = IndexConfig::from_spec(&spec);
    let (mut rows, parser) = parse_all(&spec, &records)?;
    rows.sort_by_key(|r| r.time);
    let num_rows = rows.len();
    let dir = tempfile::tempdir()?;
    let options =
        MergeOptions { max_rows_per_segment: spec.tuning.max_rows_per_segment, compression: spec.tuning.index };
    let written = std::cell::Cell::new(0_usize);
    let build = |rows: Vec<Row>, tag: &str| -> Result<Vec<QuerySegment>> {
        let mut out = Vec::new();
        for index in build_indexes(&config, rows, &parser) {
            let hydrant = Segment::from_bytes("hydrant", index.persist(spec.tuning.index)?)?;
            for bytes in merge(&[hydrant], &options)? {
                written.set(written.get() + 1);
                out.push(segment_file(dir.path(), &format!("{tag}-{}", written.get()), index.interval(), bytes)?);
            }
        }
        Ok(out)
    };
    let compacted = build(rows.clone(), "compacted")?;
    let mut by_chunk: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
    for row in rows {
        by_chunk.entry(config.segment_granularity.bucket(row.time).start).or_default().push(row);
    }
    let mut fragmented = Vec::new();
    for (_, chunk) in by_chunk {
        // `per_chunk` consecutive slices of nearly equal size (none empty).
        let n = args.per_chunk.clamp(1, chunk.len());
        for k in 0..n {
            let part = chunk[k * chunk.len() / n..(k + 1) * chunk.len() / n].to_vec();
            fragmented.extend(build(part, "fragment")?);
        }
    }

    println!(
        "{num_rows} rows of one day; {} segments as a stream leaves them, {} as compaction leaves them; best of {} runs, one thread",
        fragmented.len(),
        compacted.len(),
        args.repeat
    );
    println!("{:<52} {:>14} {:>14} {:>9}", "query", "fragmented ms", "compacted ms", "speedup");
    for q in queries() {
        let (many_ms, many) = best_run(&q, &fragmented, args.repeat)?;
        let (few_ms, few) = best_run(&q, &compacted, args.repeat)?;
        if many != few {
            bail!("{}: the two layouts answer differently:\n{many}\n{few}", q.name);
        }
        println!("{:<52} {:>14.2} {:>14.2} {:>8.1}x", q.name, many_ms, few_ms, many_ms / few_ms);
    }
    Ok(())
}

fn segment_file(
    dir: &Path,
    name: &str,
    interval: sluice_format::time::Interval,
    bytes: Vec<u8>,
) -> Result<QuerySegment> {
    let path = dir.join(format!("{name}.seg"));
    std::fs::write(&path, bytes)?;
    Ok(QuerySegment { id: name.to_string(), interval, segment: Segment::open_file(&path)? })
}
