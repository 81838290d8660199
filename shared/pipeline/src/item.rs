//! Metadata items as this crate reads and writes them: a body read into its layout type (an
//! item that is not what the layout says is named in the error), a body written as JSON, a
//! datasource's per-group items queried, and the error of the metadata side. The reads and the
//! error, and the body's JSON, are `sluice-metastore`'s, re-exported; the bodies are
//! `sluice-layout`'s.

pub use sluice_metastore::datasource::{parse_body, query_groups, to_json, DatasourceError};
