//! The timeline as its writers keep it: the version and partition numbering of each time chunk
//! (`chunk#`), segment records (`seg#`, their summaries as `sum#`) described from their bytes,
//! written invisible, marked visible after their publish, or discarded when never published.
//!
//! A merger writes its segment records before it publishes, invisible; they become visible
//! when their task is published naming their merge, and are then marked visible themselves so
//! the task item can be cleaned up. Appended segments share their time chunk's version and
//! take the next partition numbers; a compaction's segments take a newer version and replace
//! exactly the segments their replace item names (`sluice-pipeline`'s replace module).

use super::SegmentRecord;
use crate::datasource::{parse_body, to_json, DatasourceError};
use crate::task::TaskId;
use bytes::Bytes;
use sluice_format::segment::{ColumnType, FormatError, Segment};
use sluice_format::summary::{SegmentSummary, SummaryLimits};
use sluice_format::time::{format_iso, Interval};
use sluice_layout::keys::{chunk_sk, datasource_pk, segment_key};
pub use sluice_layout::timeline::ChunkItem;
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore};
use sluice_store::storage::ObjectStore;

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

/// Writes a new segment record (`Absent`): its summary first, as an item of its own (over one
/// a deleted record of the same key may have left), then the record without it, which it
/// returns. A record whose summary item is missing or names another record reads without one.
pub async fn put_record(
    meta: &dyn MetadataStore,
    datasource: &str,
    record: &SegmentRecord,
) -> Result<SegmentRecord, MetaError> {
    let bare = put_summary(meta, datasource, record).await?;
    meta.put(Item::new(datasource_pk(datasource), record.sk(), to_json(&bare)), Condition::Absent).await?;
    Ok(bare)
}

/// Writes `record`'s summary, if it carries one, as an item of its own; returns the record
/// without it, as it is written.
async fn put_summary(
    meta: &dyn MetadataStore,
    datasource: &str,
    record: &SegmentRecord,
) -> Result<SegmentRecord, MetaError> {
    let (bare, summary) = record.split_summary();
    if let Some(summary) = summary {
        let item = Item::new(datasource_pk(datasource), record.summary_sk(), to_json(&summary));
        meta.put(item, Condition::None).await?;
    }
    Ok(bare)
}

/// Deletes a segment record, then its summary item.
pub async fn delete_record(
    meta: &dyn MetadataStore,
    datasource: &str,
    record: &SegmentRecord,
) -> Result<(), MetaError> {
    let pk = datasource_pk(datasource);
    meta.delete(&pk, &record.sk(), Condition::None).await?;
    meta.delete(&pk, &record.summary_sk(), Condition::None).await
}

/// Marks a segment record visible (after its task's or compaction's publish), if it still
/// exists: `ConditionFailed` when it was deleted since it was read. A record an earlier release
/// wrote with its summary inline is written without it, its summary first as an item of its
/// own (left behind, naming its record, if the record was deleted meanwhile).
pub async fn mark_visible(
    meta: &dyn MetadataStore,
    datasource: &str,
    record: &SegmentRecord,
) -> Result<u64, MetaError> {
    let bare = put_summary(meta, datasource, &SegmentRecord { visible: true, ..record.clone() }).await?;
    meta.put(Item::new(datasource_pk(datasource), record.sk(), to_json(&bare)), Condition::Exists).await
}

/// Deletes segments that were never visible (a lost race, a failed merge or compaction).
pub async fn discard(meta: &dyn MetadataStore, store: &dyn ObjectStore, datasource: &str, written: &[SegmentRecord]) {
    for r in written {
        if let Err(e) = delete_record(meta, datasource, r).await {
            tracing::warn!(segment = r.sk(), error = %e, "could not delete an unpublished segment record");
        }
        if let Err(e) = store.delete(&r.key).await {
            tracing::warn!(object = r.key, error = %e, "could not delete an unpublished segment");
        }
    }
}

/// Describes a segment's bytes as the record of segment `partition` of `interval` and
/// `version`, written by `origin`'s merge `merge_id` (invisible until published).
pub fn describe(
    datasource: &str,
    interval: Interval,
    version: &str,
    partition: u32,
    bytes: &Bytes,
    origin: (Option<TaskId>, Option<u64>),
    merge_id: &str,
) -> Result<SegmentRecord, FormatError> {
    let key = segment_key(datasource, interval, version, partition);
    // Opened over the caller's bytes (shared, not copied).
    let segment = Segment::from_owner(&key, bytes.clone())?;
    // What lets a query's filter skip the segment without reading it.
    let summary = SegmentSummary::of(&segment, &SummaryLimits::default())?;
    let directory = segment.directory();
    let columns = &directory.columns;
    Ok(SegmentRecord {
        interval,
        version: version.into(),
        partition,
        num_rows: u64::from(directory.num_rows),
        num_bytes: bytes.len() as u64,
        dimensions: columns
            .iter()
            .filter(|c| !matches!(c.kind, ColumnType::Time | ColumnType::Metric))
            .map(|c| c.name.clone())
            .collect(),
        metrics: columns.iter().filter(|c| c.kind == ColumnType::Metric).map(|c| c.name.clone()).collect(),
        task: origin.0,
        replace: origin.1,
        merge: merge_id.into(),
        compaction_state: None,
        visible: false,
        summary,
        key,
    })
}
