//! The visible records of a datasource overlapping a query's intervals, read by interval: the
//! records starting in `[lo - longest, hi)` for each interval `[lo, hi)`, `longest` being the
//! head's bound on every visible record's length, so a read costs what it asks for, not the
//! datasource's history.
//!
//! The read is anchored to the head: read before and after, at the same version, no
//! visibility change committed between (every one moves the head), so the rule's reads
//! (counter, replaces, records, then the tasks of records not marked) decide a visible set that
//! held at that version, and every record of it overlapping the intervals starts within the
//! ranges read (its length is at most the head's `longest`). When the head moved, the read is
//! made again; after [`ANCHOR_ATTEMPTS`], or while the head is not ready, the whole timeline is
//! read and filtered (correct by the rule's own argument, whatever moved).

use super::replace_view::ReplaceView;
use super::{in_order, segment_records, SegmentRecord};
use crate::datasource::{parse_body, DatasourceError};
use crate::task::{TaskId, TaskItem, TaskState};
use crate::timeline::head::HeadRead;
use sluice_format::time::Interval;
use sluice_layout::keys::{datasource_pk, segment_start_bound};
use sluice_layout::timeline_log::{merge_spans, HeadState};
use sluice_store::metadata::{MetadataStore, SkRange};
use std::collections::{BTreeMap, HashMap};

/// Reads by interval made while the head moves before the whole timeline is read instead.
pub const ANCHOR_ATTEMPTS: usize = 3;

/// Visible records of some intervals, and the timeline version they are of.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalRead {
    /// The head's version the records are visible at; `None` when the head is not ready and
    /// the whole timeline was read, or when it moved on every anchored attempt.
    pub version: Option<u64>,
    /// The visible records overlapping the intervals, in timeline order.
    pub records: Vec<SegmentRecord>,
    /// Segment records read (visible or not): what the read cost, in items.
    pub read: usize,
}

/// The visible records of `datasource` overlapping `intervals`, each row once, in timeline
/// order.
pub async fn visible_in(
    meta: &dyn MetadataStore,
    datasource: &str,
    intervals: &[Interval],
) -> Result<IntervalRead, DatasourceError> {
    let windows = merge_spans(intervals.iter().copied());
    for _ in 0..ANCHOR_ATTEMPTS {
        let before = HeadRead::read(meta, datasource).await?;
        if before.head.state != HeadState::Ready {
            break;
        }
        let (records, read) = anchored(meta, datasource, (intervals, &windows), before.head.longest).await?;
        let after = HeadRead::read(meta, datasource).await?;
        if after.version == before.version {
            return Ok(IntervalRead { version: Some(before.version), records, read });
        }
    }
    let all = segment_records(meta, datasource).await?;
    let read = all.len();
    let records = in_order(all.into_iter().filter(|(r, v)| *v && overlaps(intervals, &r.interval)).map(|(r, _)| r));
    Ok(IntervalRead { version: None, records, read })
}

/// The rule's reads over the records starting within `longest` before each window (the
/// intervals merged): the replaces, the records overlapping `intervals`, then the task items of
/// the records not marked visible.
async fn anchored(
    meta: &dyn MetadataStore,
    datasource: &str,
    (intervals, windows): (&[Interval], &[Interval]),
    longest: i64,
) -> Result<(Vec<SegmentRecord>, usize), DatasourceError> {
    let view = ReplaceView::read(meta, datasource).await?;
    let pk = datasource_pk(datasource);
    let mut found: BTreeMap<String, SegmentRecord> = BTreeMap::new();
    let mut read = 0;
    for w in windows {
        let range = SkRange::new(segment_start_bound(w.start.saturating_sub(longest)), segment_start_bound(w.end));
        for item in meta.query_range(&pk, &range).await? {
            read += 1;
            let r: SegmentRecord = parse_body(datasource, &item)?;
            super::check_record(datasource, &item.sk, &r)?;
            if overlaps(intervals, &r.interval) {
                found.insert(item.sk, r);
            }
        }
    }
    // The merge each task's publish names, for the records not marked visible.
    let mut published: HashMap<TaskId, Option<String>> = HashMap::new();
    for task in found.values().filter(|r| !r.visible).filter_map(|r| r.task.as_ref()) {
        if published.contains_key(task) {
            continue;
        }
        let merge = match meta.get(&task.pk(), &task.sk()).await? {
            Some(item) => {
                let t: TaskItem = parse_body(datasource, &item)?;
                t.published_by.filter(|_| t.state == TaskState::Published)
            }
            None => None,
        };
        published.insert(task.clone(), merge);
    }
    let visible = found.into_values().filter(|r| {
        view.visible(r, |task| r.visible || published.get(task).is_some_and(|m| m.as_deref() == Some(&r.merge)))
    });
    Ok((in_order(visible), read))
}

