//! A metadata store that tells a [`Meter`] of every call through it.

use super::{Condition, Item, MetaError, MetadataStore, SkRange, TxOp};
use crate::meter::{Call, Meter};
use async_trait::async_trait;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

/// A metadata store that meters another.
#[derive(Debug)]
pub struct MeteredMeta {
    inner: Arc<dyn MetadataStore>,
    meter: Arc<dyn Meter>,
}

impl MeteredMeta {
    /// Meters `inner` into `meter`.
    pub fn new(inner: Arc<dyn MetadataStore>, meter: Arc<dyn Meter>) -> Self {
        Self { inner, meter }
    }

    async fn metered<T>(
        &self,
        call: impl Future<Output = Result<T, MetaError>>,
        seen: impl FnOnce(&Result<T, MetaError>) -> Call,
    ) -> Result<T, MetaError> {
        let started = Instant::now();
        let out = call.await;
        self.meter.record(seen(&out), started.elapsed());
        out
    }
}

#[async_trait]
impl MetadataStore for MeteredMeta {
    fn url(&self) -> &str {
        self.inner.url()
    }

    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, MetaError> {
        let read = |out: &Result<Option<Item>, MetaError>| {
            let item = out.as_ref().ok().and_then(Option::as_ref);
            Call::MetaRead { bytes: item.map_or(0, Item::size), items: usize::from(item.is_some()) }
        };
        self.metered(self.inner.get(pk, sk), read).await
    }

    async fn query(&self, pk: &str, sk_prefix: &str) -> Result<Vec<Item>, MetaError> {
        self.metered(self.inner.query(pk, sk_prefix), items_read).await
    }

    async fn query_range(&self, pk: &str, range: &SkRange) -> Result<Vec<Item>, MetaError> {
        self.metered(self.inner.query_range(pk, range), items_read).await
    }

    async fn put(&self, item: Item, condition: Condition) -> Result<u64, MetaError> {
        let put = Call::MetaPut { bytes: item.size() };
        self.metered(self.inner.put(item, condition), |_| put).await
    }

    async fn delete(&self, pk: &str, sk: &str, condition: Condition) -> Result<(), MetaError> {
        self.metered(self.inner.delete(pk, sk, condition), |_| Call::MetaDelete).await
    }

    async fn transact(&self, ops: Vec<TxOp>) -> Result<(), MetaError> {
        let puts: Vec<usize> = ops
            .iter()
            .filter_map(|op| match op {
                TxOp::Put { item, .. } => Some(item.size()),
                TxOp::Delete { .. } | TxOp::Check { .. } => None,
            })
            .collect();
        let others = ops.len() - puts.len();
        self.metered(self.inner.transact(ops), |_| Call::MetaTransact { puts, others }).await
    }
}

/// The read of the items a query returned.
fn items_read(out: &Result<Vec<Item>, MetaError>) -> Call {
    let items = out.as_ref().map_or(&[][..], Vec::as_slice);
    Call::MetaRead { bytes: items.iter().map(Item::size).sum(), items: items.len() }
}
