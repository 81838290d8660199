//! How the S3 and DynamoDB stores map SDK outcomes, with the SDK's own mocks
//! (aws-smithy-mocks): throttling and 5xx are retried with backoff up to the bound, then
//! reported; refused credentials become one clear error.

use aws_sdk_dynamodb::operation::get_item::GetItemOutput;
use aws_sdk_s3::operation::put_object::PutObjectOutput;
use aws_smithy_mocks::{mock, mock_client, RuleMode};
use bytes::Bytes;
use sluice_store::metadata::{DynamoStore, MetaError, MetadataStore};
use sluice_store::storage::{ObjectStore, S3Store, StorageError};
use std::time::Duration;

fn fast_retries() -> aws_sdk_s3::config::retry::RetryConfig {
    aws_sdk_s3::config::retry::RetryConfig::standard()
        .with_max_attempts(5)
        .with_initial_backoff(Duration::from_millis(1))
}

fn s3_error(code: &str) -> Option<String> {
    Some(format!("<Error><Code>{code}</Code><Message>injected</Message></Error>"))
}

#[tokio::test]
async fn s3_throttling_is_retried_until_it_succeeds() {
    let rule = mock!(aws_sdk_s3::Client::put_object)
        .sequence()
        .http_status(503, s3_error("SlowDown"))
        .times(2)
        .http_status(500, s3_error("InternalError"))
        .output(|| PutObjectOutput::builder().build())
        .build();
    let client = mock_client!(aws_sdk_s3, RuleMode::Sequential, &[&rule], |b| b.retry_config(fast_retries()));
    let store = S3Store::with_client("s3://b/p", client, "b", "p", "mock");
    store.put("k", Bytes::from_static(b"v")).await.expect("put succeeds after retries");
    assert_eq!(rule.num_calls(), 4);
}

#[tokio::test]
async fn s3_retries_are_bounded() {
    let rule =
        mock!(aws_sdk_s3::Client::put_object).sequence().http_status(503, s3_error("SlowDown")).times(100).build();
    let client = mock_client!(aws_sdk_s3, RuleMode::Sequential, &[&rule], |b| b.retry_config(fast_retries()));
    let store = S3Store::with_client("s3://b/p", client, "b", "p", "mock");
    let err = store.put("k", Bytes::from_static(b"v")).await.expect_err("always throttled");
    assert_eq!(rule.num_calls(), 5, "five attempts, then the error");
    assert!(matches!(err, StorageError::Failed { .. }), "{err}");
    assert!(err.to_string().contains("s3://b/p"), "{err}");
}

#[tokio::test]
async fn s3_refused_credentials_are_one_clear_error() {
    let rule =
        mock!(aws_sdk_s3::Client::put_object).sequence().http_status(403, s3_error("InvalidAccessKeyId")).build();
    let client = mock_client!(aws_sdk_s3, RuleMode::Sequential, &[&rule], |b| b.retry_config(fast_retries()));
    let store = S3Store::with_client("s3://b/p", client, "b", "p", "mock");
    let err = store.put("k", Bytes::from_static(b"v")).await.expect_err("refused");
    assert!(matches!(err, StorageError::Unavailable { .. }), "{err}");
    assert!(err.to_string().contains("credentials refused") && err.to_string().contains("AWS_ACCESS_KEY_ID"), "{err}");
}

