//! Kafka offsets as the rest of the pipeline records them: the range a task reads per
//! partition, and a range the reset policy moved. Plain data; `sluice-kafka` reads them.

/// The offsets one partition is read over: `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct OffsetRange {
    /// Partition.
    pub partition: i32,
    /// First offset to read.
    pub start: i64,
    /// First offset not to read.
    pub end: i64,
}

/// The end of an open range: a real-time task reads on until it closes the range at the
/// position it reached (`docs/exactly-once.md#real-time-tasks`).
pub const OPEN_END: i64 = i64::MAX;

impl OffsetRange {
    /// Whether the range is open (its end is not fixed yet).
    pub fn is_open(&self) -> bool {
        self.end == OPEN_END
    }
}

/// A range moved by the reset policy: the offsets `[skipped_from, skipped_to)` of the
/// partition are not read. Recorded, never silent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ResetEvent {
    /// Partition.
    pub partition: i32,
    /// The range as requested.
    pub requested: (i64, i64),
    /// The range read instead.
    pub read: (i64, i64),
    /// Low watermark seen.
    pub low: i64,
    /// High watermark seen.
    pub high: i64,
}
