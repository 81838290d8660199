//! The compactor function: an EventBridge Scheduler event -> one compaction pass (retention
//! rules and compaction configurations applied, replaced segments cleaned up).

use lambda_runtime::{service_fn, Error, LambdaEvent};
use sluice_functions::context::FunctionContext;
use sluice_functions::{events, handlers, logging, permissions};

#[tokio::main]
async fn main() -> Result<(), Error> {
    logging::init();
    let ctx = FunctionContext::at_cold_start(&permissions::COMPACTOR).await;
    lambda_runtime::run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        let ctx = &ctx;
        async move {
            let deadline = logging::deadline(&event.context);
            handlers::compact(ctx, events::supervisor_event(event.payload)?, deadline).await
        }
    }))
    .await
}
