//! Metadata and object stores that count what goes through them: requests, bytes, DynamoDB
//! capacity units as DynamoDB bills them, and the time spent waiting. The pipeline benchmark
//! reads the meters around each job to split time per stage and to feed the cost model.

use async_trait::async_trait;
use bytes::Bytes;
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore, TxOp};
use sluice_store::storage::{ObjectMeta, ObjectStore, StorageError};
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What went through the stores since the meters were last read.
#[derive(Debug, Default, Clone, Copy, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Meters {
    /// DynamoDB read request units (strongly consistent: 1 per 4 KB read).
    pub read_units: f64,
    /// DynamoDB write request units (1 per 1 KB written, 2 per 1 KB in a transaction).
    pub write_units: f64,
    /// Metadata requests.
    pub meta_requests: u64,
    /// Time spent in metadata requests.
    pub meta_secs: f64,
    /// S3 PUT, COPY, POST and LIST requests (billed per 1,000).
    pub s3_puts: u64,
    /// S3 GET and HEAD requests (billed per 1,000).
    pub s3_gets: u64,
    /// Bytes written to the object store.
    pub bytes_put: u64,
    /// Bytes written to the metadata store.
    pub meta_bytes: u64,
    /// Time spent in object store requests.
    pub store_secs: f64,
}

impl Meters {
    /// `self - earlier`, field by field.
    pub fn since(&self, earlier: &Meters) -> Meters {
        Meters {
            read_units: self.read_units - earlier.read_units,
            write_units: self.write_units - earlier.write_units,
            meta_requests: self.meta_requests - earlier.meta_requests,
            meta_secs: self.meta_secs - earlier.meta_secs,
            s3_puts: self.s3_puts - earlier.s3_puts,
            s3_gets: self.s3_gets - earlier.s3_gets,
            bytes_put: self.bytes_put - earlier.bytes_put,
            meta_bytes: self.meta_bytes - earlier.meta_bytes,
            store_secs: self.store_secs - earlier.store_secs,
        }
    }

    /// Adds `other` to `self`.
    pub fn add(&mut self, other: &Meters) {
        self.read_units += other.read_units;
        self.write_units += other.write_units;
        self.meta_requests += other.meta_requests;
        self.meta_secs += other.meta_secs;
        self.s3_puts += other.s3_puts;
        self.s3_gets += other.s3_gets;
        self.bytes_put += other.bytes_put;
        self.meta_bytes += other.meta_bytes;
        self.store_secs += other.store_secs;
    }
}

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
