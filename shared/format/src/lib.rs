//! Sluice's segment engine: everything between a Kafka record's bytes and a segment's bytes,
//! with no I/O of its own.
//!
//! ```text
//!  Kafka record bytes
//!    -> input      (spec: inputFormat, timestampSpec, flattenSpec, transformSpec)  => Row
//!                  row meters count what parsed; the message window drops late rows
//!    -> index      incremental index per time chunk (rollup, aggregators)          => rows in memory
//!    -> segment    persist: sorted dictionaries, encoded ids, Roaring bitmaps      => hydrant bytes
//!    -> merge      k-way merge of hydrants of one time chunk, split at maxRows     => segment bytes
//!    -> summary    per column: null?, min/max, values or a bloom filter            => segment record
//! ```
//!
//! The datasource [`spec`] drives every stage; [`expr`] and [`filter`] serve the transforms
//! at ingestion and the queries of `sluice-query`; a segment's [`summary`] lets a query skip a
//! segment its filter cannot match.

pub mod aggregate;
pub mod codec;
pub mod expr;
pub mod filter;
pub mod granularity;
pub mod index;
pub mod input;
pub mod json_path;
pub mod lookup;
pub mod merge;
pub mod meters;
pub mod offsets;
pub mod row;
pub mod search;
pub mod segment;
pub mod sketches;
pub mod spec;
pub mod summary;
pub mod text;
pub mod time;
pub mod timestamp;
pub mod value;
pub mod window;
