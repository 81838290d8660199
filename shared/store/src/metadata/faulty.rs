//! A metadata store that fails calls as a [`Faults`] plan says.

use super::{Condition, Item, MetaError, MetadataStore, SkRange, TxOp};
use crate::faults::Faults;
use async_trait::async_trait;
use std::future::Future;
use std::sync::Arc;

/// The metadata store with faults.
#[derive(Debug)]
pub struct FaultyMeta {
    /// The store underneath.
    pub inner: Arc<dyn MetadataStore>,
    /// The step's faults.
    pub faults: Arc<Faults>,
}

impl FaultyMeta {
    fn error(&self) -> MetaError {
        MetaError::Unavailable { url: self.inner.url().into(), reason: "injected fault".into() }
    }

    async fn call<T>(&self, f: impl Future<Output = Result<T, MetaError>>) -> Result<T, MetaError> {
        self.faults.around("meta", f, || self.error()).await
    }
}

#[async_trait]
impl MetadataStore for FaultyMeta {
    fn url(&self) -> &str {
        self.inner.url()
    }
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, MetaError> {
        self.call(self.inner.get(pk, sk)).await
    }
    async fn query(&self, pk: &str, sk_prefix: &str) -> Result<Vec<Item>, MetaError> {
        self.call(self.inner.query(pk, sk_prefix)).await
    }
    async fn query_range(&self, pk: &str, range: &SkRange) -> Result<Vec<Item>, MetaError> {
        self.call(self.inner.query_range(pk, range)).await
    }
    async fn put(&self, item: Item, condition: Condition) -> Result<u64, MetaError> {
        self.call(self.inner.put(item, condition)).await
    }
    async fn delete(&self, pk: &str, sk: &str, condition: Condition) -> Result<(), MetaError> {
        self.call(self.inner.delete(pk, sk, condition)).await
    }
    async fn transact(&self, ops: Vec<TxOp>) -> Result<(), MetaError> {
        self.call(self.inner.transact(ops)).await
    }
}
