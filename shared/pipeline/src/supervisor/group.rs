//! One partition group in one supervisor pass: its `plan#` and `offsets#` items created or
//! extended to new partitions, failed tasks handled by replanning from their start, and the
//! next tasks planned. Every write is one conditional transaction, so two supervisors running
//! at once plan each range once: the loser's transaction is cancelled and it moves on. The
//! planning rules themselves (a task's ranges, its record budget, a new partition's start)
//! are pure functions, unit-tested without a store or a broker.

use crate::indexer::MessageWindow;
use crate::item::to_json;
use crate::keys::{datasource_pk, offsets_sk, plan_sk, GROUPING_SK};
use crate::layout::datasource::{OffsetsItem, PlanItem};
use crate::task::{TaskId, TaskItem, TaskState};
use sluice_format::offsets::OPEN_END;
use sluice_format::spec::DatasourceSpec;
use sluice_kafka::{OffsetRange, Watermarks};
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore, TxOp};
use std::collections::BTreeMap;

/// A group's items as read at the start of the pass, with their versions (`None`: absent).
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub datasource: String,
    pub group: u32,
    pub plan: PlanItem,
    pub plan_version: Option<u64>,
    pub offsets: OffsetsItem,
    pub offsets_version: Option<u64>,
    /// The items start in the epoch with this pass (absent, or of another epoch): the first
    /// write checks that the `grouping` item is still at this version, so a supervisor whose
    /// view is stale cannot start a group after a change was recorded (or over a newer epoch).
    pub starts_epoch: Option<u64>,
}

/// What a group's tasks read: its topic, up to its partitions' high watermarks.
#[derive(Clone, Copy)]
pub(crate) struct TopicReads<'a> {
    pub topic: &'a str,
    pub highs: &'a BTreeMap<i32, i64>,
}

/// Where a partition new to its group starts.
pub(crate) struct Starts<'a> {
    /// The topic's watermarks.
    pub marks: &'a BTreeMap<i32, Watermarks>,
    /// `useEarliestOffset`.
    pub use_earliest: bool,
    /// The partitions the epoch found on its first read of the topic.
    pub initial: &'a [i32],
}

impl Starts<'_> {
    /// A partition of the first read starts where `useEarliestOffset` says; a partition found
    /// later (added to the topic since) at its earliest offset, so none of its records is
    /// skipped: Druid's rule for partitions discovered after the supervisor started.
    pub fn start(&self, partition: i32) -> i64 {
        let w = self.marks.get(&partition).copied().unwrap_or(Watermarks { low: 0, high: 0 });
        let use_earliest = self.use_earliest || !self.initial.contains(&partition);
        initial_offset(use_earliest, w.low, w.high)
    }
}

fn condition(version: Option<u64>) -> Condition {
    version.map_or(Condition::Absent, Condition::Version)
}

impl Group {
    fn plan_op(&self) -> TxOp {
        TxOp::Put {
            item: Item::new(datasource_pk(&self.datasource), plan_sk(self.group), to_json(&self.plan)),
            condition: condition(self.plan_version),
        }
    }

    fn offsets_op(&self) -> TxOp {
        TxOp::Put {
            item: Item::new(datasource_pk(&self.datasource), offsets_sk(self.group), to_json(&self.offsets)),
            condition: condition(self.offsets_version),
        }
    }

