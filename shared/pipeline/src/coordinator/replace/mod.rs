//! The replace protocol: segments made invisible and, for a compaction, others made visible in
//! their place, in one conditional transaction, while tasks keep appending
//! (`docs/exactly-once.md#compaction-and-retention-replace`).
//!
//! ```text
//!  begin     replaces Version(v) -> next + 1, replace#n Absent: Running, the sks it replaces
//!  write     seg# Absent, invisible, tagged replace n            (compaction only)
//!  publish   replace#n Version(w) -> Published,
//!            guard#s Version(read before the timeline) | Absent   per start s replaced
//!  mark      seg# of replace n -> visible                        (after the publish)
//!  cleanup   after the grace: replaced seg# + objects deleted, then replace#n
//! ```
//!
//! Readers see replaces through [`ReplaceView`] (`sluice-metastore`'s, re-exported here).

mod cleanup;
mod written;
pub use cleanup::clean_up;
pub use written::{give_up, newer_version};

use crate::item::{parse_body, to_json, DatasourceError};
use crate::keys::{datasource_pk, guard_sk, replace_sk, GUARD_PREFIX, REPLACE_COUNTER_SK};
pub use crate::layout::replace::{
    GuardItem, ReplaceCounter, ReplaceItem, ReplaceKind, ReplaceState, MAX_GUARDS, MAX_REPLACED,
};
use crate::layout::timeline::SegmentRecord;
use sluice_format::time::Interval;
use sluice_layout::timeline_log::Change;
use sluice_metastore::timeline::head::transact_visible;
pub use sluice_metastore::timeline::replace_view::ReplaceView;
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore, TxOp};
use sluice_store::storage::StorageError;
use std::collections::{BTreeMap, BTreeSet};

/// How long a replace may run before cleanup may abandon it (Lambda's 15-minute limit); its
/// writer stops writing by then.
pub const MAX_REPLACE_RUN_MS: i64 = 15 * 60_000;

/// Why a replace step (a compaction pass, cleanup) stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReplaceError {
    /// The metadata store failed, or an item is malformed.
    #[error(transparent)]
    Metadata(#[from] DatasourceError),
    /// Deep storage failed.
    #[error("segment {object}: {source}")]
    Storage {
        /// The object.
        object: String,
        /// The error.
        source: StorageError,
    },
}

impl From<MetaError> for ReplaceError {
    fn from(e: MetaError) -> Self {
        ReplaceError::Metadata(e.into())
    }
}

/// A datasource's guards by start time: the version read (`None`: absent).
#[derive(Debug, Clone, Default)]
pub struct Guards(BTreeMap<i64, u64>);

impl Guards {
    /// Reads every guard of the datasource. Read before the timeline a replace is chosen from.
    pub async fn read(meta: &dyn MetadataStore, datasource: &str) -> Result<Self, DatasourceError> {
        let mut out = BTreeMap::new();
        for item in meta.query(&datasource_pk(datasource), GUARD_PREFIX).await? {
            let g: GuardItem = parse_body(datasource, &item)?;
            out.insert(g.start, item.version);
        }
        Ok(Guards(out))
    }

    fn condition(&self, start: i64) -> Condition {
        self.0.get(&start).map_or(Condition::Absent, |&v| Condition::Version(v))
    }

    /// The write of the guard of `start` by replace `id`, conditioned on its version as read:
    /// for a start no replaced segment has (an overwrite of a chunk with none), so that two
    /// replaces of one chunk never both publish.
    pub fn bump(&self, datasource: &str, start: i64, id: u64) -> TxOp {
        let guard = GuardItem { start, last_replace: id };
        TxOp::Put {
            item: Item::new(datasource_pk(datasource), guard_sk(start), to_json(&guard)),
            condition: self.condition(start),
        }
    }
}

/// A replace begun: its item as written and the item's version.
#[derive(Debug, Clone)]
pub struct Begun {
    /// The item.
    pub item: ReplaceItem,
    /// Its version.
    pub version: u64,
}

/// How a publish ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    /// The replace is visible.
    Done,
    /// Another replace was published over some of the same segments since the guards were
    /// read, or cleanup abandoned this one: nothing changed.
    Conflict(String),
}

