//! What every function binary does first: JSON logs on standard error (CloudWatch keeps
//! them), filtered by `SLUICE_LOG` (default `info`), and the invocation's deadline.

use sluice_format::time::now_ms;
use std::time::{Duration, Instant};

/// Starts JSON logging.
pub fn init() {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("SLUICE_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_current_span(false)
        .init();
}

/// The invocation's deadline as an instant (15 minutes from now when the context has none).
pub fn deadline(context: &lambda_runtime::Context) -> Instant {
    let now_ms = now_ms();
    let left = (context.deadline as i64).saturating_sub(now_ms);
    let left = if context.deadline == 0 { 900_000 } else { left.max(0) };
    Instant::now() + Duration::from_millis(left as u64)
}
