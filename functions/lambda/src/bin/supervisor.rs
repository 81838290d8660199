//! The supervisor function: an EventBridge Scheduler event -> one supervisor pass.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use sluice_functions::context::FunctionContext;
use sluice_functions::{events, handlers, logging, permissions};

#[tokio::main]
async fn main() -> Result<(), Error> {
    logging::init();
    let ctx = FunctionContext::at_cold_start(&permissions::SUPERVISOR).await;
    lambda_runtime::run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        let ctx = &ctx;
        async move { handlers::supervise(ctx, events::supervisor_event(event.payload)?).await }
    }))
    .await
}
