//! The AWS invoker: each job is an asynchronous invoke (`InvocationType::Event`) of the
//! indexer or merger function, its payload the job's JSON. Lambda retries failed
//! asynchronous invocations and sends the ones that keep failing to the on-failure
//! destination; the supervisor re-invokes whatever is still due on its next pass.

use super::{InvokeError, Job, TaskInvoker};
use async_trait::async_trait;
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;

/// Invokes the indexer and merger functions.
#[derive(Debug, Clone)]
pub struct LambdaInvoker {
    client: aws_sdk_lambda::Client,
    indexer_function: String,
    merger_function: String,
}

/// How long an asynchronous invoke waits for Lambda to queue the event.
const INVOKE_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Environment variable naming the indexer function.
pub const INDEXER_FUNCTION_ENV: &str = "SLUICE_INDEXER_FUNCTION";
/// Environment variable naming the merger function.
pub const MERGER_FUNCTION_ENV: &str = "SLUICE_MERGER_FUNCTION";

/// A function the invoker needs is not named in the environment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} is not set: it names the function to invoke")]
pub struct UnsetFunction(pub &'static str);

impl LambdaInvoker {
    /// An invoker with an SDK client and the two function names (or ARNs).
    pub fn new(client: aws_sdk_lambda::Client, indexer_function: &str, merger_function: &str) -> Self {
        Self { client, indexer_function: indexer_function.into(), merger_function: merger_function.into() }
    }

    /// An invoker configured from the environment: the AWS SDK's usual variables and
    /// [`INDEXER_FUNCTION_ENV`], [`MERGER_FUNCTION_ENV`].
    pub async fn from_env() -> Result<Self, UnsetFunction> {
        let name = |var: &'static str| std::env::var(var).map_err(|_| UnsetFunction(var));
        let (indexer, merger) = (name(INDEXER_FUNCTION_ENV)?, name(MERGER_FUNCTION_ENV)?);
        let config = sluice_store::aws::load_config(INVOKE_READ_TIMEOUT).await;
        Ok(Self::new(aws_sdk_lambda::Client::new(&config), &indexer, &merger))
    }
}

#[async_trait]
impl TaskInvoker for LambdaInvoker {
    async fn invoke(&self, job: Job) -> Result<(), InvokeError> {
        let function = if job.for_indexer() { &self.indexer_function } else { &self.merger_function };
        let payload = serde_json::to_vec(&job).map_err(|e| InvokeError { job: job.clone(), reason: e.to_string() })?;
        let out = self
            .client
            .invoke()
            .function_name(function)
            .invocation_type(InvocationType::Event)
            .payload(Blob::new(payload))
            .send()
            .await
            .map_err(|e| InvokeError {
                job: job.clone(),
                reason: format!("invoke {function}: {}", aws_sdk_lambda::error::DisplayErrorContext(&e)),
            })?;
        if out.status_code() != 202 {
            return Err(InvokeError {
                job,
                reason: format!("invoke {function}: status {}, expected 202", out.status_code()),
            });
        }
        Ok(())
    }
}
