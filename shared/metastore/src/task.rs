//! Indexing tasks as readers see them: the items and their state machine live in
//! `sluice-layout`'s task module; this module reads task items and their checkpoints back.
//!
//! A group's tasks and checkpoints live under the group's partition key
//! ([`sluice_layout::keys::group_pk`]); the groups are named by the datasource's `plan#`
//! items. Every task item is written in one transaction with its group's `plan#`, which is
//! never deleted and whose `nextSeq` is then above the task's number: so the plans read first
//! name every group that has a task item, and a task numbered at or above its plan's `nextSeq`
//! as read was planned after the read.

use crate::datasource::{parse_body, query_groups, DatasourceError};
use futures::{StreamExt, TryStreamExt};
use sluice_layout::datasource::PlanItem;
use sluice_layout::keys::{group_pk, PLAN_PREFIX, TASK_PREFIX};
pub use sluice_layout::task::{Checkpoint, Progress, TaskId, TaskItem, TaskState};
use sluice_store::metadata::{Item, MetadataStore};
use std::collections::BTreeMap;

/// Group keys queried at once.
const GROUP_READS_IN_FLIGHT: usize = 16;

/// Reads a task's checkpoints and folds them into its progress.
pub async fn load_progress(meta: &dyn MetadataStore, id: &TaskId) -> Result<Progress, DatasourceError> {
    let items = meta.query(&id.pk(), &id.checkpoint_prefix()).await?;
    let checkpoints =
        items.iter().map(|i| parse_body::<Checkpoint>(&id.datasource, i)).collect::<Result<Vec<_>, _>>()?;
    Ok(Progress::from_checkpoints(checkpoints))
}

/// The groups of a datasource that have or had tasks, each with its plan's next task number.
pub async fn planned_groups(meta: &dyn MetadataStore, datasource: &str) -> Result<BTreeMap<u32, u64>, DatasourceError> {
    let plans = query_groups::<PlanItem>(meta, datasource, PLAN_PREFIX).await?;
    Ok(plans.into_iter().map(|(g, (plan, _))| (g, plan.next_seq)).collect())
}

/// The task items of `groups`, in key order (group, then task number).
pub async fn group_task_items(
    meta: &dyn MetadataStore,
    datasource: &str,
    groups: impl IntoIterator<Item = u32>,
) -> Result<Vec<Item>, DatasourceError> {
    let per_group: Vec<Vec<Item>> = futures::stream::iter(groups)
        .map(|g| async move { meta.query(&group_pk(datasource, g), TASK_PREFIX).await })
        .buffered(GROUP_READS_IN_FLIGHT)
        .try_collect()
        .await?;
    Ok(per_group.into_iter().flatten().collect())
}

/// Every task item of a datasource: the groups its plans name, then each group's tasks.
pub async fn task_items(meta: &dyn MetadataStore, datasource: &str) -> Result<Vec<Item>, DatasourceError> {
    let groups = planned_groups(meta, datasource).await?;
    group_task_items(meta, datasource, groups.into_keys()).await
}

/// Every task of a datasource, parsed.
pub async fn tasks(meta: &dyn MetadataStore, datasource: &str) -> Result<Vec<TaskItem>, DatasourceError> {
    task_items(meta, datasource).await?.iter().map(|i| parse_body(datasource, i)).collect()
}
