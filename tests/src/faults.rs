//! An injectable fault layer over both backend traits, for the chaos test. Each step of the
//! pipeline (a supervisor pass, an indexer attempt, a merger) gets its own [`Faults`]: calls
//! may fail transiently, before the call or after it (applied, but the caller sees an
//! error: an unknown outcome), and the step may be killed after a number of calls: from then
//! on every call fails, before or after the call that killed it, as if the process died there.

use async_trait::async_trait;
use bytes::Bytes;
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore, TxOp};
use sluice_store::storage::{ObjectMeta, ObjectStore, StorageError};
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// A small deterministic random source (xorshift), seeded per schedule.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A source from a seed (never zero).
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.below(1_000_000) as f64) < p * 1_000_000.0
    }
}

/// Faults injected so far, by kind, across steps.
pub type FaultCounts = Arc<Mutex<BTreeMap<&'static str, u64>>>;

/// The fault plan of one step.
#[derive(Debug)]
pub struct Faults {
    rng: Mutex<Rng>,
    transient: f64,
    kill_after: Mutex<Option<u64>>,
    dead: Mutex<bool>,
    counts: FaultCounts,
}

/// Where a call fails.
enum Fail {
    /// Before the call: nothing happened.
    Before,
    /// After the call: it happened, the caller does not know.
    After,
}

impl Faults {
    /// A step that fails calls transiently with probability `transient` and, if `kill_after`
    /// is set, dies at that call.
    pub fn new(seed: u64, transient: f64, kill_after: Option<u64>, counts: FaultCounts) -> Arc<Self> {
        Arc::new(Self {
            rng: Mutex::new(Rng::new(seed)),
            transient,
            kill_after: Mutex::new(kill_after),
            dead: Mutex::new(false),
            counts,
        })
    }

    fn count(&self, kind: &'static str) {
        *self.counts.lock().expect("counts").entry(kind).or_default() += 1;
    }

    /// Whether the step was killed.
    pub fn is_dead(&self) -> bool {
        *self.dead.lock().expect("dead")
    }

    /// Decides the fate of the next call of kind `what` (`meta` or `storage`).
    fn next(&self, what: &'static str) -> Option<Fail> {
        if self.is_dead() {
            return Some(Fail::Before);
        }
        let mut rng = self.rng.lock().expect("rng");
        let mut kill = self.kill_after.lock().expect("kill");
        if let Some(left) = kill.as_mut() {
            if *left == 0 {
                *self.dead.lock().expect("dead") = true;
                self.count("kill");
                return Some(if rng.chance(0.5) { Fail::Before } else { Fail::After });
            }
            *left -= 1;
        }
        if rng.chance(self.transient) {
            self.count(if what == "meta" { "transient metadata error" } else { "transient storage error" });
            return Some(if rng.chance(0.5) { Fail::Before } else { Fail::After });
        }
        None
    }
}

impl Faults {
    /// Runs `call` under the step's faults: an error (from `error`) before it, after it, or
    /// its own result.
    async fn around<T, E>(
        &self,
        what: &'static str,
        call: impl std::future::Future<Output = Result<T, E>>,
        error: impl Fn() -> E,
    ) -> Result<T, E> {
        match self.next(what) {
            None => call.await,
            Some(Fail::Before) => Err(error()),
            Some(Fail::After) => {
                let _ = call.await;
                Err(error())
            }
        }
    }
}

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

    async fn call<T>(&self, f: impl std::future::Future<Output = Result<T, MetaError>>) -> Result<T, MetaError> {
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

    async fn call<T>(&self, f: impl std::future::Future<Output = Result<T, StorageError>>) -> Result<T, StorageError> {
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
