//! Sluice's library: Druid's Kafka indexing path rebuilt as plain Rust.
//!
//! ```text
//!  Kafka record bytes
//!    -> input      (spec: inputFormat, timestampSpec, flattenSpec, transformSpec)  => Row
//!    -> index      incremental index per time chunk (rollup, aggregators)          => rows in memory
//!    -> segment    persist: sorted dictionaries, encoded ids, Roaring bitmaps      => hydrant bytes
//!    -> merge      k-way merge of hydrants of one time chunk, split at maxRows     => segment bytes
//! ```
//!
//! Each arrow is one module: [`input`], [`index`], [`segment`], [`merge`]. The datasource
//! [`spec`] drives them all.

pub mod aggregate;
pub mod expr;
pub mod filter;
pub mod granularity;
pub mod index;
pub mod indexer;
pub mod input;
pub mod kafka;
pub mod merge;
pub mod metadata;
pub mod row;
pub mod segment;
pub mod spec;
pub mod storage;
pub mod task;
pub mod time;
pub mod value;
