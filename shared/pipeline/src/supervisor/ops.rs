//! Operations of Druid's supervisor API as library calls: status, reset, reset offsets
//! (suspend, resume and terminate are [`crate::datasource::set_state`]).

use super::autoscale::{read_item, simulate, AutoscalerStatus};
use super::grouping::{self, Grouping};
use super::{queryable_offsets, StatsItem, SupervisorError, TopicOffsets};
use crate::datasource;
use crate::indexer::MeterTotals;
use crate::item::{parse_body, query_groups, to_json};
use crate::keys::{datasource_pk, offsets_sk, plan_sk, OFFSETS_PREFIX, STATS_SK};
use crate::layout::datasource::{OffsetsItem, PlanItem, SpecItem, SupervisorState};
use crate::layout::grouping::{first_epoch, partition_group, GroupingItem};
use crate::task::TaskItem;
use serde::Serialize;
use sluice_format::spec::load_spec_value;
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore, TxOp};
use std::collections::BTreeMap;

/// What a reset may do to the data, said before it is done (as Druid says it).
pub const RESET_WARNING: &str =
    "resetting offsets discards the published position: records between the old and the new \
     offsets are skipped (data loss) or ingested again (duplicates); unpublished tasks are abandoned";

/// One partition in a status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PartitionStatus {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Committed (published) offset.
    pub committed: Option<i64>,
    /// High watermark at the last pass.
    pub high: Option<i64>,
    /// High watermark minus committed offset.
    pub lag: Option<i64>,
    /// How long ago (ms, at the last pass) the oldest record not yet published was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_lag_ms: Option<i64>,
    /// With real-time tasks: the offset before which records are queryable (checkpointed by a
    /// task not published yet, or committed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queryable: Option<i64>,
}

/// A datasource's supervisor status.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The datasource.
    pub datasource: String,
    /// Running, suspended or terminated.
    pub state: SupervisorState,
    /// Per partition offsets and lag.
    pub partitions: Vec<PartitionStatus>,
    /// Tasks by state, now.
    pub tasks: BTreeMap<String, usize>,
    /// The latest task errors, as of the last pass.
    pub recent_errors: Vec<String>,
    /// Row counters of every published task.
    pub totals: MeterTotals,
    /// When the last pass ran (ms).
    pub last_pass_ms: Option<i64>,
    /// Partition groups (`taskCount`) in force.
    pub task_count: Option<u32>,
    /// A change of `taskCount` or topic under way, said in words.
    pub grouping_change: Option<String>,
    /// Whether the supervisor was idle at the last pass (`idleConfig`, Druid's `IDLE`).
    pub idle: bool,
    /// The lag-based autoscaler, as of the last pass, when the spec enables it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autoscaler: Option<AutoscalerStatus>,
}

/// The status of `datasource`: committed offsets and totals now, watermarks as of the last pass.
pub async fn status(meta: &dyn MetadataStore, datasource: &str) -> Result<Status, SupervisorError> {
    let (spec, _) = datasource::load(meta, datasource).await?;
    let pk = datasource_pk(datasource);
    let stats: StatsItem = match meta.get(&pk, STATS_SK).await? {
        Some(item) => parse_body(datasource, &item)?,
        None => StatsItem::default(),
    };
    let grouping = grouping::read(meta, datasource).await?.map(|g| g.item);
    let epoch = grouping.as_ref().map_or(first_epoch(), |g| g.epoch);
    let mut committed = TopicOffsets::new();
    let mut totals = grouping.as_ref().map(|g| g.earlier_totals).unwrap_or_default();
    let offsets: BTreeMap<u32, (OffsetsItem, u64)> = query_groups(meta, datasource, OFFSETS_PREFIX).await?;
    for (g, (o, _)) in offsets {
        if o.epoch == epoch {
            let topic = grouping.as_ref().and_then(|gr| gr.topic_of_group(g)).unwrap_or_default();
            committed.entry(topic.to_string()).or_default().extend(o.offsets);
            totals.merge(&o.totals);
        }
    }
    let resolved = load_spec_value(spec.spec.clone()).ok().map(|l| l.spec);
    let realtime = resolved.as_ref().is_some_and(|s| s.sluice.realtime.is_some());
    let mut tasks: BTreeMap<String, usize> = BTreeMap::new();
    let mut of_epoch = Vec::new();
    for t in crate::task::tasks(meta, datasource).await? {
        *tasks.entry(t.state.name().to_string()).or_default() += 1;
        if t.epoch == epoch {
            of_epoch.push(t);
        }
    }
    let queryable = queryable_offsets(&committed, of_epoch.iter());
    let at = |offsets: &TopicOffsets, t: &str, p: i32| offsets.get(t).and_then(|o| o.get(&p)).copied();
    let mut partitions: Vec<(String, i32)> = [&committed, &stats.topic_high]
        .into_iter()
        .flat_map(|offsets| offsets.iter().flat_map(|(t, o)| o.keys().map(|p| (t.clone(), *p))))
        .collect();
    partitions.sort_unstable();
    partitions.dedup();
    let task_count = grouping.as_ref().map(|g| g.task_count);
    let autoscaler = match resolved.as_ref().and_then(|s| s.io.auto_scaler.as_ref().map(|c| (c, s.io.task_count))) {
        Some((config, spec_count)) => {
            let item = read_item(meta, datasource).await?;
            let count = task_count.unwrap_or(spec_count);
            Some(simulate(config, item.as_ref(), None, count, partitions.len(), stats.updated_ms))
        }
        None => None,
    };
    Ok(Status {
        datasource: datasource.into(),
        state: spec.state,
        partitions: partitions
            .into_iter()
            .map(|(topic, p)| {
                let (c, h) = (at(&committed, &topic, p), at(&stats.topic_high, &topic, p));
                let queryable = at(&queryable, &topic, p).filter(|_| realtime);
                let lag = c.zip(h).map(|(c, h)| h - c);
                let time_lag_ms = at(&stats.topic_time_lag_ms, &topic, p);
                PartitionStatus { topic, partition: p, committed: c, high: h, lag, time_lag_ms, queryable }
            })
            .collect(),
        tasks,
        recent_errors: stats.recent_errors,
        totals,
        last_pass_ms: (stats.updated_ms > 0).then_some(stats.updated_ms),
        task_count,
        grouping_change: grouping.as_ref().and_then(describe_change),
        idle: stats.idle,
        autoscaler,
    })
}

