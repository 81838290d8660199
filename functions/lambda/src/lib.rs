//! Sluice's AWS Lambda functions and the Druid HTTP API.
//!
//! ```text
//!  EventBridge Scheduler --(schedule event)--> supervisor: one pass over every datasource
//!       plans task ranges, invokes (async, at least once) --> indexer: run or continue a task
//!                                                  complete --> merger: merge and publish
//!  Function URL (AWS_IAM) --(HTTP)--> api: POST /druid/v2, /druid/indexer/v1/supervisor/...
//! ```
//!
//! Each binary under `src/bin/` is a few lines: JSON logs, a [`context::FunctionContext`] built
//! once from the environment at cold start, and a handler from this library. Handlers are
//! plain async functions over that context and the event, so tests call them directly.
//! Failures are [`error::FunctionError`]s: retryable ones (a store or the broker failed) are
//! returned to Lambda, which retries the asynchronous invocation and finally sends it to the
//! on-failure destination; an event of the wrong shape is non-retryable and says which field.

/// mimalloc, as the `sluice` command whose figures `docs/benchmarks.md` gives: the indexer
/// allocates and frees strings per row, where the system allocator is slower.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod batch_jobs;
pub mod capacity;
pub mod context;
pub mod error;
pub mod events;
pub mod handlers;
pub mod logging;
pub mod metrics;
pub mod permissions;
