//! Changing how a datasource's partitions are grouped: a new `taskCount` or topic. Committed
//! offsets are kept per group, so a partition cannot simply move to another group; the change
//! goes through the `grouping` item ([`crate::layout::grouping`]) in three steps, each one
//! conditional write (or one per group), so supervisors running at once or killed between
//! steps do it once:
//!
//! 1. **Drain.** The change is recorded ([`super::grouping::load`]); every group of the epoch
//!    freezes its `plan#` (no task is planned any more, the write fences a planner that read
//!    the item before) and its tasks run, fail or publish as usual: Druid's graceful stop of a
//!    task group.
//! 2. **Snapshot**, once every `plan#` of the epoch is frozen and then every task of the epoch
//!    is finished: the committed offsets can no longer move, and are copied into the
//!    `grouping` item with a task number above every task so far.
//! 3. **Move.** Each new group's `plan#` and `offsets#` of the next epoch are written from the
//!    snapshot (and those an overtaken supervisor wrote for a replaced change are rewritten
//!    or deleted); then the `grouping` item moves to the next epoch, and planning resumes.
//!
//! A new topic or pattern starts afresh (its partitions as `useEarliestOffset` says): the old
//! topic's offsets mean nothing for it. A pattern's groups are per topic (`topic number *
//! taskCount + partition % taskCount`), so its snapshot keeps each topic's offsets apart.
//! The argument: `docs/exactly-once.md`.

use super::group::Group;
use super::grouping::Grouping;
use super::SupervisorError;
use crate::item::{parse_body, query_groups};
use crate::keys::{datasource_pk, offsets_sk, plan_sk, GROUPING_SK, OFFSETS_PREFIX, PLAN_PREFIX};
use crate::layout::datasource::{OffsetsItem, PlanItem};
use crate::layout::grouping::GroupingSnapshot;
use crate::task::TaskItem;
use sluice_format::meters::MeterTotals;
use sluice_store::metadata::{Condition, MetaError, MetadataStore, TxOp, MAX_TRANSACTION_ACTIONS};
use std::collections::BTreeMap;

/// Step 2: when every `plan#` of the epoch is frozen and then every task of the epoch is
/// finished, copies the committed offsets into the change. Returns whether it did.
pub(super) async fn take_snapshot(
    meta: &dyn MetadataStore,
    name: &str,
    grouping: &mut Grouping,
) -> Result<bool, SupervisorError> {
    let epoch = grouping.item.epoch;
    // The order of the reads is the argument: plans frozen first, so no task of the epoch can
    // appear after the task read; then no publish can move the offsets read last.
    let mut next_seq = grouping.item.first_seq;
    let plans: BTreeMap<u32, (PlanItem, u64)> = query_groups(meta, name, PLAN_PREFIX).await?;
    for (group, (plan, _)) in &plans {
        if plan.epoch == epoch && !plan.frozen {
            tracing::debug!(datasource = name, epoch, group, "grouping change waits for a group to freeze");
            return Ok(false);
        }
        next_seq = next_seq.max(plan.next_seq);
    }
    for item in crate::task::group_task_items(meta, name, plans.keys().copied()).await? {
        let task: TaskItem = parse_body(name, &item)?;
        if task.epoch == epoch && !task.is_finished() {
            tracing::debug!(datasource = name, epoch, task = %task.id, state = ?task.state, "grouping change waits for a task");
            return Ok(false);
        }
        next_seq = next_seq.max(task.id.seq + 1);
    }
    let mut by_topic: BTreeMap<u32, BTreeMap<i32, i64>> = BTreeMap::new();
    let mut totals = MeterTotals::default();
    let task_count = grouping.item.task_count.max(1);
    let offsets: BTreeMap<u32, (OffsetsItem, u64)> = query_groups(meta, name, OFFSETS_PREFIX).await?;
    for (g, (offsets, _)) in offsets {
        if offsets.epoch == epoch {
            by_topic.entry(g / task_count).or_default().extend(offsets.offsets);
            totals.merge(&offsets.totals);
        }
    }
    let committed = by_topic.remove(&0).unwrap_or_default();
    let mut item = grouping.item.clone();
    let Some(change) = item.change.as_mut() else {
        return Ok(false);
    };
    tracing::info!(datasource = name, epoch, ?committed, next_seq, "grouping drained: offsets snapshot taken");
    change.snapshot = Some(GroupingSnapshot { committed, later_topics: by_topic, next_seq, totals });
    Ok(grouping.replace(meta, name, item).await?)
}