fn describe_change(g: &GroupingItem) -> Option<String> {
    let c = g.change.as_ref()?;
    let step = if c.snapshot.is_some() {
        "offsets snapshot taken, new groups being written"
    } else {
        "waiting for the current tasks to finish"
    };
    Some(format!("taskCount {} -> {}, topic {:?} -> {:?}: {step}", g.task_count, c.task_count, g.topic, c.topic))
}

/// The active grouping's epoch and first task number, and its `taskCount` (the spec's when no
/// pass ran yet); refused while a grouping change is moving groups (its snapshot would undo
/// the reset).
async fn active_grouping(
    meta: &dyn MetadataStore,
    datasource: &str,
    spec_task_count: u32,
) -> Result<(Option<Grouping>, Fresh), SupervisorError> {
    let grouping = grouping::read(meta, datasource).await?;
    if let Some(g) = &grouping {
        if g.item.change.as_ref().is_some_and(|c| c.snapshot.is_some()) {
            return Err(SupervisorError::Invalid {
                datasource: datasource.into(),
                reason:
                    "a taskCount or topic change is moving the partition groups; reset after the next supervisor pass"
                        .into(),
            });
        }
    }
    let fresh = grouping.as_ref().map_or(
        Fresh { epoch: first_epoch(), first_seq: 1, task_count: spec_task_count.max(1) },
        |g| Fresh { epoch: g.item.epoch, first_seq: g.item.first_seq, task_count: g.item.task_count.max(1) },
    );
    Ok((grouping, fresh))
}

/// What a group of the active epoch holds before anything was planned.
#[derive(Debug, Clone, Copy)]
struct Fresh {
    epoch: u64,
    first_seq: u64,
    task_count: u32,
}

/// Abandons the group's unpublished tasks and applies `change` to its plan and offsets, in
/// one transaction.
async fn rewrite_group(
    meta: &dyn MetadataStore,
    datasource: &str,
    group: u32,
    fresh: Fresh,
    now_ms: i64,
    reason: &str,
    change: impl FnOnce(&mut PlanItem, &mut Option<OffsetsItem>),
) -> Result<usize, SupervisorError> {
    let pk = datasource_pk(datasource);
    let plan_item = meta.get(&pk, &plan_sk(group)).await?;
    let offsets_item = meta.get(&pk, &offsets_sk(group)).await?;
    let mut plan: PlanItem = match &plan_item {
        Some(i) => parse_body(datasource, i)?,
        None => PlanItem::fresh(fresh.epoch, fresh.first_seq),
    };
    if plan.epoch != fresh.epoch {
        plan = PlanItem::fresh(fresh.epoch, fresh.first_seq);
    }
    let mut offsets: Option<OffsetsItem> = offsets_item.as_ref().map(|i| parse_body(datasource, i)).transpose()?;
    if offsets.as_ref().is_some_and(|o| o.epoch != fresh.epoch) {
        offsets = Some(OffsetsItem::fresh(fresh.epoch));
    }
    plan.replanned_after = Some(plan.next_seq.saturating_sub(1));
    // The group starts again from the reset: a real-time group's open task is planned at once.
    plan.resting = false;
    change(&mut plan, &mut offsets);
    let version = |i: &Option<Item>| i.as_ref().map_or(Condition::Absent, |i| Condition::Version(i.version));
    let mut ops =
        vec![TxOp::Put { item: Item::new(&pk, plan_sk(group), to_json(&plan)), condition: version(&plan_item) }];
    match (&offsets, &offsets_item) {
        (Some(o), _) => ops
            .push(TxOp::Put { item: Item::new(&pk, offsets_sk(group), to_json(o)), condition: version(&offsets_item) }),
        (None, Some(i)) => {
            ops.push(TxOp::Delete { pk: pk.clone(), sk: offsets_sk(group), condition: Condition::Version(i.version) })
        }
        (None, None) => {}
    }
    let mut abandoned = 0;
    for item in crate::task::group_task_items(meta, datasource, [group]).await? {
        let mut t: TaskItem = parse_body(datasource, &item)?;
        if t.is_finished() {
            continue;
        }
        t.fail(format!("abandoned: {reason}"), now_ms);
        ops.push(TxOp::Put {
            item: Item::new(t.id.pk(), t.id.sk(), to_json(&t)),
            condition: Condition::Version(item.version),
        });
        abandoned += 1;
    }
    match meta.transact(ops).await {
        Ok(()) => Ok(abandoned),
        Err(MetaError::TransactionFailed { .. }) => Err(changed_during_reset(datasource)),
        Err(e) => Err(e.into()),
    }
}

