//! The bodies of a batch task's items: `batch#<id>` under its datasource (its state, and once
//! published what it published), `batchtasks/<id>` (which datasource an id writes, and the
//! digest of its spec), and under `batch#<id>` its `spec` and one `split#<n>` per indexer
//! invocation (the pieces of input it reads, the hydrants it persisted). The publish is one
//! replace (`docs/exactly-once.md#batch-tasks`) whose transaction moves the task item from
//! running to published: a task publishes once, whatever the retries. Beside them, under
//! `batchslots`: `slot#<k>`, the deployment's batch splits in flight (handed over or running),
//! one slot each, and `wait#<task id>`, a task whose splits wait for slots (the oldest first).

use serde::{Deserialize, Serialize};
use sluice_format::meters::{MeterTotals, ParseException};

/// Druid's type of the tasks Sluice runs from a batch spec.
pub const BATCH_TASK_TYPE: &str = "index_parallel";
/// Hydrants one split may persist: its item lists them.
pub const MAX_SPLIT_HYDRANTS: usize = 1_000;
/// Parse exceptions a split keeps for the task's report.
pub const MAX_SPLIT_EXCEPTIONS: usize = 20;
/// Attempts at a split before the task fails.
pub const MAX_SPLIT_ATTEMPTS: u32 = 5;
/// How long an attempt at a split holds it by default: Lambda's 15 minutes and a margin. An
/// attempt still running then is taken over by the next.
pub const SPLIT_LEASE_MS: i64 = 16 * 60_000;

/// Where a batch task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum BatchState {
    /// Its splits are being indexed, or it is being published.
    Running,
    /// Its segments are visible (and, for an overwrite, the replaced ones are not).
    Published,
    /// It failed and published nothing.
    Failed,
}

/// The body of a `batch#<id>` item, under the datasource's key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchTaskItem {
    /// The task id.
    pub id: String,
    /// The datasource it writes.
    pub datasource: String,
    /// Where it is.
    pub state: BatchState,
    /// Its splits, `split#0 ..`.
    pub splits: u32,
    /// `appendToExisting`.
    pub append: bool,
    /// `maxNumConcurrentSubTasks`.
    pub max_concurrent: u32,
    /// When it was submitted (ms).
    pub created_ms: i64,
    /// When it published or failed (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_ms: Option<i64>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The replace that published it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace: Option<u64>,
    /// Segments it published.
    #[serde(default)]
    pub segments: u64,
    /// Segments its overwrite replaced.
    #[serde(default)]
    pub replaced: u64,
    /// Its row meters, once published or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meters: Option<MeterTotals>,
    /// Publishes begun: past [`MAX_PUBLISH_ATTEMPTS`] the task fails.
    #[serde(default)]
    pub publish_attempts: u32,
}

/// Publishes of one task begun at most (crashed, timed out, or given up to a conflict) before
/// it fails: a publish that can never finish does not run forever.
pub const MAX_PUBLISH_ATTEMPTS: u32 = 10;

/// The body of a `batchtasks/<id>` item: the claim on a task id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchIdItem {
    /// The datasource the task writes.
    pub datasource: String,
    /// A digest of the spec submitted: a resubmission of the same spec is the same task.
    pub digest: String,
}

/// The body of a batch task's `spec` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchSpecItem {
    /// The spec as submitted.
    pub spec: serde_json::Value,
}

/// Where a piece of input is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PieceSource {
    /// The spec's `inline` data.
    Inline,
    /// A file of the indexer's machine.
    Local {
        /// Its path.
        path: String,
    },
    /// An S3 object.
    S3 {
        /// Its bucket.
        bucket: String,
        /// Its key.
        key: String,
    },
}

/// A piece of input: a whole file or object, or a byte range of one. A range holds the
/// records that start within it (the first partial line belongs to the range before).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Piece {
    /// Where.
    pub source: PieceSource,
    /// The first byte.
    pub start: u64,
    /// One past the last byte (`None`: to the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<u64>,
    /// Gzipped: read whole, decompressed.
    #[serde(default)]
    pub gzip: bool,
    /// Bytes of the file when the task was planned: nothing past them is read, however the
    /// file grew since (`None`: an item of an earlier release, read to the file's end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The object's version when the task was planned (S3's ETag): every read asks for it, so
    /// an object replaced since fails its split instead of being read as a mix of the two
    /// (`None`: a local file, read to its planned size, or an item of an earlier release).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl Piece {
    /// What the piece is called in errors and parse exceptions.
    pub fn name(&self) -> String {
        let whole = match &self.source {
            PieceSource::Inline => "inline data".to_string(),
            PieceSource::Local { path } => path.clone(),
            PieceSource::S3 { bucket, key } => format!("s3://{bucket}/{key}"),
        };
        match self.end {
            Some(end) => format!("{whole} bytes {}..{end}", self.start),
            None if self.start > 0 => format!("{whole} from byte {}", self.start),
            None => whole,
        }
    }
}

/// Where a split is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SplitState {
    /// Waiting for an indexer.
    Pending,
    /// An attempt holds it until its lease ends.
    Running,
    /// Indexed: its hydrants are listed.
    Done,
    /// It cannot be indexed (too many parse exceptions, unreadable input): the task fails.
    Failed,
}

