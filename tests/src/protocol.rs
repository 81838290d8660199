//! Pieces of the protocol tests: a datasource over a fresh topic, jobs run by hand, and a
//! metadata store that runs a step of a competing actor just before a transaction.

use crate::indexing::{json_record, spec, Backends};
use crate::kafka::{create_topic, produce};
use async_trait::async_trait;
use sluice_shared::datasource::submit;
use sluice_shared::metadata::{Condition, Item, MetaError, MetadataStore, TxOp};
use sluice_shared::task::{datasource_pk, TaskItem};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

/// A datasource with records in its topic.
pub struct Setup {
    /// The stores.
    pub b: Backends,
    /// The datasource.
    pub name: String,
    /// Records produced: ids `r0`, `r1`, ...
    pub num_records: usize,
}

impl Setup {
    /// `num_records` JSON records round-robin over `partitions` partitions, a datasource with
    /// `task_count` groups reading from the earliest offset, tasks of at most
    /// `max_records_per_task` records; `tuning` merged into the tuningConfig.
    pub async fn new(
        b: Backends,
        partitions: i32,
        num_records: usize,
        task_count: u32,
        max_records_per_task: u64,
        tuning: serde_json::Value,
    ) -> Self {
        let bootstrap = crate::required_env("SLUICE_KAFKA");
        let topic = create_topic(&bootstrap, "protocol", partitions).await;
        let records: Vec<(i32, Vec<u8>)> =
            (0..num_records).map(|n| ((n % partitions as usize) as i32, json_record(&format!("r{n}"), n))).collect();
        produce(&bootstrap, &topic, &records).await;
        let name = crate::unique("protocol");
        let mut spec = spec(&name, &topic, &bootstrap, serde_json::json!({"type": "json"}), tuning);
        spec["spec"]["ioConfig"]["taskCount"] = task_count.into();
        spec["spec"]["ioConfig"]["useEarliestOffset"] = true.into();
        spec["spec"]["sluiceConfig"] = serde_json::json!({"maxRecordsPerTask": max_records_per_task});
        submit(b.meta.as_ref(), spec, 0).await.expect("submit");
        Self { b, name, num_records }
    }

    /// Every record id, sorted as `visible_values` sorts.
    pub fn expected(&self) -> Vec<String> {
        let mut ids: Vec<String> = (0..self.num_records).map(|n| format!("r{n}")).collect();
        ids.sort();
        ids
    }

    /// The task items of the datasource, by group and sequence.
    pub async fn tasks(&self) -> Vec<TaskItem> {
        let items = self.b.meta.query(&datasource_pk(&self.name), "task#").await.expect("tasks");
        items.into_iter().map(|i| serde_json::from_value(i.body).expect("task body")).collect()
    }
}

type Hook = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// A metadata store that runs a hook once, just before the first transaction whose actions
/// touch a key starting with `trigger`: another actor's step lands in the middle of this one.
pub struct BeforeTransact {
    inner: Arc<dyn MetadataStore>,
    trigger: String,
    hook: Mutex<Option<Hook>>,
}

impl std::fmt::Debug for BeforeTransact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BeforeTransact").field("trigger", &self.trigger).finish_non_exhaustive()
    }
}

impl BeforeTransact {
    /// Wraps `inner`; `hook` runs before the first transaction touching `trigger*`.
    pub fn new<F, Fut>(inner: Arc<dyn MetadataStore>, trigger: &str, hook: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let hook: Hook = Box::new(move || Box::pin(hook()));
        Self { inner, trigger: trigger.into(), hook: Mutex::new(Some(hook)) }
    }
}

#[async_trait]
impl MetadataStore for BeforeTransact {
    fn url(&self) -> &str {
        self.inner.url()
    }
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, MetaError> {
        self.inner.get(pk, sk).await
    }
    async fn query(&self, pk: &str, sk_prefix: &str) -> Result<Vec<Item>, MetaError> {
        self.inner.query(pk, sk_prefix).await
    }
    async fn put(&self, item: Item, condition: Condition) -> Result<u64, MetaError> {
        self.inner.put(item, condition).await
    }
    async fn delete(&self, pk: &str, sk: &str, condition: Condition) -> Result<(), MetaError> {
        self.inner.delete(pk, sk, condition).await
    }
    async fn transact(&self, ops: Vec<TxOp>) -> Result<(), MetaError> {
        if ops.iter().any(|o| o.key().1.starts_with(&self.trigger)) {
            let hook = self.hook.lock().expect("hook lock").take();
            if let Some(hook) = hook {
                hook().await;
            }
        }
        self.inner.transact(ops).await
    }
}

/// A metadata store whose transactions hold at most `max_actions` actions, as a stand-in for
/// DynamoDB's 100 with fewer segments.
#[derive(Debug)]
pub struct SmallTransactions {
    /// The store underneath.
    pub inner: Arc<dyn MetadataStore>,
    /// Most actions per transaction.
    pub max_actions: usize,
}

#[async_trait]
impl MetadataStore for SmallTransactions {
    fn url(&self) -> &str {
        self.inner.url()
    }
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, MetaError> {
        self.inner.get(pk, sk).await
    }
    async fn query(&self, pk: &str, sk_prefix: &str) -> Result<Vec<Item>, MetaError> {
        self.inner.query(pk, sk_prefix).await
    }
    async fn put(&self, item: Item, condition: Condition) -> Result<u64, MetaError> {
        self.inner.put(item, condition).await
    }
    async fn delete(&self, pk: &str, sk: &str, condition: Condition) -> Result<(), MetaError> {
        self.inner.delete(pk, sk, condition).await
    }
    async fn transact(&self, ops: Vec<TxOp>) -> Result<(), MetaError> {
        if ops.len() > self.max_actions {
            return Err(MetaError::Invalid(format!(
                "{} actions, over this store's limit of {}",
                ops.len(),
                self.max_actions
            )));
        }
        self.inner.transact(ops).await
    }
}
