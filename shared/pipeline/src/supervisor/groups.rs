//! The partition groups of one pass, each handled on its own: partitions added, a failed task
//! replanned, new tasks planned. Groups share no item, so up to `concurrency` of them are in
//! flight at once: a pass over 1,000 groups costs about 1,000 / `concurrency` round trips to
//! the metadata store instead of 1,000 (the bottleneck `sluice-sim scale` finds at 1,000
//! partitions).

use super::group::{Group, Starts, TopicReads};
use super::{SupervisorError, SupervisorOptions};
use crate::item::{parse_body, query_groups};
use crate::keys::{OFFSETS_PREFIX, PLAN_PREFIX};
use crate::layout::datasource::{OffsetsItem, PlanItem};
use crate::layout::grouping::GroupingItem;
use crate::task::{TaskId, TaskItem, TaskState};
use futures::StreamExt;
use sluice_format::spec::DatasourceSpec;
use sluice_kafka::Watermarks;
use sluice_store::metadata::MetadataStore;
use std::collections::BTreeMap;

/// What the pass reads once and every group uses.
pub(super) struct PassContext<'a> {
    pub meta: &'a dyn MetadataStore,
    pub name: &'a str,
    pub spec_json: &'a serde_json::Value,
    pub spec: &'a DatasourceSpec,
    /// Per topic read, its partitions' watermarks.
    pub marks: &'a BTreeMap<String, BTreeMap<i32, Watermarks>>,
    pub options: &'a SupervisorOptions,
    /// Whether the supervisor plans new tasks (not suspended).
    pub running: bool,
    /// The grouping in force; with a change under way, groups freeze and plan nothing.
    pub grouping: &'a GroupingItem,
    /// Its version, checked by every write that starts a group's items in the epoch.
    pub grouping_version: u64,
}

/// A group's items as read at the start of the pass, and its tasks.
pub(super) struct GroupInput {
    pub group: u32,
    /// The number of the group's topic.
    pub topic: usize,
    pub partitions: Vec<i32>,
    pub plan: Option<(PlanItem, u64)>,
    pub offsets: Option<(OffsetsItem, u64)>,
    pub tasks: Vec<(TaskItem, u64)>,
}

/// What a group's part of the pass did.
#[derive(Default)]
pub(super) struct GroupPass {
    pub group: u32,
    /// The group's topic.
    pub topic: String,
    /// Committed offsets of the group's partitions.
    pub committed: Vec<(i32, i64)>,
    /// The last task sequence replanned after a failure, if any.
    pub replanned_after: Option<u64>,
    /// Tasks planned now.
    pub planned: Vec<TaskId>,
    /// The group's tasks, with those planned now.
    pub tasks: Vec<(TaskItem, u64)>,
}

/// Runs every group's part of the pass, `options.concurrency` at a time, in group order.
pub(super) async fn pass_groups(
    ctx: &PassContext<'_>,
    groups: Vec<GroupInput>,
) -> Vec<Result<GroupPass, SupervisorError>> {
    futures::stream::iter(groups.into_iter().map(|g| pass_group(ctx, g)))
        .buffered(ctx.options.concurrency.max(1))
        .collect()
        .await
}