/// One hydrant a split persisted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchHydrant {
    /// Start of its time chunk (ms).
    pub chunk_start: i64,
    /// Its object key.
    pub key: String,
    /// Rows.
    pub rows: u64,
}

fn default_lease() -> i64 {
    SPLIT_LEASE_MS
}

/// The body of a `batchslots/slot#<k>` item: one of the deployment's batch splits in flight.
/// Driving takes a free slot for each split it hands over (attempt 0, held for a short lease),
/// so that no more invocations are made than slots are free; the invocation's attempt takes
/// the slot over (its attempt, its lease) and frees it when it ends. A slot whose invocation
/// never began, or whose attempt died, frees itself when its lease ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchSlotItem {
    /// The batch task of the split that took it last.
    pub task: String,
    /// That split.
    pub split: u32,
    /// Its attempt (0: handed over to an indexer, not begun).
    pub attempt: u32,
    /// The slot is held until then (ms): the hand-over's or the attempt's lease, or when the
    /// attempt ended.
    pub until_ms: i64,
}

impl BatchSlotItem {
    /// Whether the slot is held at `now_ms`.
    pub fn held(&self, now_ms: i64) -> bool {
        now_ms < self.until_ms
    }

    /// Whether the slot is held at `now_ms` for split `split` of `task`, handed over and not
    /// begun.
    pub fn handed_over(&self, task: &str, split: u32, now_ms: i64) -> bool {
        self.attempt == 0 && self.task == task && self.split == split && self.held(now_ms)
    }
}

/// The body of a `batchslots/wait#<task id>` item: a batch task with splits to run and no
/// slot free for them. Slots go to the oldest task waiting first (by submission): a younger
/// task takes only the slots free beyond what older ones wait for, so that a task that frees
/// a slot does not take it back for itself ahead of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchWaitItem {
    /// The task.
    pub task: String,
    /// When it was submitted (ms): its place in line.
    pub created_ms: i64,
    /// Splits it would run at once beyond those it runs.
    pub splits: u32,
    /// It waits until then (ms), unless driving it again says so again: a task no longer
    /// driven (finished, or its datasource gone) stops waiting by itself.
    pub until_ms: i64,
}

impl BatchWaitItem {
    /// Whether the task waits at `now_ms`.
    pub fn waiting(&self, now_ms: i64) -> bool {
        now_ms < self.until_ms
    }

    /// Whether it was submitted before `task` (created at `created_ms`): it is ahead in line.
    pub fn ahead_of(&self, task: &str, created_ms: i64) -> bool {
        (self.created_ms, self.task.as_str()) < (created_ms, task)
    }
}

/// The body of a `split#<n>` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SplitItem {
    /// Its number.
    pub n: u32,
    /// What it reads, in order.
    pub pieces: Vec<Piece>,
    /// Where it is.
    pub state: SplitState,
    /// The attempts begun (the running one's number).
    pub attempt: u32,
    /// When the running attempt began (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<i64>,
    /// How long the running attempt holds the split (ms).
    #[serde(default = "default_lease")]
    pub lease_ms: i64,
    /// The hydrants of the attempt that finished it.
    #[serde(default)]
    pub hydrants: Vec<BatchHydrant>,
    /// Its row meters, once done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meters: Option<MeterTotals>,
    /// The last parse exceptions it met (piece number as the partition, byte offset of the
    /// record as the offset).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exceptions: Vec<ParseException>,
    /// Why its last attempt failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl SplitItem {
    /// A split not begun.
    pub fn pending(n: u32, pieces: Vec<Piece>) -> Self {
        SplitItem {
            n,
            pieces,
            state: SplitState::Pending,
            attempt: 0,
            started_ms: None,
            lease_ms: SPLIT_LEASE_MS,
            hydrants: Vec::new(),
            meters: None,
            exceptions: Vec::new(),
            error: None,
        }
    }

    /// Whether an indexer may take it at `now_ms`: not begun, given back, or held by an
    /// attempt whose lease ended.
    pub fn takeable(&self, now_ms: i64) -> bool {
        match self.state {
            SplitState::Pending => true,
            SplitState::Running => self.started_ms.is_none_or(|s| now_ms >= s.saturating_add(self.lease_ms)),
            SplitState::Done | SplitState::Failed => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_is_takeable_until_an_attempt_holds_it_and_again_once_its_lease_ends() {
        let mut s = SplitItem::pending(0, vec![]);
        assert!(s.takeable(0));
        s.state = SplitState::Running;
        s.started_ms = Some(1_000);
        assert!(!s.takeable(1_000 + SPLIT_LEASE_MS - 1));
        assert!(s.takeable(1_000 + SPLIT_LEASE_MS));
        s.state = SplitState::Done;
        assert!(!s.takeable(i64::MAX));
    }

    #[test]
    fn pieces_are_named_by_where_they_are() {
        let p = Piece {
            source: PieceSource::S3 { bucket: "b".into(), key: "k.json".into() },
            start: 10,
            end: Some(20),
            gzip: false,
            size: Some(40),
            version: Some("\"e1\"".into()),
        };
        assert_eq!(p.name(), "s3://b/k.json bytes 10..20");
        let whole = Piece {
            source: PieceSource::Local { path: "/d/f.gz".into() },
            start: 0,
            end: None,
            gzip: true,
            size: Some(7),
            version: None,
        };
        assert_eq!(whole.name(), "/d/f.gz");
    }
}