/// Clears the committed offsets of every group: the next pass starts each partition where
/// `useEarliestOffset` says. See [`RESET_WARNING`]. Returns the tasks abandoned.
pub async fn reset(meta: &dyn MetadataStore, datasource: &str, now_ms: i64) -> Result<usize, SupervisorError> {
    let (spec_item, _) = datasource::load(meta, datasource).await?;
    let (grouping, fresh) = active_grouping(meta, datasource, spec_task_count(datasource, spec_item)?).await?;
    tracing::warn!(datasource, "{RESET_WARNING}");
    if let Some(mut g) = grouping {
        // Partitions are found afresh: each starts where useEarliestOffset says.
        if !g.forget_initial_partitions(meta, datasource).await? {
            return Err(changed_during_reset(datasource));
        }
    }
    let mut abandoned = 0;
    for g in crate::task::planned_groups(meta, datasource).await?.into_keys() {
        abandoned += rewrite_group(meta, datasource, g, fresh, now_ms, "supervisor reset", |plan, offsets| {
            plan.next_start.clear();
            *offsets = None;
        })
        .await?;
    }
    Ok(abandoned)
}

/// Sets the committed offsets of the given partitions (Druid's resetOffsets): tasks of their
/// groups are abandoned and planned again from these offsets. See [`RESET_WARNING`].
pub async fn reset_offsets(
    meta: &dyn MetadataStore,
    datasource: &str,
    offsets: &BTreeMap<i32, i64>,
    now_ms: i64,
) -> Result<usize, SupervisorError> {
    let (spec_item, _) = datasource::load(meta, datasource).await?;
    let (grouping, fresh) = active_grouping(meta, datasource, spec_task_count(datasource, spec_item)?).await?;
    if grouping.is_some_and(|g| g.item.pattern) {
        return Err(SupervisorError::Invalid {
            datasource: datasource.into(),
            reason: "resetting the offsets of chosen partitions is not supported with topicPattern (they name no \
                     topic): reset the whole datasource"
                .into(),
        });
    }
    if let Some((p, o)) = offsets.iter().find(|(p, o)| **p < 0 || **o < 0) {
        return Err(SupervisorError::Invalid {
            datasource: datasource.into(),
            reason: format!("invalid offset {p}={o}"),
        });
    }
    tracing::warn!(datasource, ?offsets, "{RESET_WARNING}");
    let task_count = fresh.task_count;
    let mut by_group: BTreeMap<u32, Vec<(i32, i64)>> = BTreeMap::new();
    for (&p, &o) in offsets {
        by_group.entry(partition_group(p, task_count)).or_default().push((p, o));
    }
    let mut abandoned = 0;
    for (g, set) in by_group {
        abandoned += rewrite_group(meta, datasource, g, fresh, now_ms, "offsets reset", |plan, committed| {
            let c = committed.get_or_insert_with(|| OffsetsItem::fresh(fresh.epoch));
            c.offsets.extend(set.iter().copied());
            // Abandoned tasks covered the group's other partitions too: plan from committed.
            plan.next_start = c.offsets.clone();
        })
        .await?;
    }
    Ok(abandoned)
}

fn changed_during_reset(datasource: &str) -> SupervisorError {
    SupervisorError::Invalid {
        datasource: datasource.into(),
        reason: "the datasource's groups changed while they were being reset; run the reset again".into(),
    }
}

fn spec_task_count(datasource: &str, spec_item: SpecItem) -> Result<u32, SupervisorError> {
    Ok(load_spec_value(spec_item.spec)
        .map_err(|e| SupervisorError::Invalid { datasource: datasource.into(), reason: e.to_string() })?
        .spec
        .io
        .task_count)
}
