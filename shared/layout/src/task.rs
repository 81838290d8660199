//! Indexing tasks as the metadata store holds them: the `task#` item the supervisor plans,
//! an indexer attempt claims and checkpoints, and the merger publishes; and the `ckpt#`
//! items that record, after each hydrant upload, the hydrants so far and the exact offsets
//! they cover. Layout and conditions: `docs/metadata-layout.md`.
//!
//! ```text
//!  planned --claim(attempt+1, lease)--> running --checkpoint*--> complete --publish--> published
//!                                          |  \--deadline--> incomplete --claim--> running ...
//!                                          \--fatal error--> failed
//! ```
//!
//! Every write of an attempt is conditioned on the task item's version it holds, so an attempt
//! that lost its lease (another attempt claimed the task) cannot write anything visible.

use crate::keys;
use serde::{Deserialize, Serialize};
use sluice_format::meters::RowMeters;
use sluice_format::offsets::{OffsetRange, ResetEvent};
use sluice_format::time::Interval;
use sluice_format::window::MessageWindow;
use std::collections::BTreeMap;

/// Identity of a task: datasource, partition group, sequence number within the group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TaskId {
    /// Datasource.
    pub datasource: String,
    /// Partition group (`partition % taskCount`).
    pub group: u32,
    /// Sequence number of the task within its group.
    pub seq: u64,
}

impl TaskId {
    /// Partition key of the task's item and checkpoints: its group's.
    pub fn pk(&self) -> String {
        keys::group_pk(&self.datasource, self.group)
    }

    /// Sort key of the task item.
    pub fn sk(&self) -> String {
        keys::task_sk(self.group, self.seq)
    }

    /// Sort key of the task's report, once it finished and was cleaned up.
    pub fn report_sk(&self) -> String {
        keys::report_sk(self.seq)
    }

    /// Sort key prefix of every checkpoint of the task.
    pub fn checkpoint_prefix(&self) -> String {
        keys::checkpoint_prefix(self.group, self.seq)
    }

    /// Sort key of checkpoint `n` of `attempt`, or of its part `part` (1, 2, ...).
    pub fn checkpoint_sk(&self, attempt: u32, n: u32, part: u32) -> String {
        match part {
            0 => keys::checkpoint_sk(self.group, self.seq, attempt, n),
            part => keys::checkpoint_part_sk(self.group, self.seq, attempt, n, part),
        }
    }

    /// Object key of hydrant `n` of `attempt` for the time chunk `chunk`: unique to
    /// (datasource, task, attempt, chunk, sequence).
    pub fn hydrant_key(&self, attempt: u32, chunk: Interval, n: u32) -> String {
        keys::hydrant_key(&self.datasource, self.group, self.seq, attempt, chunk.start, n)
    }
}

impl TaskId {
    /// The task a [`Display`](std::fmt::Display)ed id names (`<datasource>_<group>_<seq>`,
    /// the numbers zero-padded to at least 4 and 12 digits); none if `text` is not one.
    pub fn parse(text: &str) -> Option<Self> {
        let (rest, seq) = text.rsplit_once('_')?;
        let (datasource, group) = rest.rsplit_once('_')?;
        let digits = |s: &str, n: usize| s.len() >= n && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
        if datasource.is_empty() || !digits(group, 4) || !digits(seq, 12) {
            return None;
        }
        Some(Self { datasource: datasource.into(), group: group.parse().ok()?, seq: seq.parse().ok()? })
    }
}

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}_{:04}_{:012}", self.datasource, self.group, self.seq)
    }
}

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskState {
    /// Planned by the supervisor, never run.
    Planned,
    /// Held by an attempt until its lease expires.
    Running,
    /// An attempt stopped before the end (deadline or a retryable error); to be continued.
    Incomplete,
    /// Every range read and persisted; waiting for the merger.
    Complete,
    /// Merged and published with its offsets.
    Published,
    /// Failed for a reason a retry cannot fix.
    Failed,
}

impl TaskState {
    /// The state as the items spell it (`planned`, `running`, ...).
    pub fn name(self) -> &'static str {
        match self {
            TaskState::Planned => "planned",
            TaskState::Running => "running",
            TaskState::Incomplete => "incomplete",
            TaskState::Complete => "complete",
            TaskState::Published => "published",
            TaskState::Failed => "failed",
        }
    }
}