/// What S3 answers for a missing key depends on the caller's `s3:ListBucket`: 404 `NoSuchKey`
/// with it (read as missing: the merger fails the task and the range is indexed again), 403
/// `AccessDenied` without (read as refused credentials and retried). The template grants
/// `s3:ListBucket` to every function that reads objects (`functions/lambda/tests/template.rs`).
#[tokio::test]
async fn s3_missing_objects_read_as_missing_only_with_list_bucket() {
    let with_list = mock!(aws_sdk_s3::Client::get_object).sequence().http_status(404, s3_error("NoSuchKey")).build();
    let head = mock!(aws_sdk_s3::Client::head_object).sequence().http_status(404, None).build();
    let without_list =
        mock!(aws_sdk_s3::Client::get_object).sequence().http_status(403, s3_error("AccessDenied")).build();
    let client = mock_client!(aws_sdk_s3, RuleMode::Sequential, &[&with_list, &head, &without_list], |b| b
        .retry_config(fast_retries()));
    let store = S3Store::with_client("s3://b/p", client, "b", "p", "mock");
    let missing = store.get("hydrants/x").await.expect_err("missing");
    assert!(matches!(&missing, StorageError::NotFound { key, .. } if key == "hydrants/x"), "{missing}");
    assert_eq!(store.head("hydrants/x").await.expect("head"), None);
    let refused = store.get("hydrants/x").await.expect_err("refused");
    assert!(matches!(refused, StorageError::Unavailable { .. }), "{refused}");
}

#[tokio::test]
async fn dynamodb_throttling_is_retried() {
    let throttled =
        r#"{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"injected"}"#;
    let rule = mock!(aws_sdk_dynamodb::Client::get_item)
        .sequence()
        .http_status(400, Some(throttled.to_string()))
        .times(3)
        .output(|| GetItemOutput::builder().build())
        .build();
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, &[&rule], |b| b.retry_config(
        aws_sdk_dynamodb::config::retry::RetryConfig::standard()
            .with_max_attempts(5)
            .with_initial_backoff(Duration::from_millis(1))
    ));
    let store = DynamoStore::with_client("dynamodb://t", client, "t", "mock");
    assert!(store.get("pk", "sk").await.expect("get after retries").is_none());
    assert_eq!(rule.num_calls(), 4);
}

#[tokio::test]
async fn dynamodb_missing_table_names_the_fix() {
    let missing = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}"#;
    let rule = mock!(aws_sdk_dynamodb::Client::get_item).sequence().http_status(400, Some(missing.to_string())).build();
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, &[&rule]);
    let store = DynamoStore::with_client("dynamodb://t", client, "t", "mock");
    let err = store.get("pk", "sk").await.expect_err("missing table");
    assert!(matches!(err, MetaError::Unavailable { .. }), "{err}");
    assert!(err.to_string().contains("does not exist") && err.to_string().contains("localstack/up.sh"), "{err}");
}

#[tokio::test]
async fn lambda_jobs_are_asynchronous_invokes_of_the_right_function() {
    use aws_sdk_lambda::operation::invoke::InvokeOutput;
    use sluice_pipeline::invoker::{Job, LambdaInvoker, TaskInvoker};
    use sluice_pipeline::task::TaskId;
    let task = TaskId { datasource: "wiki".into(), group: 1, seq: 7 };
    let merge_payload = serde_json::to_vec(&Job::Merge { task: task.clone() }).expect("json");
    let rule = mock!(aws_sdk_lambda::Client::invoke)
        .match_requests(move |r| {
            r.function_name() == Some("sluice-merger")
                && r.invocation_type() == Some(&aws_sdk_lambda::types::InvocationType::Event)
                && r.payload().map(|p| p.as_ref()) == Some(merge_payload.as_slice())
        })
        .then_output(|| InvokeOutput::builder().status_code(202).build());
    let refused =
        mock!(aws_sdk_lambda::Client::invoke).then_output(|| InvokeOutput::builder().status_code(200).build());
    let client = mock_client!(aws_sdk_lambda, RuleMode::MatchAny, &[&rule, &refused]);
    let invoker = LambdaInvoker::new(client, "sluice-indexer", "sluice-merger");
    invoker.invoke(Job::Merge { task: task.clone() }).await.expect("accepted");
    assert_eq!(rule.num_calls(), 1);
    let err = invoker.invoke(Job::Index { task }).await.expect_err("not asynchronous");
    assert!(err.to_string().contains("invoke sluice-indexer: status 200, expected 202"), "{err}");
}
