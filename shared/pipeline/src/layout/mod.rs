//! The layout of the metadata table and of deep storage, owned here: every key ([`keys`]) and
//! every item body, one module per owner ([`datasource`], [`task`], [`timeline`]). Bodies are
//! plain serde types; the task item's transitions are pure methods on it. The operations that
//! read and write them (`crate::datasource`, `crate::task`, `crate::timeline`, the
//! supervisor and the merger) re-export what they use. Drawn in `docs/metadata-layout.md`.

pub mod datasource;
pub mod keys;
pub mod task;
pub mod timeline;