/// The body of a `task#` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskItem {
    /// The task's identity.
    pub id: TaskId,
    /// The Druid spec the task indexes with (tasks carry their schema, as in Druid).
    pub spec: serde_json::Value,
    /// Topic.
    pub topic: String,
    /// The offset ranges to read, one per partition of the group.
    pub ranges: Vec<OffsetRange>,
    /// Rows outside this window are thrown away (Druid's minimum/maximumMessageTime).
    pub window: MessageWindow,
    /// When the supervisor planned the task (ms).
    pub created_ms: i64,
    /// State.
    pub state: TaskState,
    /// The last attempt that claimed the task (0: none yet).
    pub attempt: u32,
    /// Until when the attempt holds the task (ms).
    pub lease_expires_ms: Option<i64>,
    /// Per partition, the next offset to read as of the last checkpoint.
    pub positions: BTreeMap<i32, i64>,
    /// Checkpoints written by the current attempt.
    pub num_checkpoints: u32,
    /// Why the task failed or the last attempt stopped.
    pub error: Option<String>,
    /// The merge whose segments the publish made visible.
    #[serde(default)]
    pub published_by: Option<String>,
    /// When the task was published or failed (ms): cleanup waits a grace period after it.
    #[serde(default)]
    pub finished_ms: Option<i64>,
    /// The grouping epoch the task was planned in (`grouping` item); it publishes only into
    /// its group's offsets of the same epoch.
    #[serde(default = "crate::grouping::first_epoch")]
    pub epoch: u64,
    /// Attempts in a row that ended in an error or died without moving any position; at
    /// [`MAX_FAILED_ATTEMPTS`] the task fails with the last error.
    #[serde(default)]
    pub failed_attempts: u32,
    /// When the running attempt last renewed its lease (ms): a claim, a checkpoint or a
    /// heartbeat. A lease not renewed for half its length is a sign the attempt died.
    #[serde(default)]
    pub renewed_ms: Option<i64>,
    /// When the first attempt claimed the task (ms): a real-time task's `taskDuration` counts
    /// from then, as Druid's counts from the task's start, so a task handed to an indexer late
    /// still reads for its duration instead of closing before its consumer delivered a record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<i64>,
}

/// Attempts in a row without progress after which a task fails (the group is then planned
/// again from its committed offsets, and the failure shows in status, stats and metrics).
pub const MAX_FAILED_ATTEMPTS: u32 = 10;

impl TaskItem {
    /// A planned task.
    pub fn planned(
        id: TaskId,
        spec: serde_json::Value,
        topic: &str,
        ranges: Vec<OffsetRange>,
        window: MessageWindow,
        created_ms: i64,
    ) -> Self {
        let positions = ranges.iter().map(|r| (r.partition, r.start)).collect();
        Self {
            id,
            spec,
            topic: topic.into(),
            ranges,
            window,
            created_ms,
            state: TaskState::Planned,
            attempt: 0,
            lease_expires_ms: None,
            positions,
            num_checkpoints: 0,
            error: None,
            published_by: None,
            finished_ms: None,
            epoch: crate::grouping::first_epoch(),
            failed_attempts: 0,
            renewed_ms: None,
            started_ms: None,
        }
    }
}

/// Why an attempt may not claim a task.
#[derive(Debug, Clone, PartialEq)]
pub enum ClaimRefused {
    /// The task is complete or published: nothing is left to read.
    Done,
    /// The task failed for a reason a retry cannot fix.
    Failed(String),
    /// Too many attempts in a row made no progress: the item is now failed with this reason,
    /// to be written by the caller.
    GaveUp(String),
    /// A live attempt holds the task.
    Busy {
        /// Its attempt number.
        attempt: u32,
        /// Until when it holds the task (ms).
        lease_expires_ms: Option<i64>,
    },
}

