//! The conformance suites against S3 and DynamoDB, through the endpoint `localstack/up.sh`
//! starts (these tests fail, naming what to run, when it is not there), one test per scenario.
//! The local backends and every wrapper run the same suites in `sluice-store`'s own tests.

use sluice_integration::{required_env, unique};
use sluice_store::metadata::{open_metadata, MetadataStore};
use sluice_store::storage::{open_store, ObjectStore};
use std::sync::Arc;

async fn s3_store() -> (Arc<dyn ObjectStore>, ()) {
    let url = required_env("SLUICE_STORAGE");
    (open_store(&format!("{}/{}", url.trim_end_matches('/'), unique("conformance"))).await.expect("S3 store"), ())
}

async fn dynamodb_store() -> (Arc<dyn MetadataStore>, ()) {
    (open_metadata(&required_env("SLUICE_METADATA")).await.expect("DynamoDB store"), ())
}

sluice_store::object_store_suite!(storage_s3, s3_store);
sluice_store::metadata_store_suite!(metadata_dynamodb, dynamodb_store);
