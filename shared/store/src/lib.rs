//! Sluice's storage: deep storage for hydrants and segments ([`storage::ObjectStore`]) and the
//! metadata store for specs, tasks, checkpoints, offsets and segment records
//! ([`metadata::MetadataStore`]), each chosen by URL: `s3://BUCKET/PREFIX` or `file://DIR`,
//! `dynamodb://TABLE` or `file://DIR`.

pub mod metadata;
pub mod storage;

#[cfg(all(test, not(feature = "aws")))]
mod tests;
