//! An object store that tells a [`Meter`] of every call through it.

use super::{ObjectMeta, ObjectStore, StorageError};
use crate::meter::{Call, Meter};
use async_trait::async_trait;
use bytes::Bytes;
use std::future::Future;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

/// An object store that meters another.
#[derive(Debug)]
pub struct MeteredStore {
    inner: Arc<dyn ObjectStore>,
    meter: Arc<dyn Meter>,
}

impl MeteredStore {
    /// Meters `inner` into `meter`.
    pub fn new(inner: Arc<dyn ObjectStore>, meter: Arc<dyn Meter>) -> Self {
        Self { inner, meter }
    }

    async fn metered<T>(
        &self,
        call: impl Future<Output = Result<T, StorageError>>,
        seen: impl FnOnce(&Result<T, StorageError>) -> Call,
    ) -> Result<T, StorageError> {
        let started = Instant::now();
        let out = call.await;
        self.meter.record(seen(&out), started.elapsed());
        out
    }
}

fn got(out: &Result<Bytes, StorageError>) -> Call {
    Call::ObjectGet { bytes: out.as_ref().map_or(0, |b| b.len() as u64) }
}

#[async_trait]
impl ObjectStore for MeteredStore {
    fn url(&self) -> &str {
        self.inner.url()
    }

    async fn put(&self, key: &str, bytes: Bytes) -> Result<(), StorageError> {
        let put = Call::ObjectPut { bytes: bytes.len() as u64 };
        self.metered(self.inner.put(key, bytes), |_| put).await
    }

    async fn put_if_absent(&self, key: &str, bytes: Bytes) -> Result<(), StorageError> {
        let put = Call::ObjectPut { bytes: bytes.len() as u64 };
        self.metered(self.inner.put_if_absent(key, bytes), |_| put).await
    }

    async fn get(&self, key: &str) -> Result<Bytes, StorageError> {
        self.metered(self.inner.get(key), got).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes, StorageError> {
        self.metered(self.inner.get_range(key, range), got).await
    }

    async fn get_range_if(&self, key: &str, range: Range<u64>, version: &str) -> Result<Bytes, StorageError> {
        self.metered(self.inner.get_range_if(key, range, version), got).await
    }

    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StorageError> {
        self.metered(self.inner.head(key), |_| Call::ObjectHead).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StorageError> {
        self.metered(self.inner.list(prefix), |_| Call::ObjectList).await
    }

    async fn delete(&self, key: &str) -> Result<(), StorageError> {
        self.metered(self.inner.delete(key), |_| Call::ObjectDelete).await
    }
}
