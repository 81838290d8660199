//! The api function: Druid's HTTP API behind a Function URL.

use lambda_http::Error;
use sluice_functions::context::{FunctionContext, CACHE_ENV};
use sluice_functions::{logging, permissions};
use sluice_http::{router, ApiState};
use sluice_query::SegmentCache;

#[tokio::main]
async fn main() -> Result<(), Error> {
    logging::init();
    let ctx = FunctionContext::at_cold_start(&permissions::API).await;
    let cache_dir = std::env::var(CACHE_ENV).unwrap_or_else(|_| "/tmp/sluice-cache".into());
    let state = ApiState { meta: ctx.meta, store: ctx.store, cache: Some(SegmentCache::new(cache_dir)) };
    lambda_http::run(router(state)).await
}