/// Whether `interval` overlaps one of `windows`.
pub(crate) fn overlaps(windows: &[Interval], interval: &Interval) -> bool {
    windows.iter().any(|w| w.start < interval.end && interval.start < w.end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::head::{prepare, transact_visible};
    use crate::timeline::records::put_record;
    use crate::timeline::visible_segments;
    use sluice_layout::timeline_log::Change;
    use sluice_store::metadata::open_metadata;

    const HOUR: i64 = 3_600_000;

    fn record(n: u64, start: i64, len: i64, visible: bool) -> SegmentRecord {
        SegmentRecord {
            interval: Interval::new(start, start + len),
            version: format!("v{n:04}"),
            partition: 0,
            key: format!("segments/d/{n}"),
            num_rows: 1,
            num_bytes: 1,
            dimensions: vec![],
            metrics: vec![],
            task: Some(TaskId { datasource: "d".into(), group: 0, seq: n }),
            replace: None,
            merge: format!("m{n}"),
            compaction_state: None,
            visible,
            summary: None,
        }
    }

    /// Records of mixed lengths (an hour to three days), most published through the head, some
    /// never: for random intervals, the read by interval is the whole read's records overlapping
    /// them, and reads only the records starting within the longest length before them.
    #[tokio::test]
    async fn a_read_by_interval_is_the_whole_read_filtered_and_reads_only_its_range() {
        let dir = tempfile::tempdir().expect("temp dir");
        let meta = open_metadata(&format!("file://{}", dir.path().display())).await.expect("store");
        let meta = meta.as_ref();
        let mut rng = fastrand::Rng::with_seed(20261208);
        let lengths = [HOUR, 6 * HOUR, 24 * HOUR, 72 * HOUR];
        transact_visible(meta, "d", vec![], Change::Reset, (&[], &[]), 0).await.expect("head");
        assert_eq!(prepare(meta, "d", 0, 0).await.expect("ready"), HeadState::Ready);
        let mut starts = Vec::new();
        for n in 1..=300u64 {
            let (start, len) = (rng.i64(0..2_000) * HOUR, lengths[rng.usize(..lengths.len())]);
            let published = !rng.u8(..).is_multiple_of(5);
            let r = put_record(meta, "d", &record(n, start, len, published)).await.expect("record");
            starts.push(start);
            if published {
                let change = Change::Task { task: r.task.clone().expect("a task"), merge: r.merge.clone() };
                transact_visible(meta, "d", vec![], change, (&[r.interval], &[]), 0).await.expect("publish");
            }
        }
        assert_eq!(HeadRead::read(meta, "d").await.expect("head").head.longest, 72 * HOUR);
        let whole = visible_segments(meta, "d").await.expect("whole");
        for _ in 0..200 {
            let mut asked = Vec::new();
            for _ in 0..rng.usize(1..4) {
                let start = rng.i64(-100..2_100) * HOUR + rng.i64(0..HOUR);
                asked.push(Interval::new(start, start + rng.i64(1..100 * HOUR)));
            }
            let read = visible_in(meta, "d", &asked).await.expect("read");
            let expected: Vec<&SegmentRecord> = whole.iter().filter(|r| overlaps(&asked, &r.interval)).collect();
            assert_eq!(read.records.iter().collect::<Vec<_>>(), expected, "{asked:?}");
            assert!(read.version.is_some(), "anchored");
            // Exactly the records (visible or not) starting within the longest before each window.
            let in_range = merge_spans(asked.iter().copied())
                .iter()
                .map(|w| starts.iter().filter(|s| w.start - 72 * HOUR <= **s && **s < w.end).count())
                .sum::<usize>();
            assert_eq!(read.read, in_range, "{asked:?}");
        }
    }
}
