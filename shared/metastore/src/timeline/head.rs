//! The actions every visibility change adds to its own transaction: the timeline head moved to
//! its next version (`timeline`, compare-and-swap on the version read), the change log's entry
//! of that version (`tlog#<v>`, `Absent`) and the deletion of the entry the log no longer keeps
//! (`tlog#<v - MAX_LOG_ENTRIES>`). Of two changes that read the same head, exactly one writes:
//! the other's transaction fails on the head (the action [`VisibilityOps::HEAD`] places first
//! among them) and is built again from the head read anew.

use crate::datasource::{parse_body, DatasourceError};
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
        let mut ops = vec![
            TxOp::Put { item: Item::new(&pk, TIMELINE_SK, to_json(&head)), condition },
            TxOp::Put { item: Item::new(&pk, timeline_log_sk(version), to_json(&entry)), condition: Condition::Absent },
        ];
        if let Some(old) = version.checked_sub(MAX_LOG_ENTRIES).filter(|v| *v > 0) {
            ops.push(TxOp::Delete { pk: pk.clone(), sk: timeline_log_sk(old), condition: Condition::None });
        }
        VisibilityOps { ops, version }
    }
}

/// A body as its item holds it.
fn to_json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).expect("items serialize to JSON")
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_store::metadata::{open_metadata, MetaError};

    fn publish(read: &HeadRead, seq: u64, hour: i64) -> VisibilityOps {
        let task = TaskId { datasource: "d".into(), group: 0, seq };
        let added = [Interval::new(hour * 3_600_000, (hour + 1) * 3_600_000)];
        VisibilityOps::new("d", read, Change::Task { task, merge: format!("m{seq}") }, (&added, &[]), 1)
    }

    #[tokio::test]
    async fn each_change_moves_the_head_once_and_the_log_keeps_its_last_entries() {
        let dir = tempfile::tempdir().expect("temp dir");
        let meta = open_metadata(&format!("file://{}", dir.path().display())).await.expect("store");
        let meta = meta.as_ref();
        let first = HeadRead::read(meta, "d").await.expect("read");
        assert_eq!(first.version, 0);
        meta.transact(publish(&first, 1, 0).ops).await.expect("the first change");
        // A change built from the head as read before loses on the head, and writes nothing.
        match meta.transact(publish(&first, 2, 1).ops).await {
            Err(MetaError::TransactionFailed { index, .. }) => assert_eq!(index, VisibilityOps::HEAD),
            other => panic!("a stale head must fail its transaction: {other:?}"),
        }
        let mut read = HeadRead::read(meta, "d").await.expect("read");
        assert_eq!((read.version, read.head.frontier.get(&0)), (1, Some(&1)));
        for seq in 2..=MAX_LOG_ENTRIES + 3 {
            meta.transact(publish(&read, seq, seq as i64).ops).await.expect("a change");
            read = HeadRead::read(meta, "d").await.expect("read");
        }
        assert_eq!(read.version, MAX_LOG_ENTRIES + 3);
        let entries = meta.query(&datasource_pk("d"), sluice_layout::keys::TIMELINE_LOG_PREFIX).await.expect("log");
        assert_eq!(entries.len() as u64, MAX_LOG_ENTRIES, "the log keeps its last entries");
        let first_kept: ChangeEntry = serde_json::from_value(entries[0].body.clone()).expect("entry");
        assert_eq!(first_kept.version, 4);
        assert_eq!(read.head.longest, 3_600_000);
    }
}
