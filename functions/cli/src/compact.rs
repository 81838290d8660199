//! `sluice compact`: one compaction pass on the configured backends, as the scheduled
//! compaction function runs it: each datasource's retention rules and compaction
//! configuration applied until nothing is left to drop or compact, then finished replaces
//! cleaned up after the grace period.

use crate::backends::BackendArgs;
use anyhow::{bail, Result};
use clap::Args;
use sluice_format::time::now_ms;
use sluice_pipeline::coordinator::{compact_all, CompactOptions, CompactReport};

/// Options of `sluice compact`.
#[derive(Args)]
pub struct CompactArgs {
    /// Only this datasource (every one with a compaction configuration or rules otherwise).
    #[arg(long)]
    datasource: Option<String>,
    /// Seconds a replaced segment stays in deep storage after it left queries (longer than
    /// any query in flight takes).
    #[arg(long, default_value_t = 1_200)]
    grace: u64,
    /// Prints the reports as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `sluice compact`.
pub async fn run(args: CompactArgs, backends: &BackendArgs) -> Result<()> {
    let b = backends.open().await?;
    let options = CompactOptions { grace_ms: args.grace as i64 * 1_000, ..CompactOptions::at(now_ms()) };
    let reports = compact_all(b.meta.as_ref(), b.store.as_ref(), args.datasource.as_deref(), &options).await?;
    let mut failed = 0;
    let mut done = Vec::new();
    for (name, report) in reports {
        match report {
            Ok(r) => done.push(r),
            Err(e) => {
                failed += 1;
                eprintln!("error: datasource {name}: {e}");
            }
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&done)?);
    } else {
        for r in &done {
            println!("{}", summary(r));
            for why in &r.skipped {
                eprintln!("note: {why}");
            }
        }
    }
    if failed > 0 {
        bail!("{failed} datasources failed");
    }
    Ok(())
}

/// One line per datasource.
pub fn summary(r: &CompactReport) -> String {
    format!(
        "{}: {} chunks compacted ({} segments -> {}, {} rows, merge {:.2} s), {} segments dropped, {} conflicts, {} replaces cleaned up",
        r.datasource,
        r.chunks_compacted,
        r.segments_compacted,
        r.segments_written,
        r.rows_compacted,
        r.merge_secs,
        r.segments_dropped,
        r.conflicts,
        r.replaces_cleaned
    )
}
