//! What a function builds once at cold start: the stores from `SLUICE_METADATA` and
//! `SLUICE_STORAGE`, the Lambda invoker, the Kafka credentials from Secrets Manager, and the
//! directory of Protobuf descriptor sets (`SLUICE_DESCRIPTOR_DIR`).

use crate::error::FunctionError;
use crate::permissions::FunctionSpec;
use sluice_pipeline::invoker::{LambdaInvoker, TaskInvoker};
use sluice_pipeline::schemas::{set_descriptor_dir, DescriptorDir};
use sluice_store::metadata::{open_metadata, MetadataStore};
use sluice_store::storage::{open_store, ObjectStore};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Metadata store URL (`dynamodb://TABLE`).
pub const METADATA_ENV: &str = "SLUICE_METADATA";
/// Deep storage URL (`s3://BUCKET/PREFIX`).
pub const STORAGE_ENV: &str = "SLUICE_STORAGE";
/// ARN of a Secrets Manager secret holding Kafka consumer properties as a JSON object
/// (`security.protocol`, `sasl.mechanism`, `sasl.username`, `sasl.password`, ...). Optional.
pub const KAFKA_SECRET_ENV: &str = "SLUICE_KAFKA_SECRET_ARN";
/// Folder where the api function caches segments (default `/tmp/sluice-cache`).
pub const CACHE_ENV: &str = "SLUICE_CACHE";
/// Directory Protobuf `file` decoders may read descriptor sets from (unset: they are refused).
pub use sluice_pipeline::schemas::DESCRIPTOR_DIR_ENV;
/// Which routes the api function serves: `reads` (queries), `writes` (supervisor changes) or
/// `all` (the default, for local runs).
pub const ROUTES_ENV: &str = "SLUICE_API_ROUTES";

/// The clients of a function, built once.
#[derive(Debug, Clone)]
pub struct FunctionContext {
    /// Metadata store.
    pub meta: Arc<dyn MetadataStore>,
    /// Deep storage.
    pub store: Arc<dyn ObjectStore>,
    /// Starts indexers and mergers (absent in the functions that start no task).
    pub invoker: Option<Arc<dyn TaskInvoker>>,
}

fn required(name: &str) -> Result<String, FunctionError> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| FunctionError::Configuration(format!("{name} is not set")))
}

impl FunctionContext {
    /// Builds the context from the environment for `function` (see
    /// [`crate::permissions::FUNCTIONS`]): the stores, the invoker if it starts other
    /// functions, and the Kafka secret if it reads Kafka and one is configured.
    pub async fn from_env(function: &FunctionSpec) -> Result<Self, FunctionError> {
        let meta = open_metadata(&required(METADATA_ENV)?)
            .await
            .map_err(|e| FunctionError::Configuration(format!("{METADATA_ENV}: {e}")))?;
        let store = open_store(&required(STORAGE_ENV)?)
            .await
            .map_err(|e| FunctionError::Configuration(format!("{STORAGE_ENV}: {e}")))?;
        let starts_tasks = function.invokes.iter().any(|f| matches!(*f, "indexer" | "merger"));
        let invoker: Option<Arc<dyn TaskInvoker>> = if starts_tasks {
            Some(Arc::new(LambdaInvoker::from_env().await.map_err(|e| FunctionError::Configuration(e.to_string()))?))
        } else {
            None
        };
        // Only the functions that read descriptor sets check the directory: one the others
        // cannot see (a layer attached to the indexers alone) must not stop them.
        if function.env.contains(&DESCRIPTOR_DIR_ENV) {
            let descriptors = std::env::var(DESCRIPTOR_DIR_ENV).ok();
            let descriptors = DescriptorDir::from_setting(descriptors.as_deref())
                .map_err(|e| FunctionError::Configuration(e.to_string()))?;
            set_descriptor_dir(descriptors).map_err(|e| FunctionError::Configuration(e.to_string()))?;
        }
        let secret = std::env::var(KAFKA_SECRET_ENV).ok().filter(|v| !v.is_empty());
        if let (true, Some(arn)) = (function.reads_kafka, secret) {
            let properties = kafka_secret(&arn).await?;
            sluice_kafka::set_deployment_properties(properties)
                .map_err(|e| FunctionError::Configuration(e.to_string()))?;
        }
        Ok(Self { meta, store, invoker })
    }

    /// [`FunctionContext::from_env`] at cold start: on failure, one JSON log line with the
    /// reason and exit status 1, which Lambda reports as the failed initialisation of every
    /// invocation until the deployment is fixed.
    pub async fn at_cold_start(function: &FunctionSpec) -> Self {
        match Self::from_env(function).await {
            Ok(ctx) => ctx,
            Err(e) => {
                tracing::error!(function = function.binary, error = %e, "initialisation failed");
                std::process::exit(1)
            }
        }
    }
}

/// Reads the Kafka consumer properties held by secret `arn`.
async fn kafka_secret(arn: &str) -> Result<BTreeMap<String, String>, FunctionError> {
    let config = sluice_store::aws::load_config(std::time::Duration::from_secs(10)).await;
    let client = aws_sdk_secretsmanager::Client::new(&config);
    let out = client.get_secret_value().secret_id(arn).send().await.map_err(|e| {
        let reason = match e.as_service_error() {
            Some(service) => service.to_string(),
            None => aws_sdk_secretsmanager::error::DisplayErrorContext(&e).to_string(),
        };
        FunctionError::Configuration(format!("secret {arn} ({KAFKA_SECRET_ENV}): {reason}"))
    })?;
    let text =
        out.secret_string().ok_or_else(|| FunctionError::Configuration(format!("secret {arn} holds no string")))?;
    parse_kafka_secret(arn, text)
}

/// The consumer properties of a secret's text: a JSON object of strings.
pub fn parse_kafka_secret(arn: &str, text: &str) -> Result<BTreeMap<String, String>, FunctionError> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| FunctionError::Configuration(format!("secret {arn} is not a JSON object: {e}")))?;
    let object =
        value.as_object().ok_or_else(|| FunctionError::Configuration(format!("secret {arn} is not a JSON object")))?;
    object
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => Ok((k.clone(), s.clone())),
            serde_json::Value::Number(n) => Ok((k.clone(), n.to_string())),
            serde_json::Value::Bool(b) => Ok((k.clone(), b.to_string())),
            _ => Err(FunctionError::Configuration(format!("secret {arn}: {k:?} must be a string"))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_secrets_are_objects_of_strings() {
        let props =
            parse_kafka_secret("arn:s", r#"{"sasl.username":"u","sasl.password":"p","socket.timeout.ms":30000}"#)
                .expect("secret");
        assert_eq!(props["sasl.password"], "p");
        assert_eq!(props["socket.timeout.ms"], "30000");
        let err = parse_kafka_secret("arn:s", "[1]").expect_err("not an object");
        assert!(err.to_string().contains("arn:s") && !err.is_retryable(), "{err}");
        let err = parse_kafka_secret("arn:s", r#"{"a":{"b":1}}"#).expect_err("nested");
        assert!(err.to_string().contains("\"a\""), "{err}");
    }
}