/// Begins a replace of the records `replaced` (at most [`MAX_REPLACED`], starting at no more
/// than [`MAX_GUARDS`] instants).
pub async fn begin(
    meta: &dyn MetadataStore,
    datasource: &str,
    kind: ReplaceKind,
    replaced: &[SegmentRecord],
    intervals: Vec<Interval>,
    now_ms: i64,
) -> Result<Begun, DatasourceError> {
    let invalid = |reason: String| DatasourceError::Metadata(MetaError::Invalid(format!("{datasource}: {reason}")));
    if replaced.len() > MAX_REPLACED {
        return Err(invalid(format!("a replace holds at most {MAX_REPLACED} segments, not {}", replaced.len())));
    }
    if starts(replaced).len() > MAX_GUARDS {
        return Err(invalid(format!("a replace covers at most {MAX_GUARDS} segment start times")));
    }
    let pk = datasource_pk(datasource);
    for _ in 0..32 {
        let (counter, condition) = match meta.get(&pk, REPLACE_COUNTER_SK).await? {
            Some(item) => (parse_body::<ReplaceCounter>(datasource, &item)?, Condition::Version(item.version)),
            None => (ReplaceCounter::default(), Condition::Absent),
        };
        let item = ReplaceItem {
            id: counter.next,
            kind,
            state: ReplaceState::Running,
            replaces: replaced.iter().map(SegmentRecord::sk).collect(),
            intervals: intervals.clone(),
            created_ms: now_ms,
            finished_ms: None,
        };
        let next = ReplaceCounter { next: counter.next + 1 };
        let ops = vec![
            TxOp::Put { item: Item::new(&pk, REPLACE_COUNTER_SK, to_json(&next)), condition },
            TxOp::Put { item: Item::new(&pk, replace_sk(item.id), to_json(&item)), condition: Condition::Absent },
        ];
        match meta.transact(ops).await {
            Ok(()) => return Ok(Begun { item, version: 1 }),
            Err(MetaError::TransactionFailed { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(invalid("replace numbers still contended after 32 attempts".into()))
}

/// Publishes a replace of `replaced` by `written` (the records tagged with its number),
/// conditioned on the guards of their start times as read before the timeline they were chosen
/// from, with `also` in the same transaction (a batch task's move to published) and the
/// timeline's head and change entry: any of its own conditions failing is a conflict, and
/// nothing changes; a head moved by another change is read again.
pub async fn publish(
    meta: &dyn MetadataStore,
    datasource: &str,
    begun: &Begun,
    (replaced, written): (&[SegmentRecord], &[SegmentRecord]),
    guards: &Guards,
    now_ms: i64,
    also: Vec<TxOp>,
) -> Result<Published, DatasourceError> {
    let pk = datasource_pk(datasource);
    let item = ReplaceItem { state: ReplaceState::Published, finished_ms: Some(now_ms), ..begun.item.clone() };
    let mut ops = vec![TxOp::Put {
        item: Item::new(&pk, replace_sk(item.id), to_json(&item)),
        condition: Condition::Version(begun.version),
    }];
    ops.extend(starts(replaced).into_iter().map(|start| guards.bump(datasource, start, item.id)));
    let guarded = ops.len();
    ops.extend(also);
    let change = Change::Replace { replace: item.id, replaced: item.replaces.clone() };
    let added: Vec<Interval> = written.iter().map(|r| r.interval).collect();
    let hidden: Vec<Interval> = replaced.iter().map(|r| r.interval).collect();
    match transact_visible(meta, datasource, ops, change, (&added, &hidden), now_ms).await {
        Ok(_) => Ok(Published::Done),
        Err(DatasourceError::Metadata(MetaError::TransactionFailed { index: 0, .. })) => {
            Ok(Published::Conflict(format!("replace {} was abandoned", item.id)))
        }
        Err(DatasourceError::Metadata(MetaError::TransactionFailed { index, .. })) if index < guarded => Ok(
            Published::Conflict(format!("replace {}: another replace was published over the same segments", item.id)),
        ),
        Err(DatasourceError::Metadata(MetaError::TransactionFailed { .. })) => {
            Ok(Published::Conflict(format!("replace {}: what it publishes with changed", item.id)))
        }
        Err(e) => Err(e),
    }
}

/// Marks a running replace abandoned, fenced by the version read: it can no longer publish.
/// Returns the item's new version, or `None` when it changed (published, or abandoned already).
pub async fn abandon(
    meta: &dyn MetadataStore,
    datasource: &str,
    item: &ReplaceItem,
    version: u64,
    now_ms: i64,
) -> Result<Option<u64>, DatasourceError> {
    let abandoned = ReplaceItem { state: ReplaceState::Abandoned, finished_ms: Some(now_ms), ..item.clone() };
    let put = Item::new(datasource_pk(datasource), replace_sk(item.id), to_json(&abandoned));
    match meta.put(put, Condition::Version(version)).await {
        Ok(version) => Ok(Some(version)),
        Err(MetaError::ConditionFailed { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The distinct start times of records.
fn starts(records: &[SegmentRecord]) -> BTreeSet<i64> {
    records.iter().map(|r| r.interval.start).collect()
}
