//! Spec changes that regroup partitions, on each metadata backend: `taskCount` changed as an
//! operator changes it (1 -> 3 -> 2 -> 4 over a 4-partition topic, records produced and the
//! pipeline run until caught up after each change), a change while tasks are in flight (they
//! publish first, nothing is planned until the groups moved), a new topic (read from where
//! `useEarliestOffset` says, as a new supervisor would), and a partition added after the first
//! pass with `useEarliestOffset` off: every record exactly once. And a reset is refused while
//! the groups move, and applies to the new groups after. A change replaced while a supervisor
//! moves the groups (the operator changes `taskCount` again) leaves nothing of the abandoned
//! grouping behind.

use sluice_integration::indexing::{json_record, spec, visible_values, Backends};
use sluice_integration::kafka::{create_topic, grow_topic, produce};
use sluice_integration::{required_env, unique};
use sluice_pipeline::datasource::{submit, OffsetsItem, PlanItem};
use sluice_pipeline::invoker::QueueInvoker;
use sluice_pipeline::keys::{datasource_pk, plan_sk, GROUPING_SK};
use sluice_pipeline::runner::{run_job, run_until_caught_up, JobOutcome};
use sluice_pipeline::supervisor::{reset, reset_offsets, status, supervise, SupervisorOptions};
use sluice_pipeline::task::{TaskItem, TaskState};
use sluice_store::metadata::Intercepted;
use std::collections::BTreeMap;
use std::time::Duration;

const BUDGET: Duration = Duration::from_secs(120);
const PARTITIONS: i32 = 4;

fn now() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A datasource over a fresh 4-partition topic, and the ids produced so far.
struct Regroup {
    b: Backends,
    bootstrap: String,
    topic: String,
    name: String,
    spec: serde_json::Value,
    produced: usize,
}

impl Regroup {
    async fn new(b: Backends, task_count: u32, use_earliest: bool) -> Self {
        let bootstrap = required_env("SLUICE_KAFKA");
        let topic = create_topic(&bootstrap, "regroup", PARTITIONS).await;
        let name = unique("regroup");
        let mut spec = spec(&name, &topic, &bootstrap, serde_json::json!({"type": "json"}), serde_json::json!({}));
        spec["spec"]["ioConfig"]["useEarliestOffset"] = use_earliest.into();
        spec["spec"]["sluiceConfig"] = serde_json::json!({"maxRecordsPerTask": 1000});
        let mut r = Self { b, bootstrap, topic, name, spec, produced: 0 };
        r.resubmit(task_count).await;
        r
    }

    async fn resubmit(&mut self, task_count: u32) {
        self.spec["spec"]["ioConfig"]["taskCount"] = task_count.into();
        submit(self.b.meta.as_ref(), self.spec.clone(), now()).await.expect("submit");
    }

    /// Produces `n` more records, round-robin over the first `partitions` partitions.
    async fn produce(&mut self, n: usize, partitions: i32) {
        let topic = self.topic.clone();
        self.produce_to(&topic, n, partitions).await;
    }

    /// Produces `n` more records into `topic`, round-robin over its first `partitions`.
    async fn produce_to(&mut self, topic: &str, n: usize, partitions: i32) {
        let records: Vec<(i32, Vec<u8>)> = (self.produced..self.produced + n)
            .map(|k| ((k % partitions as usize) as i32, json_record(&format!("r{k}"), k)))
            .collect();
        produce(&self.bootstrap, topic, &records).await;
        self.produced += n;
    }

    async fn run_until_caught_up(&self) {
        let passes =
            run_until_caught_up(self.b.meta.as_ref(), self.b.store.as_ref(), Some(&self.name), 60, BUDGET, |_, _| {})
                .await
                .expect("pipeline");
        assert!(passes.last().is_some_and(|p| p.caught_up), "not caught up: {:?}", passes.last());
    }

    /// One step of a pass: each step of a change is seen on its own.
    async fn pass(&self, queue: &QueueInvoker) -> sluice_pipeline::supervisor::DatasourcePass {
        let options = SupervisorOptions { max_steps: 1, ..SupervisorOptions::at(now()) };
        supervise(self.b.meta.as_ref(), self.b.store.as_ref(), queue, &options, &self.name).await.expect("pass")
    }

