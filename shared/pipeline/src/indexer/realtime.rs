//! Real-time tasks (`sluiceConfig.realtime`): a group's open task reads records as they
//! arrive and checkpoints every `checkpointPeriod`, so what it read becomes queryable within
//! about a period; it closes its ranges at the positions it reached when it has read for
//! `taskDuration` or `maxRecordsPerTask` records (and then plans the group's next open task
//! in the same transaction), when the group's plan is frozen or gained partitions, or after
//! `idleAfter` without a record (and then plans nothing, and marks the group's plan resting:
//! the supervisor's first pass that sees records starts the group again; a group that does not
//! rest has its open task planned by the next pass whether or not records arrived). Argument:
//! `docs/exactly-once.md#real-time-tasks`.

use super::failure::Failure;
use crate::item::{parse_body, to_json};
use crate::keys::{datasource_pk, plan_sk};
use crate::layout::datasource::{PlanItem, SupervisorState};
use crate::task::{TaskId, TaskItem};
use sluice_format::offsets::{OffsetRange, OPEN_END};
use sluice_format::spec::{load_spec_value, DatasourceSpec};
use sluice_format::window::MessageWindow;
use sluice_store::metadata::{Condition, Item, MetadataStore, TxOp};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How often a running open task reads its group's plan (frozen for a grouping change, or
/// partitions added).
const PLAN_CHECK_EVERY: Duration = Duration::from_secs(10);

/// Why an open task closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CloseReason {
    /// It read for `taskDuration` or its record budget: the group goes on with a new task.
    Full,
    /// No record for `idleAfter`: the group rests until the supervisor sees records.
    Idle,
    /// The group's plan changed under it (frozen, or partitions added): the group goes on
    /// with a new task unless frozen.
    PlanChanged {
        /// Whether the plan is frozen.
        frozen: bool,
    },
}

impl CloseReason {
    /// Whether the group's next open task is planned with the close.
    pub fn chains(self) -> bool {
        matches!(self, CloseReason::Full | CloseReason::PlanChanged { frozen: false })
    }
}

/// The real-time settings of an open task's attempt.
#[derive(Debug)]
pub(super) struct Realtime {
    /// How often what was read is persisted and checkpointed.
    pub checkpoint_period: Duration,
    idle_after: Duration,
    closes_at_ms: i64,
    max_records: u64,
    max_bytes: u64,
    next_plan_check: Instant,
}

impl Realtime {
    /// The settings for `task`, when it is open and its spec asks for real time.
    pub fn for_task(spec: &DatasourceSpec, task: &TaskItem) -> Option<Self> {
        let rt = spec.sluice.realtime.as_ref().filter(|_| task.is_open())?;
        let duration = spec.io.task_duration.fixed_millis().unwrap_or(3_600_000).max(1);
        Some(Self {
            checkpoint_period: Duration::from_millis(rt.checkpoint_period_ms().max(1) as u64),
            // An idle supervisor runs no task: an open task ends no later than it goes idle.
            idle_after: Duration::from_millis(idle_after_ms(spec, rt).max(1) as u64),
            closes_at_ms: task.started_ms.unwrap_or(task.created_ms).saturating_add(duration),
            max_records: spec.sluice.max_records_per_task,
            max_bytes: spec.sluice.max_bytes_per_task,
            next_plan_check: Instant::now() + PLAN_CHECK_EVERY,
        })
    }

    /// Whether the task closes now: `read` records (`bytes` of them) read in all, the last
    /// one `idle` ago.
    pub fn due(&self, now_ms: i64, read: u64, bytes: u64, idle: Duration) -> Option<CloseReason> {
        if now_ms >= self.closes_at_ms || read >= self.max_records || bytes >= self.max_bytes {
            Some(CloseReason::Full)
        } else if idle >= self.idle_after {
            Some(CloseReason::Idle)
        } else {
            None
        }
    }