/// Step 3: writes each new group's `plan#` and `offsets#` of the next epoch from the snapshot,
/// then moves the grouping to the next epoch. Returns whether the grouping moved.
///
/// Every write checks the version of the `grouping` item as read, so it lands only while the
/// change is the one read: a supervisor finishing a change that was replaced since (the spec
/// resubmitted with another `taskCount`) writes nothing. Items of the next epoch that a finish
/// of an earlier change wrote (before it was replaced) group the partitions another way: each
/// is written again from this change, or deleted when this change gives its group no
/// committed offsets. No task reads them before the grouping moves, so either is safe.
pub(super) async fn finish(
    meta: &dyn MetadataStore,
    name: &str,
    grouping: &mut Grouping,
) -> Result<bool, SupervisorError> {
    let Some(change) = grouping.item.change.clone() else {
        return Ok(false);
    };
    let Some(snapshot) = change.snapshot.clone() else {
        return Ok(false);
    };
    let next = grouping.item.next_epoch(&change, &snapshot);
    let mut by_group: BTreeMap<u32, BTreeMap<i32, i64>> = BTreeMap::new();
    if change.topic == grouping.item.topic && change.pattern == grouping.item.pattern {
        for t in 0..next.topic_names().len() {
            for (&p, &o) in snapshot.committed_of(t as u32).into_iter().flatten() {
                by_group.entry(next.group_of(t, p)).or_default().insert(p, o);
            }
        }
    }
    let plans: BTreeMap<u32, (PlanItem, u64)> = query_groups(meta, name, PLAN_PREFIX).await?;
    let offsets: BTreeMap<u32, (OffsetsItem, u64)> = query_groups(meta, name, OFFSETS_PREFIX).await?;
    let pk = datasource_pk(name);
    let grouping_unchanged =
        || TxOp::Check { pk: pk.clone(), sk: GROUPING_SK.into(), condition: Condition::Version(grouping.version) };
    for (&g, committed) in &by_group {
        let plan = PlanItem { next_start: committed.clone(), ..PlanItem::fresh(next.epoch, next.first_seq) };
        let offs = OffsetsItem { offsets: committed.clone(), ..OffsetsItem::fresh(next.epoch) };
        if plans.get(&g).is_some_and(|(p, _)| *p == plan) && offsets.get(&g).is_some_and(|(o, _)| *o == offs) {
            continue;
        }
        let mut group = Group {
            datasource: name.into(),
            group: g,
            plan,
            plan_version: plans.get(&g).map(|(_, v)| *v),
            offsets: offs,
            offsets_version: offsets.get(&g).map(|(_, v)| *v),
            starts_epoch: Some(grouping.version),
        };
        if !group.write_items(meta).await? {
            return Ok(false);
        }
    }
    let stale = |g: &u32, epoch: u64| epoch == next.epoch && !by_group.contains_key(g);
    let plan_items = plans.iter().map(|(g, (p, v))| (plan_sk(*g), stale(g, p.epoch), *v));
    let offsets_items = offsets.iter().map(|(g, (o, v))| (offsets_sk(*g), stale(g, o.epoch), *v));
    let deletes: Vec<TxOp> = plan_items
        .chain(offsets_items)
        .filter(|(_, stale, _)| *stale)
        .map(|(sk, _, v)| TxOp::Delete { pk: pk.clone(), sk, condition: Condition::Version(v) })
        .collect();
    for batch in deletes.chunks(MAX_TRANSACTION_ACTIONS - 1) {
        let ops: Vec<TxOp> = batch.iter().cloned().chain([grouping_unchanged()]).collect();
        match meta.transact(ops).await {
            Ok(()) => {}
            Err(MetaError::TransactionFailed { .. }) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
        let items = batch.len();
        tracing::info!(datasource = name, epoch = next.epoch, items, "items of a replaced change deleted");
    }
    tracing::info!(
        datasource = name,
        epoch = next.epoch,
        task_count = next.task_count,
        topic = next.topic,
        "grouping changed"
    );
    Ok(grouping.replace(meta, name, next).await?)
}
