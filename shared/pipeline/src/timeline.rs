//! The segment timeline of a datasource: segment records (`seg#`), the version and partition
//! numbering of each time chunk (`chunk#`), and which segments are visible.
//!
//! A merger writes its segment records before it publishes, invisible; they become visible
//! when their task is published naming their merge (the publish transaction holds two
//! actions whatever the number of segments), and are then marked visible themselves so the
//! task item can be cleaned up. Records of a merge that crashed or lost the race are never
//! visible: the publish names another merge, or none.
//! Appended segments share their time chunk's version and take the next partition numbers;
//! a later compaction would publish a whole chunk under a higher version, which overshadows
//! every segment of a lower one.

use crate::datasource::{parse_body, to_json, DatasourceError};
use crate::keys::{chunk_sk, datasource_pk, SEGMENT_PREFIX};
pub use crate::layout::timeline::{ChunkItem, SegmentRecord};
use crate::task::{group_task_items, planned_groups, TaskId, TaskItem, TaskState};
use sluice_format::time::{format_iso, Interval};
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Reserves `count` partition numbers in the chunk `interval`, creating the chunk with
/// version `new_version` if it has none; returns the version and the first number.
pub async fn allocate_partitions(
    meta: &dyn MetadataStore,
    datasource: &str,
    interval: Interval,
    count: u32,
    new_version: &str,
) -> Result<(String, u32), DatasourceError> {
    let (pk, sk) = (datasource_pk(datasource), chunk_sk(interval.start));
    for _ in 0..32 {
        let (chunk, condition) = match meta.get(&pk, &sk).await? {
            None => (ChunkItem { interval, version: new_version.into(), next_partition: 0 }, Condition::Absent),
            Some(item) => (parse_body::<ChunkItem>(datasource, &item)?, Condition::Version(item.version)),
        };
        let first = chunk.next_partition;
        let next = ChunkItem { next_partition: first + count, ..chunk.clone() };
        match meta.put(Item::new(&pk, &sk, to_json(&next)), condition).await {
            Ok(_) => return Ok((chunk.version, first)),
            Err(MetaError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(DatasourceError::Metadata(MetaError::Invalid(format!(
        "chunk {} of {datasource}: partition numbers still contended after 32 attempts",
        format_iso(interval.start)
    ))))
}

/// Every segment record of a datasource with its visibility.
pub async fn segment_records(
    meta: &dyn MetadataStore,
    datasource: &str,
) -> Result<Vec<(SegmentRecord, bool)>, DatasourceError> {
    let pk = datasource_pk(datasource);
    let records: Vec<SegmentRecord> =
        meta.query(&pk, SEGMENT_PREFIX).await?.iter().map(|i| parse_body(datasource, i)).collect::<Result<_, _>>()?;
    // The merge each published task's publish names, read for the groups of records not
    // marked visible.
    let mut published: HashMap<TaskId, String> = HashMap::new();
    let unmarked: BTreeSet<u32> = records.iter().filter(|r| !r.visible).map(|r| r.task.group).collect();
    for item in group_task_items(meta, datasource, unmarked).await? {
        let task: TaskItem = parse_body(datasource, &item)?;
        if let (TaskState::Published, Some(merge)) = (task.state, task.published_by) {
            published.insert(task.id, merge);
        }
    }
    Ok(records
        .into_iter()
        .map(|r| {
            let visible = r.visible || published.get(&r.task).is_some_and(|m| *m == r.merge);
            (r, visible)
        })
        .collect())
}

/// The visible segments of a datasource, each row once: per time chunk, the segments of its
/// highest version.
pub async fn visible_segments(
    meta: &dyn MetadataStore,
    datasource: &str,
) -> Result<Vec<SegmentRecord>, DatasourceError> {
    let records = segment_records(meta, datasource).await?;
    Ok(top_versions(records.into_iter().filter(|(_, visible)| *visible).map(|(r, _)| r)))
}

/// Per time chunk, the records of its highest version, in timeline order.
fn top_versions(records: impl Iterator<Item = SegmentRecord>) -> Vec<SegmentRecord> {
    let mut by_chunk: BTreeMap<Interval, Vec<SegmentRecord>> = BTreeMap::new();
    for r in records {
        by_chunk.entry(r.interval).or_default().push(r);
    }
    let mut out = Vec::new();
    for (_, mut segments) in by_chunk {
        let top = segments.iter().map(|s| s.version.clone()).max().unwrap_or_default();
        segments.retain(|s| s.version == top);
        segments.sort_by_key(|s| s.partition);
        out.extend(segments);
    }
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
    let pk = datasource_pk(datasource);
    for _ in 0..MAX_VIEW_READS {
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
        let records: Vec<SegmentRecord> = meta
            .query(&pk, SEGMENT_PREFIX)
            .await?
            .iter()
            .map(|i| parse_body(datasource, i))
            .collect::<Result<_, _>>()?;
        // A record marked visible since its task was read unpublished counts through the
        // task's hydrants instead; a task not read was cleaned up, unless its plan as read did
        // not number it yet (planned and published during the reads: read again).
        let younger = |r: &SegmentRecord| plans.get(&r.task.group).is_none_or(|&next| r.task.seq >= next);
        if records.iter().any(|r| r.visible && !states.contains_key(&r.task) && younger(r)) {
            continue;
        }
        let visible = records.into_iter().filter(|r| match states.get(&r.task) {
            Some(Some(merge)) => *merge == r.merge,
            Some(None) => false,
            None => r.visible,
        });
        let mut out = top_versions(visible);
        let mut covered: Vec<(i32, i64, i64)> = Vec::new();
        let unpublished = tasks
            .iter()
            .filter(|t| matches!(t.state, TaskState::Running | TaskState::Incomplete | TaskState::Complete));
        for t in unpublished {
            let progress = crate::task::load_progress(meta, &t.id).await?;
            let Some(last) = &progress.last else { continue };
            for r in &t.ranges {
                let reached = last.positions.get(&r.partition).copied().unwrap_or(r.start);
                if reached > r.start {
                    covered.push((r.partition, r.start, reached));
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
                    task: t.id.clone(),
                    merge: String::new(),
                    visible: true,
                });
            }
        }
        covered.sort_unstable();
        if covered.windows(2).all(|w| w[0].0 != w[1].0 || w[0].2 <= w[1].1) {
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
