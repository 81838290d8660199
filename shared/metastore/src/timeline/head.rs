//! The actions every visibility change adds to its own transaction: the timeline head moved to
//! its next version (`timeline`, compare-and-swap on the version read), the change log's entry
//! of that version (`tlog#<v>`, `Absent`) and the deletion of the entry the log no longer keeps
//! (`tlog#<v - MAX_LOG_ENTRIES>`). Of two changes that read the same head, exactly one writes:
//! the other's transaction fails on the head (the action [`VisibilityOps::HEAD`] places first
//! among them) and is built again from the head read anew.
//!
//! The timeline version is the head item's store version, so the head is written only through
//! these actions (a change of its state too, as a `reset` entry): a write of its own would make
//! a version with no entry. It is never deleted alone: deleting it starts the versions again at
//! 1, so its log goes with it.

use crate::datasource::{parse_body, to_json, DatasourceError};
use sluice_format::time::Interval;
use sluice_layout::datasource::OffsetsItem;
use sluice_layout::keys::{datasource_pk, group_of, timeline_log_sk, OFFSETS_PREFIX, TIMELINE_SK};
use sluice_layout::task::TaskId;
use sluice_layout::timeline_log::{merge_spans, Change, ChangeEntry, HeadState, TimelineHead, MAX_LOG_ENTRIES};
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore, TxOp};

/// Attempts of a visibility transaction whose head moved (another change of the datasource
/// committed between its read and its write) before it gives up.
pub const HEAD_ATTEMPTS: usize = 32;

/// A datasource's timeline head as read: its body and store version (0: not written yet).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeadRead {
    /// The body (the default for a head not written yet).
    pub head: TimelineHead,
    /// The store's version of the item (the timeline version), 0 when there is none.
    pub version: u64,
}

impl HeadRead {
    /// Reads the head of `datasource`.
    pub async fn read(meta: &dyn MetadataStore, datasource: &str) -> Result<HeadRead, DatasourceError> {
        match meta.get(&datasource_pk(datasource), TIMELINE_SK).await? {
            Some(item) => Ok(HeadRead { head: parse_body(datasource, &item)?, version: item.version }),
            None => Ok(HeadRead::default()),
        }
    }
}

/// The actions of one visibility change, to be appended to its transaction.
#[derive(Debug, Clone)]
pub struct VisibilityOps {
    /// The actions: the head, the entry, and the trim when the log is full.
    pub ops: Vec<TxOp>,
    /// The timeline version the change makes.
    pub version: u64,
}

impl VisibilityOps {
    /// Index of the head's action among [`VisibilityOps::ops`].
    pub const HEAD: usize = 0;

    /// The actions of a change of `datasource` from `read`: `change`, which made the records of
    /// `added` visible (published by `task` if a task's publish) and hid those of `hidden`.
    pub fn new(
        datasource: &str,
        read: &HeadRead,
        change: Change,
        (added, hidden): (&[Interval], &[Interval]),
        now_ms: i64,
    ) -> VisibilityOps {
        let task: Option<TaskId> = match &change {
            Change::Task { task, .. } => Some(task.clone()),
            _ => None,
        };
        let mut head = read.head.after(added, task.as_ref());
        if read.version == 0 {
            head.since = now_ms;
        }
        VisibilityOps::with_head(datasource, read, head, change, (added, hidden), now_ms)
    }

    /// The actions of a change that writes `head` as the head's next version.
    pub fn with_head(
        datasource: &str,
        read: &HeadRead,
        head: TimelineHead,
        change: Change,
        (added, hidden): (&[Interval], &[Interval]),
        now_ms: i64,
    ) -> VisibilityOps {
        let version = read.version + 1;
        let pk = datasource_pk(datasource);
        let condition = if read.version == 0 { Condition::Absent } else { Condition::Version(read.version) };
        let entry =
            ChangeEntry { version, at: now_ms, change, spans: merge_spans(added.iter().chain(hidden).copied()) };
        let ops = vec![
            TxOp::Put { item: Item::new(&pk, TIMELINE_SK, to_json(&head)), condition },
            TxOp::Put { item: Item::new(&pk, timeline_log_sk(version), to_json(&entry)), condition: Condition::Absent },
        ];
        VisibilityOps { ops, version }.keeping(datasource, MAX_LOG_ENTRIES)
    }

