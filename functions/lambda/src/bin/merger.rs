//! The merger function: a completed task event -> merge its hydrants and publish.

use sluice_functions::handlers;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    handlers::serve_merger().await
}
