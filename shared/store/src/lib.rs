//! Sluice's storage: deep storage for hydrants and segments ([`storage::ObjectStore`]) and the
//! metadata store for specs, tasks, checkpoints, offsets and segment records
//! ([`metadata::MetadataStore`]), each chosen by URL: `s3://BUCKET/PREFIX` or `file://DIR`,
//! `dynamodb://TABLE` or `file://DIR`.
//!
//! Beside each trait are its wrappers: metering ([`meter`]) always; with the `testsuite`
//! feature, the ones tests use to inject faults or run a hook before a transaction, and the
//! conformance suites every implementation and wrapper passes.

#[cfg(feature = "aws")]
pub mod aws;
#[cfg(feature = "testsuite")]
pub mod faults;
pub mod metadata;
pub mod meter;
pub mod storage;
#[cfg(feature = "testsuite")]
pub mod testsuite;

#[cfg(all(test, feature = "testsuite"))]
mod conformance;

#[cfg(all(test, not(feature = "aws")))]
mod tests;
