//! The actions a visibility change adds to its transaction (`sluice_metastore::timeline::head`)
//! on both backends: each change moves the head by one version, a change built on a stale
//! head fails on the head and writes nothing, and the change log keeps its last entries (16
//! here, `MAX_LOG_ENTRIES` deployed: the same actions), each saying what its version changed;
//! changes racing on one head all commit, one version each, when they are retried on the head
//! (`transact_visible`), and one whose own condition fails reports it and writes nothing.

use sluice_format::time::Interval;
use sluice_integration::indexing::Backends;
use sluice_integration::unique;
use sluice_metastore::datasource::DatasourceError;
use sluice_metastore::timeline::head::{transact_visible, HeadRead, VisibilityOps};
use sluice_pipeline::keys::{datasource_pk, TIMELINE_LOG_PREFIX};
use sluice_pipeline::layout::timeline_log::{Change, ChangeEntry};
use sluice_pipeline::task::TaskId;
use sluice_store::metadata::{Condition, Item, MetaError, TxOp};

const HOUR: i64 = 3_600_000;

/// Entries the log keeps in this test.
const KEEP: u64 = 16;

/// Task `seq`'s publish of one hour, or a day at `seq` 2, from the head `read`.
fn publish(datasource: &str, read: &HeadRead, seq: u64) -> VisibilityOps {
    let task = TaskId { datasource: datasource.into(), group: (seq % 3) as u32, seq };
    let start = seq as i64 * HOUR;
    let added = [Interval::new(start, start + if seq == 2 { 24 * HOUR } else { HOUR })];
    VisibilityOps::new(datasource, read, Change::Task { task, merge: format!("m{seq}") }, (&added, &[]), 1)
        .keeping(datasource, KEEP)
}

async fn each_change_moves_the_head_once_and_the_log_keeps_its_last_entries(b: Backends) {
    let meta = b.meta.as_ref();
    let name = unique("head");
    let first = HeadRead::read(meta, &name).await.expect("read");
    assert_eq!(first.version, 0, "no head before the first change");
    meta.transact(publish(&name, &first, 1).ops).await.expect("the first change");
    match meta.transact(publish(&name, &first, 2).ops).await {
        Err(MetaError::TransactionFailed { index, .. }) => assert_eq!(index, VisibilityOps::HEAD),
        other => panic!("a change built on a stale head must fail on the head: {other:?}"),
    }
    let mut read = HeadRead::read(meta, &name).await.expect("read");
    assert_eq!(read.version, 1, "the stale change wrote nothing");
    let last = KEEP + 3;
    for seq in 2..=last {
        let ops = publish(&name, &read, seq);
        assert_eq!(ops.version, seq);
        meta.transact(ops.ops).await.expect("a change");
        read = HeadRead::read(meta, &name).await.expect("read");
    }
    assert_eq!(read.version, last);
    assert_eq!(read.head.longest, 24 * HOUR, "the longest record made visible bounds the others");
    assert_eq!(read.head.frontier.get(&((last % 3) as u32)), Some(&last));
    let entries = meta.query(&datasource_pk(&name), TIMELINE_LOG_PREFIX).await.expect("log");
    assert_eq!(entries.len() as u64, KEEP, "the log keeps its last entries");
    let entries: Vec<ChangeEntry> =
        entries.into_iter().map(|i| serde_json::from_value(i.body).expect("an entry")).collect();
    assert!(entries.iter().zip(last - KEEP + 1..).all(|(e, v)| e.version == v), "in order, none missing");
    let newest = entries.last().expect("an entry");
    assert_eq!(newest.spans, vec![Interval::new(last as i64 * HOUR, (last as i64 + 1) * HOUR)]);
    assert!(matches!(&newest.change, Change::Task { task, merge } if task.seq == last && *merge == format!("m{last}")));
    b.discard(&name).await;
}

async fn changes_racing_on_one_head_each_commit_once(b: Backends) {
    let meta = b.meta.clone();
    let name = unique("race");
    let racers = 16u64;
    let mut races = tokio::task::JoinSet::new();
    for seq in 1..=racers {
        let (meta, name) = (meta.clone(), name.clone());
        races.spawn(async move {
            // Each change's own action: an item of its own, written once.
            let own = vec![TxOp::Put {
                item: Item::new(datasource_pk(&name), format!("own#{seq}"), serde_json::json!({})),
                condition: Condition::Absent,
            }];
            let task = TaskId { datasource: name.clone(), group: 0, seq };
            let change = Change::Task { task, merge: format!("m{seq}") };
            let hour = [Interval::new(seq as i64 * HOUR, (seq as i64 + 1) * HOUR)];
            transact_visible(meta.as_ref(), &name, own, change, (&hour, &[]), 1).await
        });
    }
    let versions: Vec<u64> =
        races.join_all().await.into_iter().map(|r| r.expect("every change commits once retried on the head")).collect();
    let mut sorted = versions.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (1..=racers).collect::<Vec<_>>(), "one version each: {versions:?}");
    let read = HeadRead::read(meta.as_ref(), &name).await.expect("read");
    assert_eq!((read.version, read.head.frontier.get(&0)), (racers, Some(&racers)));
    let log = meta.query(&datasource_pk(&name), TIMELINE_LOG_PREFIX).await.expect("log");
    let mut seqs: Vec<u64> = log
        .iter()
        .map(|i| match serde_json::from_value::<ChangeEntry>(i.body.clone()).expect("an entry").change {
            Change::Task { task, .. } => task.seq,
            other => panic!("{other:?}"),
        })
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=racers).collect::<Vec<_>>(), "one entry per change");
    // A change whose own condition fails reports it by its index and moves nothing.
    let taken = vec![TxOp::Put {
        item: Item::new(datasource_pk(&name), "own#1", serde_json::json!({})),
        condition: Condition::Absent,
    }];
    let refused = transact_visible(meta.as_ref(), &name, taken, Change::Reset, (&[], &[]), 1).await;
    assert!(
        matches!(refused, Err(DatasourceError::Metadata(MetaError::TransactionFailed { index: 0, .. }))),
        "{refused:?}"
    );
    assert_eq!(HeadRead::read(meta.as_ref(), &name).await.expect("read").version, racers);
    b.discard(&name).await;
}

sluice_integration::on_backends!(
    each_change_moves_the_head_once_and_the_log_keeps_its_last_entries,
    changes_racing_on_one_head_each_commit_once,
);
