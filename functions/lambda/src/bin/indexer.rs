//! The indexer function: a task event -> run or continue one indexing task.

use sluice_functions::{handlers, permissions};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    handlers::serve_jobs(&permissions::INDEXER).await
}
