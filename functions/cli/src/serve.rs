//! `sluice serve`: Druid's HTTP API (native queries, supervisor endpoints) on the configured
//! backends, so Druid clients work against a local pipeline too. Requests must name the
//! server's own host and carry JSON, and the routes that change state are off unless
//! `--allow-operations` turns them on ([`LocalGuard`]).

use crate::backends::BackendArgs;
use anyhow::{Context, Result};
use clap::Args;
use sluice_http::{router, ApiState, LocalGuard};
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
    /// Most megabytes of segments the cache keeps (the least recently used go first).
    #[arg(long, default_value_t = sluice_query::DEFAULT_CACHE_BYTES >> 20)]
    cache_max_mb: u64,
    /// Serve the routes that change state too (supervisor submit, suspend, resume, reset,
    /// resetOffsets, terminate; compaction configs; retention rules); anyone who can reach the
    /// address can then use them.
    #[arg(long)]
    allow_operations: bool,
    /// Another `Host` (`name:port`) requests may name, beside the address listened on and
    /// `localhost:PORT` (needed when listening on 0.0.0.0 or behind a proxy).
    #[arg(long = "allowed-host", value_name = "HOST:PORT")]
    allowed_hosts: Vec<String>,
}

/// Runs `sluice serve` until interrupted.
pub async fn run(args: ServeArgs, backends: &BackendArgs) -> Result<()> {
    let b = backends.open().await?;
    let state = ApiState {
        meta: b.meta,
        store: b.store,
        cache: Some(SegmentCache::with_limit(args.cache, args.cache_max_mb << 20)),
    };
    let listener =
        tokio::net::TcpListener::bind(&args.listen).await.with_context(|| format!("listen on {}", args.listen))?;
    let address = listener.local_addr()?;
    let mut hosts = vec![address.to_string(), format!("localhost:{}", address.port())];
    hosts.extend(args.allowed_hosts);
    let guard = LocalGuard { hosts, operations: args.allow_operations };
    eprintln!(
        "sluice serve: Druid's API on http://{address} (POST /druid/v2; supervisor operations {})",
        if guard.operations { "on" } else { "off: --allow-operations" }
    );
    axum::serve(listener, guard.wrap(router(state))).await.context("serve")?;
    Ok(())
}
