//! The bodies of the items that let a reader find a datasource's records by interval and keep
//! its timeline by what changed: the head (`timeline`), written by every transaction that
//! changes what is visible, and the change log (`tlog#<version>`), one entry per such
//! transaction, written in it.
//!
//! The head's store version is the datasource's timeline version: it moves by one with each
//! visibility change, and the entry of version `v` says what changed from `v - 1` to `v`. The
//! head also bounds the length of every visible record (`longest`), so that the records
//! overlapping `[lo, hi)` are among those starting in `[lo - longest, hi)`, and holds the last
//! task published per group (`frontier`).

use crate::task::TaskId;
use serde::{Deserialize, Serialize};
use sluice_format::time::Interval;
use std::collections::BTreeMap;

/// Entries the log keeps at most: the transaction that writes entry `v` deletes entry
/// `v - MAX_LOG_ENTRIES`.
pub const MAX_LOG_ENTRIES: u64 = 1_024;

/// Spans an entry keeps at most: beyond, the spans are merged into their hull (a reader then
/// reads more than changed, never less).
pub const MAX_ENTRY_SPANS: usize = 256;

/// Whether the head's bound and frontier can be relied on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HeadState {
    /// Written by every visibility change since `since`, but records made visible before may
    /// be longer than `longest`: readers read the whole timeline.
    #[default]
    Initializing,
    /// Every visible record is at most `longest` long, and the log describes every change
    /// since the head's first version.
    Ready,
}

/// The body of a datasource's `timeline` item.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineHead {
    /// Whether readers may read by interval.
    pub state: HeadState,
    /// When the state was set (ms).
    pub since: i64,
    /// The longest interval of any record made visible while the head was written (ms).
    pub longest: i64,
    /// Per partition group, the last task published.
    pub frontier: BTreeMap<u32, u64>,
}

impl TimelineHead {
    /// The head after a change that made `added` visible, published by `task` if a task's.
    pub fn after(&self, added: &[Interval], task: Option<&TaskId>) -> TimelineHead {
        let mut next = self.clone();
        next.longest = added.iter().map(|i| i.end.saturating_sub(i.start)).fold(next.longest, i64::max);
        if let Some(t) = task {
            let last = next.frontier.entry(t.group).or_insert(t.seq);
            *last = (*last).max(t.seq);
        }
        next
    }
}

/// What one visibility change did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Change {
    /// A task's publish: the records of `task` written by `merge` became visible.
    #[serde(rename_all = "camelCase")]
    Task {
        /// The task.
        task: TaskId,
        /// The merge its publish names.
        merge: String,
    },
    /// A replace's publish (compaction, retention drop, batch task): the records it names
    /// were hidden, and those it wrote (tagged with its number) became visible.
    #[serde(rename_all = "camelCase")]
    Replace {
        /// Its number.
        replace: u64,
        /// The sort keys of the records it hid.
        replaced: Vec<String>,
    },
    /// Anything a reader cannot follow (records copied back by hand, the spec's mode
    /// changed): a reader drops what it kept and reads again.
    Reset,
}

/// The body of a `tlog#<version>` item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeEntry {
    /// The timeline version the change made (the head's version it wrote).
    pub version: u64,
    /// When it was written (ms).
    pub at: i64,
    /// What it did.
    pub change: Change,
    /// The intervals of the records it made visible or hid, merged (at most
    /// [`MAX_ENTRY_SPANS`]).
    pub spans: Vec<Interval>,
}

/// Intervals merged where they overlap or touch, in order; more than [`MAX_ENTRY_SPANS`]
/// become their hull.
pub fn merge_spans(intervals: impl IntoIterator<Item = Interval>) -> Vec<Interval> {
    let out = merge_intervals(intervals);
    if out.len() > MAX_ENTRY_SPANS {
        let hull = Interval::new(out[0].start, out.iter().map(|i| i.end).max().unwrap_or(out[0].end));
        return vec![hull];
    }
    out
}

/// Intervals merged where they overlap or touch, in order, empty ones left out (never into a
/// hull: what covers exactly what was read).
pub fn merge_intervals(intervals: impl IntoIterator<Item = Interval>) -> Vec<Interval> {
    let mut all: Vec<Interval> = intervals.into_iter().filter(|i| i.end > i.start).collect();
    all.sort_unstable_by_key(|i| (i.start, i.end));
    let mut out: Vec<Interval> = Vec::with_capacity(all.len());
    for i in all {
        match out.last_mut() {
            Some(last) if i.start <= last.end => last.end = last.end.max(i.end),
            _ => out.push(i),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_merge_where_they_meet_and_become_a_hull_past_the_bound() {
        let i = Interval::new;
        assert_eq!(merge_spans([i(5, 9), i(0, 3), i(3, 4), i(8, 12), i(20, 20)]), vec![i(0, 4), i(5, 12)]);
        let many: Vec<Interval> = (0..MAX_ENTRY_SPANS as i64 + 1).map(|k| i(k * 10, k * 10 + 1)).collect();
        assert_eq!(merge_spans(many.clone()), vec![i(0, MAX_ENTRY_SPANS as i64 * 10 + 1)]);
        assert_eq!(merge_spans(many[..MAX_ENTRY_SPANS].to_vec()).len(), MAX_ENTRY_SPANS);
    }

    #[test]
    fn a_change_raises_the_bound_and_the_frontier_only() {
        let task = |seq| TaskId { datasource: "d".into(), group: 2, seq };
        let head = TimelineHead { longest: 3_600_000, ..TimelineHead::default() };
        let day = Interval::new(0, 86_400_000);
        let after = head.after(&[day, Interval::new(0, 60_000)], Some(&task(7)));
        assert_eq!(after.longest, 86_400_000);
        assert_eq!(after.frontier, BTreeMap::from([(2, 7)]));
        let again = after.after(&[Interval::new(0, 60_000)], Some(&task(5)));
        assert_eq!((again.longest, again.frontier[&2]), (86_400_000, 7), "neither moves back");
    }
}
