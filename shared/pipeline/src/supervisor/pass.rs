//! One supervisor pass over every datasource of the catalog.

use super::autoscale;
use super::cleanup::{clean_up, Handled};
use super::groups::{pass_groups, GroupInput, PassContext};
use super::regroup;
use super::{queryable_offsets, StatsItem, SupervisorError, SupervisorOptions};
use crate::datasource;
use crate::invoker::{Job, TaskInvoker};
use crate::item::{parse_body, query_groups, to_json};
use crate::keys::{datasource_pk, OFFSETS_PREFIX, PLAN_PREFIX, STATS_SK};
use crate::layout::datasource::TopicOffsets;
use crate::layout::datasource::{OffsetsItem, PlanItem, SupervisorState};
use crate::layout::grouping::GroupingItem;
use crate::task::{TaskId, TaskItem, TaskState};
use futures::StreamExt;
use sluice_format::spec::load_spec_value;
use sluice_format::spec::TopicPattern;
use sluice_kafka::{
    commit_datasource_offsets, matching_watermarks, partition_watermarks, record_times, ConsumerSettings, Watermarks,
};
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
    /// Per topic and partition, the high watermark seen.
    pub high: TopicOffsets,
    /// Per topic and partition, the committed offset.
    pub committed: TopicOffsets,
    /// Per topic and partition, the offset before which every record is queryable: the
    /// committed offset, or with real-time tasks the position a task not yet published
    /// checkpointed.
    pub queryable: TopicOffsets,
    /// Per topic and partition, how long ago (ms) the oldest record not yet committed was
    /// written: 0 when caught up, absent when its record's time could not be read.
    pub time_lag_ms: TopicOffsets,
    /// Tasks cleaned up (hydrants, checkpoints and item deleted).
    pub cleaned: usize,
    /// Whether every partition's committed offset reached its high watermark.
    pub caught_up: bool,
    /// Why the committed offsets were not committed to the datasource's Kafka consumer group
    /// (`commitOffsetsToKafka`), when they were not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kafka_commit_error: Option<String>,
    /// The task count the autoscaler asked for in this pass, if it changed it.
    pub scaled_to: Option<u32>,
    /// When the datasource was last active (ms): this pass, unless it saw no new record, no
    /// lag and no unfinished task (then as the last pass said).
    pub active_ms: i64,
    /// Whether the supervisor is idle (`idleConfig`): inactive for `inactiveAfterMillis`; it
    /// invokes nothing until records arrive.
    pub idle: bool,
    /// Whether the pass read the offsets and wrote the stats (a step of a pass that only moved
    /// a grouping change on does neither).
    #[serde(skip)]
    pub observed: bool,
    /// Jobs of the datasource's running batch tasks handed to the invoker (their splits, their
    /// publish).
    pub batch_jobs: u32,
}

impl DatasourcePass {
    /// Every partition seen, as (topic, partition, high watermark).
    pub fn highs(&self) -> impl Iterator<Item = (&str, i32, i64)> {
        self.high.iter().flat_map(|(t, highs)| highs.iter().map(move |(&p, &h)| (t.as_str(), p, h)))
    }

    /// Records below the high watermarks not committed yet.
    pub fn lag(&self) -> i64 {
        self.highs().map(|(t, p, h)| (h - offset_at(&self.committed, t, p)).max(0)).sum()
    }

    /// Records below the high watermarks not queryable yet.
    pub fn queryable_lag(&self) -> i64 {
        self.highs().map(|(t, p, h)| (h - offset_at(&self.queryable, t, p)).max(0)).sum()
    }

    /// The time lags (ms) of the partitions whose time was read: summed (Druid's
    /// `ingest/kafka/lag/time`) and the largest (`maxLag/time`).
    pub fn time_lag(&self) -> (i64, i64) {
        let lags = self.time_lag_ms.values().flat_map(|p| p.values().copied());
        lags.fold((0, 0), |(sum, max), l| (sum + l, max.max(l)))
    }

    /// The high watermarks summed: every record the topics ever held.
    pub fn high_total(&self) -> i64 {
        self.highs().map(|(_, _, h)| h).sum()
    }
}

