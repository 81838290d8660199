//! The layout of the metadata table and of deep storage, owned here: every key ([`keys`]) and
//! every item body, one module per owner ([`datasource`], [`grouping`], [`autoscaler`], [`task`], [`report`],
//! [`timeline`], [`timeline_log`], [`replace`], [`batch`], [`coordinator`], [`lookup`]). Bodies are
//! plain serde types; the task item's transitions are pure methods on it. The operations that
//! read them (`sluice-metastore`) and write them (`sluice-pipeline`'s datasource, task and
//! timeline modules, the supervisor and the merger) re-export what they use, and `sluice-sim`
//! drives the same task item. Drawn in `docs/metadata-layout.md`.

pub mod autoscaler;
pub mod batch;
pub mod coordinator;
pub mod datasource;
pub mod grouping;
pub mod keys;
pub mod lookup;
pub mod replace;
pub mod report;
pub mod task;
pub mod timeline;
pub mod timeline_log;
