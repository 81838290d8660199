//! Metadata items as this crate reads and writes them: a body read into its layout type (an
//! item that is not what the layout says is named in the error), a body written as JSON, a
//! datasource's per-group items queried, and the error of the metadata side. The reads and the
//! error are `sluice-metastore`'s, re-exported; the bodies are `sluice-layout`'s.

use serde::Serialize;
pub use sluice_metastore::datasource::{parse_body, query_groups, DatasourceError};

/// A body as its item holds it.
pub(crate) fn to_json<T: Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).expect("items serialize to JSON")
}