    /// Reads the group's plan every [`PLAN_CHECK_EVERY`]: a frozen plan, or partitions the task
    /// does not read, close the task.
    pub async fn plan_changed(
        &mut self,
        meta: &dyn MetadataStore,
        task: &TaskItem,
    ) -> Result<Option<CloseReason>, Failure> {
        if Instant::now() < self.next_plan_check {
            return Ok(None);
        }
        self.next_plan_check = Instant::now() + PLAN_CHECK_EVERY;
        let (plan, _) = read_plan(meta, &task.id).await?;
        let more = plan.next_start.keys().any(|p| !task.ranges.iter().any(|r| r.partition == *p));
        Ok((plan.frozen || more).then_some(CloseReason::PlanChanged { frozen: plan.frozen }))
    }
}

/// How long an open task reads without a record before it ends: `idleAfter`, or the spec's
/// `idleConfig.inactiveAfterMillis` when that is shorter.
fn idle_after_ms(spec: &DatasourceSpec, rt: &sluice_format::spec::RealtimeConfig) -> i64 {
    let inactive = spec.io.idle.map(|i| i64::try_from(i.inactive_after_millis).unwrap_or(i64::MAX));
    rt.idle_after_ms().min(inactive.unwrap_or(i64::MAX))
}

/// Records read past the ranges' starts.
pub(super) fn records_read(task: &TaskItem, positions: &BTreeMap<i32, i64>) -> u64 {
    task.ranges.iter().map(|r| (positions.get(&r.partition).copied().unwrap_or(r.start) - r.start).max(0) as u64).sum()
}

/// The writes that go with an open task's closing checkpoint: the group's plan moved past
/// the positions the task reached and, when the close chains, the group's next open task.
#[derive(Debug, Clone)]
pub(super) struct Closing {
    /// The plan write (conditioned on the version read) and the next task's (`Absent`).
    pub ops: Vec<TxOp>,
    /// The next task planned with the close.
    pub next: Option<TaskId>,
}

/// Prepares the close of `task` at `positions`. The plan must still hold the task's open
/// ranges as the group's last (only a replan after a failure or a reset takes them, and both
/// end this attempt's lease first): otherwise the task fails rather than guess.
pub(super) async fn closing(
    meta: &dyn MetadataStore,
    task: &TaskItem,
    positions: &BTreeMap<i32, i64>,
    reason: CloseReason,
    now_ms: i64,
) -> Result<Closing, Failure> {
    let (mut plan, version) = read_plan(meta, &task.id).await?;
    let ours = plan.epoch == task.epoch
        && plan.next_seq == task.id.seq + 1
        && task.ranges.iter().filter(|r| r.is_open()).all(|r| plan.next_start.get(&r.partition) == Some(&OPEN_END));
    if !ours {
        return Err(Failure::Fatal(format!(
            "the group's plan no longer holds the task's open ranges (plan: epoch {}, next task {}, starts {:?})",
            plan.epoch, plan.next_seq, plan.next_start
        )));
    }
    for r in task.ranges.iter().filter(|r| r.is_open()) {
        plan.next_start.insert(r.partition, positions.get(&r.partition).copied().unwrap_or(r.start));
    }
    // Idle, the group rests: the supervisor plans its next open task once records arrive.
    plan.resting = reason == CloseReason::Idle;
    let mut next = None;
    let mut ops = Vec::new();
    if reason.chains() && !plan.frozen {
        if let Some(spec_json) = chained_spec(meta, &task.id).await? {
            let spec = load_spec_value(spec_json.clone()).map_err(|e| Failure::Fatal(e.to_string()))?.spec;
            let id = TaskId { datasource: task.id.datasource.clone(), group: task.id.group, seq: plan.next_seq };
            let ranges: Vec<OffsetRange> = plan
                .next_start
                .iter()
                .map(|(&partition, &start)| OffsetRange { partition, start, end: OPEN_END })
                .collect();
            let window = MessageWindow::new(&spec.io, now_ms);
            let mut item = TaskItem::planned(id.clone(), spec_json, &task.topic, ranges, window, now_ms);
            item.epoch = plan.epoch;
            plan.next_seq += 1;
            plan.next_start.values_mut().for_each(|s| *s = OPEN_END);
            ops.push(TxOp::Put { item: Item::new(id.pk(), id.sk(), to_json(&item)), condition: Condition::Absent });
            next = Some(id);
        }
    }
    let plan_item = Item::new(datasource_pk(&task.id.datasource), plan_sk(task.id.group), to_json(&plan));
    ops.insert(0, TxOp::Put { item: plan_item, condition: Condition::Version(version) });
    Ok(Closing { ops, next })
}

