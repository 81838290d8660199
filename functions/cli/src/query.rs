//! `sluice query QUERY.json` (or `-` for standard input): runs a Druid native query against
//! the visible segments of the configured backends and prints Druid's JSON result.

use crate::backends::BackendArgs;
use crate::workers::WorkerArgs;
use anyhow::Result;
use clap::Args;
use sluice_broker::run_query;
use sluice_query::SegmentCache;
use std::path::PathBuf;

/// Options of `sluice query`.
#[derive(Args)]
pub struct QueryArgs {
    /// The query file, or `-` to read it from standard input.
    query: String,
    /// Where downloaded segments are kept.
    #[arg(long, env = "SLUICE_CACHE", default_value = ".sluice/cache")]
    cache: PathBuf,
    /// Reads only the parts of each segment the query needs, with ranged reads, instead of
    /// downloading whole segments into the cache.
    #[arg(long)]
    no_cache: bool,
    /// Prints the result on one line.
    #[arg(long)]
    compact: bool,
    #[command(flatten)]
    workers: WorkerArgs,
}

/// Runs `sluice query`.
pub async fn run(args: QueryArgs, backends: &BackendArgs) -> Result<()> {
    let text = crate::input::read_text(std::path::Path::new(&args.query))?;
    let b = backends.open().await?;
    let fanout = args.workers.start(&backends.storage_url()?, &crate::workers::beside(&args.cache)).await?;
    let cache = (!args.no_cache).then(|| SegmentCache::new(args.cache));
    let answer = run_query(b.meta.as_ref(), b.store.as_ref(), cache.as_ref(), fanout.as_ref(), &text).await?;
    let (result, pruning) = (answer.result, answer.pruning);
    if let Some(f) = answer.fanned_out {
        eprintln!(
            "sluice query: {} segments ({} MB) in {} batches, {} worker invocations ({} retried, {} late ones \
             invoked again), {} partials cached",
            f.segments,
            f.bytes >> 20,
            f.batches,
            f.invocations,
            f.retries,
            f.hedges,
            f.cached
        );
    }
    if pruning.skipped > 0 {
        eprintln!(
            "sluice query: read {} of {} segments; {} skipped, their summaries showing the filter matches none of their rows",
            pruning.considered - pruning.skipped,
            pruning.considered,
            pruning.skipped
        );
    }
    if args.compact {
        println!("{}", serde_json::to_string(&result)?);
    } else {
        println!("{}", serde_json::to_string_pretty(&result)?);
    }
    Ok(())
}
