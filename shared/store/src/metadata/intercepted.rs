//! A metadata store whose transactions first go through a test's hook: another actor's step
//! lands in the middle of this one, or a limit refuses the transaction.

use super::{Condition, Item, MetaError, MetadataStore, SkRange, TxOp};
use async_trait::async_trait;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

type Hook = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;
type BeforeTransact = Box<dyn Fn(&[TxOp]) -> Pin<Box<dyn Future<Output = Result<(), MetaError>> + Send>> + Send + Sync>;

/// A metadata store whose transactions first go through a test's hook: another actor's step
/// lands in the middle of this one, or a limit refuses the transaction.
pub struct Intercepted {
    inner: Arc<dyn MetadataStore>,
    before_transact: BeforeTransact,
    /// A hook run once before the first put of an item whose sort key starts with the text.
    before_put: Option<(String, Mutex<Option<Hook>>)>,
}

impl std::fmt::Debug for Intercepted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Intercepted").field("inner", &self.inner).finish_non_exhaustive()
    }
}

impl Intercepted {
    /// Runs `hook` once, just before the first transaction touching a key that starts with
    /// `trigger`.
    pub fn before_first<F, Fut>(inner: Arc<dyn MetadataStore>, trigger: &str, hook: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let hook: Arc<Mutex<Option<Hook>>> = Arc::new(Mutex::new(Some(Box::new(move || Box::pin(hook())))));
        let trigger = trigger.to_string();
        let before_transact: BeforeTransact = Box::new(move |ops: &[TxOp]| {
            let due = ops.iter().any(|o| o.key().1.starts_with(&trigger));
            let hook = if due { hook.lock().expect("hook lock").take() } else { None };
            Box::pin(async move {
                if let Some(hook) = hook {
                    hook().await;
                }
                Ok(())
            })
        });
        Self { inner, before_transact, before_put: None }
    }

    /// Runs `hook` once, just before the first single-item put of an item whose sort key starts
    /// with `trigger` (a step between a writer's last transaction and its closing put).
    pub fn before_first_put<F, Fut>(inner: Arc<dyn MetadataStore>, trigger: &str, hook: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let hook: Hook = Box::new(move || Box::pin(hook()));
        let before_put = Some((trigger.to_string(), Mutex::new(Some(hook))));
        Self { inner, before_transact: Box::new(|_: &[TxOp]| Box::pin(async { Ok(()) })), before_put }
    }

    /// Runs `hook` before every transaction (e.g. to slow transactions down and count how
    /// many overlap).
    pub fn before_each<F, Fut>(inner: Arc<dyn MetadataStore>, hook: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let before_transact: BeforeTransact = Box::new(move |_: &[TxOp]| {
            let hook = hook();
            Box::pin(async move {
                hook.await;
                Ok(())
            })
        });
        Self { inner, before_transact, before_put: None }
    }

    /// Shows every transaction's actions to `look` before it runs (e.g. to record the keys
    /// each writes).
    pub fn inspect<F>(inner: Arc<dyn MetadataStore>, look: F) -> Self
    where
        F: Fn(&[TxOp]) + Send + Sync + 'static,
    {
        let before_transact: BeforeTransact = Box::new(move |ops: &[TxOp]| {
            look(ops);
            Box::pin(async { Ok(()) })
        });
        Self { inner, before_transact, before_put: None }
    }

    /// Refuses transactions of more than `max_actions` actions, as a stand-in for DynamoDB's
    /// 100 with fewer segments.
    pub fn small_transactions(inner: Arc<dyn MetadataStore>, max_actions: usize) -> Self {
        let before_transact: BeforeTransact = Box::new(move |ops: &[TxOp]| {
            let n = ops.len();
            Box::pin(async move {
                if n > max_actions {
                    return Err(MetaError::Invalid(format!("{n} actions, over this store's limit of {max_actions}")));
                }
                Ok(())
            })
        });
        Self { inner, before_transact, before_put: None }
    }
}

#[async_trait]
impl MetadataStore for Intercepted {
    fn url(&self) -> &str {
        self.inner.url()
    }
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, MetaError> {
        self.inner.get(pk, sk).await
    }
    async fn query(&self, pk: &str, sk_prefix: &str) -> Result<Vec<Item>, MetaError> {
        self.inner.query(pk, sk_prefix).await
    }
    async fn query_range(&self, pk: &str, range: &SkRange) -> Result<Vec<Item>, MetaError> {
        self.inner.query_range(pk, range).await
    }
    async fn put(&self, item: Item, condition: Condition) -> Result<u64, MetaError> {
        let due = self.before_put.as_ref().filter(|(trigger, _)| item.sk.starts_with(trigger.as_str()));
        if let Some(hook) = due.and_then(|(_, hook)| hook.lock().expect("hook lock").take()) {
            hook().await;
        }
        self.inner.put(item, condition).await
    }
    async fn delete(&self, pk: &str, sk: &str, condition: Condition) -> Result<(), MetaError> {
        self.inner.delete(pk, sk, condition).await
    }
    async fn transact(&self, ops: Vec<TxOp>) -> Result<(), MetaError> {
        (self.before_transact)(&ops).await?;
        self.inner.transact(ops).await
    }
}
