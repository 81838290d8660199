//! The conformance suites against every backend: the local filesystem store and the embedded
//! metadata store always; S3 and DynamoDB through the endpoint `localstack/up.sh` starts (the
//! tests fail, naming what to run, when it is not there).

use sluice_integration::{metadata_suite, required_env, storage_suite};
use sluice_shared::metadata::open_metadata;
use sluice_shared::storage::open_store;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn storage_conformance_local_filesystem() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open_store(&format!("file://{}", dir.path().display())).await.expect("local store");
    storage_suite::run_all(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn storage_conformance_s3() {
    let url = required_env("SLUICE_STORAGE");
    let store = open_store(&format!("{}/{}", url.trim_end_matches('/'), sluice_integration::unique("conformance")))
        .await
        .expect("S3 store");
    storage_suite::run_all(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn metadata_conformance_embedded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open_metadata(&format!("file://{}", dir.path().display())).await.expect("embedded store");
    metadata_suite::run_all(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn metadata_conformance_dynamodb() {
    let store = open_metadata(&required_env("SLUICE_METADATA")).await.expect("DynamoDB store");
    metadata_suite::run_all(store).await;
}
