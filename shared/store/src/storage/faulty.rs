//! An object store that fails calls as a [`Faults`] plan says.

use super::{ObjectMeta, ObjectStore, StorageError};
use crate::faults::Faults;
use async_trait::async_trait;
use bytes::Bytes;
use std::future::Future;
use std::ops::Range;
use std::sync::Arc;

/// The object store with faults.
#[derive(Debug)]
pub struct FaultyStore {
    /// The store underneath.
    pub inner: Arc<dyn ObjectStore>,
    /// The step's faults.
    pub faults: Arc<Faults>,
}

impl FaultyStore {
    fn error(&self) -> StorageError {
        StorageError::Unavailable { url: self.inner.url().into(), reason: "injected fault".into() }
    }

    async fn call<T>(&self, f: impl Future<Output = Result<T, StorageError>>) -> Result<T, StorageError> {
        self.faults.around("storage", f, || self.error()).await
    }
}

#[async_trait]
impl ObjectStore for FaultyStore {
    fn url(&self) -> &str {
        self.inner.url()
    }
    async fn put(&self, key: &str, bytes: Bytes) -> Result<(), StorageError> {
        self.call(self.inner.put(key, bytes)).await
    }
    async fn put_if_absent(&self, key: &str, bytes: Bytes) -> Result<(), StorageError> {
        self.call(self.inner.put_if_absent(key, bytes)).await
    }
    async fn get(&self, key: &str) -> Result<Bytes, StorageError> {
        self.call(self.inner.get(key)).await
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes, StorageError> {
        self.call(self.inner.get_range(key, range)).await
    }
    async fn get_range_if(&self, key: &str, range: Range<u64>, version: &str) -> Result<Bytes, StorageError> {
        self.call(self.inner.get_range_if(key, range, version)).await
    }
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StorageError> {
        self.call(self.inner.head(key)).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StorageError> {
        self.call(self.inner.list(prefix)).await
    }
    async fn delete(&self, key: &str) -> Result<(), StorageError> {
        self.call(self.inner.delete(key)).await
    }
}