/// The transitions of the state machine drawn at the top of this module. Each is a pure
/// change of the item at `now_ms`; the caller writes the result conditioned on the version it
/// read, which is what fences a stale actor.
impl TaskItem {
    /// Claims the task for the next attempt: `Running` under a lease until `now_ms + lease_ms`,
    /// no checkpoints yet, no error. Refused while a live attempt holds it, and when it is
    /// done or failed. An expired lease means the attempt holding it died: counted as a failed
    /// attempt. After [`MAX_FAILED_ATTEMPTS`] in a row the task is failed instead
    /// ([`ClaimRefused::GaveUp`]: the caller writes the failed item).
    pub fn claim(&mut self, now_ms: i64, lease_ms: i64) -> Result<(), ClaimRefused> {
        match self.state {
            TaskState::Complete | TaskState::Published => return Err(ClaimRefused::Done),
            TaskState::Failed => return Err(ClaimRefused::Failed(self.error.clone().unwrap_or_default())),
            TaskState::Running if self.lease_expires_ms.is_some_and(|t| t > now_ms) => {
                return Err(ClaimRefused::Busy { attempt: self.attempt, lease_expires_ms: self.lease_expires_ms })
            }
            TaskState::Running => self.failed_attempts += 1,
            TaskState::Planned | TaskState::Incomplete => {}
        }
        if self.failed_attempts >= MAX_FAILED_ATTEMPTS {
            let last = self.error.as_deref().unwrap_or("none recorded: the attempts died (timeouts or crashes)");
            let reason = format!(
                "gave up after {} attempts in a row without progress; last error: {last}",
                self.failed_attempts
            );
            self.fail(reason.clone(), now_ms);
            return Err(ClaimRefused::GaveUp(reason));
        }
        self.attempt += 1;
        self.started_ms.get_or_insert(now_ms);
        self.state = TaskState::Running;
        self.renew(now_ms, lease_ms);
        self.num_checkpoints = 0;
        self.error = None;
        Ok(())
    }

    /// Records the attempt's next checkpoint: the positions it reached, the lease renewed to
    /// `now_ms + lease_ms`.
    pub fn checkpoint(&mut self, positions: BTreeMap<i32, i64>, now_ms: i64, lease_ms: i64) {
        debug_assert_eq!(self.state, TaskState::Running, "only a running attempt checkpoints");
        self.moved_to(positions);
        self.num_checkpoints += 1;
        self.renew(now_ms, lease_ms);
    }

    /// Renews the running attempt's lease to `now_ms + lease_ms` (a heartbeat).
    pub fn renew(&mut self, now_ms: i64, lease_ms: i64) {
        self.lease_expires_ms = Some(now_ms + lease_ms);
        self.renewed_ms = Some(now_ms);
    }

    /// Whether the task is running under a lease its attempt has not renewed for half the
    /// lease's length (or that expired): the attempt is probably dead, and an indexer
    /// invoked now watches the lease and takes the task over when it lapses.
    pub fn heartbeat_lapsed(&self, now_ms: i64) -> bool {
        if self.state != TaskState::Running {
            return false;
        }
        match (self.renewed_ms, self.lease_expires_ms) {
            (_, None) => true,
            (_, Some(expires)) if expires <= now_ms => true,
            (Some(renewed), Some(expires)) => now_ms - renewed > (expires - renewed) / 2,
            (None, Some(_)) => false,
        }
    }

    /// Records the attempt's last checkpoint before its deadline: `Incomplete` with the lease
    /// released, so the next attempt (a new invocation) resumes from it at once.
    pub fn stop_at_deadline(&mut self, positions: BTreeMap<i32, i64>) {
        debug_assert_eq!(self.state, TaskState::Running, "only a running attempt stops");
        self.state = TaskState::Incomplete;
        self.moved_to(positions);
        self.num_checkpoints += 1;
        self.lease_expires_ms = None;
    }

    /// Records the attempt's last checkpoint, which reached every range's end: `Complete`,
    /// the lease released, waiting for the merger.
    pub fn complete(&mut self, positions: BTreeMap<i32, i64>) {
        debug_assert_eq!(self.state, TaskState::Running, "only a running attempt completes");
        self.state = TaskState::Complete;
        self.moved_to(positions);
        self.num_checkpoints += 1;
        self.lease_expires_ms = None;
    }

    /// Closes an open task at `positions` (`docs/exactly-once.md#real-time-tasks`): each open
    /// range ends where the task read up to, and the task is complete.
    pub fn close(&mut self, positions: BTreeMap<i32, i64>) {
        for r in self.ranges.iter_mut().filter(|r| r.is_open()) {
            r.end = positions.get(&r.partition).copied().unwrap_or(r.start);
        }
        self.complete(positions);
    }

    /// Whether any range is open: the task reads on until it closes itself.
    pub fn is_open(&self) -> bool {
        self.ranges.iter().any(OffsetRange::is_open)
    }

    /// Gives the task up for now (a deadline, a retryable error): `Incomplete` with the lease
    /// released, so the next attempt need not wait for it, and the reason kept.
    pub fn release(&mut self, reason: String) {
        self.state = TaskState::Incomplete;
        self.lease_expires_ms = None;
        self.error = Some(reason);
        self.failed_attempts += 1;
    }

