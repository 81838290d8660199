//! An endpoint that does not answer gives one clear error naming the URL and what to run. Its
//! own test binary, because it points this process's AWS_ENDPOINT_URL at a closed port.

use sluice_store::metadata::open_metadata;
use sluice_store::storage::open_store;

#[tokio::test]
async fn unreachable_endpoints_name_the_fix() {
    std::env::set_var("AWS_ENDPOINT_URL", "http://127.0.0.1:9");
    std::env::set_var("AWS_REGION", "us-east-1");
    std::env::set_var("AWS_ACCESS_KEY_ID", "test");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "test");
    let err = open_store("s3://sluice-local/x").await.expect_err("nothing listens on port 9");
    let text = err.to_string();
    assert!(
        text.starts_with("s3://sluice-local/x")
            && text.contains("cannot reach S3 at http://127.0.0.1:9")
            && text.contains("localstack/up.sh"),
        "{text}"
    );
    let err = open_metadata("dynamodb://sluice-local").await.expect_err("nothing listens on port 9");
    let text = err.to_string();
    assert!(text.contains("cannot reach DynamoDB") && text.contains("localstack/up.sh"), "{text}");
}
