//! The bodies of the replace protocol's items: `replace#<n>` (one replace: the segments it
//! replaces, its state), `replaces` (the datasource's next replace number) and
//! `guard#<start>` (a count of the replaces published over segments starting at that
//! instant). A compaction replaces segments with fewer, a retention drop with none, a batch
//! task's overwrite with its own and its append nothing; the argument is in
//! `docs/exactly-once.md#compaction-and-retention-replace`.

use serde::{Deserialize, Serialize};
use sluice_format::time::Interval;

/// Segments one replace may replace at most: its item, holding their sort keys, stays far
/// below DynamoDB's 400 KB.
pub const MAX_REPLACED: usize = 1_000;
/// Distinct segment start times one replace may cover: one `guard#` action each in its
/// publish transaction (at most 100 actions).
pub const MAX_GUARDS: usize = 64;

/// What a replace does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ReplaceKind {
    /// Compaction: the replaced segments' rows are in the replace's own segments.
    Compact,
    /// Retention: the replaced segments are dropped.
    Drop,
    /// A batch task appending: its segments join the visible ones, nothing is replaced.
    Append,
    /// A batch task overwriting: its segments replace the visible ones of the chunks it
    /// covers.
    Overwrite,
}

/// Where a replace is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ReplaceState {
    /// Begun: its segments are being written, invisible.
    Running,
    /// Its segments are visible, the replaced ones are not.
    Published,
    /// Given up by cleanup (its writer died or lost): it can no longer publish.
    Abandoned,
}

/// The body of a `replace#` item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplaceItem {
    /// Its number, unique within the datasource.
    pub id: u64,
    /// Compaction or drop.
    pub kind: ReplaceKind,
    /// Where it is.
    pub state: ReplaceState,
    /// The sort keys of the segment records it replaces.
    pub replaces: Vec<String>,
    /// The time chunks its new segments fill (none for a drop).
    pub intervals: Vec<Interval>,
    /// When it began (ms).
    pub created_ms: i64,
    /// When it published or was abandoned (ms).
    pub finished_ms: Option<i64>,
}

/// The body of the `replaces` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplaceCounter {
    /// The next replace number: every replace numbered below it was created before.
    pub next: u64,
}

/// The body of a `guard#` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GuardItem {
    /// The start time it guards.
    pub start: i64,
    /// The last replace published over segments starting then.
    pub last_replace: u64,
}
