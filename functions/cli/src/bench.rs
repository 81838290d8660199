//! `sluice bench`: the benchmarks are `sluice-bench`'s; this command hands them the stores it
//! was given and starts their query workers as processes of this binary.

use crate::backends::BackendArgs;
use crate::workers::WorkerArgs;
use anyhow::{Context, Result};
use sluice_bench::{Host, Stores};
use sluice_broker::FanOut;
use std::path::Path;

pub use sluice_bench::BenchCommand;

/// What `sluice` provides the benchmarks.
struct Command<'a> {
    backends: &'a BackendArgs,
}

#[async_trait::async_trait]
impl Host for Command<'_> {
    async fn stores(&self) -> Result<Stores> {
        let opened = self.backends.open().await?;
        Ok(Stores { meta: opened.meta, store: opened.store, storage_url: self.backends.storage_url()? })
    }

    async fn start_workers(&self, n: u16, threads: usize, storage: &str, dir: &Path) -> Result<FanOut> {
        let args =
            WorkerArgs { workers: n, worker_threads: Some(threads), fanout_min_mb: 0, partial_cache_mb: Some(0) };
        args.start(storage, dir).await?.context("workers started")
    }
}

/// Runs a benchmark command on the stores `backends` names.
pub fn run(command: BenchCommand, backends: &BackendArgs) -> Result<()> {
    sluice_bench::run(command, &Command { backends })
}
