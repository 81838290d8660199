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

/// A client's idle connection (HTTP pools open them ahead of need) must not keep the endpoint
/// from answering the requests on other connections: a test run once waited for ever on one.
#[tokio::test(flavor = "multi_thread")]
async fn an_idle_connection_keeps_no_request_waiting() {
    let endpoint = required_env("AWS_ENDPOINT_URL");
    let address = endpoint.trim_start_matches("http://").trim_start_matches("https://").trim_end_matches('/');
    let (meta, _) = dynamodb_store().await;
    let (store, _) = s3_store().await;
    let idle: Vec<std::net::TcpStream> =
        (0..3).map(|_| std::net::TcpStream::connect(address).expect("connect to the endpoint")).collect();
    let key = unique("idle");
    let answered = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        store.put(&format!("{key}.bin"), bytes::Bytes::from_static(b"x")).await.expect("put");
        meta.get(&key, "sk").await.expect("get")
    })
    .await;
    assert!(answered.is_ok(), "{} idle connections to {endpoint} held other requests for 20 s", idle.len());
}