    /// A whole pass: the steps of a change follow each other while the earlier tasks are done.
    async fn whole_pass(&self, queue: &QueueInvoker) -> sluice_pipeline::supervisor::DatasourcePass {
        supervise(self.b.meta.as_ref(), self.b.store.as_ref(), queue, &SupervisorOptions::at(now()), &self.name)
            .await
            .expect("pass")
    }

    /// Asserts every id produced is visible exactly once.
    async fn assert_exactly_once(&self, context: &str) {
        let seen = visible_values(self.b.meta.as_ref(), self.b.store.as_ref(), &self.name, "id").await;
        let mut expected: Vec<String> = (0..self.produced).map(|k| format!("r{k}")).collect();
        expected.sort();
        let mut twice = seen.clone();
        twice.dedup();
        assert_eq!(
            seen.len(),
            expected.len(),
            "{context}: {} rows for {} records ({} distinct)",
            seen.len(),
            expected.len(),
            twice.len()
        );
        assert!(seen == expected, "{context}: some record is missing or visible twice");
    }

    async fn tasks(&self) -> Vec<TaskItem> {
        sluice_pipeline::task::tasks(self.b.meta.as_ref(), &self.name).await.expect("tasks")
    }

    async fn plans(&self) -> Vec<PlanItem> {
        let items = self.b.meta.query(&datasource_pk(&self.name), "plan#").await.expect("plans");
        items.into_iter().map(|i| serde_json::from_value(i.body).expect("plan body")).collect()
    }

    async fn offsets(&self) -> Vec<OffsetsItem> {
        let items = self.b.meta.query(&datasource_pk(&self.name), "offsets#").await.expect("offsets");
        items.into_iter().map(|i| serde_json::from_value(i.body).expect("offsets body")).collect()
    }

    /// The committed offsets of grouping epoch `epoch`, over its groups.
    async fn committed_in(&self, epoch: u64) -> BTreeMap<i32, i64> {
        self.offsets().await.into_iter().filter(|o| o.epoch == epoch).flat_map(|o| o.offsets).collect()
    }
}

async fn task_count_changes_keep_every_record_once(b: Backends) {
    let mut r = Regroup::new(b, 1, true).await;
    for task_count in [1, 3, 2, 4] {
        r.resubmit(task_count).await;
        r.produce(3000, PARTITIONS).await;
        r.run_until_caught_up().await;
        r.assert_exactly_once(&format!("after taskCount {task_count}")).await;
        let st = status(r.b.meta.as_ref(), &r.name).await.expect("status");
        assert_eq!(st.task_count, Some(task_count), "the new grouping is in force");
        assert_eq!(st.grouping_change, None);
        assert_eq!(st.totals.processed, r.produced as u64, "row counters carry over the changes");
        assert!(st.partitions.iter().all(|p| p.lag == Some(0)), "{:?}", st.partitions);
    }
    let groups: Vec<(u64, usize)> = r.offsets().await.iter().map(|o| (o.epoch, o.offsets.len())).collect();
    assert!(groups.contains(&(4, 1)), "epoch 4 has 4 groups of one partition: {groups:?}");
}