async fn pass_group(ctx: &PassContext<'_>, input: GroupInput) -> Result<GroupPass, SupervisorError> {
    let GroupInput { group: g, topic: topic_number, partitions, plan, offsets, mut tasks } = input;
    let grouping = ctx.grouping;
    let topic = grouping.topic_names()[topic_number].to_string();
    let marks = &ctx.marks[&topic];
    // Items absent, or of another epoch (history, or a newer epoch this pass does not know):
    // the group starts in this epoch, over their versions, checking the grouping's.
    let mut fresh = false;
    let (plan, plan_version) = match plan {
        Some((p, v)) if p.epoch == grouping.epoch => (p, Some(v)),
        other => {
            fresh = true;
            (PlanItem::fresh(grouping.epoch, grouping.first_seq), other.map(|(_, v)| v))
        }
    };
    let (offs, offsets_version) = match offsets {
        Some((o, v)) if o.epoch == grouping.epoch => (o, Some(v)),
        other => {
            fresh = true;
            (OffsetsItem::fresh(grouping.epoch), other.map(|(_, v)| v))
        }
    };
    let starts_epoch = fresh.then_some(ctx.grouping_version);
    let mut group = Group {
        datasource: ctx.name.into(),
        group: g,
        plan,
        plan_version,
        offsets: offs,
        offsets_version,
        starts_epoch,
    };
    let mut out = GroupPass { group: g, topic: topic.clone(), ..GroupPass::default() };
    let initial = grouping.initial_partitions_of(topic_number);
    let starts = Starts { marks, use_earliest: ctx.spec.io.use_earliest_offset, initial };
    if !group.ensure_partitions(ctx.meta, &partitions, &starts).await? {
        out.tasks = tasks;
        return Ok(out);
    }
    out.committed = partitions.iter().filter_map(|p| Some((*p, *group.offsets.offsets.get(p)?))).collect();
    if !group.replan_after_failure(ctx.meta, &mut tasks, ctx.options.now_ms).await? {
        out.tasks = tasks;
        return Ok(out);
    }
    out.replanned_after = group.plan.replanned_after;
    if grouping.change.is_some() {
        group.freeze(ctx.meta).await?;
    } else if ctx.running {
        let in_flight =
            tasks.iter().filter(|(t, _)| !matches!(t.state, TaskState::Published | TaskState::Failed)).count();
        let highs: BTreeMap<i32, i64> = partitions.iter().map(|p| (*p, marks[p].high)).collect();
        let options = ctx.options;
        let reads = TopicReads { topic: &topic, highs: &highs };
        let planned = group
            .plan_tasks(ctx.meta, ctx.spec_json, ctx.spec, reads, in_flight, options.max_in_flight, options.now_ms)
            .await?;
        out.planned = planned.iter().map(|(t, _)| t.id.clone()).collect();
        tasks.extend(planned);
    }
    out.tasks = tasks;
    Ok(out)
}

/// Each group's partitions (per topic, partition modulo the grouping's `taskCount`), items and
/// tasks; and the tasks of groups that no longer have partitions, kept as they are.
pub(super) async fn group_inputs(
    meta: &dyn MetadataStore,
    name: &str,
    marks: &BTreeMap<String, BTreeMap<i32, Watermarks>>,
    grouping: &GroupingItem,
) -> Result<(Vec<GroupInput>, Vec<(TaskItem, u64)>), SupervisorError> {
    let mut by_partitions: BTreeMap<u32, (usize, Vec<i32>)> = BTreeMap::new();
    for (t, topic) in grouping.topic_names().into_iter().enumerate() {
        for &p in marks.get(topic).into_iter().flat_map(|m| m.keys()) {
            by_partitions.entry(grouping.group_of(t, p)).or_insert_with(|| (t, Vec::new())).1.push(p);
        }
    }
    let mut plans: BTreeMap<u32, (PlanItem, u64)> = query_groups(meta, name, PLAN_PREFIX).await?;
    let mut offsets: BTreeMap<u32, (OffsetsItem, u64)> = query_groups(meta, name, OFFSETS_PREFIX).await?;
    let mut by_group: BTreeMap<u32, Vec<(TaskItem, u64)>> = BTreeMap::new();
    for item in crate::task::group_task_items(meta, name, plans.keys().copied()).await? {
        let task = parse_body::<TaskItem>(name, &item)?;
        by_group.entry(task.id.group).or_default().push((task, item.version));
    }
    let inputs = by_partitions
        .into_iter()
        .map(|(g, (topic, parts))| GroupInput {
            group: g,
            topic,
            partitions: parts,
            plan: plans.remove(&g),
            offsets: offsets.remove(&g),
            tasks: by_group.remove(&g).unwrap_or_default(),
        })
        .collect();
    Ok((inputs, by_group.into_values().flatten().collect()))
}
