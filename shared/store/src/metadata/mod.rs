//! The metadata store: the [`MetadataStore`] trait with a DynamoDB implementation
//! (`dynamodb://table`) and an embedded SQLite implementation (`file:///path`), chosen by URL.
//! It offers exactly what the exactly-once protocol needs: get, query by key prefix or range, a put
//! conditioned on absence or on an expected version, and an atomic multi-item transaction that
//! reports which condition failed. The item layout of the whole system is documented in
//! `docs/metadata-layout.md`.

#[cfg(feature = "aws")]
mod dynamodb;
mod embedded;
#[cfg(feature = "testsuite")]
mod faulty;
#[cfg(feature = "testsuite")]
mod intercepted;
mod metered;
mod range;

#[cfg(feature = "aws")]
pub use dynamodb::DynamoStore;
pub use embedded::EmbeddedStore;
#[cfg(feature = "testsuite")]
pub use faulty::FaultyMeta;
#[cfg(feature = "testsuite")]
pub use intercepted::Intercepted;
pub use metered::MeteredMeta;
pub use range::{prefix_end, SkRange};

use async_trait::async_trait;
use std::sync::Arc;

/// Largest item DynamoDB accepts, in bytes (names and values).
pub const MAX_ITEM_BYTES: usize = 400 * 1024;
/// Most actions in one transaction.
pub const MAX_TRANSACTION_ACTIONS: usize = 100;
/// Largest transaction, in bytes.
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;

/// One item: a partition key, a sort key, a version the store maintains, a JSON body and an
/// optional expiry (seconds since the epoch; a cleanup hint, expired items may still be read).
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Partition key, e.g. `ds#wikipedia`.
    pub pk: String,
    /// Sort key, e.g. `task#0000#000000000042`.
    pub sk: String,
    /// 1 when created, incremented by every write (ignored on input).
    pub version: u64,
    /// The item's attributes.
    pub body: serde_json::Value,
    /// Expiry for the store's TTL cleanup, in seconds since the epoch.
    pub expires_at: Option<i64>,
}

impl Item {
    /// A new item (version assigned by the store).
    pub fn new(pk: impl Into<String>, sk: impl Into<String>, body: serde_json::Value) -> Self {
        Self { pk: pk.into(), sk: sk.into(), version: 0, body, expires_at: None }
    }

    /// Approximate stored size, as DynamoDB counts it (attribute names and values).
    pub fn size(&self) -> usize {
        2 + self.pk.len() + 2 + self.sk.len() + 7 + 8 + 4 + self.body.to_string().len() + 10 + 8
    }
}

/// What must hold for a write to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Nothing.
    None,
    /// The item does not exist.
    Absent,
    /// The item exists with this version.
    Version(u64),
    /// The item exists (any version).
    Exists,
}

/// One action of a transaction.
#[derive(Debug, Clone, PartialEq)]
pub enum TxOp {
    /// Writes the item (creating it with version 1, or bumping its version).
    Put {
        /// The item.
        item: Item,
        /// Its condition.
        condition: Condition,
    },
    /// Deletes an item.
    Delete {
        /// Partition key.
        pk: String,
        /// Sort key.
        sk: String,
        /// Its condition.
        condition: Condition,
    },
    /// Only checks a condition.
    Check {
        /// Partition key.
        pk: String,
        /// Sort key.
        sk: String,
        /// The condition.
        condition: Condition,
    },
}

impl TxOp {
    /// The key the action touches.
    pub fn key(&self) -> (&str, &str) {
        match self {
            TxOp::Put { item, .. } => (&item.pk, &item.sk),
            TxOp::Delete { pk, sk, .. } | TxOp::Check { pk, sk, .. } => (pk, sk),
        }
    }

    /// The action's condition.
    pub fn condition(&self) -> Condition {
        match self {
            TxOp::Put { condition, .. } | TxOp::Delete { condition, .. } | TxOp::Check { condition, .. } => *condition,
        }
    }
}

