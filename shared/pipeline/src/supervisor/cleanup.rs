//! Cleanup of finished tasks, a grace period after they finished: first the task's report
//! (`report#`, what the task API shows of it from then on) is written if absent; for a
//! published task, its segments are marked visible and the segments of merges that lost are
//! deleted; for a failed one, every segment it wrote (none of them visible). Then its hydrants
//! (every attempt's), its checkpoints, and last its task item. Each step is idempotent and a
//! kill between steps leaves work the next pass finishes; nothing a visible segment references
//! is deleted.

use super::{SupervisorError, SupervisorOptions};
use crate::item::{parse_body, to_json};
use crate::keys::{hydrant_task_prefix, report_sk};
use crate::layout::report::{TaskReport, REPORTS_KEPT_PER_GROUP};
use crate::task::{Checkpoint, Progress, TaskItem, TaskState};
use crate::timeline::{delete_record, mark_visible, read_records};
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore};
use sluice_store::storage::ObjectStore;
use std::collections::BTreeMap;

/// Which failed tasks were handled: their group was planned again past them.
pub struct Handled {
    /// Per group of the current epoch, the last task number replanned after.
    pub replanned_after: BTreeMap<u32, u64>,
    /// The current grouping epoch: every task of an earlier one is handled.
    pub epoch: u64,
}

/// Cleans up the finished tasks among `tasks` whose grace period is over (failed ones only
/// once `handled` says their group was planned again past them); returns how many.
pub async fn clean_up(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    datasource: &str,
    tasks: &[(TaskItem, u64)],
    handled: &Handled,
    options: &SupervisorOptions,
) -> Result<usize, SupervisorError> {
    // A failed task stays until its group has been planned again past it.
    let handled = |t: &TaskItem| {
        t.epoch < handled.epoch || handled.replanned_after.get(&t.id.group).is_some_and(|&s| t.id.seq <= s)
    };
    let due: Vec<&(TaskItem, u64)> = tasks
        .iter()
        .filter(|(t, _)| t.state == TaskState::Published || (t.state == TaskState::Failed && handled(t)))
        .filter(|(t, _)| t.finished_ms.is_some_and(|f| f + options.cleanup_grace_ms <= options.now_ms))
        .collect();
    if due.is_empty() {
        return Ok(0);
    }
    let records = read_records(meta, datasource).await?;
    let mut cleaned = 0;
    for (task, version) in due {
        let task_pk = task.id.pk();
        let checkpoints = meta.query(&task_pk, &task.id.checkpoint_prefix()).await?;
        keep_report(meta, task, &checkpoints).await?;
        for r in records.iter().filter(|r| r.task.as_ref() == Some(&task.id)) {
            let winner = task.state == TaskState::Published && task.published_by.as_deref() == Some(r.merge.as_str());
            if winner {
                if !r.visible {
                    match mark_visible(meta, datasource, r).await {
                        // Compacted and deleted since it was read: nothing to mark.
                        Ok(_) | Err(MetaError::ConditionFailed { .. }) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
            } else {
                store.delete(&r.key).await?;
                delete_record(meta, datasource, r).await?;
            }
        }
        let prefix = hydrant_task_prefix(&task.id.datasource, task.id.group, task.id.seq);
        for object in store.list(&prefix).await? {
            store.delete(&object.key).await?;
        }
        for c in checkpoints {
            meta.delete(&task_pk, &c.sk, Condition::None).await?;
        }
        match meta.delete(&task_pk, &task.id.sk(), Condition::Version(*version)).await {
            Ok(()) => cleaned += 1,
            Err(MetaError::ConditionFailed { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(cleaned)
}

/// Writes a finished task's report, with the meters of its last checkpoint (none if a
/// checkpoint does not read back: the report still says how the task ended), unless a
/// cleanup killed earlier wrote it; and deletes the report [`REPORTS_KEPT_PER_GROUP`] tasks
/// older in its group.
async fn keep_report(meta: &dyn MetadataStore, task: &TaskItem, checkpoints: &[Item]) -> Result<(), SupervisorError> {
    let parsed: Result<Vec<Checkpoint>, _> = checkpoints.iter().map(|i| parse_body(&task.id.datasource, i)).collect();
    let meters = match parsed {
        Ok(parsed) => Progress::from_checkpoints(parsed).last.map(|c| c.meters),
        Err(e) => {
            tracing::warn!(task = %task.id, error = %e, "a checkpoint does not read back: the report has no meters");
            None
        }
    };
    let Some(report) = TaskReport::of(task, meters) else { return Ok(()) };
    let item = Item::new(task.id.pk(), task.id.report_sk(), to_json(&report));
    match meta.put(item, Condition::Absent).await {
        Ok(_) | Err(MetaError::ConditionFailed { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    if let Some(old) = task.id.seq.checked_sub(REPORTS_KEPT_PER_GROUP) {
        meta.delete(&task.id.pk(), &report_sk(old), Condition::None).await?;
    }
    Ok(())
}
