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
use sluice_layout::keys::{datasource_pk, timeline_log_sk, TIMELINE_SK};
use sluice_layout::task::TaskId;
use sluice_layout::timeline_log::{merge_spans, Change, ChangeEntry, TimelineHead, MAX_LOG_ENTRIES};
use sluice_store::metadata::{Condition, Item, MetadataStore, TxOp};

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
        let head = read.head.after(added, task.as_ref());
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

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_store::metadata::{open_metadata, MetaError};

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
