//! `sluice serve`: Druid's HTTP API (native queries, supervisor endpoints) on the configured
//! backends, so Druid clients work against a local pipeline too. Requests must name the
//! server's own host and carry JSON, and the routes that change state are off unless
//! `--allow-operations` turns them on ([`LocalGuard`]). Connections are bounded in number and
//! time ([`connections`]).

mod connections;

use crate::backends::BackendArgs;
use crate::workers::WorkerArgs;
use anyhow::{Context, Result};
use clap::Args;
use sluice_http::{router, ApiState, LocalGuard};
use sluice_query::SegmentCache;
use std::path::PathBuf;
use std::time::Duration;

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
    /// Most connections served at once; more wait until one closes.
    #[arg(long, default_value_t = 256, value_parser = at_least_one::<100_000>)]
    max_connections: u64,
    /// Seconds a request's line and headers may take to arrive; a connection that sends
    /// nothing for this long (new, or between requests) is closed.
    #[arg(long, default_value_t = 10, value_parser = at_least_one::<86_400>)]
    header_timeout_secs: u64,
    /// Seconds a request's body may take to arrive (408 after), and an answer may wait on a
    /// client that does not read it (the connection is closed after).
    #[arg(long, default_value_t = 60, value_parser = at_least_one::<86_400>)]
    body_timeout_secs: u64,
    #[command(flatten)]
    workers: WorkerArgs,
}

/// A whole number from 1 to `MAX`.
fn at_least_one<const MAX: u64>(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) if n > MAX => Err(format!("must be at most {MAX}")),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// Runs `sluice serve` until interrupted.
pub async fn run(args: ServeArgs, backends: &BackendArgs) -> Result<()> {
    let b = backends.open().await?;
    let fanout = args.workers.start(&backends.storage_url()?, &crate::workers::beside(&args.cache)).await?;
    let state = ApiState {
        meta: b.meta,
        store: b.store,
        cache: Some(SegmentCache::with_limit(args.cache, args.cache_max_mb << 20)),
        fanout,
        tables: Default::default(),
    };
    let listener =
        tokio::net::TcpListener::bind(&args.listen).await.with_context(|| format!("listen on {}", args.listen))?;
    let address = listener.local_addr()?;
    sluice_sql::servers::name_this_process(&address.to_string());
    let mut hosts = vec![address.to_string(), format!("localhost:{}", address.port())];
    hosts.extend(args.allowed_hosts);
    let guard = LocalGuard { hosts, operations: args.allow_operations };
    eprintln!(
        "sluice serve: Druid's API on http://{address} (POST /druid/v2; operations {}; at most {} connections)",
        if guard.operations { "on" } else { "off: --allow-operations" },
        args.max_connections
    );
    let limits = connections::Limits {
        max_connections: usize::try_from(args.max_connections).context("--max-connections")?,
        header_timeout: Duration::from_secs(args.header_timeout_secs),
        body_timeout: Duration::from_secs(args.body_timeout_secs),
    };
    connections::serve(listener, guard.wrap(router(state)), limits).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::at_least_one;

    #[test]
    fn limits_are_whole_numbers_from_one_to_their_most() {
        assert_eq!(at_least_one::<10>("1"), Ok(1));
        assert_eq!(at_least_one::<10>("10"), Ok(10));
        assert_eq!(at_least_one::<10>("0"), Err("must be at least 1".into()));
        assert_eq!(at_least_one::<10>("11"), Err("must be at most 10".into()));
        assert!(at_least_one::<10>("-1").is_err());
        assert!(at_least_one::<10>("99999999999999999999999").is_err());
    }
}