/// The offset `offsets` hold for a topic's partition, 0 when none.
pub fn offset_at(offsets: &TopicOffsets, topic: &str, partition: i32) -> i64 {
    offsets.get(topic).and_then(|o| o.get(&partition)).copied().unwrap_or(0)
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

/// One pass over one datasource: its steps, each as a pass of its own, while one moves a
/// grouping change on (the autoscaler's new `taskCount`, a snapshot taken, groups moved) and
/// at most `options.max_steps`. The next step reads everything again, as the next pass would:
/// no schedule period is spent between the steps of a change.
pub async fn supervise(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    invoker: &dyn TaskInvoker,
    options: &SupervisorOptions,
    name: &str,
) -> Result<DatasourcePass, SupervisorError> {
    // Batch tasks first: a stream that cannot be supervised does not hold them up. Their
    // replaces are cleaned up here (a datasource without a compaction configuration has no
    // compaction pass to do it).
    let batch_jobs = match crate::batch::drive(meta, invoker, name, options.now_ms).await {
        Ok(driven) => {
            if driven.known > 0 {
                let cleaned =
                    crate::coordinator::replace::clean_up(meta, store, name, options.now_ms, options.cleanup_grace_ms)
                        .await;
                if let Err(e) = cleaned {
                    tracing::warn!(datasource = name, error = %e, "could not clean up the datasource's replaces");
                }
            }
            driven.splits + driven.publishes
        }
        Err(e) => {
            tracing::warn!(datasource = name, error = %e, "could not drive the datasource's batch tasks");
            0
        }
    };
    let mut pass = DatasourcePass { datasource: name.into(), batch_jobs, ..Default::default() };
    for _ in 0..options.max_steps.max(1) {
        let (step, again) = step(meta, store, invoker, options, name).await?;
        pass = pass.then(step);
        if !again {
            break;
        }
    }
    Ok(pass)
}

impl DatasourcePass {
    /// This pass followed by `next` (a later step of it): what both planned, invoked and
    /// cleaned, and what the last step that read the offsets saw (a step that only moved a
    /// change on reads none).
    fn then(mut self, mut next: DatasourcePass) -> DatasourcePass {
        self.planned.append(&mut next.planned);
        self.invoked.append(&mut next.invoked);
        self.cleaned += next.cleaned;
        self.scaled_to = next.scaled_to.or(self.scaled_to);
        next.batch_jobs = self.batch_jobs;
        if next.observed {
            next.planned = self.planned;
            next.invoked = self.invoked;
            next.cleaned = self.cleaned;
            next.scaled_to = self.scaled_to;
            return next;
        }
        self
    }
}

/// One step of a pass; true when it moved a grouping change on and the next step follows.
async fn step(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    invoker: &dyn TaskInvoker,
    options: &SupervisorOptions,
    name: &str,
) -> Result<(DatasourcePass, bool), SupervisorError> {
    let mut pass = DatasourcePass { datasource: name.into(), ..Default::default() };
    let (spec_item, spec_version) = datasource::load(meta, name).await?;
    if spec_item.state == SupervisorState::Terminated {
        return Ok((pass, false));
    }
    let spec = load_spec_value(spec_item.spec.clone())
        .map_err(|e| SupervisorError::Invalid { datasource: name.into(), reason: e.to_string() })?
        .spec;
    let settings = ConsumerSettings::new(&spec.io.consumer_properties)
        .map_err(|reason| SupervisorError::Invalid { datasource: name.into(), reason })?;
    crate::task::refuse_earlier_layout(meta, name).await?;
    let Some(mut grouping) = regroup::load(meta, name, spec.io.task_count.max(1), &spec.io.source).await? else {
        return Ok((pass, false));
    };
    if grouping.item.change.as_ref().is_some_and(|c| c.snapshot.is_some()) {
        let moved = regroup::finish(meta, name, &mut grouping).await?;
        return Ok((pass, moved));
    }
    // The grouping's topics: while a change of topic drains, the old ones.
    let marks = topic_watermarks(name, &settings, &grouping.item).await?;
    pass.high = marks.iter().map(|(t, m)| (t.clone(), m.iter().map(|(p, w)| (*p, w.high)).collect())).collect();
    let found = marks.iter().map(|(t, m)| (t.clone(), m.keys().copied().collect())).collect();
    if !regroup::record_topics(meta, name, &mut grouping, &found).await? {
        return Ok((pass, false));
    }
    let (inputs, mut tasks) = group_inputs(meta, name, &marks, &grouping.item).await?;
    // The autoscaler decides before anything is planned: a new taskCount is drained from the
    // tasks of earlier passes only, and the next step starts the change.
    if let Some(config) = &spec.io.auto_scaler {
        if spec_item.state == SupervisorState::Running && grouping.item.change.is_none() {
            let scale = autoscale::Scale { config, spec: &spec, spec_version, marks: &marks, now: options.now_ms };
            pass.scaled_to = autoscale::before_planning(meta, name, &scale, &grouping.item, &inputs, &tasks).await?;
            if pass.scaled_to.is_some() {
                return Ok((pass, true));
            }
        }
    }
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
        pass.committed.entry(group.topic).or_default().extend(group.committed);
        if let Some(s) = group.replanned_after {
            replanned_after.insert(group.group, s);
        }
        pass.planned.extend(group.planned);
        tasks.extend(group.tasks);
    }
    tasks.sort_by_key(|(t, _)| (t.id.group, t.id.seq));
    pass.caught_up = grouping.item.change.is_none()
        && pass.high.iter().all(|(t, highs)| {
            highs.iter().all(|(p, h)| pass.committed.get(t).and_then(|c| c.get(p)).is_some_and(|c| c >= h))
        });
    let was_idle;
    (pass.active_ms, pass.idle, was_idle) = activity(meta, name, &spec, &pass, &tasks, options.now_ms).await?;
    // Real-time tasks run all the time: each pass watches them, so a crash stalls a group for
    // at most a period (the lease lapses within one), not a period after its heartbeat lapsed.
    let watch = options.watch_running || spec.sluice.realtime.is_some();
    // A task of a topic the broker no longer lists waits, unread, until it is back (a task
    // read to its end still merges and publishes).
    let listed = |t: &&TaskItem| marks.contains_key(&t.topic) || t.state == TaskState::Complete;
    // An idle datasource has no unfinished task, so nothing is due: it invokes nothing.
    let jobs = due_jobs(tasks.iter().map(|(t, _)| t).filter(listed), watch, options.now_ms);
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
    let first = if spec.io.use_earliest_offset { FirstRead::Earliest } else { FirstRead::Latest };
    pass.time_lag_ms = time_lags(&settings, &marks, &pass.committed, first, options.now_ms).await;
    // A supervisor idle since the last pass committed these offsets to the group then.
    if spec.sluice.commit_offsets_to_kafka && !pass.committed.is_empty() && !(pass.idle && was_idle) {
        pass.kafka_commit_error = commit_to_consumer_group(settings, name, &pass.committed).await;
    }
    let handled = Handled { replanned_after, epoch: grouping.item.epoch };
    pass.cleaned = clean_up(meta, store, name, &tasks, &handled, options).await?;
    write_stats(meta, name, &pass, &tasks, options.now_ms).await?;
    pass.observed = true;
    let mut again = false;
    if grouping.item.change.is_some() {
        again = regroup::take_snapshot(meta, name, &mut grouping).await?;
    }
    Ok((pass, again))
}

