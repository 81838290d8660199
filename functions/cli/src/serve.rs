//! `sluice serve`: Druid's HTTP API (native queries, supervisor endpoints) on the configured
//! backends, so Druid clients work against a local pipeline too.

use crate::backends::BackendArgs;
use anyhow::{Context, Result};
use clap::Args;
use sluice_http::{router, ApiState};
use sluice_query::SegmentCache;
use std::path::PathBuf;

/// Options of `sluice serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8888")]
    listen: String,
    /// Where downloaded segments are kept.
    #[arg(long, env = "SLUICE_CACHE", default_value = ".sluice/cache")]
    cache: PathBuf,
}

/// Runs `sluice serve` until interrupted.
pub async fn run(args: ServeArgs, backends: &BackendArgs) -> Result<()> {
    let b = backends.open().await?;
    let state = ApiState { meta: b.meta, store: b.store, cache: Some(SegmentCache::new(args.cache)) };
    let listener =
        tokio::net::TcpListener::bind(&args.listen).await.with_context(|| format!("listen on {}", args.listen))?;
    eprintln!(
        "sluice serve: Druid's API on http://{} (POST /druid/v2, /druid/indexer/v1/supervisor)",
        listener.local_addr()?
    );
    axum::serve(listener, router(state)).await.context("serve")?;
    Ok(())
}
