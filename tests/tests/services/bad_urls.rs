//! Bad configuration gives one clear error naming the URL and what to do.

use sluice_integration::required_env;
use sluice_store::metadata::{open_metadata, MetaError};
use sluice_store::storage::{open_store, StorageError};

#[tokio::test]
async fn unknown_schemes_and_malformed_urls() {
    for url in ["ftp://x/y", "s3://", "file://relative/path", "bucket/prefix"] {
        let err = open_store(url).await.expect_err(url);
        assert!(matches!(err, StorageError::InvalidUrl { .. }), "{url}: {err}");
        assert!(err.to_string().contains(url), "{err}");
    }
    for url in ["mysql://x", "dynamodb://", "dynamodb://a/b", "file://relative"] {
        let err = open_metadata(url).await.expect_err(url);
        assert!(matches!(err, MetaError::InvalidUrl { .. }), "{url}: {err}");
    }
}

#[tokio::test]
async fn missing_bucket_and_table_say_what_to_do() {
    required_env("AWS_ENDPOINT_URL");
    let err = open_store("s3://no-such-bucket-sluice/x").await.expect_err("missing bucket");
    assert!(matches!(err, StorageError::Unavailable { .. }), "{err}");
    assert!(err.to_string().contains("no-such-bucket-sluice") && err.to_string().contains("does not exist"), "{err}");
    let err = open_metadata("dynamodb://no-such-table-sluice").await.expect_err("missing table");
    assert!(err.to_string().contains("no-such-table-sluice") && err.to_string().contains("does not exist"), "{err}");
}
