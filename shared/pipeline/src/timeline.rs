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
use crate::keys::{chunk_sk, datasource_pk, SEGMENT_PREFIX, TASK_PREFIX};
pub use crate::layout::timeline::{ChunkItem, SegmentRecord};
use crate::task::{TaskId, TaskItem, TaskState};
use sluice_format::time::{format_iso, Interval};
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore};
use std::collections::{BTreeMap, HashMap};

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
    // The merge each published task's publish names.
    let mut published: HashMap<TaskId, String> = HashMap::new();
    if records.iter().any(|r| !r.visible) {
        for item in meta.query(&pk, TASK_PREFIX).await? {
            let task: TaskItem = parse_body(datasource, &item)?;
            if let (TaskState::Published, Some(merge)) = (task.state, task.published_by) {
                published.insert(task.id, merge);
            }
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
    let mut by_chunk: BTreeMap<Interval, Vec<SegmentRecord>> = BTreeMap::new();
    for (r, visible) in segment_records(meta, datasource).await? {
        if visible {
            by_chunk.entry(r.interval).or_default().push(r);
        }
    }
    let mut out = Vec::new();
    for (_, mut segments) in by_chunk {
        let top = segments.iter().map(|s| s.version.clone()).max().unwrap_or_default();
        segments.retain(|s| s.version == top);
        segments.sort_by_key(|s| s.partition);
        out.extend(segments);
    }
    Ok(out)
}
