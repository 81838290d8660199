//! One supervisor pass over every datasource of the catalog.

use super::cleanup::{clean_up, Handled};
use super::groups::{pass_groups, GroupInput, PassContext};
use super::regroup;
use super::{queryable_offsets, StatsItem, SupervisorError, SupervisorOptions};
use crate::datasource::{self, parse_body, query_groups, to_json, OffsetsItem, PlanItem, SupervisorState};
use crate::invoker::{Job, TaskInvoker};
use crate::keys::{datasource_pk, OFFSETS_PREFIX, PLAN_PREFIX, STATS_SK};
use crate::layout::grouping::GroupingItem;
use crate::task::{TaskId, TaskItem, TaskState};
use futures::StreamExt;
use sluice_format::spec::load_spec_value;
use sluice_kafka::{commit_group_offsets, partition_watermarks, ConsumerSettings};
use sluice_store::metadata::{Condition, Item, MetadataStore};
use sluice_store::storage::ObjectStore;
use std::collections::BTreeMap;

/// What one pass did for one datasource.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DatasourcePass {
    /// The datasource.
    pub datasource: String,
    /// Tasks planned in this pass.
    pub planned: Vec<TaskId>,
    /// Jobs handed to the invoker.
    pub invoked: Vec<Job>,
    /// Per partition, the high watermark seen.
    pub high: BTreeMap<i32, i64>,
    /// Per partition, the committed offset.
    pub committed: BTreeMap<i32, i64>,
    /// Per partition, the offset before which every record is queryable: the committed
    /// offset, or with real-time tasks the position a task not yet published checkpointed.
    pub queryable: BTreeMap<i32, i64>,
    /// Tasks cleaned up (hydrants, checkpoints and item deleted).
    pub cleaned: usize,
    /// Whether every partition's committed offset reached its high watermark.
    pub caught_up: bool,
}

/// Runs one pass: for every datasource of the catalog (or only `only`), plan, invoke, record
/// stats, clean up. A datasource that fails does not stop the others; its error is returned
/// in its place, beside the datasource's name.
pub async fn run_pass(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    invoker: &dyn TaskInvoker,
    options: &SupervisorOptions,
    only: Option<&str>,
) -> Result<Vec<(String, Result<DatasourcePass, SupervisorError>)>, SupervisorError> {
    let names = match only {
        Some(name) => vec![name.to_string()],
        None => datasource::list(meta).await?,
    };
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let result = supervise(meta, store, invoker, options, &name).await;
        if let Err(e) = &result {
            tracing::error!(datasource = name, error = %e, "supervisor pass failed for the datasource");
        }
        out.push((name, result));
    }
    Ok(out)
}

/// One pass over one datasource.
pub async fn supervise(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    invoker: &dyn TaskInvoker,
    options: &SupervisorOptions,
    name: &str,
) -> Result<DatasourcePass, SupervisorError> {
    let mut pass = DatasourcePass { datasource: name.into(), ..Default::default() };
    let (spec_item, _) = datasource::load(meta, name).await?;
    if spec_item.state == SupervisorState::Terminated {
        return Ok(pass);
    }
    let spec = load_spec_value(spec_item.spec.clone())
        .map_err(|e| SupervisorError::Invalid { datasource: name.into(), reason: e.to_string() })?
        .spec;
    let settings = ConsumerSettings::new(&spec.io.consumer_properties)
        .map_err(|reason| SupervisorError::Invalid { datasource: name.into(), reason })?;
    crate::task::refuse_earlier_layout(meta, name).await?;
    let Some(mut grouping) = regroup::load(meta, name, spec.io.task_count.max(1), &spec.io.topic).await? else {
        return Ok(pass);
    };
    if grouping.item.change.as_ref().is_some_and(|c| c.snapshot.is_some()) {
        regroup::finish(meta, name, &mut grouping).await?;
        return Ok(pass);
    }
    // The grouping's topic: while a change of topic drains, the old one.
    let (for_marks, topic) = (settings.clone(), grouping.item.topic.clone());
    let marks =
        tokio::task::spawn_blocking(move || partition_watermarks(&for_marks, &topic)).await.map_err(|e| {
            SupervisorError::Invalid { datasource: name.into(), reason: format!("watermark reader panicked: {e}") }
        })??;
    pass.high = marks.iter().map(|(p, w)| (*p, w.high)).collect();
    if grouping.item.initial_partitions.is_none()
        && !regroup::record_initial_partitions(meta, name, &mut grouping, marks.keys().copied().collect()).await?
    {
        return Ok(pass);
    }
    let (inputs, mut tasks) = group_inputs(meta, name, marks.keys().copied(), &grouping.item).await?;
    let ctx = PassContext {
        meta,
        name,
        spec_json: &spec_item.spec,
        spec: &spec,
        marks: &marks,
        options,
        running: spec_item.state == SupervisorState::Running,
        grouping: &grouping.item,
        grouping_version: grouping.version,
    };
    let mut replanned_after: BTreeMap<u32, u64> = BTreeMap::new();
    for outcome in pass_groups(&ctx, inputs).await {
        let group = outcome?;
        pass.committed.extend(group.committed);
        if let Some(s) = group.replanned_after {
            replanned_after.insert(group.group, s);
        }
        pass.planned.extend(group.planned);
        tasks.extend(group.tasks);
    }
    tasks.sort_by_key(|(t, _)| (t.id.group, t.id.seq));
    // Real-time tasks run all the time: each pass watches them, so a crash stalls a group for
    // at most a period (the lease lapses within one), not a period after its heartbeat lapsed.
    let watch = options.watch_running || spec.sluice.realtime.is_some();
    let jobs = due_jobs(&tasks, watch, options.now_ms);
    // Invocations are independent: `concurrency` in flight, issued in task order.
    let invoked: Vec<_> = futures::stream::iter(jobs.iter().cloned().map(|job| invoker.invoke(job)))
        .buffered(options.concurrency.max(1))
        .collect()
        .await;
    for result in invoked {
        result?;
    }
    pass.invoked = jobs;
    pass.queryable = match spec.sluice.realtime {
        Some(_) => queryable_offsets(&pass.committed, tasks.iter().map(|(t, _)| t)),
        None => pass.committed.clone(),
    };
    pass.caught_up =
        grouping.item.change.is_none() && pass.high.iter().all(|(p, h)| pass.committed.get(p).is_some_and(|c| c >= h));
    if spec.sluice.commit_offsets_to_kafka && !pass.committed.is_empty() {
        commit_to_consumer_group(settings, grouping.item.topic.clone(), name, &pass.committed).await;
    }
    let handled = Handled { replanned_after, epoch: grouping.item.epoch };
    pass.cleaned = clean_up(meta, store, name, &tasks, &handled, options).await?;
    write_stats(meta, name, &pass, &tasks, options.now_ms).await?;
    if grouping.item.change.is_some() {
        regroup::take_snapshot(meta, name, &mut grouping).await?;
    }
    Ok(pass)
}

