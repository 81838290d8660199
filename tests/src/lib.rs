//! Shared pieces of the integration tests: the service endpoints from the environment (set by
//! `eval "$(localstack/up.sh)"`), unique names per test, Kafka topics, datasources and the
//! helpers of the protocol and service tests.

pub mod confluent;
pub mod indexing;
pub mod kafka;
pub mod kafka_sasl;
/// The Lambda service on 127.0.0.1 the function binaries run in.
pub use sluice_lambda_local as lambda_service;
pub mod protocol;
pub mod schema_registry;
pub mod wikipedia;

pub use sluice_store::testsuite::unique;

/// One test per scenario and backend: modules `local` (SQLite and local files) and `aws`
/// (DynamoDB and S3 at the endpoint), each calling `scenario(Backends)` of the parent module.
#[macro_export]
macro_rules! on_backends {
    ($($scenario:ident),* $(,)?) => {
        mod local {
            $( #[tokio::test(flavor = "multi_thread")] async fn $scenario() { super::$scenario($crate::indexing::Backends::local().await).await; } )*
        }
        mod aws {
            $( #[tokio::test(flavor = "multi_thread")] async fn $scenario() { super::$scenario($crate::indexing::Backends::aws().await).await; } )*
        }
    };
}

/// A value the environment must provide for tests against real services; a missing one fails
/// the test with what to run, never skips it.
pub fn required_env(name: &str) -> String {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!("{name} is not set: these tests need the local services; run `eval \"$(localstack/up.sh)\"` (or tests/run.sh) first"),
    }
}

/// A new, empty metadata table (Sluice's key schema, TTL on `expires_at`) at the DynamoDB
/// endpoint `localstack/up.sh` starts: its `dynamodb://` URL. For tests whose supervisor passes
/// go over every datasource of the table, so that other tests' datasources stay out of them.
pub async fn fresh_table(name: &str) -> String {
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType, TimeToLiveSpecification,
    };
    required_env("AWS_ENDPOINT_URL");
    let table = unique(name);
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let client = aws_sdk_dynamodb::Client::new(&config);
    let attribute = |n: &str| {
        AttributeDefinition::builder()
            .attribute_name(n)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .expect("attribute")
    };
    let key = |n: &str, t: KeyType| KeySchemaElement::builder().attribute_name(n).key_type(t).build().expect("key");
    client
        .create_table()
        .table_name(&table)
        .attribute_definitions(attribute("pk"))
        .attribute_definitions(attribute("sk"))
        .key_schema(key("pk", KeyType::Hash))
        .key_schema(key("sk", KeyType::Range))
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create table {table}: {}", aws_sdk_dynamodb::error::DisplayErrorContext(&e)));
    client
        .update_time_to_live()
        .table_name(&table)
        .time_to_live_specification(
            TimeToLiveSpecification::builder().attribute_name("expires_at").enabled(true).build().expect("TTL"),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("TTL on {table}: {}", aws_sdk_dynamodb::error::DisplayErrorContext(&e)));
    format!("dynamodb://{table}")
}
