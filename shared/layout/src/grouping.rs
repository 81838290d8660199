//! The body of a datasource's `grouping` item: how its partitions are grouped into tasks
//! (`partition % taskCount`, per topic), from which topic or topic pattern, and a change of
//! either under way. A pattern's topics are numbered in the order they are found, and topic
//! `t`'s partition `p` is in group `t * taskCount + p % taskCount`: a group reads one topic,
//! and a topic's number never changes within an epoch (the list is only appended to).
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

/// Most topics a pattern reads: those found beyond are left out (and said so by each pass).
pub const MAX_PATTERN_TOPICS: usize = 1_000;

/// A topic a pattern's epoch reads, numbered by its place in [`GroupingItem::topics`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FoundTopic {
    /// The topic.
    pub name: String,
    /// Its partitions when the epoch first read its topics (they start where
    /// `useEarliestOffset` says); empty for a topic found later, whose partitions all start
    /// at their earliest offset. `None`: not read since a reset.
    pub initial_partitions: Option<Vec<i32>>,
}

/// The body of the `grouping` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupingItem {
    /// The active grouping's number: 1 first, one more after each change.
    pub epoch: u64,
    /// Partition groups (`taskCount`) of the active grouping.
    pub task_count: u32,
    /// The topic the active grouping reads; with `pattern`, the pattern its topics match.
    pub topic: String,
    /// Whether `topic` is a `topicPattern`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pattern: bool,
    /// With a pattern: the topics read, in the order found. Only appended to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topics: Vec<FoundTopic>,
    /// The first task number of the epoch: task numbers never repeat within a group number.
    pub first_seq: u64,
    /// Partitions the topic had when the epoch first read it (`None`: not read yet). They start
    /// where `useEarliestOffset` says; a partition found later starts at its earliest offset,
    /// so nothing written to it before it was found is skipped (as Druid does). With a pattern,
    /// empty once the epoch read its topics (each topic's are in [`FoundTopic`]).
    pub initial_partitions: Option<Vec<i32>>,
    /// Row counters of the tasks published under earlier epochs.
    #[serde(default)]
    pub earlier_totals: MeterTotals,
    /// A change to another grouping, under way.
    #[serde(default)]
    pub change: Option<GroupingChange>,
}

impl GroupingItem {
    /// The first epoch, for `task_count` groups reading `topic` (a pattern with `pattern`).
    pub fn new(task_count: u32, topic: &str, pattern: bool) -> Self {
        Self {
            epoch: first_epoch(),
            task_count,
            topic: topic.into(),
            pattern,
            topics: Vec::new(),
            first_seq: 1,
            initial_partitions: None,
            earlier_totals: MeterTotals::default(),
            change: None,
        }
    }

    /// The group of topic number `topic`'s `partition`: `topic * taskCount + partition %
    /// taskCount` (`partition % taskCount` for a single topic, number 0).
    pub fn group_of(&self, topic: usize, partition: i32) -> u32 {
        (topic as u32)
            .saturating_mul(self.task_count.max(1))
            .saturating_add(partition_group(partition, self.task_count))
    }

    /// The topics read, numbered by place: the topic, or the pattern's topics found so far.
    pub fn topic_names(&self) -> Vec<&str> {
        match self.pattern {
            true => self.topics.iter().map(|t| t.name.as_str()).collect(),
            false => vec![self.topic.as_str()],
        }
    }

    /// The topic group `group` reads, if any yet.
    pub fn topic_of_group(&self, group: u32) -> Option<&str> {
        self.topic_names().get((group / self.task_count.max(1)) as usize).copied()
    }

    /// The partitions topic number `topic` had when the epoch first read it.
    pub fn initial_partitions_of(&self, topic: usize) -> &[i32] {
        match self.pattern {
            true => self.topics.get(topic).and_then(|t| t.initial_partitions.as_deref()).unwrap_or_default(),
            false => self.initial_partitions.as_deref().unwrap_or_default(),
        }
    }