    /// Applies `ops` (which include this group's item puts); on success the versions move on.
    async fn commit(&mut self, meta: &dyn MetadataStore, ops: Vec<TxOp>) -> Result<bool, MetaError> {
        let touches_plan = ops.iter().any(|o| o.key().1 == plan_sk(self.group));
        let touches_offsets = ops.iter().any(|o| o.key().1 == offsets_sk(self.group));
        match meta.transact(ops).await {
            Ok(()) => {
                if touches_plan {
                    self.plan_version = Some(self.plan_version.map_or(1, |v| v + 1));
                }
                if touches_offsets {
                    self.offsets_version = Some(self.offsets_version.map_or(1, |v| v + 1));
                }
                Ok(true)
            }
            Err(MetaError::TransactionFailed { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Adds the group's partitions that its items do not hold yet (all of them on the first
    /// pass, or after a reset), starting where [`Starts`] says. Returns false when another
    /// supervisor changed the items first.
    pub async fn ensure_partitions(
        &mut self,
        meta: &dyn MetadataStore,
        partitions: &[i32],
        starts: &Starts<'_>,
    ) -> Result<bool, MetaError> {
        let missing: Vec<i32> = partitions
            .iter()
            .copied()
            .filter(|p| !self.offsets.offsets.contains_key(p) || !self.plan.next_start.contains_key(p))
            .collect();
        if missing.is_empty() {
            return Ok(true);
        }
        for p in &missing {
            let committed = *self.offsets.offsets.entry(*p).or_insert_with(|| starts.start(*p));
            self.plan.next_start.entry(*p).or_insert(committed);
        }
        tracing::info!(datasource = self.datasource, group = self.group, ?missing, "partitions added to the group");
        self.write_items(meta).await
    }

    /// Writes the group's `plan#` and `offsets#` as they are now, in one transaction
    /// conditioned on the versions read (and on the grouping's when the items start in the
    /// epoch). Returns false when another writer changed any of them first.
    pub async fn write_items(&mut self, meta: &dyn MetadataStore) -> Result<bool, MetaError> {
        let mut ops = vec![self.plan_op(), self.offsets_op()];
        if let Some(version) = self.starts_epoch {
            ops.push(TxOp::Check {
                pk: datasource_pk(&self.datasource),
                sk: GROUPING_SK.into(),
                condition: Condition::Version(version),
            });
        }
        let written = self.commit(meta, ops).await?;
        if written {
            self.starts_epoch = None;
        }
        Ok(written)
    }

    /// Freezes the group for a grouping change: no task is planned from it any more. The
    /// write moves the `plan#` version, so a supervisor that read it before cannot plan either.
    pub async fn freeze(&mut self, meta: &dyn MetadataStore) -> Result<bool, MetaError> {
        if self.plan.frozen || self.plan_version.is_none() {
            return Ok(true);
        }
        self.plan.frozen = true;
        let ops = vec![self.plan_op()];
        let frozen = self.commit(meta, ops).await?;
        if frozen {
            tracing::info!(datasource = self.datasource, group = self.group, "group frozen for a grouping change");
        }
        Ok(frozen)
    }

    /// Handles the first failed task not handled yet: every other unfinished task of the group
    /// is superseded (failed) and the group is planned again from its committed offsets, as
    /// Druid restarts a group's tasks from the last published offsets. The transaction checks
    /// the offsets' version, so a publish since they were read cancels it. Returns false when
    /// another writer won.
    pub async fn replan_after_failure(
        &mut self,
        meta: &dyn MetadataStore,
        tasks: &mut [(TaskItem, u64)],
        now_ms: i64,
    ) -> Result<bool, MetaError> {
        let handled = self.plan.replanned_after.unwrap_or(0);
        let Some(failed) = tasks
            .iter()
            .filter(|(t, _)| t.id.group == self.group && t.state == TaskState::Failed && t.id.seq > handled)
            .map(|(t, _)| t.clone())
            .min_by_key(|t| t.id.seq)
        else {
            return Ok(true);
        };
        let Some(offsets_version) = self.offsets_version else {
            return Ok(true);
        };
        let before = self.plan.clone();
        self.plan.replanned_after = Some(self.plan.next_seq.saturating_sub(1));
        // The group restarts: a real-time group's next open task is planned at once.
        self.plan.resting = false;
        for (p, start) in self.plan.next_start.iter_mut() {
            if let Some(&committed) = self.offsets.offsets.get(p) {
                *start = committed;
            }
        }
        let mut ops = vec![
            self.plan_op(),
            TxOp::Check {
                pk: datasource_pk(&self.datasource),
                sk: offsets_sk(self.group),
                condition: Condition::Version(offsets_version),
            },
        ];
        let mut superseded = Vec::new();
        for (i, (t, v)) in tasks.iter().enumerate() {
            if t.id.group == self.group && !t.is_finished() {
                let mut t = t.clone();
                t.supersede(&failed.id, now_ms);
                ops.push(TxOp::Put {
                    item: Item::new(t.id.pk(), t.id.sk(), to_json(&t)),
                    condition: Condition::Version(*v),
                });
                superseded.push((i, t));
            }
        }
        tracing::warn!(task = %failed.id, error = ?failed.error, superseded = superseded.len(), "task failed: the group is planned again from its committed offsets");
        if !self.commit(meta, ops).await? {
            self.plan = before;
            return Ok(false);
        }
        for (i, t) in superseded {
            tasks[i] = (t, tasks[i].1 + 1);
        }
        Ok(true)
    }

    /// Plans tasks while the group has records past its planned starts and fewer than
    /// `max_in_flight` unpublished tasks; returns the planned tasks with their versions.
    #[allow(clippy::too_many_arguments)]
    pub async fn plan_tasks(
        &mut self,
        meta: &dyn MetadataStore,
        spec_json: &serde_json::Value,
        spec: &DatasourceSpec,
        reads: TopicReads<'_>,
        mut in_flight: usize,
        max_in_flight: usize,
        now_ms: i64,
    ) -> Result<Vec<(TaskItem, u64)>, MetaError> {
        let mut planned = Vec::new();
        // A group whose open task reads on plans nothing: that task closes its ranges (and, in
        // real time, plans the group's next open task itself).
        if self.plan.frozen || self.plan.next_start.values().any(|&s| s == OPEN_END) {
            return Ok(planned);
        }
        let totals = &self.offsets.totals;
        let (max_records, max_bytes) = (spec.sluice.max_records_per_task, spec.sluice.max_bytes_per_task);
        let budget = record_budget(max_records, max_bytes, totals.processed_bytes, totals.processed);
        while in_flight < max_in_flight {
            let ranges = match spec.sluice.realtime {
                // Real time: one open task over every partition of the group, from where the
                // last range ended, whether or not records arrived
                // (`docs/exactly-once.md#real-time-tasks`).
                Some(_) => open_ranges(&self.plan, reads.highs),
                None => next_ranges(&self.plan.next_start, reads.highs, budget),
            };
            let Some(ranges) = ranges else {
                break;
            };
            let id = TaskId { datasource: self.datasource.clone(), group: self.group, seq: self.plan.next_seq };
            let window = MessageWindow::new(&spec.io, now_ms);
            let mut task =
                TaskItem::planned(id.clone(), spec_json.clone(), reads.topic, ranges.clone(), window, now_ms);
            task.epoch = self.plan.epoch;
            let before = self.plan.clone();
            self.plan.next_seq += 1;
            self.plan.resting = false;
            for r in &ranges {
                self.plan.next_start.insert(r.partition, r.end);
            }
            let ops = vec![
                self.plan_op(),
                TxOp::Put { item: Item::new(id.pk(), id.sk(), to_json(&task)), condition: Condition::Absent },
            ];
            if !self.commit(meta, ops).await? {
                self.plan = before;
                break;
            }
            tracing::info!(task = %id, ?ranges, "planned");
            planned.push((task, 1));
            in_flight += 1;
            if self.plan.next_start.values().any(|&s| s == OPEN_END) {
                break;
            }
        }
        Ok(planned)
    }
}

/// The ranges of the group's next task: for each partition of the group, from where the last
/// planned range ended up to the high watermark, at most `budget / partitions` records each
/// (at least one). `None` when no partition has a record past its planned start.
pub fn next_ranges(
    next_start: &BTreeMap<i32, i64>,
    highs: &BTreeMap<i32, i64>,
    budget: u64,
) -> Option<Vec<OffsetRange>> {
    let per_partition = (budget / next_start.len().max(1) as u64).max(1) as i64;
    let ranges: Vec<OffsetRange> = next_start
        .iter()
        .map(|(&partition, &start)| {
            let high = highs.get(&partition).copied().unwrap_or(start).max(start);
            OffsetRange { partition, start, end: high.min(start.saturating_add(per_partition)) }
        })
        .collect();
    ranges.iter().any(|r| r.end > r.start).then_some(ranges)
}

/// The ranges of a real-time group's next open task: every partition of the group from where
/// its last range ended, to the open end. Planned whether or not records have arrived, as
/// Druid's real-time tasks run from the supervisor's start: on the first pass over a new topic,
/// for groups added or regrouped, after a failure or a reset. `None` only for a group that
/// rests (its last open task ended after `idleAfter` without a record), or has a high watermark
/// below its planned start (a topic deleted and created again: its offsets wait for a reset),
/// while no partition has a record past its planned start: a record past it plans the task all
/// the same (the first pass that sees one wakes a resting group).
pub fn open_ranges(plan: &PlanItem, highs: &BTreeMap<i32, i64>) -> Option<Vec<OffsetRange>> {
    let high = |p: &i32, start: i64| highs.get(p).copied().unwrap_or(start);
    let arrived = plan.next_start.iter().any(|(p, &start)| high(p, start) > start);
    let reset = plan.next_start.iter().any(|(p, &start)| high(p, start) < start);
    if plan.next_start.is_empty() || ((plan.resting || reset) && !arrived) {
        return None;
    }
    Some(plan.next_start.iter().map(|(&partition, &start)| OffsetRange { partition, start, end: OPEN_END }).collect())
}

/// Records one task may read: `maxRecordsPerTask`, and `maxBytesPerTask` divided by the mean
/// record size of the group's published tasks once there are some (`processed_bytes` over
/// `processed` rows).
pub fn record_budget(max_records: u64, max_bytes: u64, processed_bytes: u64, processed: u64) -> u64 {
    if processed == 0 || processed_bytes == 0 {
        return max_records;
    }
    let mean = processed_bytes.div_ceil(processed);
    max_records.min((max_bytes / mean).max(1))
}

/// Where a partition new to the supervisor starts: the earliest offset kept with
/// `useEarliestOffset`, else the high watermark (only records written from now on).
pub fn initial_offset(use_earliest: bool, low: i64, high: i64) -> i64 {
    if use_earliest {
        low
    } else {
        high
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(i32, i64)]) -> BTreeMap<i32, i64> {
        pairs.iter().copied().collect()
    }

    #[test]
    fn plans_from_the_last_planned_end_within_the_budget() {
        let ranges = next_ranges(&map(&[(0, 10), (2, 5)]), &map(&[(0, 1000), (2, 7)]), 100).expect("data");
        assert_eq!(
            ranges,
            vec![OffsetRange { partition: 0, start: 10, end: 60 }, OffsetRange { partition: 2, start: 5, end: 7 }]
        );
        assert_eq!(next_ranges(&map(&[(0, 10)]), &map(&[(0, 10)]), 100), None, "caught up: nothing to plan");
        assert_eq!(
            next_ranges(&map(&[(0, 10)]), &map(&[(0, 3)]), 100),
            None,
            "a high watermark below the planned start (a reset topic) plans nothing"
        );
        let tiny = next_ranges(&map(&[(0, 0), (1, 0), (2, 0)]), &map(&[(0, 9), (1, 9), (2, 9)]), 1).expect("data");
        assert!(tiny.iter().all(|r| r.end - r.start == 1), "at least one record per partition: {tiny:?}");
    }

    #[test]
    fn the_byte_budget_bounds_tasks_once_record_sizes_are_known() {
        assert_eq!(record_budget(1000, 1 << 20, 0, 0), 1000, "no published task yet: the record budget");
        assert_eq!(record_budget(1_000_000, 1 << 20, 2048 * 10, 10), 512, "2 KiB records: 1 MiB holds 512");
        assert_eq!(record_budget(100, 1 << 30, 500, 10), 100);
        assert_eq!(record_budget(100, 10, 1 << 20, 1), 1, "a record over the byte budget still makes a task");
    }

    #[test]
    fn a_real_time_group_plans_its_open_task_before_records_arrive_unless_it_rests() {
        let plan = PlanItem { next_start: map(&[(0, 10), (2, 5)]), ..PlanItem::fresh(1, 1) };
        let open = |p: i32, start: i64| OffsetRange { partition: p, start, end: OPEN_END };
        let quiet = map(&[(0, 10), (2, 5)]);
        assert_eq!(open_ranges(&plan, &quiet), Some(vec![open(0, 10), open(2, 5)]), "no record yet: planned");
        let resting = PlanItem { resting: true, ..plan.clone() };
        assert_eq!(open_ranges(&resting, &quiet), None, "rests after an idle end while nothing arrives");
        let one = map(&[(0, 10), (2, 6)]);
        assert_eq!(open_ranges(&resting, &one), Some(vec![open(0, 10), open(2, 5)]), "a record wakes it");
        assert_eq!(open_ranges(&PlanItem::fresh(1, 1), &quiet), None, "a group without partitions");
        let recreated = map(&[(0, 3), (2, 5)]);
        assert_eq!(open_ranges(&plan, &recreated), None, "a high watermark below the start waits for a reset");
    }

    #[test]
    fn new_partitions_start_as_use_earliest_offset_says() {
        assert_eq!(initial_offset(true, 4, 9), 4);
        assert_eq!(initial_offset(false, 4, 9), 9);
    }
}