    /// The same change with the log kept at its last `keep` entries (the entry `keep` versions
    /// back deleted) instead of [`MAX_LOG_ENTRIES`]: what a test of the trim on a slow
    /// endpoint writes.
    pub fn keeping(mut self, datasource: &str, keep: u64) -> VisibilityOps {
        self.ops.truncate(2);
        if let Some(old) = self.version.checked_sub(keep.max(1)).filter(|v| *v > 0) {
            let (pk, sk) = (datasource_pk(datasource), timeline_log_sk(old));
            self.ops.push(TxOp::Delete { pk, sk, condition: Condition::None });
        }
        self
    }
}

/// Commits `ops` (the change's own actions) with the visibility actions of `change` appended,
/// reading the head first and again each time only the head refused them (another change of
/// the datasource came between), at most [`HEAD_ATTEMPTS`] times. Returns the version made.
///
/// A condition of `ops` that fails is returned as the store reported it (its index into `ops`
/// keeps its meaning): nothing was applied.
pub async fn transact_visible(
    meta: &dyn MetadataStore,
    datasource: &str,
    ops: Vec<TxOp>,
    change: Change,
    spans: (&[Interval], &[Interval]),
    now_ms: i64,
) -> Result<u64, DatasourceError> {
    let own = ops.len();
    let mut last = None;
    for attempt in 0..HEAD_ATTEMPTS {
        if attempt > 0 {
            // A few ms, growing: the change that won is one transaction, already committed.
            tokio::time::sleep(std::time::Duration::from_millis(fastrand::u64(0..=(2u64 << attempt.min(6))))).await;
        }
        let read = HeadRead::read(meta, datasource).await?;
        let visibility = VisibilityOps::new(datasource, &read, change.clone(), spans, now_ms);
        let mut all = ops.clone();
        all.extend(visibility.ops);
        match meta.transact(all).await {
            Ok(()) => return Ok(visibility.version),
            Err(e @ MetaError::TransactionFailed { index, .. }) if index == own + VisibilityOps::HEAD => last = Some(e),
            Err(MetaError::TransactionFailed { index, sk, .. }) if index > own => {
                // The entry of the next version exists while the head is before it: the head was
                // deleted without its log. Every change would fail the same way.
                return Err(DatasourceError::Corrupt {
                    datasource: datasource.into(),
                    sk,
                    reason: format!(
                        "the change log already holds the entry of version {}: the timeline head was deleted \
                         without its log (delete every tlog# item of the datasource too)",
                        visibility.version
                    ),
                });
            }
            Err(e @ MetaError::Conflict { .. }) => last = Some(e),
            Err(e) => return Err(e.into()),
        }
    }
    let reason = last.map(|e| e.to_string()).unwrap_or_default();
    Err(DatasourceError::Metadata(MetaError::Conflict {
        url: String::new(),
        message: format!("the timeline head of {datasource:?} moved {HEAD_ATTEMPTS} times: {reason}"),
    }))
}

/// How long a head stays initializing before the supervisor makes it ready: Lambda's longest
/// invocation, so that no function of a release that did not write the head can still publish.
pub const READY_AFTER_MS: i64 = 15 * 60 * 1_000;

/// Brings the head of `datasource` on: writes it, initializing, when there is none, and makes
/// it ready once `ready_after_ms` passed since (every change since has written it): every
/// record read once for the longest interval, every group's committed offsets for the last task
/// published. Returns the state it leaves. For a head already ready: a `get` and the groups'
/// committed offsets, compared with its frontier.
pub async fn prepare(
    meta: &dyn MetadataStore,
    datasource: &str,
    now_ms: i64,
    ready_after_ms: i64,
) -> Result<HeadState, DatasourceError> {
    for _ in 0..HEAD_ATTEMPTS {
        let read = HeadRead::read(meta, datasource).await?;
        let head = match (read.version, read.head.state) {
            (_, HeadState::Ready) => match published_past_frontier(meta, datasource, &read.head).await? {
                None => return Ok(HeadState::Ready),
                Some(group) => {
                    tracing::warn!(
                        datasource,
                        group,
                        "a task was published without moving the timeline head (a release before it ran \
                         again): the head is initializing again and queries read the whole timeline"
                    );
                    TimelineHead { state: HeadState::Initializing, since: now_ms, ..read.head.clone() }
                }
            },
            (0, _) => TimelineHead { since: now_ms, ..TimelineHead::default() },
            (_, HeadState::Initializing) if now_ms < read.head.since.saturating_add(ready_after_ms) => {
                return Ok(HeadState::Initializing)
            }
            (_, HeadState::Initializing) => ready(meta, datasource, &read.head, now_ms).await?,
        };
        write_reset(meta, datasource, &read, head, now_ms).await?;
    }
    Err(moved(datasource, "prepared"))
}