async fn a_change_while_tasks_are_in_flight_waits_for_them(b: Backends) {
    let mut r = Regroup::new(b, 2, true).await;
    r.produce(400, PARTITIONS).await;
    let queue = QueueInvoker::default();
    let first = r.pass(&queue).await;
    assert_eq!(first.planned.len(), 2, "one task per group: {first:?}");
    r.resubmit(3).await;
    r.produce(200, PARTITIONS).await;
    let draining = r.pass(&QueueInvoker::default()).await;
    assert!(
        draining.planned.is_empty() && !draining.caught_up,
        "nothing is planned while the change drains: {draining:?}"
    );
    let st = status(r.b.meta.as_ref(), &r.name).await.expect("status");
    assert!(st.grouping_change.as_deref().is_some_and(|c| c.contains("waiting")), "{st:?}");
    let plans = r.plans().await;
    assert!(plans.iter().all(|p| p.frozen && p.epoch == 1), "every group frozen: {plans:?}");
    // The tasks planned before the change index and publish under the old grouping.
    let (meta, store) = (r.b.meta.as_ref(), r.b.store.as_ref());
    while let Some(job) = queue.pop() {
        let outcome = run_job(meta, store, &queue, &job, BUDGET).await;
        assert!(matches!(outcome, JobOutcome::Indexed(Ok(_)) | JobOutcome::Merged(Ok(_))), "{outcome:?}");
    }
    assert!(r.tasks().await.iter().all(|t| t.state == TaskState::Published && t.epoch == 1));
    // Drained: one pass takes the snapshot, moves the groups and plans under them.
    let moved = r.whole_pass(&QueueInvoker::default()).await;
    assert_eq!(moved.planned.len(), 3, "three groups plan again: {moved:?}");
    assert!(moved.planned.iter().all(|id| id.seq > 1), "task numbers never repeat: {:?}", moved.planned);
    assert_eq!(
        r.committed_in(2).await,
        (0..PARTITIONS).map(|p| (p, 100)).collect(),
        "the new groups start at the published offsets"
    );
    r.run_until_caught_up().await;
    r.assert_exactly_once("after the in-flight change").await;
}

async fn a_new_topic_is_read_as_a_new_supervisor_reads_it(b: Backends) {
    let mut r = Regroup::new(b, 2, true).await;
    r.produce(200, PARTITIONS).await;
    r.run_until_caught_up().await;
    let other = create_topic(&r.bootstrap, "regroup-next", 2).await;
    r.produce_to(&other, 100, 2).await;
    r.spec["spec"]["ioConfig"]["topic"] = other.clone().into();
    submit(r.b.meta.as_ref(), r.spec.clone(), now()).await.expect("submit");
    r.run_until_caught_up().await;
    r.assert_exactly_once("after the topic change").await;
    let tasks = r.tasks().await;
    assert!(tasks.iter().any(|t| t.topic == other && t.epoch == 2), "the new topic's tasks are of epoch 2");
}

async fn a_partition_added_later_is_read_from_its_earliest_offset(b: Backends) {
    let mut r = Regroup::new(b, 2, false).await;
    r.run_until_caught_up().await;
    r.produce(100, PARTITIONS).await;
    r.run_until_caught_up().await;
    grow_topic(&r.topic, PARTITIONS + 1).await;
    // Written before any pass saw the partition: useEarliestOffset off must not skip them.
    r.produce(50, PARTITIONS + 1).await;
    r.run_until_caught_up().await;
    r.assert_exactly_once("after the partition was added").await;
}

async fn a_reset_waits_while_the_groups_move(b: Backends) {
    let mut r = Regroup::new(b, 1, true).await;
    r.produce(100, PARTITIONS).await;
    r.run_until_caught_up().await;
    r.resubmit(2).await;
    // Nothing in flight: one pass records the change, freezes the group and takes the snapshot.
    r.pass(&QueueInvoker::default()).await;
    let st = status(r.b.meta.as_ref(), &r.name).await.expect("status");
    assert!(st.grouping_change.as_deref().is_some_and(|c| c.contains("snapshot")), "{st:?}");
    let refused = reset(r.b.meta.as_ref(), &r.name, now()).await.expect_err("refused while the groups move");
    assert!(refused.to_string().contains("moving the partition groups"), "{refused}");
    let refused = reset_offsets(r.b.meta.as_ref(), &r.name, &BTreeMap::from([(0, 0)]), now()).await;
    assert!(refused.is_err(), "{refused:?}");
    r.pass(&QueueInvoker::default()).await; // the groups move
    assert_eq!(status(r.b.meta.as_ref(), &r.name).await.expect("status").task_count, Some(2));
    reset_offsets(r.b.meta.as_ref(), &r.name, &BTreeMap::from([(1, 20)]), now()).await.expect("reset offsets");
    assert_eq!(
        r.committed_in(2).await.get(&1),
        Some(&20),
        "the reset applies to partition 1's group of the new grouping"
    );
}