    /// Records the positions reached; moving any of them is progress.
    fn moved_to(&mut self, positions: BTreeMap<i32, i64>) {
        if positions != self.positions {
            self.failed_attempts = 0;
        }
        self.positions = positions;
    }

    /// Marks the task published by merge `merge_id`.
    pub fn publish(&mut self, merge_id: &str, now_ms: i64) {
        debug_assert_eq!(self.state, TaskState::Complete, "only a complete task is published");
        self.state = TaskState::Published;
        self.lease_expires_ms = None;
        self.published_by = Some(merge_id.into());
        self.finished_ms = Some(now_ms);
    }

    /// Fails the task for a reason a retry cannot fix; cleanup waits a grace period after
    /// `now_ms`.
    pub fn fail(&mut self, reason: String, now_ms: i64) {
        self.state = TaskState::Failed;
        self.lease_expires_ms = None;
        self.error = Some(reason);
        self.finished_ms = Some(now_ms);
    }

    /// Fails a later task of the group because the earlier task `failed` failed: its range
    /// is planned again from the group's committed offsets.
    pub fn supersede(&mut self, failed: &TaskId, now_ms: i64) {
        self.fail(format!("superseded: task {failed} failed before it"), now_ms);
    }

    /// Whether the task is finished for good (published or failed).
    pub fn is_finished(&self) -> bool {
        matches!(self.state, TaskState::Published | TaskState::Failed)
    }
}

/// A hydrant as a checkpoint records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HydrantRef {
    /// Object key.
    pub key: String,
    /// Its time chunk.
    pub chunk: Interval,
    /// Rows it holds.
    pub num_rows: u64,
    /// Its size in bytes.
    pub num_bytes: u64,
}

/// The body of a `ckpt#` item: written after the hydrants it lists are uploaded. A checkpoint
/// listing more hydrants than one item holds is written as several items in one transaction
/// ([`Checkpoint::into_parts`]): part 0 holds everything, parts 1, 2, ... more hydrants only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Checkpoint {
    /// The attempt that wrote it.
    pub attempt: u32,
    /// Its number within the attempt.
    pub n: u32,
    /// Its part: 0, or 1, 2, ... for the further hydrants of a checkpoint split over items.
    #[serde(default)]
    pub part: u32,
    /// Hydrants uploaded since the previous checkpoint.
    pub hydrants: Vec<HydrantRef>,
    /// Per partition, the next offset to read: every record before it is in a hydrant of
    /// this or an earlier checkpoint (or was counted and dropped).
    pub positions: BTreeMap<i32, i64>,
    /// Per partition, where its range ends (after any reset).
    pub ends: BTreeMap<i32, i64>,
    /// Row meters of the whole task so far.
    pub meters: RowMeters,
    /// Ranges moved by the reset policy so far.
    pub resets: Vec<ResetEvent>,
}

/// The state of a task rebuilt from its checkpoints, in sort-key order (attempt, number).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Progress {
    /// Every hydrant checkpointed.
    pub hydrants: Vec<HydrantRef>,
    /// The last checkpoint, if any.
    pub last: Option<Checkpoint>,
}

/// Bytes of a checkpoint item's body: DynamoDB's 400 KB item limit, less room for the keys
/// and attributes.
pub const CHECKPOINT_ITEM_BYTES: usize = 360 << 10;

/// Bytes a spec may have as compact JSON: every task item carries its spec, and DynamoDB's
/// 400 KB item must still hold the task's offset ranges and positions (thousands of
/// partitions) and its error beside it. Specs are refused at submit past this.
pub const MAX_SPEC_BYTES: usize = 192 << 10;

