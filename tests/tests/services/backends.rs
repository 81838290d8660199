//! The conformance suites against every backend, one test per scenario and implementation:
//! the local filesystem store and the embedded metadata store always; S3 and DynamoDB through
//! the endpoint `localstack/up.sh` starts (those tests fail, naming what to run, when it is not
//! there).

use sluice_integration::{metadata_suite, required_env, storage_suite, unique};
use sluice_store::metadata::{open_metadata, MetadataStore};
use sluice_store::storage::{open_store, ObjectStore};
use std::sync::Arc;

async fn local_store() -> (Arc<dyn ObjectStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    (open_store(&format!("file://{}", dir.path().display())).await.expect("local store"), dir)
}

async fn s3_store() -> (Arc<dyn ObjectStore>, ()) {
    let url = required_env("SLUICE_STORAGE");
    (open_store(&format!("{}/{}", url.trim_end_matches('/'), unique("conformance"))).await.expect("S3 store"), ())
}

async fn embedded_store() -> (Arc<dyn MetadataStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    (open_metadata(&format!("file://{}", dir.path().display())).await.expect("embedded store"), dir)
}

async fn dynamodb_store() -> (Arc<dyn MetadataStore>, ()) {
    (open_metadata(&required_env("SLUICE_METADATA")).await.expect("DynamoDB store"), ())
}

macro_rules! suite {
    ($module:ident, $open:ident, $suite:ident, [$($scenario:ident),* $(,)?]) => {
        mod $module {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $scenario() {
                    let (store, _guard) = $open().await;
                    $suite::$scenario(store).await;
                }
            )*
        }
    };
}

macro_rules! storage_suite {
    ($module:ident, $open:ident) => {
        suite!(
            $module,
            $open,
            storage_suite,
            [
                put_get_head_delete,
                ranged_reads,
                put_if_absent_never_overwrites,
                concurrent_creates_have_one_winner,
                list_is_sorted_and_paginated,
                large_objects_round_trip,
                bad_keys_are_rejected,
            ]
        );
    };
}

macro_rules! metadata_suite {
    ($module:ident, $open:ident) => {
        suite!(
            $module,
            $open,
            metadata_suite,
            [
                conditional_puts_and_versions,
                query_by_prefix_is_sorted_and_paginated,
                concurrent_creates_have_one_winner,
                concurrent_compare_and_swap_has_one_winner,
                failed_transactions_apply_nothing_and_name_the_action,
                transactions_apply_everything,
                limits_are_enforced,
            ]
        );
    };
}

storage_suite!(storage_local_filesystem, local_store);
storage_suite!(storage_s3, s3_store);
metadata_suite!(metadata_embedded, embedded_store);
metadata_suite!(metadata_dynamodb, dynamodb_store);