/// Each group's partitions (partition modulo the grouping's `taskCount`), items and tasks; and
/// the tasks of groups that no longer have partitions, kept as they are.
async fn group_inputs(
    meta: &dyn MetadataStore,
    name: &str,
    partitions: impl Iterator<Item = i32>,
    grouping: &GroupingItem,
) -> Result<(Vec<GroupInput>, Vec<(TaskItem, u64)>), SupervisorError> {
    let mut by_partitions: BTreeMap<u32, Vec<i32>> = BTreeMap::new();
    for p in partitions {
        by_partitions.entry(grouping.group_of(p)).or_default().push(p);
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
        .map(|(g, parts)| GroupInput {
            group: g,
            partitions: parts,
            plan: plans.remove(&g),
            offsets: offsets.remove(&g),
            tasks: by_group.remove(&g).unwrap_or_default(),
        })
        .collect();
    Ok((inputs, by_group.into_values().flatten().collect()))
}

/// The jobs `tasks` (sorted by group and sequence) need now: an indexer for each task planned,
/// incomplete, or running under a lease whose heartbeat lapsed (every running task with
/// `watch_running`): the indexer takes it over once the lease lapses, or returns as soon as
/// it sees a heartbeat; a merger for each complete one.
fn due_jobs(tasks: &[(TaskItem, u64)], watch_running: bool, now_ms: i64) -> Vec<Job> {
    tasks
        .iter()
        .filter_map(|(task, _)| match task.state {
            TaskState::Planned | TaskState::Incomplete => Some(Job::Index { task: task.id.clone() }),
            TaskState::Running if watch_running || task.heartbeat_lapsed(now_ms) => {
                Some(Job::Index { task: task.id.clone() })
            }
            TaskState::Complete => Some(Job::Merge { task: task.id.clone() }),
            _ => None,
        })
        .collect()
}

/// Commits the published offsets to the datasource's Kafka consumer group, for tools that
/// watch consumer lag. Informational only: a failure is logged, never fatal.
async fn commit_to_consumer_group(
    settings: ConsumerSettings,
    topic: String,
    name: &str,
    committed: &BTreeMap<i32, i64>,
) {
    let (committed, group) = (committed.clone(), name.to_string());
    let failed =
        match tokio::task::spawn_blocking(move || commit_group_offsets(&settings, &group, &topic, &committed)).await {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(e) => Some(e.to_string()),
        };
    if let Some(error) = failed {
        tracing::warn!(datasource = name, error, "could not commit offsets to the Kafka consumer group");
    }
}

async fn write_stats(
    meta: &dyn MetadataStore,
    name: &str,
    pass: &DatasourcePass,
    tasks: &[(TaskItem, u64)],
    now_ms: i64,
) -> Result<(), SupervisorError> {
    let mut by_state: BTreeMap<String, usize> = BTreeMap::new();
    for (t, _) in tasks {
        *by_state.entry(t.state.name().to_string()).or_default() += 1;
    }
    let mut errors: Vec<(i64, String)> = tasks
        .iter()
        .filter_map(|(t, _)| {
            t.error.as_ref().map(|e| (t.finished_ms.unwrap_or(t.created_ms), format!("task {}: {e}", t.id)))
        })
        .collect();
    errors.sort();
    let stats = StatsItem {
        updated_ms: now_ms,
        high: pass.high.clone(),
        committed: pass.committed.clone(),
        lag: pass.high.iter().map(|(p, h)| (*p, h - pass.committed.get(p).copied().unwrap_or(*h))).collect(),
        tasks: by_state,
        recent_errors: errors.into_iter().rev().take(10).map(|(_, e)| e).collect(),
    };
    meta.put(Item::new(datasource_pk(name), STATS_SK, to_json(&stats)), Condition::None).await?;
    Ok(())
}
