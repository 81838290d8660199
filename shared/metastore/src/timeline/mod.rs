//! The segment timeline of a datasource as readers see it: which segment records (`seg#`) are
//! visible and, for a real-time datasource, which hydrants count beside them.
//!
//! A merger writes its segment records before it publishes, invisible; they become visible
//! when their task is published naming their merge (the publish transaction holds five
//! actions at most whatever the number of segments), and are then marked visible themselves so the
//! task item can be cleaned up. Records of a merge that crashed or lost the race are never
//! visible: the publish names another merge, or none.
//! A compaction's segments (a newer version) and a retention drop replace exactly the segments
//! their replace item names (`sluice-pipeline`'s replace module): a segment is visible when its
//! task or compaction is published and no published replace names it ([`ReplaceView::visible`],
//! the rule in one place), so rows appended while a compaction runs stay visible beside its
//! segments, and segments of another granularity overlap without hiding each other.
//!
//! ```text
//!  seg# + task states + replace view -> (this module)  the visible segments, each row once
//!  replaces, replace#                -> replace_view   the replaces as a reader sees them
//!  plan#, task#, ckpt# + the above   -> realtime       a real-time datasource's view: the
//!                                                      visible segments and the hydrants
//!                                                      that unpublished tasks checkpointed
//!  spec, grouping, offsets#, replace* -> kept          the timeline kept between queries
//!  sum#                              -> summaries      the summaries of the records a query
//!                                                      selected, for pruning
//!  timeline, tlog#                   -> head           the head and change log every
//!                                                      visibility change writes
//!  timeline, seg# by start + the rule -> interval      the visible records of some
//!                                                      intervals, read by interval
//!  chunk#, seg#, sum#                -> records        the writers' side: partitions
//!                                                      allocated, records written, marked
//!                                                      visible, discarded
//! ```

pub mod head;
pub mod interval;
pub mod kept;
mod realtime;
pub mod records;
pub mod replace_view;
pub mod summaries;

use crate::datasource::{parse_body, DatasourceError};
use crate::task::{group_task_items, TaskId, TaskItem, TaskState};
pub use realtime::{realtime_segments, REALTIME_VERSION};
use replace_view::ReplaceView;
use sluice_layout::keys::{datasource_pk, SEGMENT_PREFIX};
pub use sluice_layout::timeline::SegmentRecord;
use sluice_store::metadata::MetadataStore;
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
        check_record(datasource, &item.sk, &r)?;
        out.push(r);
    }
    Ok(out)
}

/// A segment record naming neither a task nor a compaction, or both, is malformed.
pub(crate) fn check_record(datasource: &str, sk: &str, r: &SegmentRecord) -> Result<(), DatasourceError> {
    if r.task.is_some() == r.replace.is_some() {
        return Err(DatasourceError::Corrupt {
            datasource: datasource.into(),
            sk: sk.into(),
            reason: "a segment record names exactly one of a task and a compaction".into(),
        });
    }
    Ok(())
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
pub(crate) fn in_order(records: impl Iterator<Item = SegmentRecord>) -> Vec<SegmentRecord> {
    let mut out: Vec<SegmentRecord> = records.collect();
    out.sort_by(|a, b| (a.interval, &a.version, a.partition).cmp(&(b.interval, &b.version, b.partition)));
    out
}