    /// Whether `(task_count, topic, pattern)` is the grouping in force or the one being moved to.
    pub fn aims_at(&self, task_count: u32, topic: &str, pattern: bool) -> bool {
        match &self.change {
            Some(c) => c.task_count == task_count && c.topic == topic && c.pattern == pattern,
            None => self.task_count == task_count && self.topic == topic && self.pattern == pattern,
        }
    }

    /// The item after a read of the topics (topic -> its partitions), `None` when nothing
    /// changes: the first read records the partitions each topic has (they start where
    /// `useEarliestOffset` says); a pattern's topics found later are appended, their partitions
    /// to start at their earliest offset.
    pub fn with_topics_read(&self, found: &BTreeMap<String, Vec<i32>>) -> Option<Self> {
        let first_read = self.initial_partitions.is_none();
        let mut next = self.clone();
        if !self.pattern {
            next.initial_partitions = Some(found.get(&self.topic).cloned().unwrap_or_default());
            return first_read.then_some(next);
        }
        next.initial_partitions = Some(Vec::new());
        for t in next.topics.iter_mut().filter(|t| t.initial_partitions.is_none()) {
            t.initial_partitions = found.get(&t.name).filter(|_| first_read).cloned().or(Some(Vec::new()));
        }
        for (name, partitions) in found {
            if !self.topics.iter().any(|t| &t.name == name) && next.topics.len() < MAX_PATTERN_TOPICS {
                let initial = if first_read { partitions.clone() } else { Vec::new() };
                next.topics.push(FoundTopic { name: name.clone(), initial_partitions: Some(initial) });
            }
        }
        (next != *self).then_some(next)
    }