/// When the datasource was last active, whether it is idle now (`idleConfig`), and whether the
/// last pass found it idle. Active at this pass: a high watermark moved since the last pass, a
/// record is not published yet, a task is not finished, or no pass said when before. Otherwise
/// as active as the last pass said.
async fn activity(
    meta: &dyn MetadataStore,
    name: &str,
    spec: &sluice_format::spec::DatasourceSpec,
    pass: &DatasourcePass,
    tasks: &[(TaskItem, u64)],
    now_ms: i64,
) -> Result<(i64, bool, bool), SupervisorError> {
    let last: Option<StatsItem> = match meta.get(&datasource_pk(name), STATS_SK).await? {
        Some(item) => Some(parse_body(name, &item)?),
        None => None,
    };
    let unfinished = tasks.iter().any(|(t, _)| !matches!(t.state, TaskState::Published | TaskState::Failed));
    let still = last.as_ref().filter(|l| l.topic_high == pass.high && pass.caught_up && !unfinished);
    let active_ms = still.and_then(|l| l.active_ms).unwrap_or(now_ms);
    let idle = spec.io.idle.is_some_and(|c| c.idle(active_ms, now_ms));
    let was_idle = last.as_ref().is_some_and(|l| l.idle);
    if idle && !was_idle {
        tracing::info!(datasource = name, "no new record for inactiveAfterMillis: the supervisor is idle");
    }
    Ok((active_ms, idle, was_idle))
}

/// Where a partition with nothing committed is first read from (`useEarliestOffset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FirstRead {
    Earliest,
    Latest,
}

