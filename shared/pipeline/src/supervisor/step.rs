//! One step of a supervisor pass over a datasource: the spec and the grouping read (a
//! grouping change moved on), the topics' watermarks, the groups' inputs, the autoscaler, each
//! group planned, the due jobs invoked, the time lags and the consumer group's offsets, cleanup,
//! the stats, and a grouping change's snapshot.

use super::autoscale;
use super::cleanup::{clean_up, Handled};
use super::grouping;
use super::groups::{group_inputs, pass_groups, PassContext};
use super::outcome::DatasourcePass;
use super::regroup;
use super::stats::{activity, write_stats};
use super::watermarks::{commit_to_consumer_group, time_lags, topic_watermarks, FirstRead};
use super::{queryable_offsets, SupervisorError, SupervisorOptions};
use crate::datasource;
use crate::invoker::{Job, TaskInvoker};
use crate::layout::datasource::SupervisorState;
use crate::task::{TaskItem, TaskState};
use futures::StreamExt;
use sluice_format::spec::load_spec_value;
use sluice_kafka::ConsumerSettings;
use sluice_store::metadata::MetadataStore;
use sluice_store::storage::ObjectStore;
use std::collections::BTreeMap;

/// One step of a pass; true when it moved a grouping change on and the next step follows.
pub(super) async fn step(
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
        .map_err(|e| SupervisorError::Invalid { datasource: name.into(), reason: e.to_string() })?;
    crate::task::refuse_earlier_layout(meta, name).await?;
    let Some(mut grouping) = grouping::load(meta, name, spec.io.task_count.max(1), &spec.io.source).await? else {
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
    if !grouping::record_topics(meta, name, &mut grouping, &found).await? {
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
