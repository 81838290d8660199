//! Metadata and object stores that count what goes through them: requests, bytes, DynamoDB
//! capacity units as DynamoDB bills them, and the time spent waiting. The pipeline benchmark
//! reads the meters around each job to split time per stage and to feed the cost model.

use async_trait::async_trait;
use bytes::Bytes;
use sluice_report::Meters;
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore, TxOp};
use sluice_store::storage::{ObjectMeta, ObjectStore, StorageError};
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Shared meters of a [`MeteredMeta`] and a [`MeteredStore`].
pub type SharedMeters = Arc<Mutex<Meters>>;

/// Reads the meters now.
pub fn read(meters: &SharedMeters) -> Meters {
    *meters.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn record(meters: &SharedMeters, started: Instant, f: impl FnOnce(&mut Meters, Duration)) {
    let took = started.elapsed();
    f(&mut meters.lock().unwrap_or_else(std::sync::PoisonError::into_inner), took);
}

fn units(bytes: usize, unit: usize) -> f64 {
    bytes.div_ceil(unit).max(1) as f64
}

/// A metadata store that meters another.
#[derive(Debug)]
pub struct MeteredMeta {
    inner: Arc<dyn MetadataStore>,
    meters: SharedMeters,
}

impl MeteredMeta {
    /// Meters `inner` into `meters`.
    pub fn new(inner: Arc<dyn MetadataStore>, meters: SharedMeters) -> Self {
        Self { inner, meters }
    }
}

#[async_trait]
impl MetadataStore for MeteredMeta {
    fn url(&self) -> &str {
        self.inner.url()
    }

    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, MetaError> {
        let started = Instant::now();
        let out = self.inner.get(pk, sk).await;
        let size = out.as_ref().ok().and_then(Option::as_ref).map_or(0, Item::size);
        record(&self.meters, started, |m, t| {
            m.meta_requests += 1;
            m.meta_secs += t.as_secs_f64();
            m.read_units += units(size, 4096);
        });
        out
    }

    async fn query(&self, pk: &str, sk_prefix: &str) -> Result<Vec<Item>, MetaError> {
        let started = Instant::now();
        let out = self.inner.query(pk, sk_prefix).await;
        let size: usize = out.as_ref().map_or(0, |items| items.iter().map(Item::size).sum());
        record(&self.meters, started, |m, t| {
            m.meta_requests += 1;
            m.meta_secs += t.as_secs_f64();
            m.read_units += units(size, 4096);
        });
        out
    }

    async fn put(&self, item: Item, condition: Condition) -> Result<u64, MetaError> {
        let (started, size) = (Instant::now(), item.size());
        let out = self.inner.put(item, condition).await;
        record(&self.meters, started, |m, t| {
            m.meta_requests += 1;
            m.meta_secs += t.as_secs_f64();
            m.write_units += units(size, 1024);
            m.meta_bytes += size as u64;
        });
        out
    }

    async fn delete(&self, pk: &str, sk: &str, condition: Condition) -> Result<(), MetaError> {
        let started = Instant::now();
        let out = self.inner.delete(pk, sk, condition).await;
        record(&self.meters, started, |m, t| {
            m.meta_requests += 1;
            m.meta_secs += t.as_secs_f64();
            m.write_units += 1.0;
        });
        out
    }

    async fn transact(&self, ops: Vec<TxOp>) -> Result<(), MetaError> {
        let started = Instant::now();
        // A transaction bills two units per 1 KB of each item it writes or checks.
        let (write_units, bytes) = ops.iter().fold((0.0, 0usize), |(u, b), op| match op {
            TxOp::Put { item, .. } => (u + 2.0 * units(item.size(), 1024), b + item.size()),
            TxOp::Delete { .. } | TxOp::Check { .. } => (u + 2.0, b),
        });
        let out = self.inner.transact(ops).await;
        record(&self.meters, started, |m, t| {
            m.meta_requests += 1;
            m.meta_secs += t.as_secs_f64();
            m.write_units += write_units;
            m.meta_bytes += bytes as u64;
        });
        out
    }
}

/// An object store that meters another.
#[derive(Debug)]
pub struct MeteredStore {
    inner: Arc<dyn ObjectStore>,
    meters: SharedMeters,
}

impl MeteredStore {
    /// Meters `inner` into `meters`.
    pub fn new(inner: Arc<dyn ObjectStore>, meters: SharedMeters) -> Self {
        Self { inner, meters }
    }

    fn count<T>(&self, started: Instant, puts: u64, gets: u64, bytes: u64, out: T) -> T {
        record(&self.meters, started, |m, t| {
            m.s3_puts += puts;
            m.s3_gets += gets;
            m.bytes_put += bytes;
            m.store_secs += t.as_secs_f64();
        });
        out
    }
}

#[async_trait]
impl ObjectStore for MeteredStore {
    fn url(&self) -> &str {
        self.inner.url()
    }

    async fn put(&self, key: &str, bytes: Bytes) -> Result<(), StorageError> {
        let (started, n) = (Instant::now(), bytes.len() as u64);
        let out = self.inner.put(key, bytes).await;
        self.count(started, 1, 0, n, out)
    }

    async fn put_if_absent(&self, key: &str, bytes: Bytes) -> Result<(), StorageError> {
        let (started, n) = (Instant::now(), bytes.len() as u64);
        let out = self.inner.put_if_absent(key, bytes).await;
        self.count(started, 1, 0, n, out)
    }

    async fn get(&self, key: &str) -> Result<Bytes, StorageError> {
        let started = Instant::now();
        let out = self.inner.get(key).await;
        self.count(started, 0, 1, 0, out)
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes, StorageError> {
        let started = Instant::now();
        let out = self.inner.get_range(key, range).await;
        self.count(started, 0, 1, 0, out)
    }

    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StorageError> {
        let started = Instant::now();
        let out = self.inner.head(key).await;
        self.count(started, 0, 1, 0, out)
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StorageError> {
        let started = Instant::now();
        let out = self.inner.list(prefix).await;
        self.count(started, 1, 0, 0, out)
    }

    async fn delete(&self, key: &str) -> Result<(), StorageError> {
        // DELETE requests are free.
        let started = Instant::now();
        let out = self.inner.delete(key).await;
        self.count(started, 0, 0, 0, out)
    }
}
