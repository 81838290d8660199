//! The replaces as a reader of the timeline sees them ([`crate::replace`] writes them): the
//! counter is read first, then the `replace#` items. A replace numbered at or above the
//! counter as read began after it and counts as unpublished in full; one below it and not
//! found was cleaned up, which happens only after its segments were marked visible and the
//! segments it replaced deleted.

use crate::datasource::{parse_body, DatasourceError};
use crate::keys::{datasource_pk, REPLACE_COUNTER_SK, REPLACE_PREFIX};
use crate::layout::replace::{ReplaceCounter, ReplaceItem, ReplaceState};
use crate::layout::timeline::SegmentRecord;
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

    /// Whether the segment written by replace `id` is visible as far as its replace goes: it
    /// was read published, or it was cleaned up (numbered below the counter, not found) after
    /// its segments were marked visible.
    pub fn written_visible(&self, id: u64, record: &SegmentRecord) -> bool {
        if id >= self.next {
            return false;
        }
        match self.states.get(&id) {
            Some(state) => *state == ReplaceState::Published,
            None => record.visible,
        }
    }
}