/// An error from the metadata store.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    /// A single-item write's condition failed; `current` is the item as it is.
    #[error("condition {condition:?} failed on {pk}/{sk}")]
    ConditionFailed {
        /// Partition key.
        pk: String,
        /// Sort key.
        sk: String,
        /// The condition.
        condition: Condition,
        /// The item now, if it exists.
        current: Option<Box<Item>>,
    },
    /// A transaction's condition failed: nothing was applied.
    #[error("transaction cancelled: condition {condition:?} of action {index} failed on {pk}/{sk}")]
    TransactionFailed {
        /// Index of the failed action.
        index: usize,
        /// Partition key.
        pk: String,
        /// Sort key.
        sk: String,
        /// The condition.
        condition: Condition,
        /// The item now, if it exists.
        current: Option<Box<Item>>,
    },
    /// A transaction cancelled by another one writing the same items at the same time (DynamoDB's
    /// `TransactionConflict`): nothing was applied, and it may be built again and retried.
    #[error("{url}: transaction cancelled by a concurrent one: {message}")]
    Conflict {
        /// Store URL.
        url: String,
        /// The store's reasons.
        message: String,
    },
    /// A request the store would reject: too large, too many actions, one key twice.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The URL cannot name a store.
    #[error("invalid metadata URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// The store cannot be reached or used.
    #[error("{url}: {reason}")]
    Unavailable {
        /// Store URL.
        url: String,
        /// What is wrong and what to do.
        reason: String,
    },
    /// Any other failure.
    #[error("{url}: {operation}: {message}")]
    Failed {
        /// Store URL.
        url: String,
        /// The operation.
        operation: &'static str,
        /// The underlying error.
        message: String,
    },
}

impl MetaError {
    /// The error for action `index` of a transaction whose condition did not hold.
    pub(crate) fn transaction_failed(index: usize, op: &TxOp, current: Option<Item>) -> Self {
        let (pk, sk) = op.key();
        MetaError::TransactionFailed {
            index,
            pk: pk.into(),
            sk: sk.into(),
            condition: op.condition(),
            current: current.map(Box::new),
        }
    }
}

/// The metadata operations of the exactly-once protocol.
///
/// What every implementation (and every wrapper of one) must guarantee, and the conformance
/// suite (`testsuite::metadata`, behind the `testsuite` feature) checks against each of them:
///
/// - **Linearizable single items.** A `get`, `query` or `query_range` issued after a write
///   returned sees that write; `query` returns the partition's matching items sorted by sort
///   key, every page of them; `query_range` the items of its range in its order, up to its
///   limit, every page of them.
/// - **Versions.** An item's version is 1 when created and grows by one with every write;
///   `Condition::Version(v)` holds only while the stored version is `v`, so of two writers
///   holding the same version exactly one succeeds (compare-and-swap), and
///   `Condition::Absent` lets exactly one of many creators win.
/// - **Atomic transactions.** `transact` applies all of its actions or none, at most
///   [`MAX_TRANSACTION_ACTIONS`] actions on distinct keys; a failed condition is reported as
///   [`MetaError::TransactionFailed`] naming the action, and nothing is written.
/// - **Durability at return.** A write that returned `Ok` survives a crash of the caller
///   and of the store process; one that returned an error may or may not have happened
///   (the protocol reads back before it retries).
/// - **DynamoDB's limits everywhere** ([`check_item`], [`check_transaction`]), so an
///   embedded run refuses what DynamoDB would refuse.
#[async_trait]
pub trait MetadataStore: Send + Sync + std::fmt::Debug {
    /// The URL the store was opened from.
    fn url(&self) -> &str;

    /// Reads an item (strongly consistent).
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, MetaError>;

    /// Items of partition `pk` whose sort key starts with `sk_prefix`, sorted by sort key.
    async fn query(&self, pk: &str, sk_prefix: &str) -> Result<Vec<Item>, MetaError>;

