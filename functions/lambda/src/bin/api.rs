//! The api function: Druid's HTTP API behind a Function URL. The template deploys it twice:
//! `SLUICE_API_ROUTES=reads` for queries, `writes` for supervisor changes, each with its own
//! role and URL. With `SLUICE_QUERY_WORKER_FUNCTION` set, the reads function is the broker of
//! large queries: their segments are split between invocations of the query-worker function,
//! no more at once for one query than the query workers' reservation runs.

use lambda_http::Error;
use sluice_broker::{FanOut, LambdaWorkers, WORKER_FUNCTION_ENV};
use sluice_functions::context::{FunctionContext, CACHE_ENV, ROUTES_ENV};
use sluice_functions::{capacity, logging, permissions};
use sluice_http::{router_for, ApiState, Routes};
use sluice_query::SegmentCache;
use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), Error> {
    logging::init();
    let routes = std::env::var(ROUTES_ENV).ok();
    let routes = Routes::from_name(routes.as_deref()).unwrap_or_else(|e| {
        tracing::error!(error = %e, "initialisation failed: {ROUTES_ENV}");
        std::process::exit(1)
    });
    let spec = if routes == Routes::Writes { &permissions::OPERATIONS } else { &permissions::API };
    let ctx = FunctionContext::at_cold_start(spec).await;
    let cache_dir = std::env::var(CACHE_ENV).unwrap_or_else(|_| "/tmp/sluice-cache".into());
    let fanout = match std::env::var(WORKER_FUNCTION_ENV).ok().filter(|f| !f.is_empty()) {
        Some(function) => {
            let invoker = Arc::new(LambdaWorkers::from_env(&function).await);
            let fanout = FanOut::from_env(invoker).unwrap_or_else(|e| {
                tracing::error!(error = %e, "initialisation failed: the query fan-out");
                std::process::exit(1)
            });
            Some(capacity::fan_out_from_env(fanout))
        }
        None => None,
    };
    let state = ApiState {
        meta: ctx.meta,
        store: ctx.store,
        cache: Some(SegmentCache::new(cache_dir)),
        fanout,
        tables: Default::default(),
    };
    lambda_http::run(router_for(state, routes)).await
}