/// Where a supervisor moving the groups to taskCount 2 is overtaken by the operator's taskCount
/// 1 and another supervisor's pass that moves the groups so.
enum Overtaken {
    /// Between its writes of group 0 and group 1.
    BetweenGroups,
    /// After its group writes, before it moves the `grouping` item.
    BeforeTheMove,
}

async fn a_change_replaced_while_the_groups_move(b: Backends, at: Overtaken) {
    let mut r = Regroup::new(b, 1, true).await;
    r.produce(400, PARTITIONS).await;
    r.run_until_caught_up().await;
    r.resubmit(2).await;
    r.pass(&QueueInvoker::default()).await; // the change drains at once: snapshot taken
    let mut one = r.spec.clone();
    one["spec"]["ioConfig"]["taskCount"] = 1.into();
    let (meta, store, name) = (r.b.meta.clone(), r.b.store.clone(), r.name.clone());
    let overtaken = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = overtaken.clone();
    let other_pass = move || async move {
        submit(meta.as_ref(), one, now()).await.expect("submit");
        let options = SupervisorOptions { max_steps: 1, ..SupervisorOptions::at(now()) };
        let other = supervise(meta.as_ref(), store.as_ref(), &QueueInvoker::default(), &options, &name).await;
        other.expect("the other supervisor's pass");
        seen.store(true, std::sync::atomic::Ordering::SeqCst);
    };
    let slow = match at {
        Overtaken::BetweenGroups => Intercepted::before_first(r.b.meta.clone(), &plan_sk(1), other_pass),
        Overtaken::BeforeTheMove => Intercepted::before_first_put(r.b.meta.clone(), GROUPING_SK, other_pass),
    };
    let options = SupervisorOptions { max_steps: 1, ..SupervisorOptions::at(now()) };
    supervise(&slow, r.b.store.as_ref(), &QueueInvoker::default(), &options, &r.name).await.expect("pass");
    assert!(overtaken.load(std::sync::atomic::Ordering::SeqCst), "the other pass ran in between");
    let st = status(r.b.meta.as_ref(), &r.name).await.expect("status");
    assert_eq!((st.task_count, st.grouping_change.as_deref()), (Some(1), None), "{st:?}");
    let current: Vec<PlanItem> = r.plans().await.into_iter().filter(|p| p.epoch == 2).collect();
    assert_eq!(current.len(), 1, "one group in epoch 2, none left of taskCount 2: {current:?}");
    assert_eq!(
        current[0].next_start,
        (0..PARTITIONS).map(|p| (p, 100)).collect(),
        "the one group starts every partition at its published offset"
    );
    r.produce(200, PARTITIONS).await;
    r.run_until_caught_up().await;
    r.assert_exactly_once("after the replaced change").await;
    // A later change drains: no group of the abandoned grouping holds it up.
    r.resubmit(3).await;
    r.produce(200, PARTITIONS).await;
    r.run_until_caught_up().await;
    r.assert_exactly_once("after taskCount 3").await;
    assert_eq!(status(r.b.meta.as_ref(), &r.name).await.expect("status").task_count, Some(3));
}

async fn a_change_replaced_between_group_writes_leaves_nothing_behind(b: Backends) {
    a_change_replaced_while_the_groups_move(b, Overtaken::BetweenGroups).await;
}

async fn a_change_replaced_before_the_grouping_moves_leaves_nothing_behind(b: Backends) {
    a_change_replaced_while_the_groups_move(b, Overtaken::BeforeTheMove).await;
}

sluice_integration::on_backends!(
    a_change_replaced_between_group_writes_leaves_nothing_behind,
    a_change_replaced_before_the_grouping_moves_leaves_nothing_behind,
    a_reset_waits_while_the_groups_move,
    task_count_changes_keep_every_record_once,
    a_change_while_tasks_are_in_flight_waits_for_them,
    a_new_topic_is_read_as_a_new_supervisor_reads_it,
    a_partition_added_later_is_read_from_its_earliest_offset,
);
