//! What a build without the `aws` feature does with the URLs of the backends it leaves out
//! (`tests/run.sh` runs this crate's tests alone, without the features other crates turn on).

use crate::metadata::open_metadata;
use crate::storage::open_store;

#[tokio::test]
async fn aws_urls_name_the_feature_a_build_without_it_needs() {
    let store = open_store("s3://bucket/prefix").await.err().expect("no S3 backend").to_string();
    let meta = open_metadata("dynamodb://table").await.err().expect("no DynamoDB backend").to_string();
    for err in [store, meta] {
        assert!(err.contains("--features aws"), "{err}");
    }
}
