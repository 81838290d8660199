//! How a broker reaches query workers: a synchronous invocation carrying a request's JSON and
//! returning the answer's. Lambda's `Invoke` in a deployment ([`LambdaWorkers`]); the local
//! Lambda service's worker processes for `sluice query --workers N`; the worker's handler in
//! this process for tests ([`crate::worker::InProcess`]).

use async_trait::async_trait;
use std::time::Duration;

/// Why an invocation gave no answer to read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvokeError {
    /// The function failed (crashed, ran out of memory or time, or could not be invoked).
    #[error("failed: {0}")]
    Failed(String),
    /// No answer within the time left to the query.
    #[error("gave no answer within {0} ms")]
    TimedOut(u64),
}

/// Invokes query workers.
#[async_trait]
pub trait WorkerInvoker: Send + Sync + std::fmt::Debug {
    /// The worker function's name, for errors.
    fn name(&self) -> &str;

    /// Invokes one worker with `request` (JSON) and waits at most `within` for its answer.
    async fn invoke(&self, request: Vec<u8>, within: Duration) -> Result<Vec<u8>, InvokeError>;
}

#[cfg(feature = "aws")]
pub use lambda::LambdaWorkers;

#[cfg(feature = "aws")]
mod lambda {
    use super::{InvokeError, WorkerInvoker};
    use async_trait::async_trait;
    use aws_sdk_lambda::primitives::Blob;
    use std::time::Duration;

    /// Lambda's `Invoke` (synchronous) of the query-worker function.
    #[derive(Debug, Clone)]
    pub struct LambdaWorkers {
        client: aws_sdk_lambda::Client,
        function: String,
    }

    /// Longest a synchronous invoke may read (Lambda's longest timeout); the query's own
    /// deadline is enforced beside it.
    const INVOKE_READ_TIMEOUT: Duration = Duration::from_secs(900);

    impl LambdaWorkers {
        /// Invokes `function` (a name or ARN) with `client`.
        pub fn new(client: aws_sdk_lambda::Client, function: &str) -> Self {
            Self { client, function: function.into() }
        }

        /// Invokes `function` with a client from the AWS SDK's usual environment.
        pub async fn from_env(function: &str) -> Self {
            let config = sluice_store::aws::load_config(INVOKE_READ_TIMEOUT).await;
            Self::new(aws_sdk_lambda::Client::new(&config), function)
        }
    }

    #[async_trait]
    impl WorkerInvoker for LambdaWorkers {
        fn name(&self) -> &str {
            &self.function
        }

        async fn invoke(&self, request: Vec<u8>, within: Duration) -> Result<Vec<u8>, InvokeError> {
            let call = self.client.invoke().function_name(&self.function).payload(Blob::new(request)).send();
            let out = tokio::time::timeout(within, call)
                .await
                .map_err(|_| InvokeError::TimedOut(within.as_millis() as u64))?
                .map_err(|e| InvokeError::Failed(format!("{}", aws_sdk_lambda::error::DisplayErrorContext(&e))))?;
            let payload = out.payload.map(Blob::into_inner).unwrap_or_default();
            if let Some(kind) = out.function_error {
                let text = String::from_utf8_lossy(&payload);
                return Err(InvokeError::Failed(format!("{kind}: {}", sluice_format::text::excerpt(&text, 300))));
            }
            Ok(payload)
        }
    }
}
