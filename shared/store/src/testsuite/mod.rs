//! The conformance suites of [`ObjectStore`](crate::storage::ObjectStore) and
//! [`MetadataStore`](crate::metadata::MetadataStore): one scenario per guarantee the trait
//! states, for every implementation and every wrapper of one. A crate runs them with
//! [`object_store_suite!`](crate::object_store_suite) and
//! [`metadata_store_suite!`](crate::metadata_store_suite), one test per scenario:
//!
//! ```ignore
//! async fn s3() -> (Arc<dyn ObjectStore>, ()) { (open_store("s3://bucket/test").await.unwrap(), ()) }
//! sluice_store::object_store_suite!(storage_s3, s3);
//! ```
//!
//! The opener returns the store and a guard held until the scenario ends (a temporary folder,
//! say). Scenarios write under unique keys, so stores may be shared between them.

pub mod metadata;
pub mod storage;

/// A name no other test (of this or another process) uses: `name-PID-NANOS-N`.
pub fn unique(name: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{name}-{}-{nanos}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// Module `$module` with one test per `ObjectStore` scenario, each on the store `$open()`
/// (an async fn in scope returning the store and a guard) returns.
#[macro_export]
macro_rules! object_store_suite {
    ($module:ident, $open:ident) => {
        $crate::conformance_tests!(
            $module,
            $open,
            storage,
            [
                put_get_head_delete,
                ranged_reads,
                ranged_reads_of_one_version,
                put_if_absent_never_overwrites,
                concurrent_creates_have_one_winner,
                list_is_sorted_and_paginated,
                large_objects_round_trip,
                bad_keys_are_rejected,
            ]
        );
    };
}

/// Module `$module` with one test per `MetadataStore` scenario, each on the store `$open()`
/// (an async fn in scope returning the store and a guard) returns.
#[macro_export]
macro_rules! metadata_store_suite {
    ($module:ident, $open:ident) => {
        $crate::conformance_tests!(
            $module,
            $open,
            metadata,
            [
                conditional_puts_and_versions,
                query_by_prefix_is_sorted_and_paginated,
                query_by_range_is_bounded_ordered_and_paginated,
                concurrent_creates_have_one_winner,
                concurrent_compare_and_swap_has_one_winner,
                failed_transactions_apply_nothing_and_name_the_action,
                transactions_apply_everything,
                limits_are_enforced,
            ]
        );
    };
}

/// The tests of one suite; see [`object_store_suite!`](crate::object_store_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! conformance_tests {
    ($module:ident, $open:ident, $suite:ident, [$($scenario:ident),* $(,)?]) => {
        mod $module {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $scenario() {
                    let (store, _guard) = super::$open().await;
                    $crate::testsuite::$suite::$scenario(store).await;
                }
            )*
        }
    };
}
