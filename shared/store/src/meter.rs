//! What the metering wrappers ([`MeteredStore`](crate::storage::MeteredStore) and
//! [`MeteredMeta`](crate::metadata::MeteredMeta)) see of each call, and the [`Meter`] they tell.
//! A call is reported by what it moved; what that costs (requests billed per 1,000, DynamoDB
//! capacity units) is the meter's business.

use std::time::Duration;

/// One call through a metered store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// A metadata `get` or `query` that read `items` items of `bytes` (0 when it failed).
    MetaRead {
        /// Size of the items read.
        bytes: usize,
        /// Items read.
        items: usize,
    },
    /// A metadata `put` of an item of `bytes`.
    MetaPut {
        /// Size of the item.
        bytes: usize,
    },
    /// A metadata `delete`.
    MetaDelete,
    /// A metadata transaction.
    MetaTransact {
        /// Size of each item it puts.
        puts: Vec<usize>,
        /// How many deletes and checks it holds.
        others: usize,
    },
    /// An object `put` or `put_if_absent` of `bytes`.
    ObjectPut {
        /// Size of the object.
        bytes: u64,
    },
    /// An object `get` or `get_range` that returned `bytes` (0 when it failed).
    ObjectGet {
        /// Bytes returned.
        bytes: u64,
    },
    /// An object `head`.
    ObjectHead,
    /// An object `list`.
    ObjectList,
    /// An object `delete`.
    ObjectDelete,
}

/// Told of every call through a metered store, failed ones included, with the time it took.
pub trait Meter: Send + Sync + std::fmt::Debug {
    /// Records one call.
    fn record(&self, call: Call, took: Duration);
}
