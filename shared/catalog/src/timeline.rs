//! The segment timeline of a datasource as readers see it: which segment records (`seg#`) are
//! visible and, for a real-time datasource, which hydrants count beside them.
//!
//! A merger writes its segment records before it publishes, invisible; they become visible
//! when their task is published naming their merge (the publish transaction holds two
//! actions whatever the number of segments), and are then marked visible themselves so the
//! task item can be cleaned up. Records of a merge that crashed or lost the race are never
//! visible: the publish names another merge, or none.
//! A compaction's segments (a newer version) and a retention drop replace exactly the segments
//! their replace item names (`sluice-pipeline`'s replace module): a segment is visible when its
//! task or compaction is published and no published replace names it ([`ReplaceView::visible`],
//! the rule in one place), so rows appended while a compaction runs stay visible beside its
//! segments, and segments of another granularity overlap without hiding each other.

use crate::datasource::{parse_body, DatasourceError};
use crate::replace_view::ReplaceView;
use crate::task::{group_task_items, planned_groups, TaskId, TaskItem, TaskState};
use sluice_layout::keys::{datasource_pk, SEGMENT_PREFIX};
pub use sluice_layout::timeline::SegmentRecord;
use sluice_store::metadata::{MetaError, MetadataStore};
use std::collections::{BTreeSet, HashMap};

/// Every segment record of a datasource with its visibility. Reads the replaces first, then
/// the records, then the task items of the groups whose records are not marked visible yet.
pub async fn segment_records(
    meta: &dyn MetadataStore,
    datasource: &str,
) -> Result<Vec<(SegmentRecord, bool)>, DatasourceError> {
    let view = ReplaceView::read(meta, datasource).await?;
    let records = read_records(meta, datasource).await?;
    // The merge each published task's publish names, read for the groups of records not
    // marked visible.
    let mut published: HashMap<TaskId, String> = HashMap::new();
    let unmarked: BTreeSet<u32> =
        records.iter().filter(|r| !r.visible).filter_map(|r| r.task.as_ref()).map(|t| t.group).collect();
    for item in group_task_items(meta, datasource, unmarked).await? {
        let task: TaskItem = parse_body(datasource, &item)?;
        if let (TaskState::Published, Some(merge)) = (task.state, task.published_by) {
            published.insert(task.id, merge);
        }
    }
    Ok(records
        .into_iter()
        .map(|r| {
            let visible = view.visible(&r, |task| r.visible || published.get(task).is_some_and(|m| *m == r.merge));
            (r, visible)
        })
        .collect())
}

/// Every segment record of a datasource; one naming neither a task nor a compaction is
/// malformed.
pub async fn read_records(meta: &dyn MetadataStore, datasource: &str) -> Result<Vec<SegmentRecord>, DatasourceError> {
    let mut out = Vec::new();
    for item in meta.query(&datasource_pk(datasource), SEGMENT_PREFIX).await? {
        let r: SegmentRecord = parse_body(datasource, &item)?;
        if r.task.is_some() == r.replace.is_some() {
            return Err(DatasourceError::Corrupt {
                datasource: datasource.into(),
                sk: item.sk,
                reason: "a segment record names exactly one of a task and a compaction".into(),
            });
        }
        out.push(r);
    }
    Ok(out)
}

/// The visible segments of a datasource, each row once, in timeline order.
pub async fn visible_segments(
    meta: &dyn MetadataStore,
    datasource: &str,
) -> Result<Vec<SegmentRecord>, DatasourceError> {
    let records = segment_records(meta, datasource).await?;
    Ok(in_order(records.into_iter().filter(|(_, visible)| *visible).map(|(r, _)| r)))
}

/// Records in timeline order: by time chunk, then version and partition.
fn in_order(records: impl Iterator<Item = SegmentRecord>) -> Vec<SegmentRecord> {
    let mut out: Vec<SegmentRecord> = records.collect();
    out.sort_by(|a, b| (a.interval, &a.version, a.partition).cmp(&(b.interval, &b.version, b.partition)));
    out
}

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
