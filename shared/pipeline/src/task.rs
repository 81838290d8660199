//! Indexing tasks: the items and their state machine live in [`crate::layout::task`]; the
//! reads of task items and their checkpoints are `sluice-metastore`'s, re-exported here with
//! the layout's types. This module adds the supervisor's refusal of the earlier layout.

pub use crate::layout::task::{
    Checkpoint, ClaimRefused, HydrantRef, Progress, TaskId, TaskItem, TaskState, CHECKPOINT_ITEM_BYTES,
};
pub use sluice_metastore::task::{group_task_items, load_progress, planned_groups, task_items, tasks};

use crate::item::DatasourceError;
use crate::keys::{datasource_pk, TASK_PREFIX};
use sluice_store::metadata::MetadataStore;

/// How long a finished task's hydrants and items are kept: longer than any attempt may still
/// run (an indexer invocation ends within Lambda's 15-minute limit), so when cleanup lists a
/// task's hydrants no attempt can upload one more, and no object is left behind for a bucket
/// lifecycle rule to collect.
pub const DEFAULT_CLEANUP_GRACE_MS: i64 = 20 * 60_000;

/// Refuses a datasource whose task items are still under the datasource's own key, where
/// releases before the group keys wrote them: `docs/metadata-layout.md#upgrading` says how to
/// move on.
pub async fn refuse_earlier_layout(meta: &dyn MetadataStore, datasource: &str) -> Result<(), DatasourceError> {
    let old = meta.query(&datasource_pk(datasource), TASK_PREFIX).await?;
    if old.is_empty() {
        return Ok(());
    }
    Err(DatasourceError::Corrupt {
        datasource: datasource.into(),
        sk: old[0].sk.clone(),
        reason: format!(
            "{} task items are in the metadata layout of an earlier release (under {}); \
             let that release finish and clean up its tasks, or follow docs/metadata-layout.md#upgrading",
            old.len(),
            datasource_pk(datasource)
        ),
    })
}