    /// Items of partition `pk` whose sort key is in `range`, sorted by sort key (greatest first
    /// when the range is descending), at most its limit: a reader reads what it asks for, not
    /// the whole partition.
    async fn query_range(&self, pk: &str, range: &SkRange) -> Result<Vec<Item>, MetaError>;

    /// Writes an item if `condition` holds and returns its new version.
    async fn put(&self, item: Item, condition: Condition) -> Result<u64, MetaError>;

    /// Deletes an item if `condition` holds.
    async fn delete(&self, pk: &str, sk: &str, condition: Condition) -> Result<(), MetaError>;

    /// Applies every action or none; a failed condition is reported by action index.
    async fn transact(&self, ops: Vec<TxOp>) -> Result<(), MetaError>;
}

/// Checks the limits DynamoDB enforces, so that both stores reject the same requests.
pub fn check_item(item: &Item) -> Result<(), MetaError> {
    if item.pk.is_empty() || item.sk.is_empty() {
        return Err(MetaError::Invalid("empty key".into()));
    }
    if item.size() > MAX_ITEM_BYTES {
        return Err(MetaError::Invalid(format!(
            "item {}/{} is {} bytes, over the {MAX_ITEM_BYTES}-byte limit",
            item.pk,
            item.sk,
            item.size()
        )));
    }
    Ok(())
}

/// Checks a transaction against DynamoDB's limits: at most 100 actions, 4 MB, each key once.
pub fn check_transaction(ops: &[TxOp]) -> Result<(), MetaError> {
    if ops.is_empty() || ops.len() > MAX_TRANSACTION_ACTIONS {
        return Err(MetaError::Invalid(format!(
            "a transaction holds 1 to {MAX_TRANSACTION_ACTIONS} actions, not {}",
            ops.len()
        )));
    }
    let mut total = 0;
    let mut keys = std::collections::HashSet::new();
    for op in ops {
        if let TxOp::Put { item, .. } = op {
            check_item(item)?;
            total += item.size();
        }
        if !keys.insert(op.key()) {
            let (pk, sk) = op.key();
            return Err(MetaError::Invalid(format!("a transaction touches {pk}/{sk} twice")));
        }
    }
    if total > MAX_TRANSACTION_BYTES {
        return Err(MetaError::Invalid(format!(
            "transaction of {total} bytes is over the {MAX_TRANSACTION_BYTES}-byte limit"
        )));
    }
    Ok(())
}

/// Returns true when `condition` holds for the item as it is.
pub fn holds(condition: Condition, current: Option<&Item>) -> bool {
    match condition {
        Condition::None => true,
        Condition::Absent => current.is_none(),
        Condition::Exists => current.is_some(),
        Condition::Version(v) => current.is_some_and(|i| i.version == v),
    }
}

/// Opens the store a URL names: `dynamodb://TABLE` or `file:///PATH` (a folder).
pub async fn open_metadata(url: &str) -> Result<Arc<dyn MetadataStore>, MetaError> {
    if let Some(table) = url.strip_prefix("dynamodb://") {
        if table.is_empty() || table.contains('/') {
            return Err(MetaError::InvalidUrl { url: url.into(), reason: "expected dynamodb://TABLE".into() });
        }
        #[cfg(feature = "aws")]
        return Ok(Arc::new(DynamoStore::connect(url, table).await?));
        #[cfg(not(feature = "aws"))]
        return Err(MetaError::InvalidUrl { url: url.into(), reason: crate::storage::WITHOUT_AWS.into() });
    }
    if let Some(path) = url.strip_prefix("file://") {
        if !path.starts_with('/') {
            return Err(MetaError::InvalidUrl {
                url: url.into(),
                reason: "expected an absolute path: file:///path".into(),
            });
        }
        return Ok(Arc::new(EmbeddedStore::open(url, std::path::Path::new(path))?));
    }
    Err(MetaError::InvalidUrl {
        url: url.into(),
        reason: "unknown scheme: use dynamodb://TABLE or file:///PATH".into(),
    })
}
