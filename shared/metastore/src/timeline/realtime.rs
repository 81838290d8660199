//! A real-time datasource's view, as its queries read it (Druid's real-time view): the visible
//! segments, and as further records the hydrants that tasks not yet published have
//! checkpointed, each range once at any instant (`docs/exactly-once.md#real-time-queries`).

use super::replace_view::ReplaceView;
use super::{in_order, read_records, SegmentRecord};
use crate::datasource::{parse_body, DatasourceError};
use crate::task::{group_task_items, planned_groups, TaskId, TaskItem, TaskState};
use sluice_store::metadata::{MetaError, MetadataStore};
use std::collections::HashMap;

/// What a query of a real-time datasource reads (Druid's real-time view): the visible
/// segments, and as further records the hydrants that tasks not yet published have
/// checkpointed. Each range once at any instant (`docs/exactly-once.md#real-time-queries`):
/// the plans and then the task items of the groups they name are read first and decide both
/// which segments are visible and which tasks' hydrants count; the reads are retried if two
/// tasks' checkpointed ranges overlap (a group restarted while the items were read).
pub async fn realtime_segments(
    meta: &dyn MetadataStore,
    datasource: &str,
) -> Result<Vec<SegmentRecord>, DatasourceError> {
    for _ in 0..MAX_VIEW_READS {
        let view = ReplaceView::read(meta, datasource).await?;
        let plans = planned_groups(meta, datasource).await?;
        let tasks: Vec<TaskItem> = group_task_items(meta, datasource, plans.keys().copied())
            .await?
            .iter()
            .map(|i| parse_body(datasource, i))
            .collect::<Result<_, _>>()?;
        // Per task read, the merge its publish names (`None`: not published when read).
        let states: HashMap<&TaskId, Option<&str>> = tasks
            .iter()
            .map(|t| match (t.state, &t.published_by) {
                (TaskState::Published, Some(m)) => (&t.id, Some(m.as_str())),
                _ => (&t.id, None),
            })
            .collect();
        let records = read_records(meta, datasource).await?;
        // A record marked visible since its task was read unpublished counts through the
        // task's hydrants instead; a task not read was cleaned up, unless its plan as read did
        // not number it yet (planned and published during the reads: read again).
        let younger = |t: &TaskId| plans.get(&t.group).is_none_or(|&next| t.seq >= next);
        let unread_younger =
            |r: &SegmentRecord| r.task.as_ref().is_some_and(|t| r.visible && !states.contains_key(t) && younger(t));
        if records.iter().any(unread_younger) {
            continue;
        }
        let visible = records.into_iter().filter(|r| {
            view.visible(r, |task| match states.get(task) {
                Some(Some(merge)) => *merge == r.merge,
                Some(None) => false,
                None => r.visible,
            })
        });
        let mut out = in_order(visible);
        let mut covered: Vec<(&str, i32, i64, i64)> = Vec::new();
        let unpublished = tasks
            .iter()
            .filter(|t| matches!(t.state, TaskState::Running | TaskState::Incomplete | TaskState::Complete));
        for t in unpublished {
            let progress = crate::task::load_progress(meta, &t.id).await?;
            let Some(last) = &progress.last else { continue };
            for r in &t.ranges {
                let reached = last.positions.get(&r.partition).copied().unwrap_or(r.start);
                if reached > r.start {
                    covered.push((&t.topic, r.partition, r.start, reached));
                }
            }
            for h in &progress.hydrants {
                out.push(SegmentRecord {
                    interval: h.chunk,
                    version: REALTIME_VERSION.into(),
                    partition: out.len() as u32,
                    key: h.key.clone(),
                    num_rows: h.num_rows,
                    num_bytes: h.num_bytes,
                    dimensions: Vec::new(),
                    metrics: Vec::new(),
                    task: Some(t.id.clone()),
                    replace: None,
                    merge: String::new(),
                    compaction_state: None,
                    // Nothing is known of a hydrant's values: it is always read.
                    summary: None,
                    visible: true,
                });
            }
        }
        covered.sort_unstable();
        if covered.windows(2).all(|w| (w[0].0, w[0].1) != (w[1].0, w[1].1) || w[0].3 <= w[1].2) {
            return Ok(out);
        }
    }
    Err(DatasourceError::Metadata(MetaError::Invalid(format!(
        "datasource {datasource}: the real-time view changed under {MAX_VIEW_READS} reads in a row"
    ))))
}

/// Reads of the real-time view before a query gives up.
const MAX_VIEW_READS: usize = 5;

/// The version real-time hydrants are reported under.
pub const REALTIME_VERSION: &str = "realtime";