impl Checkpoint {
    /// The items the checkpoint is written as, each body at most `budget` bytes of JSON when
    /// its hydrants allow: part 0 with everything but the hydrants that do not fit, then parts
    /// of further hydrants only.
    pub fn into_parts(mut self, budget: usize) -> Vec<Checkpoint> {
        let hydrants = std::mem::take(&mut self.hydrants);
        let size = |c: &Checkpoint| serde_json::to_vec(c).map_or(0, |v| v.len());
        let continuation = |part: u32| Checkpoint {
            attempt: self.attempt,
            n: self.n,
            part,
            hydrants: Vec::new(),
            positions: BTreeMap::new(),
            ends: BTreeMap::new(),
            meters: RowMeters::new(0, 0),
            resets: Vec::new(),
        };
        let continuation_bytes = size(&continuation(1));
        let mut used = size(&self);
        let mut parts = vec![Checkpoint { part: 0, ..self.clone() }];
        for h in hydrants {
            let bytes = serde_json::to_vec(&h).map_or(0, |v| v.len()) + 1;
            let last = parts.last().expect("part 0");
            if used + bytes > budget && (!last.hydrants.is_empty() || last.part == 0) {
                parts.push(continuation(parts.len() as u32));
                used = continuation_bytes;
            }
            parts.last_mut().expect("a part").hydrants.push(h);
            used += bytes;
        }
        parts
    }
}

