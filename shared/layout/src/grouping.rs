//! The body of a datasource's `grouping` item: how its partitions are grouped into tasks
//! (`partition % taskCount`), from which topic, and a change of either under way.
//!
//! ```text
//!  epoch e (taskCount, topic) --spec changes--> change { target }            (draining)
//!     every plan# of epoch e frozen, every task of epoch e finished
//!  --> change { target, snapshot: committed offsets, next task number }       (moving)
//!     plan#/offsets# of epoch e+1 written from the snapshot
//!  --> epoch e+1 (target)                                                     (active)
//! ```
//!
//! `plan#`, `offsets#` and `task#` items carry the epoch they belong to; items of an earlier
//! epoch are history. The argument is in `docs/exactly-once.md`.

use serde::{Deserialize, Serialize};
use sluice_format::meters::MeterTotals;
use std::collections::BTreeMap;

/// The epoch of items written before groupings had epochs.
pub fn first_epoch() -> u64 {
    1
}

/// The group of `partition` among `task_count` groups: `partition % taskCount`, as Druid
/// assigns Kafka partitions to task groups.
pub fn partition_group(partition: i32, task_count: u32) -> u32 {
    partition as u32 % task_count.max(1)
}

/// The body of the `grouping` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupingItem {
    /// The active grouping's number: 1 first, one more after each change.
    pub epoch: u64,
    /// Partition groups (`taskCount`) of the active grouping.
    pub task_count: u32,
    /// The topic the active grouping reads.
    pub topic: String,
    /// The first task number of the epoch: task numbers never repeat within a group number.
    pub first_seq: u64,
    /// Partitions the topic had when the epoch first read it (`None`: not read yet). They start
    /// where `useEarliestOffset` says; a partition found later starts at its earliest offset,
    /// so nothing written to it before it was found is skipped (as Druid does).
    pub initial_partitions: Option<Vec<i32>>,
    /// Row counters of the tasks published under earlier epochs.
    #[serde(default)]
    pub earlier_totals: MeterTotals,
    /// A change to another grouping, under way.
    #[serde(default)]
    pub change: Option<GroupingChange>,
}

impl GroupingItem {
    /// The first epoch, for `task_count` groups reading `topic`.
    pub fn new(task_count: u32, topic: &str) -> Self {
        Self {
            epoch: first_epoch(),
            task_count,
            topic: topic.into(),
            first_seq: 1,
            initial_partitions: None,
            earlier_totals: MeterTotals::default(),
            change: None,
        }
    }

    /// The group of `partition`: `partition % taskCount`.
    pub fn group_of(&self, partition: i32) -> u32 {
        partition_group(partition, self.task_count)
    }

    /// Whether `(task_count, topic)` is the grouping in force or the one being moved to.
    pub fn aims_at(&self, task_count: u32, topic: &str) -> bool {
        match &self.change {
            Some(c) => c.task_count == task_count && c.topic == topic,
            None => self.task_count == task_count && self.topic == topic,
        }
    }

    /// The grouping after the change: the next epoch, from the snapshot.
    pub fn next_epoch(&self, change: &GroupingChange, snapshot: &GroupingSnapshot) -> Self {
        let mut earlier_totals = self.earlier_totals;
        earlier_totals.merge(&snapshot.totals);
        let same_topic = change.topic == self.topic;
        Self {
            epoch: self.epoch + 1,
            task_count: change.task_count,
            topic: change.topic.clone(),
            first_seq: snapshot.next_seq,
            initial_partitions: if same_topic { self.initial_partitions.clone() } else { None },
            earlier_totals,
            change: None,
        }
    }
}

/// A change of `taskCount` or topic: the target, and once the old epoch is drained, its
/// snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupingChange {
    /// `taskCount` to move to.
    pub task_count: u32,
    /// Topic to move to.
    pub topic: String,
    /// Taken once every task of the epoch finished.
    pub snapshot: Option<GroupingSnapshot>,
}

/// The drained epoch's final state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupingSnapshot {
    /// Per partition, the committed offset.
    pub committed: BTreeMap<i32, i64>,
    /// The next task number: above every task number of every group so far.
    pub next_seq: u64,
    /// Row counters of the epoch's published tasks.
    pub totals: MeterTotals,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_epoch_starts_after_every_task_number_and_keeps_the_totals() {
        let mut g = GroupingItem::new(1, "t");
        g.initial_partitions = Some(vec![0, 1]);
        g.earlier_totals.processed = 5;
        let change = GroupingChange { task_count: 3, topic: "t".into(), snapshot: None };
        let totals = MeterTotals { processed: 7, ..MeterTotals::default() };
        let snapshot = GroupingSnapshot { committed: BTreeMap::new(), next_seq: 42, totals };
        let next = g.next_epoch(&change, &snapshot);
        assert_eq!((next.epoch, next.task_count, next.first_seq), (2, 3, 42));
        assert_eq!(next.earlier_totals.processed, 12);
        assert_eq!(next.initial_partitions, Some(vec![0, 1]), "same topic: partitions found later stay later");
        let moved = g.next_epoch(&GroupingChange { topic: "u".into(), ..change }, &snapshot);
        assert_eq!(moved.initial_partitions, None, "a new topic is read afresh");
        assert!(g.aims_at(1, "t") && !g.aims_at(3, "t"));
    }
}
