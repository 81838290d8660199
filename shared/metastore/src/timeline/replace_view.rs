//! The replaces as a reader of the timeline sees them (`sluice-pipeline`'s replace module
//! writes them): the counter is read first, then the `replace#` items. A replace numbered at
//! or above the counter as read began after it and counts as unpublished in full; one below it
//! and not found was cleaned up, which happens only after its segments were marked visible and
//! the segments it replaced deleted.

use crate::datasource::{parse_body, DatasourceError};
use sluice_layout::keys::{datasource_pk, REPLACE_COUNTER_SK, REPLACE_PREFIX};
use sluice_layout::replace::{ReplaceCounter, ReplaceItem, ReplaceState};
use sluice_layout::task::TaskId;
use sluice_layout::timeline::SegmentRecord;
use sluice_store::metadata::MetadataStore;
use std::collections::{HashMap, HashSet};

/// The replaces as a reader saw them, read before the segment records.
#[derive(Debug, Clone, Default)]
pub struct ReplaceView {
    /// Replaces numbered at or above this began after the view was read.
    next: u64,
    /// The replaces read (numbered below `next`), by number.
    states: HashMap<u64, ReplaceState>,
    /// The sort keys of the segments published replaces replaced.
    replaced: HashSet<String>,
}

impl ReplaceView {
    /// Reads the counter, then every replace item.
    pub async fn read(meta: &dyn MetadataStore, datasource: &str) -> Result<Self, DatasourceError> {
        let pk = datasource_pk(datasource);
        let next = match meta.get(&pk, REPLACE_COUNTER_SK).await? {
            Some(item) => parse_body::<ReplaceCounter>(datasource, &item)?.next,
            None => 0,
        };
        let mut view = ReplaceView { next, ..Default::default() };
        for item in meta.query(&pk, REPLACE_PREFIX).await? {
            let r: ReplaceItem = parse_body(datasource, &item)?;
            if r.id >= next {
                continue;
            }
            if r.state == ReplaceState::Published {
                view.replaced.extend(r.replaces);
            }
            view.states.insert(r.id, r.state);
        }
        Ok(view)
    }

    /// Whether a published replace replaced the record.
    pub fn replaced(&self, record: &SegmentRecord) -> bool {
        self.replaced.contains(&record.sk())
    }

    /// Whether `record` is visible: its writer published it (a compaction's as this view read
    /// its replace; a task's as `task_published` says, from the task states the reader read)
    /// and no published replace names it.
    pub fn visible(&self, record: &SegmentRecord, task_published: impl FnOnce(&TaskId) -> bool) -> bool {
        let written = match (&record.task, record.replace) {
            (_, Some(id)) => self.written_visible(id, record),
            (Some(task), None) => task_published(task),
            (None, None) => false,
        };
        written && !self.replaced(record)
    }

    /// Whether the segment written by replace `id` is visible as far as its replace goes: it
    /// was read published, or it was cleaned up (numbered below the counter, not found) after
    /// its segments were marked visible.
    fn written_visible(&self, id: u64, record: &SegmentRecord) -> bool {
        if id >= self.next {
            return false;
        }
        match self.states.get(&id) {
            Some(state) => *state == ReplaceState::Published,
            None => record.visible,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_format::time::Interval;

    fn record(partition: u32, replace: Option<u64>, visible: bool) -> SegmentRecord {
        SegmentRecord {
            interval: Interval::new(0, 3_600_000),
            version: "v".into(),
            partition,
            key: format!("k{partition}"),
            num_rows: 1,
            num_bytes: 1,
            dimensions: Vec::new(),
            metrics: Vec::new(),
            task: None,
            replace,
            merge: String::new(),
            compaction_state: None,
            visible,
            summary: None,
        }
    }

    #[test]
    fn a_replace_counts_as_its_item_read_says_or_as_cleaned_up_or_as_not_begun() {
        let old = record(0, None, true);
        let view = ReplaceView {
            next: 3,
            states: HashMap::from([(0, ReplaceState::Published), (1, ReplaceState::Running)]),
            replaced: HashSet::from([old.sk()]),
        };
        assert!(view.replaced(&old) && !view.replaced(&record(1, None, true)));
        // Replace 0 read published; 1 running (marked or not); 2 not found below the counter:
        // cleaned up, so its marked segments are visible; 3 and above began after the read.
        assert!(view.written_visible(0, &record(5, Some(0), false)));
        assert!(!view.written_visible(1, &record(6, Some(1), true)), "state as read decides, not the mark");
        assert!(
            view.written_visible(2, &record(7, Some(2), true)) && !view.written_visible(2, &record(8, Some(2), false))
        );
        assert!(!view.written_visible(3, &record(9, Some(3), true)), "begun after the read: unpublished in full");
        // The whole rule: a task's record as its task was read, a compaction's as its replace,
        // and neither when a published replace names it.
        let task = TaskId { datasource: "w".into(), group: 0, seq: 1 };
        let by_task = |p| SegmentRecord { task: Some(task.clone()), ..record(p, None, true) };
        assert!(!view.visible(&by_task(0), |_| true), "replaced: hidden whatever its task");
        assert!(view.visible(&by_task(1), |t| *t == task) && !view.visible(&by_task(1), |_| false));
        assert!(view.visible(&record(5, Some(0), false), |_| false), "a compaction's follows its replace");
    }
}
