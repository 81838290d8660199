//! What a supervisor pass did for one datasource ([`DatasourcePass`]): planned, invoked,
//! watermarks and offsets seen, lag, idleness; and how the steps of one pass add up.

use crate::invoker::Job;
use crate::layout::datasource::TopicOffsets;
use crate::task::TaskId;

/// What one pass did for one datasource.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DatasourcePass {
    /// The datasource.
    pub datasource: String,
    /// Tasks planned in this pass.
    pub planned: Vec<TaskId>,
    /// Jobs handed to the invoker.
    pub invoked: Vec<Job>,
    /// Per topic and partition, the high watermark seen.
    pub high: TopicOffsets,
    /// Per topic and partition, the committed offset.
    pub committed: TopicOffsets,
    /// Per topic and partition, the offset before which every record is queryable: the
    /// committed offset, or with real-time tasks the position a task not yet published
    /// checkpointed.
    pub queryable: TopicOffsets,
    /// Per topic and partition, how long ago (ms) the oldest record not yet committed was
    /// written: 0 when caught up, absent when its record's time could not be read.
    pub time_lag_ms: TopicOffsets,
    /// Tasks cleaned up (hydrants, checkpoints and item deleted).
    pub cleaned: usize,
    /// Whether every partition's committed offset reached its high watermark.
    pub caught_up: bool,
    /// Why the committed offsets were not committed to the datasource's Kafka consumer group
    /// (`commitOffsetsToKafka`), when they were not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kafka_commit_error: Option<String>,
    /// The task count the autoscaler asked for in this pass, if it changed it.
    pub scaled_to: Option<u32>,
    /// When the datasource was last active (ms): this pass, unless it saw no new record, no
    /// lag and no unfinished task (then as the last pass said).
    pub active_ms: i64,
    /// Whether the supervisor is idle (`idleConfig`): inactive for `inactiveAfterMillis`; it
    /// invokes nothing until records arrive.
    pub idle: bool,
    /// Whether the pass read the offsets and wrote the stats (a step of a pass that only moved
    /// a grouping change on does neither).
    #[serde(skip)]
    pub observed: bool,
    /// Jobs of the datasource's running batch tasks handed to the invoker (their splits, their
    /// publish).
    pub batch_jobs: u32,
}

impl DatasourcePass {
    /// Every partition seen, as (topic, partition, high watermark).
    pub fn highs(&self) -> impl Iterator<Item = (&str, i32, i64)> {
        self.high.iter().flat_map(|(t, highs)| highs.iter().map(move |(&p, &h)| (t.as_str(), p, h)))
    }

    /// Records below the high watermarks not committed yet.
    pub fn lag(&self) -> i64 {
        self.highs().map(|(t, p, h)| (h - offset_at(&self.committed, t, p)).max(0)).sum()
    }

    /// Records below the high watermarks not queryable yet.
    pub fn queryable_lag(&self) -> i64 {
        self.highs().map(|(t, p, h)| (h - offset_at(&self.queryable, t, p)).max(0)).sum()
    }

    /// The time lags (ms) of the partitions whose time was read: summed (Druid's
    /// `ingest/kafka/lag/time`) and the largest (`maxLag/time`).
    pub fn time_lag(&self) -> (i64, i64) {
        let lags = self.time_lag_ms.values().flat_map(|p| p.values().copied());
        lags.fold((0, 0), |(sum, max), l| (sum + l, max.max(l)))
    }

    /// The high watermarks summed: every record the topics ever held.
    pub fn high_total(&self) -> i64 {
        self.highs().map(|(_, _, h)| h).sum()
    }
}

/// The offset `offsets` hold for a topic's partition, 0 when none.
pub fn offset_at(offsets: &TopicOffsets, topic: &str, partition: i32) -> i64 {
    offsets.get(topic).and_then(|o| o.get(&partition)).copied().unwrap_or(0)
}

impl DatasourcePass {
    /// This pass followed by `next` (a later step of it): what both planned, invoked and
    /// cleaned, and what the last step that read the offsets saw (a step that only moved a
    /// change on reads none).
    pub(super) fn then(mut self, mut next: DatasourcePass) -> DatasourcePass {
        self.planned.append(&mut next.planned);
        self.invoked.append(&mut next.invoked);
        self.cleaned += next.cleaned;
        self.scaled_to = next.scaled_to.or(self.scaled_to);
        next.batch_jobs = self.batch_jobs;
        if next.observed {
            next.planned = self.planned;
            next.invoked = self.invoked;
            next.cleaned = self.cleaned;
            next.scaled_to = self.scaled_to;
            return next;
        }
        self
    }
}