/// Writes `head` as the head's next version read as `read`, with a `reset` entry. Returns the
/// version written, `None` when the head moved since `read` (nothing written).
async fn write_reset(
    meta: &dyn MetadataStore,
    datasource: &str,
    read: &HeadRead,
    head: TimelineHead,
    now_ms: i64,
) -> Result<Option<u64>, DatasourceError> {
    let visibility = VisibilityOps::with_head(datasource, read, head, Change::Reset, (&[], &[]), now_ms);
    match meta.transact(visibility.ops).await {
        Ok(()) => Ok(Some(visibility.version)),
        Err(MetaError::TransactionFailed { index: VisibilityOps::HEAD, .. } | MetaError::Conflict { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The error of a head that moved on every attempt to write it.
fn moved(datasource: &str, while_: &str) -> DatasourceError {
    DatasourceError::Metadata(MetaError::Conflict {
        url: String::new(),
        message: format!("the timeline head of {datasource:?} moved {HEAD_ATTEMPTS} times while it was {while_}"),
    })
}

/// A group whose committed offsets name a last published task past the head's frontier: a
/// publish that did not move the head (a function of an earlier release, run again by a
/// rollback). Read every pass; `None` when there is none.
async fn published_past_frontier(
    meta: &dyn MetadataStore,
    datasource: &str,
    head: &TimelineHead,
) -> Result<Option<u32>, DatasourceError> {
    for item in meta.query(&datasource_pk(datasource), OFFSETS_PREFIX).await? {
        let offsets: OffsetsItem = parse_body(datasource, &item)?;
        if let (Some(group), Some(seq)) = (group_of(&item.sk, OFFSETS_PREFIX), offsets.last_seq) {
            if head.frontier.get(&group).is_none_or(|f| seq > *f) {
                return Ok(Some(group));
            }
        }
    }
    Ok(None)
}

/// Makes the head of `datasource` initializing again (a `reset` entry): queries read the whole
/// timeline, and the supervisor's pass makes it ready again (every record read once) after
/// `ready_after_ms`. For records written by hand (a retention drop undone): they may be longer
/// than the head's bound, and no change entry names them. Returns the version written.
pub async fn reset(meta: &dyn MetadataStore, datasource: &str, now_ms: i64) -> Result<u64, DatasourceError> {
    for _ in 0..HEAD_ATTEMPTS {
        let read = HeadRead::read(meta, datasource).await?;
        let head = TimelineHead { state: HeadState::Initializing, since: now_ms, ..read.head.clone() };
        if let Some(version) = write_reset(meta, datasource, &read, head, now_ms).await? {
            return Ok(version);
        }
    }
    Err(moved(datasource, "reset"))
}

/// The ready head from `head`: its bound raised to the longest record kept (read whole once),
/// its frontier to every group's last published task.
async fn ready(
    meta: &dyn MetadataStore,
    datasource: &str,
    head: &TimelineHead,
    now_ms: i64,
) -> Result<TimelineHead, DatasourceError> {
    let records = super::read_records(meta, datasource).await?;
    let longest = records.iter().map(|r| r.interval.end.saturating_sub(r.interval.start)).fold(head.longest, i64::max);
    let mut frontier = head.frontier.clone();
    for item in meta.query(&datasource_pk(datasource), OFFSETS_PREFIX).await? {
        let offsets: OffsetsItem = parse_body(datasource, &item)?;
        if let (Some(group), Some(seq)) = (group_of(&item.sk, OFFSETS_PREFIX), offsets.last_seq) {
            let last = frontier.entry(group).or_insert(seq);
            *last = (*last).max(seq);
        }
    }
    Ok(TimelineHead { state: HeadState::Ready, since: now_ms, longest, frontier })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_store::metadata::{open_metadata, MetaError};

    /// A head is written initializing, made ready once the wait passed (its bound the longest
    /// record kept, its frontier the groups' last published tasks), made initializing again by a
    /// publish that did not move it (a release before it, run again) and by a reset.
    #[tokio::test]
    async fn a_head_is_ready_after_its_wait_and_initializing_again_when_bypassed() {
        use sluice_layout::keys::{offsets_sk, segment_sk};
        let dir = tempfile::tempdir().expect("temp dir");
        let meta = open_metadata(&format!("file://{}", dir.path().display())).await.expect("store");
        let meta = meta.as_ref();
        let pk = datasource_pk("d");
        let day = serde_json::json!({"interval": {"start": 0, "end": 86_400_000}, "version": "v", "partition": 0,
            "key": "k", "numRows": 1, "numBytes": 1, "dimensions": [], "metrics": [], "replace": 1, "merge": "m",
            "visible": true});
        meta.put(Item::new(&pk, segment_sk(0, "v", 0), day), Condition::Absent).await.expect("an earlier record");
        let offsets = |seq: u64| {
            Item::new(
                &pk,
                offsets_sk(2),
                serde_json::to_value(OffsetsItem { last_seq: Some(seq), ..OffsetsItem::fresh(1) }).expect("offsets"),
            )
        };
        meta.put(offsets(7), Condition::None).await.expect("offsets");
        assert_eq!(prepare(meta, "d", 1_000, 60_000).await.expect("prepare"), HeadState::Initializing);
        let first = HeadRead::read(meta, "d").await.expect("read");
        assert_eq!((first.version, first.head.since), (1, 1_000), "written, initializing");
        assert_eq!(prepare(meta, "d", 60_999, 60_000).await.expect("prepare"), HeadState::Initializing, "waits");
        assert_eq!(prepare(meta, "d", 61_000, 60_000).await.expect("prepare"), HeadState::Ready);
        let ready = HeadRead::read(meta, "d").await.expect("read");
        assert_eq!((ready.version, ready.head.longest, ready.head.frontier.get(&2)), (2, 86_400_000, Some(&7)));
        assert_eq!(prepare(meta, "d", 70_000, 60_000).await.expect("prepare"), HeadState::Ready);
        assert_eq!(HeadRead::read(meta, "d").await.expect("read").version, 2, "a ready head is only read");
        // Group 2 published task 8 without moving the head.
        meta.put(offsets(8), Condition::None).await.expect("offsets");
        assert_eq!(prepare(meta, "d", 80_000, 60_000).await.expect("prepare"), HeadState::Initializing);
        assert_eq!(prepare(meta, "d", 140_000, 60_000).await.expect("prepare"), HeadState::Ready);
        assert_eq!(HeadRead::read(meta, "d").await.expect("read").head.frontier.get(&2), Some(&8));
        assert_eq!(reset(meta, "d", 150_000).await.expect("reset"), 5);
        assert_eq!(HeadRead::read(meta, "d").await.expect("read").head.state, HeadState::Initializing);
    }

    /// Both backends: `tests/tests/services/timeline_head.rs`.
    #[tokio::test]
    async fn a_stale_head_writes_nothing_and_the_log_keeps_its_last_entries() {
        let dir = tempfile::tempdir().expect("temp dir");
        let meta = open_metadata(&format!("file://{}", dir.path().display())).await.expect("store");
        let meta = meta.as_ref();
        let change = |seq| Change::Task { task: TaskId { datasource: "d".into(), group: 0, seq }, merge: "m".into() };
        let hour = [Interval::new(0, 3_600_000)];
        let first = HeadRead::read(meta, "d").await.expect("read");
        meta.transact(VisibilityOps::new("d", &first, change(1), (&hour, &[]), 1).ops).await.expect("a change");
        let stale = VisibilityOps::new("d", &first, change(2), (&hour, &[]), 1);
        assert!(matches!(
            meta.transact(stale.ops).await,
            Err(MetaError::TransactionFailed { index: VisibilityOps::HEAD, .. })
        ));
        let mut read = HeadRead::read(meta, "d").await.expect("read");
        assert_eq!((read.version, read.head.frontier.get(&0)), (1, Some(&1)));
        // The log as deployed keeps its last MAX_LOG_ENTRIES entries.
        for seq in 2..=MAX_LOG_ENTRIES + 2 {
            meta.transact(VisibilityOps::new("d", &read, change(seq), (&hour, &[]), 1).ops).await.expect("a change");
            read = HeadRead::read(meta, "d").await.expect("read");
        }
        let log = meta.query(&datasource_pk("d"), sluice_layout::keys::TIMELINE_LOG_PREFIX).await.expect("log");
        assert_eq!(log.len() as u64, MAX_LOG_ENTRIES);
        assert_eq!(log[0].sk, timeline_log_sk(3));
    }
}
