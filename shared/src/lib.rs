//! Sluice's library: Druid's Kafka indexing path rebuilt as plain Rust.
//!
//! ```text
//!  supervisor   plans offset ranges per partition group (plan# + task#), invokes functions
//!  task#  an offset range per partition, claimed by one attempt        (task, indexer)
//!    -> kafka      exact range read: records in [start, end), nothing else
//!  Kafka record bytes
//!    -> input      (spec: inputFormat, timestampSpec, flattenSpec, transformSpec)  => Row
//!    -> index      incremental index per time chunk (rollup, aggregators)          => rows in memory
//!    -> segment    persist: sorted dictionaries, encoded ids, Roaring bitmaps      => hydrant bytes
//!  hydrants -> storage (put_if_absent); ckpt# + task# in one metadata transaction
//!    -> merge      k-way merge of hydrants of one time chunk, split at maxRows     => segment bytes
//!  merger       segments -> storage, seg# (invisible) -> publish: offsets# + task# in one
//!               transaction (compare-and-swap from the task's start offsets to its end)
//!  timeline     the visible segments, each row once
//! ```
//!
//! Each arrow is one module: [`kafka`], [`input`], [`index`], [`segment`], [`merge`]; the
//! [`indexer`] runs them as one task attempt against [`storage`] and [`metadata`]; the
//! [`supervisor`] plans and invokes, the [`merger`] publishes, the [`timeline`] says what is
//! visible, and the [`runner`] is the whole loop in one process. The datasource [`spec`]
//! drives them all.

pub mod aggregate;
pub mod datasource;
pub mod expr;
pub mod filter;
pub mod granularity;
pub mod index;
pub mod indexer;
pub mod input;
pub mod invoker;
pub mod kafka;
pub mod merge;
pub mod merger;
pub mod metadata;
pub mod query;
pub mod row;
pub mod runner;
pub mod segment;
pub mod spec;
pub mod storage;
pub mod supervisor;
pub mod task;
pub mod time;
pub mod timeline;
pub mod value;