/// The spec the next open task runs with: the datasource's current one, while it runs and
/// still asks for real time.
async fn chained_spec(meta: &dyn MetadataStore, id: &TaskId) -> Result<Option<serde_json::Value>, Failure> {
    let (item, _) = crate::datasource::load(meta, &id.datasource).await.map_err(|e| Failure::store(id, e))?;
    let realtime = load_spec_value(item.spec.clone()).is_ok_and(|s| s.spec.sluice.realtime.is_some());
    Ok((item.state == SupervisorState::Running && realtime).then_some(item.spec))
}

async fn read_plan(meta: &dyn MetadataStore, id: &TaskId) -> Result<(PlanItem, u64), Failure> {
    let (pk, sk) = (datasource_pk(&id.datasource), plan_sk(id.group));
    let item = meta
        .get(&pk, &sk)
        .await
        .map_err(|e| Failure::store(id, e.into()))?
        .ok_or_else(|| Failure::Fatal(format!("the plan of group {} is missing", id.group)))?;
    let plan = parse_body::<PlanItem>(&id.datasource, &item).map_err(|e| Failure::Fatal(e.to_string()))?;
    Ok((plan, item.version))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::indexer::MessageWindow;

    #[test]
    fn the_task_duration_counts_from_the_first_claim() {
        let path = format!("{}/../../data/specs/wikipedia-kafka-supervisor.json", env!("CARGO_MANIFEST_DIR"));
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("spec")).expect("spec JSON");
        json["ioConfig"]["taskDuration"] = "PT2S".into();
        json["sluiceConfig"] = serde_json::json!({"realtime": {"checkpointPeriod": "PT0.1S", "idleAfter": "PT60S"}});
        let spec = load_spec_value(json.clone()).expect("spec").spec;
        let id = TaskId { datasource: "wikipedia".into(), group: 0, seq: 1 };
        let open = vec![OffsetRange { partition: 0, start: 0, end: OPEN_END }];
        let mut task = TaskItem::planned(id, serde_json::json!({}), "t", open, MessageWindow::default(), 0);
        // Handed to an indexer 10 s after it was planned, five times its duration.
        task.claim(10_000, 20_000).expect("claim");
        let rt = Realtime::for_task(&spec, &task).expect("an open real-time task");
        let quiet = Duration::ZERO;
        assert_eq!(rt.due(10_500, 0, 0, quiet), None, "it reads for its duration first");
        assert_eq!(rt.due(12_000, 0, 0, quiet), Some(CloseReason::Full));
        assert_eq!(rt.due(10_500, 0, 0, Duration::from_secs(30)), None, "idleAfter is a minute");
        // idleConfig's shorter inactiveAfterMillis ends an open task when the supervisor goes idle.
        json["ioConfig"]["idleConfig"] = serde_json::json!({"enabled": true, "inactiveAfterMillis": 20_000});
        let spec = load_spec_value(json).expect("spec").spec;
        let rt = Realtime::for_task(&spec, &task).expect("an open real-time task");
        assert_eq!(rt.due(10_500, 0, 0, Duration::from_secs(20)), Some(CloseReason::Idle));
        assert_eq!(rt.due(10_500, 0, 0, Duration::from_secs(19)), None);
    }
}
