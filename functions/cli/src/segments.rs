//! `sluice segments DATASOURCE [--interval I]...`: the visible segments (interval, version,
//! partition, rows, size), of some intervals read by interval (the timeline head's bound).

use crate::backends::BackendArgs;
use anyhow::Result;
use clap::Args;
use sluice_format::time::{format_iso, Interval};
use sluice_metastore::timeline::interval::visible_in;
use sluice_pipeline::timeline::visible_segments;

/// Options of `sluice segments`.
#[derive(Args)]
pub struct SegmentsArgs {
    /// The datasource.
    datasource: String,
    /// Only the segments overlapping this ISO 8601 interval (`start/end`, `start/period`),
    /// read by interval; repeated for several.
    #[arg(long = "interval", value_parser = parse_interval)]
    intervals: Vec<Interval>,
    /// Prints JSON instead of a table.
    #[arg(long)]
    json: bool,
}

fn parse_interval(text: &str) -> Result<Interval, String> {
    Interval::parse(text).map_err(|e| e.to_string())
}

/// Runs `sluice segments`.
pub async fn run(args: SegmentsArgs, backends: &BackendArgs) -> Result<()> {
    let b = backends.open().await?;
    let segments = if args.intervals.is_empty() {
        visible_segments(b.meta.as_ref(), &args.datasource).await?
    } else {
        sluice_pipeline::datasource::load(b.meta.as_ref(), &args.datasource).await?;
        visible_in(b.meta.as_ref(), &args.datasource, &args.intervals).await?.records
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&segments)?);
        return Ok(());
    }
    println!("{:<50} {:<26} {:>9} {:>10} {:>12}", "interval", "version", "partition", "rows", "bytes");
    for s in &segments {
        let interval = format!("{}/{}", format_iso(s.interval.start), format_iso(s.interval.end));
        println!("{interval:<50} {:<26} {:>9} {:>10} {:>12}", s.version, s.partition, s.num_rows, s.num_bytes);
    }
    let rows: u64 = segments.iter().map(|s| s.num_rows).sum();
    println!("{} segments, {rows} rows", segments.len());
    Ok(())
}