/// Per partition, how long ago (ms before `now_ms`) the oldest record not committed was
/// written: the time of the record at the committed offset (with nothing committed, at the low
/// watermark when the datasource reads from the earliest offset; none when it reads from the
/// latest), 0 for a partition caught up. Informational: a partition whose record is not read in
/// time is left out, and a broker error only logged.
async fn time_lags(
    settings: &ConsumerSettings,
    marks: &BTreeMap<String, BTreeMap<i32, Watermarks>>,
    committed: &TopicOffsets,
    first: FirstRead,
    now_ms: i64,
) -> TopicOffsets {
    let mut lags = TopicOffsets::new();
    let mut behind = Vec::new();
    for (topic, partitions) in marks {
        for (&p, w) in partitions {
            let from = match committed.get(topic).and_then(|c| c.get(&p)) {
                Some(&c) => c.max(w.low),
                None if first == FirstRead::Earliest => w.low,
                None => continue,
            };
            if from >= w.high {
                lags.entry(topic.clone()).or_default().insert(p, 0);
            } else {
                behind.push((topic.clone(), p, from));
            }
        }
    }
    if behind.is_empty() {
        return lags;
    }
    let settings = settings.clone();
    match tokio::task::spawn_blocking(move || record_times(&settings, &behind)).await {
        Ok(Ok(times)) => {
            for ((topic, p), at) in times {
                lags.entry(topic).or_default().insert(p, (now_ms - at).max(0));
            }
        }
        Ok(Err(e)) => tracing::warn!(error = %e, "record times not read: no time lag this pass"),
        Err(e) => tracing::warn!(error = %e, "record time reader panicked: no time lag this pass"),
    }
    lags
}

/// The partitions and watermarks of the grouping's topic, or of every topic its pattern
/// matches.
async fn topic_watermarks(
    name: &str,
    settings: &ConsumerSettings,
    grouping: &GroupingItem,
) -> Result<BTreeMap<String, BTreeMap<i32, Watermarks>>, SupervisorError> {
    let invalid = |reason: String| SupervisorError::Invalid { datasource: name.into(), reason };
    let (settings, topic) = (settings.clone(), grouping.topic.clone());
    let read = match grouping.pattern {
        false => {
            tokio::task::spawn_blocking(move || {
                partition_watermarks(&settings, &topic).map(|marks| BTreeMap::from([(topic, marks)]))
            })
            .await
        }
        true => {
            let pattern = TopicPattern::new(&topic).map_err(|e| invalid(format!("topicPattern {e}")))?;
            tokio::task::spawn_blocking(move || matching_watermarks(&settings, &topic, &|t| pattern.matches(t))).await
        }
    };
    Ok(read.map_err(|e| invalid(format!("watermark reader panicked: {e}")))??)
}

/// Each group's partitions (per topic, partition modulo the grouping's `taskCount`), items and
/// tasks; and the tasks of groups that no longer have partitions, kept as they are.
async fn group_inputs(
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

/// The jobs `tasks` (sorted by group and sequence) need now: an indexer for each task planned,
/// incomplete, or running under a lease whose heartbeat lapsed (every running task with
/// `watch_running`): the indexer takes it over once the lease lapses, or returns as soon as
/// it sees a heartbeat; a merger for each complete one.
fn due_jobs<'a>(tasks: impl Iterator<Item = &'a TaskItem>, watch_running: bool, now_ms: i64) -> Vec<Job> {
    tasks
        .filter_map(|task| match task.state {
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
/// watch consumer lag. Informational only: a failure, or a group that is another
/// application's, is logged and returned for the status, never fatal to the pass.
async fn commit_to_consumer_group(settings: ConsumerSettings, name: &str, committed: &TopicOffsets) -> Option<String> {
    let (committed, datasource) = (committed.clone(), name.to_string());
    let failed = match tokio::task::spawn_blocking(move || {
        commit_datasource_offsets(&settings, &datasource, &committed)
    })
    .await
    {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(e) => Some(format!("consumer group {:?}: {e}", sluice_kafka::consumer_group(name))),
    };
    if let Some(error) = &failed {
        tracing::warn!(datasource = name, error, "offsets not committed to the Kafka consumer group");
    }
    failed
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
        topic_high: pass.high.clone(),
        topic_committed: pass.committed.clone(),
        topic_lag: pass
            .high
            .iter()
            .map(|(t, highs)| {
                let committed = pass.committed.get(t);
                let lag = highs.iter().map(|(p, h)| (*p, h - committed.and_then(|c| c.get(p)).copied().unwrap_or(*h)));
                (t.clone(), lag.collect())
            })
            .collect(),
        topic_time_lag_ms: pass.time_lag_ms.clone(),
        tasks: by_state,
        recent_errors: pass
            .kafka_commit_error
            .iter()
            .map(|e| format!("commitOffsetsToKafka: {e}"))
            .chain(errors.into_iter().rev().map(|(_, e)| e))
            .take(10)
            .collect(),
        active_ms: Some(pass.active_ms),
        idle: pass.idle,
    };
    meta.put(Item::new(datasource_pk(name), STATS_SK, to_json(&stats)), Condition::None).await?;
    Ok(())
}
