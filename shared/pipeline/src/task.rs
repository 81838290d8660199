//! Indexing tasks: the items and their state machine live in [`crate::layout::task`]; the
//! reads of task items and their checkpoints are `sluice-catalog`'s, re-exported here with
//! the layout's types. This module adds the supervisor's refusal of the earlier layout.

pub use crate::layout::task::{
    Checkpoint, ClaimRefused, HydrantRef, Progress, TaskId, TaskItem, TaskState, CHECKPOINT_ITEM_BYTES,
};
pub use sluice_catalog::task::{group_task_items, load_progress, planned_groups, task_items, tasks};

use crate::datasource::DatasourceError;
use crate::keys::{datasource_pk, TASK_PREFIX};
use sluice_store::metadata::MetadataStore;

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