impl Progress {
    /// Folds checkpoints (sorted by sort key: each checkpoint's part 0, then its further
    /// parts) into the progress they record.
    pub fn from_checkpoints(checkpoints: impl IntoIterator<Item = Checkpoint>) -> Self {
        let mut progress = Progress::default();
        for mut c in checkpoints {
            progress.hydrants.append(&mut c.hydrants);
            if c.part == 0 {
                progress.last = Some(c);
            }
        }
        progress
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned() -> TaskItem {
        let id = TaskId { datasource: "wiki".into(), group: 0, seq: 1 };
        let ranges = vec![OffsetRange { partition: 0, start: 0, end: 10 }];
        TaskItem::planned(id, serde_json::json!({}), "t", ranges, MessageWindow::default(), 0)
    }

    #[test]
    fn a_task_id_reads_back_from_its_text() {
        for id in [
            TaskId { datasource: "wiki".into(), group: 0, seq: 1 },
            TaskId { datasource: "a_b_0001".into(), group: 12_345, seq: 9 },
        ] {
            assert_eq!(TaskId::parse(&id.to_string()), Some(id));
        }
        for bad in ["wiki", "wiki_0001", "wiki_1_000000000001", "_0001_000000000001", "wiki_0001_00000000000x"] {
            assert_eq!(TaskId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn attempts_claim_checkpoint_and_complete() {
        let mut t = planned();
        t.claim(1_000, 500).expect("first claim");
        assert_eq!((t.state, t.attempt, t.lease_expires_ms), (TaskState::Running, 1, Some(1_500)));
        assert_eq!(t.clone().claim(1_499, 500), Err(ClaimRefused::Busy { attempt: 1, lease_expires_ms: Some(1_500) }));
        t.checkpoint(BTreeMap::from([(0, 4)]), 1_200, 500);
        assert_eq!((t.num_checkpoints, t.lease_expires_ms, t.positions[&0]), (1, Some(1_700), 4));
        // A dead attempt's lease runs out: the next attempt takes over, fenced by the version.
        let mut next = t.clone();
        next.claim(1_700, 500).expect("expired lease");
        assert_eq!((next.attempt, next.num_checkpoints), (2, 0));
        assert_eq!(next.started_ms, Some(1_000), "the task started with its first attempt");
        next.complete(BTreeMap::from([(0, 10)]));
        assert_eq!((next.state, next.lease_expires_ms), (TaskState::Complete, None));
        assert_eq!(next.clone().claim(2_000, 500), Err(ClaimRefused::Done));
        next.publish("m1", 3_000);
        assert_eq!(
            (next.state, next.published_by.as_deref(), next.finished_ms),
            (TaskState::Published, Some("m1"), Some(3_000))
        );
        assert!(next.is_finished());
    }

    #[test]
    fn a_lease_not_renewed_for_half_its_length_has_lapsed() {
        let mut t = planned();
        assert!(!t.heartbeat_lapsed(0), "only a running task has a heartbeat");
        t.claim(1_000, 20_000).expect("claim");
        assert_eq!(t.renewed_ms, Some(1_000));
        assert!(!t.heartbeat_lapsed(11_000));
        assert!(t.heartbeat_lapsed(11_001), "half the lease without a heartbeat");
        t.renew(10_000, 20_000);
        assert_eq!((t.renewed_ms, t.lease_expires_ms), (Some(10_000), Some(30_000)));
        assert!(!t.heartbeat_lapsed(11_001), "renewed");
        assert!(t.heartbeat_lapsed(30_000), "expired");
        t.renewed_ms = None;
        assert!(!t.heartbeat_lapsed(29_999), "an item without heartbeats lapses when its lease expires");
    }

    #[test]
    fn released_tasks_are_claimed_at_once_and_failed_ones_never() {
        let mut t = planned();
        t.claim(0, 60_000).expect("claim");
        t.release("deadline".into());
        assert_eq!((t.state, t.lease_expires_ms, t.error.as_deref()), (TaskState::Incomplete, None, Some("deadline")));
        t.claim(1, 60_000).expect("a released task needs no wait");
        assert_eq!((t.attempt, t.error.as_deref()), (2, None));
        t.supersede(&TaskId { datasource: "wiki".into(), group: 0, seq: 0 }, 5);
        assert_eq!(t.state, TaskState::Failed);
        assert_eq!(
            t.claim(10, 1),
            Err(ClaimRefused::Failed("superseded: task wiki_0000_000000000000 failed before it".into()))
        );
        assert!(t.is_finished() && t.finished_ms == Some(5));
    }

    #[test]
    fn attempts_without_progress_fail_the_task_with_the_last_error() {
        let mut t = planned();
        for n in 0..MAX_FAILED_ATTEMPTS {
            t.claim(i64::from(n), 60_000).expect("claim");
            t.release(format!("error {n}"));
        }
        let refused = t.claim(100, 60_000);
        let reason = "gave up after 10 attempts in a row without progress; last error: error 9".to_string();
        assert_eq!(refused, Err(ClaimRefused::GaveUp(reason.clone())));
        assert_eq!((t.state, t.error.as_deref(), t.finished_ms), (TaskState::Failed, Some(reason.as_str()), Some(100)));
        // Dead attempts count as failed ones; any position moved starts the count again.
        let mut t = planned();
        for n in 0..MAX_FAILED_ATTEMPTS - 1 {
            t.claim(i64::from(n) * 10, 5).expect("claim");
        }
        t.checkpoint(BTreeMap::from([(0, 3)]), 100, 5);
        assert_eq!(t.failed_attempts, 0, "progress");
        t.claim(200, 5).expect("the lease expired");
        assert_eq!(t.failed_attempts, 1);
        t.stop_at_deadline(BTreeMap::from([(0, 3)]));
        assert_eq!(t.failed_attempts, 1, "stopping where it started is no progress");
    }

    #[test]
    fn a_checkpoint_of_many_hydrants_is_split_into_items_under_the_limit() {
        let hydrant = |n: u32| HydrantRef {
            key: format!("hydrants/{}/0000/000000000001/0001/2015-09-12T00-00-00.000Z/{n:06}.hyd", "d".repeat(200)),
            chunk: Interval { start: i64::from(n) * 3_600_000, end: i64::from(n + 1) * 3_600_000 },
            num_rows: 1,
            num_bytes: 900,
        };
        let checkpoint = Checkpoint {
            attempt: 1,
            n: 4,
            part: 0,
            hydrants: (0..3_000).map(hydrant).collect(),
            positions: BTreeMap::from([(0, 7)]),
            ends: BTreeMap::from([(0, 9)]),
            meters: RowMeters::new(10, 10),
            resets: Vec::new(),
        };
        let budget = 100 << 10;
        let parts = checkpoint.clone().into_parts(budget);
        assert!(parts.len() > 5, "{} parts", parts.len());
        for (i, part) in parts.iter().enumerate() {
            let bytes = serde_json::to_vec(part).expect("json").len();
            assert!(bytes <= budget, "part {i}: {bytes} bytes");
            assert_eq!((part.attempt, part.n, part.part), (1, 4, i as u32));
        }
        let progress = Progress::from_checkpoints(parts);
        assert_eq!(progress.hydrants, checkpoint.hydrants, "every hydrant, in order");
        assert_eq!(progress.last.map(|c| c.positions), Some(checkpoint.positions.clone()));
        assert_eq!(checkpoint.clone().into_parts(CHECKPOINT_ITEM_BYTES).len(), 3, "about 350 bytes per hydrant");
        let small = Checkpoint { hydrants: vec![hydrant(1)], ..checkpoint };
        assert_eq!(small.into_parts(CHECKPOINT_ITEM_BYTES).len(), 1);
    }

    #[test]
    fn state_names_are_the_items_spelling() {
        for s in [
            TaskState::Planned,
            TaskState::Running,
            TaskState::Incomplete,
            TaskState::Complete,
            TaskState::Published,
            TaskState::Failed,
        ] {
            assert_eq!(serde_json::to_value(s).expect("state"), s.name());
        }
    }
}