    /// The grouping after the change: the next epoch, from the snapshot.
    pub fn next_epoch(&self, change: &GroupingChange, snapshot: &GroupingSnapshot) -> Self {
        let mut earlier_totals = self.earlier_totals;
        earlier_totals.merge(&snapshot.totals);
        let same_topic = change.topic == self.topic && change.pattern == self.pattern;
        Self {
            epoch: self.epoch + 1,
            task_count: change.task_count,
            topic: change.topic.clone(),
            pattern: change.pattern,
            topics: if same_topic { self.topics.clone() } else { Vec::new() },
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
    /// Topic (or pattern) to move to.
    pub topic: String,
    /// Whether `topic` is a pattern.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pattern: bool,
    /// Taken once every task of the epoch finished.
    pub snapshot: Option<GroupingSnapshot>,
}

/// The drained epoch's final state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupingSnapshot {
    /// Per partition of topic number 0, the committed offset.
    pub committed: BTreeMap<i32, i64>,
    /// With a pattern, per partition of each later topic (by number), the committed offset.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub later_topics: BTreeMap<u32, BTreeMap<i32, i64>>,
    /// The next task number: above every task number of every group so far.
    pub next_seq: u64,
    /// Row counters of the epoch's published tasks.
    pub totals: MeterTotals,
}

impl GroupingSnapshot {
    /// The committed offsets of topic number `topic`.
    pub fn committed_of(&self, topic: u32) -> Option<&BTreeMap<i32, i64>> {
        match topic {
            0 => Some(&self.committed),
            t => self.later_topics.get(&t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_epoch_starts_after_every_task_number_and_keeps_the_totals() {
        let mut g = GroupingItem::new(1, "t", false);
        g.initial_partitions = Some(vec![0, 1]);
        g.earlier_totals.processed = 5;
        let change = GroupingChange { task_count: 3, topic: "t".into(), pattern: false, snapshot: None };
        let totals = MeterTotals { processed: 7, ..MeterTotals::default() };
        let snapshot =
            GroupingSnapshot { committed: BTreeMap::new(), later_topics: BTreeMap::new(), next_seq: 42, totals };
        let next = g.next_epoch(&change, &snapshot);
        assert_eq!((next.epoch, next.task_count, next.first_seq), (2, 3, 42));
        assert_eq!(next.earlier_totals.processed, 12);
        assert_eq!(next.initial_partitions, Some(vec![0, 1]), "same topic: partitions found later stay later");
        let moved = g.next_epoch(&GroupingChange { topic: "u".into(), ..change }, &snapshot);
        assert_eq!(moved.initial_partitions, None, "a new topic is read afresh");
        assert!(g.aims_at(1, "t", false) && !g.aims_at(3, "t", false) && !g.aims_at(1, "t", true));
    }

    #[test]
    fn a_patterns_topics_number_its_groups_by_place() {
        let mut g = GroupingItem::new(3, "t-.*", true);
        assert_eq!(g.topic_of_group(0), None, "no topic found yet");
        let found = |name: &str| FoundTopic { name: name.into(), initial_partitions: Some(vec![]) };
        g.topics = vec![found("t-b"), found("t-a")];
        assert_eq!((g.group_of(0, 4), g.group_of(1, 0), g.group_of(1, 5)), (1, 3, 5));
        assert_eq!((g.topic_of_group(2), g.topic_of_group(3), g.topic_of_group(6)), (Some("t-b"), Some("t-a"), None));
        let single = GroupingItem::new(3, "t", false);
        let read = |pairs: &[(&str, &[i32])]| -> BTreeMap<String, Vec<i32>> {
            pairs.iter().map(|(n, p)| (n.to_string(), p.to_vec())).collect()
        };
        let first = single.with_topics_read(&read(&[("t", &[0, 1])])).expect("first read");
        assert_eq!(first.initial_partitions, Some(vec![0, 1]));
        assert_eq!(first.with_topics_read(&read(&[("t", &[0, 1, 2])])), None, "later partitions start earliest");
        assert_eq!((single.group_of(0, 4), single.topic_of_group(2)), (1, Some("t")));
    }

    #[test]
    fn a_pattern_keeps_its_topics_in_the_order_found() {
        let read = |pairs: &[(&str, &[i32])]| -> BTreeMap<String, Vec<i32>> {
            pairs.iter().map(|(n, p)| (n.to_string(), p.to_vec())).collect()
        };
        let g = GroupingItem::new(2, "t-.*", true);
        let first = g.with_topics_read(&read(&[("t-b", &[0, 1]), ("t-a", &[0])])).expect("first read");
        let names: Vec<_> = first.topics.iter().map(|t| (t.name.as_str(), t.initial_partitions.clone())).collect();
        assert_eq!(names, vec![("t-a", Some(vec![0])), ("t-b", Some(vec![0, 1]))]);
        assert_eq!(first.initial_partitions, Some(vec![]));
        assert_eq!(first.with_topics_read(&read(&[("t-b", &[0, 1, 2])])), None, "a topic gone keeps its number");
        let later = first.with_topics_read(&read(&[("t-0", &[0]), ("t-a", &[0])])).expect("a topic found");
        assert_eq!(later.topic_names(), vec!["t-a", "t-b", "t-0"], "appended, never renumbered");
        assert_eq!(later.initial_partitions_of(2), &[] as &[i32], "found later: read from its earliest offset");
        let mut reset = later.clone();
        reset.initial_partitions = None;
        reset.topics.iter_mut().for_each(|t| t.initial_partitions = None);
        let again = reset.with_topics_read(&read(&[("t-b", &[0, 1])])).expect("read after a reset");
        assert_eq!(again.topic_names(), later.topic_names());
        assert_eq!((again.initial_partitions_of(0), again.initial_partitions_of(1)), (&[] as &[i32], &[0, 1][..]));
        let many: BTreeMap<String, Vec<i32>> =
            (0..MAX_PATTERN_TOPICS + 5).map(|i| (format!("t-{i:05}"), vec![0])).collect();
        let capped = g.with_topics_read(&many).expect("first read");
        assert_eq!(capped.topics.len(), MAX_PATTERN_TOPICS, "group numbers stay bounded");
    }
}
