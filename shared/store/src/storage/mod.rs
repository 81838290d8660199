//! Deep storage: the [`ObjectStore`] trait with an S3 implementation (`s3://bucket/prefix`) and
//! a local filesystem implementation (`file:///path`), chosen by URL. Objects are immutable
//! by convention: keys are unique per task attempt, and `put_if_absent` never overwrites.

#[cfg(feature = "testsuite")]
mod faulty;
mod local;
mod metered;
#[cfg(feature = "aws")]
mod s3;

#[cfg(feature = "testsuite")]
pub use faulty::FaultyStore;
pub use local::LocalStore;
pub use metered::MeteredStore;
#[cfg(feature = "aws")]
pub use s3::S3Store;

use async_trait::async_trait;
use bytes::Bytes;
use std::ops::Range;
use std::sync::Arc;

/// An error from a store, naming the URL (and key) concerned and what to do.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// No object under the key.
    #[error("{url}: object {key:?} not found")]
    NotFound {
        /// Store URL.
        url: String,
        /// Object key.
        key: String,
    },
    /// A conditional read found another version of the object than the one asked for: it
    /// was replaced since its version was read.
    #[error("{url}: object {key:?} changed since its version was read (replaced by another)")]
    Changed {
        /// Store URL.
        url: String,
        /// Object key.
        key: String,
    },
    /// `put_if_absent` found an object already there.
    #[error("{url}: object {key:?} already exists")]
    AlreadyExists {
        /// Store URL.
        url: String,
        /// Object key.
        key: String,
    },
    /// The URL cannot name a store.
    #[error("invalid storage URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// Why.
        reason: String,
    },
    /// A key that cannot name an object.
    #[error("invalid object key {key:?}: {reason}")]
    InvalidKey {
        /// The key.
        key: String,
        /// Why.
        reason: String,
    },
    /// The store cannot be reached or used: endpoint down, bucket missing, credentials refused.
    #[error("{url}: {reason}")]
    Unavailable {
        /// Store URL.
        url: String,
        /// What is wrong and what to do.
        reason: String,
    },
    /// Any other failure of the service or filesystem.
    #[error("{url}: {operation} {key:?}: {message}")]
    Failed {
        /// Store URL.
        url: String,
        /// The operation.
        operation: &'static str,
        /// Object key.
        key: String,
        /// The underlying error.
        message: String,
    },
}

/// Metadata of a stored object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMeta {
    /// Key relative to the store's prefix.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// What names this version of the object, for [`ObjectStore::get_range_if`]: S3's ETag,
    /// a local file's inode, size and modification time (`None`: the store does not say).
    pub version: Option<String>,
}

/// Object storage as Sluice uses it.
///
/// What every implementation (and every wrapper of one) must guarantee, and the conformance
/// suite (`testsuite::storage`, behind the `testsuite` feature) checks against each of them:
///
/// - **Read after write.** A `get`, `head` or `list` issued after a `put` returned sees the
///   whole object; nobody ever sees part of one (local files are written aside and renamed).
/// - **Create once.** Of many `put_if_absent` calls on one key exactly one succeeds; the
///   others get [`StorageError::AlreadyExists`] and the object is the winner's bytes.
/// - **Complete listings.** `list` returns every object under the prefix, sorted by key,
///   however many pages that takes.
/// - **Bounded ranged reads.** `get_range` never returns more than the range asks for.
/// - **Reads of one version.** `head` and `list` name each object's version, and
///   `get_range_if` reads only that version: once the object is replaced it fails with
///   [`StorageError::Changed`], so reads of one object at different times never mix two.
///
/// Sluice itself never overwrites: hydrant and segment keys are unique per task attempt, so
/// a crash leaves garbage for cleanup, never a changed object.
#[async_trait]
pub trait ObjectStore: Send + Sync + std::fmt::Debug {
    /// The URL the store was opened from.
    fn url(&self) -> &str;

    /// Stores an object, replacing any object under the key.
    async fn put(&self, key: &str, bytes: Bytes) -> Result<(), StorageError>;

    /// Stores an object only if no object exists under the key; otherwise
    /// [`StorageError::AlreadyExists`] and nothing changes.
    async fn put_if_absent(&self, key: &str, bytes: Bytes) -> Result<(), StorageError>;

    /// Reads a whole object.
    async fn get(&self, key: &str) -> Result<Bytes, StorageError>;

    /// Reads bytes `range` of an object (clamped to its end).
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes, StorageError>;

    /// Reads bytes `range` of an object (clamped to its end) while it is still `version` (as
    /// [`ObjectMeta::version`] named it); another version: [`StorageError::Changed`].
    async fn get_range_if(&self, key: &str, range: Range<u64>, version: &str) -> Result<Bytes, StorageError>;

    /// The object's metadata, or `None` when absent.
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StorageError>;

    /// Every object whose key starts with `prefix`, sorted by key.
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StorageError>;

    /// Deletes an object; deleting an absent object succeeds.
    async fn delete(&self, key: &str) -> Result<(), StorageError>;
}

/// Checks a key: relative, no `.`/`..` segments, no empty segments.
pub fn check_key(key: &str) -> Result<(), StorageError> {
    let bad = |reason: &str| Err(StorageError::InvalidKey { key: key.to_string(), reason: reason.to_string() });
    if key.is_empty() {
        return bad("empty");
    }
    if key.starts_with('/') || key.ends_with('/') {
        return bad("must not start or end with '/'");
    }
    if key.split('/').any(|s| s.is_empty() || s == "." || s == "..") {
        return bad("has an empty, '.' or '..' segment");
    }
    if key.contains('\0') {
        return bad("contains NUL");
    }
    Ok(())
}

#[cfg(feature = "aws")]
async fn s3_store(url: &str, bucket: &str, prefix: &str) -> Result<Arc<dyn ObjectStore>, StorageError> {
    Ok(Arc::new(S3Store::connect(url, bucket, prefix).await?))
}

#[cfg(not(feature = "aws"))]
async fn s3_store(url: &str, _bucket: &str, _prefix: &str) -> Result<Arc<dyn ObjectStore>, StorageError> {
    Err(StorageError::InvalidUrl { url: url.into(), reason: WITHOUT_AWS.into() })
}

/// Why an `s3://` or `dynamodb://` URL is refused by a build without the `aws` feature.
pub const WITHOUT_AWS: &str = "this build has no AWS backends: build it with `--features aws`";

/// Opens the store a URL names: `s3://bucket/prefix` or `file:///absolute/path`.
pub async fn open_store(url: &str) -> Result<Arc<dyn ObjectStore>, StorageError> {
    if let Some(rest) = url.strip_prefix("s3://") {
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(StorageError::InvalidUrl {
                url: url.into(),
                reason: "no bucket: expected s3://BUCKET/PREFIX".into(),
            });
        }
        return s3_store(url, bucket, prefix.trim_end_matches('/')).await;
    }
    if let Some(path) = url.strip_prefix("file://") {
        if !path.starts_with('/') {
            return Err(StorageError::InvalidUrl {
                url: url.into(),
                reason: "expected an absolute path: file:///path".into(),
            });
        }
        return Ok(Arc::new(LocalStore::open(url, path)?));
    }
    Err(StorageError::InvalidUrl {
        url: url.into(),
        reason: "unknown scheme: use s3://BUCKET/PREFIX or file:///PATH".into(),
    })
}
