//! The indexer function: a task event -> run or continue one indexing task.

use sluice_functions::handlers;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    handlers::serve_indexer().await
}
