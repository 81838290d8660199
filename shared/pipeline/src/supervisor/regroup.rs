//! Changing how a datasource's partitions are grouped: a new `taskCount` or topic. Committed
//! offsets are kept per group, so a partition cannot simply move to another group; the change
//! goes through the `grouping` item ([`crate::layout::grouping`]) in three steps, each one
//! conditional write (or one per group), so supervisors running at once or killed between
//! steps do it once:
//!
//! 1. **Drain.** The change is recorded; every group of the epoch freezes its `plan#` (no task
//!    is planned any more, the write fences a planner that read the item before) and its
//!    tasks run, fail or publish as usual: Druid's graceful stop of a task group.
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
use super::SupervisorError;
use crate::item::{parse_body, query_groups, to_json};
use crate::keys::{datasource_pk, offsets_sk, plan_sk, GROUPING_SK, OFFSETS_PREFIX, PLAN_PREFIX};
use crate::layout::datasource::{OffsetsItem, PlanItem};
use crate::layout::grouping::{GroupingChange, GroupingItem, GroupingSnapshot, MAX_PATTERN_TOPICS};
use crate::task::TaskItem;
use sluice_format::meters::MeterTotals;
use sluice_format::spec::TopicSource;
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore, TxOp, MAX_TRANSACTION_ACTIONS};
use std::collections::BTreeMap;

/// The `grouping` item and its version.
#[derive(Debug, Clone)]
pub(crate) struct Grouping {
    pub item: GroupingItem,
    pub version: u64,
}

impl Grouping {
    /// Writes `item` in place of the read one; false when another writer moved it first.
    async fn replace(&mut self, meta: &dyn MetadataStore, name: &str, item: GroupingItem) -> Result<bool, MetaError> {
        let put = Item::new(datasource_pk(name), GROUPING_SK, to_json(&item));
        match meta.put(put, Condition::Version(self.version)).await {
            Ok(version) => {
                self.item = item;
                self.version = version;
                Ok(true)
            }
            Err(MetaError::ConditionFailed { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl Grouping {
    /// Forgets the partitions of the epoch's first read (a reset): the next pass reads them
    /// again, and each starts where `useEarliestOffset` says. False when another writer won.
    pub async fn forget_initial_partitions(&mut self, meta: &dyn MetadataStore, name: &str) -> Result<bool, MetaError> {
        let mut item = GroupingItem { initial_partitions: None, ..self.item.clone() };
        // A pattern's topics keep their numbers (their groups' items were reset in place).
        item.topics.iter_mut().for_each(|t| t.initial_partitions = None);
        self.replace(meta, name, item).await
    }
}

/// The datasource's grouping, read (`None` when it has none yet).
pub(crate) async fn read(meta: &dyn MetadataStore, name: &str) -> Result<Option<Grouping>, SupervisorError> {
    match meta.get(&datasource_pk(name), GROUPING_SK).await? {
        Some(item) => Ok(Some(Grouping { item: parse_body(name, &item)?, version: item.version })),
        None => Ok(None),
    }
}

/// The grouping a pass works with: created on the first pass (a datasource from before
/// groupings had epochs keeps its items as epoch 1), and with a change recorded when the spec
/// asks for another `taskCount` or topic. `None`: another supervisor wrote it first; the pass
/// stops and the next one goes on.
pub(super) async fn load(
    meta: &dyn MetadataStore,
    name: &str,
    task_count: u32,
    source: &TopicSource,
) -> Result<Option<Grouping>, SupervisorError> {
    let (topic, pattern) = (source.text(), source.is_pattern());
    let Some(mut grouping) = read(meta, name).await? else {
        let item = GroupingItem::new(task_count, topic, pattern);
        let put = Item::new(datasource_pk(name), GROUPING_SK, to_json(&item));
        return match meta.put(put, Condition::Absent).await {
            Ok(version) => Ok(Some(Grouping { item, version })),
            Err(MetaError::ConditionFailed { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        };
    };
    if grouping.item.aims_at(task_count, topic, pattern) {
        return Ok(Some(grouping));
    }
    let mut item = grouping.item.clone();
    let snapshot = item.change.take().and_then(|c| c.snapshot);
    tracing::warn!(
        datasource = name,
        from_task_count = item.task_count,
        to_task_count = task_count,
        from_topic = item.topic,
        to_topic = topic,
        "grouping change: the current tasks finish, then the partitions are grouped anew from their committed offsets"
    );
    item.change = Some(GroupingChange { task_count, topic: topic.into(), pattern, snapshot });
    Ok(grouping.replace(meta, name, item).await?.then_some(grouping))
}

/// Records the partitions the epoch's topics have on its first read, and a pattern's topics
/// found since (see [`GroupingItem::with_topics_read`]); false when another supervisor wrote
/// the grouping first.
pub(super) async fn record_topics(
    meta: &dyn MetadataStore,
    name: &str,
    grouping: &mut Grouping,
    found: &BTreeMap<String, Vec<i32>>,
) -> Result<bool, SupervisorError> {
    let known = grouping.item.topic_names();
    let unread = found.keys().filter(|t| !known.contains(&t.as_str())).count();
    if grouping.item.pattern && grouping.item.topics.len() + unread > MAX_PATTERN_TOPICS {
        tracing::error!(
            datasource = name,
            matching = grouping.item.topics.len() + unread,
            "topicPattern matches more than {MAX_PATTERN_TOPICS} topics: those found last are not read"
        );
    }
    match grouping.item.with_topics_read(found) {
        Some(item) => {
            let added: Vec<&str> =
                item.topics.iter().skip(grouping.item.topics.len()).map(|t| t.name.as_str()).collect();
            if !added.is_empty() {
                tracing::info!(datasource = name, ?added, "topics matching the pattern found");
            }
            Ok(grouping.replace(meta, name, item).await?)
        }
        None => Ok(true),
    }
}

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
