//! Shared pieces of the integration tests: the service endpoints from the environment (set by
//! `eval "$(localstack/up.sh)"`), unique names per test, and the conformance suites that run
//! against every implementation of a backend trait.

pub mod faults;
pub mod indexing;
pub mod kafka;
pub mod metadata_suite;
pub mod protocol;
pub mod storage_suite;

/// A value the environment must provide for tests against real services; a missing one fails
/// the test with what to run, never skips it.
pub fn required_env(name: &str) -> String {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!("{name} is not set: these tests need the local services; run `eval \"$(localstack/up.sh)\"` (or tests/run.sh) first"),
    }
}

/// A name unique to this test run, for prefixes and partition keys.
pub fn unique(name: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{name}-{}-{nanos}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}
