//! The query-worker function: computes the partial of one batch of a query's segments for
//! the api function (`sluice_broker::runtime`). It reads segments and nothing else: no
//! metadata, no Kafka.

use mimalloc::MiMalloc;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("SLUICE_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_current_span(false)
        .init();
    sluice_broker::runtime::serve().await
}
