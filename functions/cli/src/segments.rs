//! `sluice segments DATASOURCE`: the visible segments (interval, version, partition, rows, size).

use crate::backends::BackendArgs;
use anyhow::Result;
use clap::Args;
use sluice_format::time::format_iso;
use sluice_pipeline::timeline::visible_segments;

/// Options of `sluice segments`.
#[derive(Args)]
pub struct SegmentsArgs {
    /// The datasource.
    datasource: String,
    /// Prints JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `sluice segments`.
pub async fn run(args: SegmentsArgs, backends: &BackendArgs) -> Result<()> {
    let b = backends.open().await?;
    let segments = visible_segments(b.meta.as_ref(), &args.datasource).await?;
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
