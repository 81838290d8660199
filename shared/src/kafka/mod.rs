//! Kafka: reading an exact offset range `partition -> [start, end)` of a topic with rdkafka.
//! Partitions are assigned with explicit offsets (no group membership, nothing committed,
//! `auto.offset.reset=error`); a partition is done when the consumer's position reaches `end`,
//! so gaps (compaction, transaction markers) end a range as well as records do, and a record
//! at or past `end` is never delivered.

mod settings;

pub use settings::ConsumerSettings;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{Message, Offset, TopicPartitionList};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

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

/// A record delivered to the handler.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// The value (None for a tombstone).
    pub payload: Option<&'a [u8]>,
    /// The record's timestamp, if it has one (ms).
    pub timestamp: Option<i64>,
}

/// What to do with requested offsets outside a partition's watermarks (the spec's
/// `resetOffsetAutomatically` and `useEarliestOffset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResetPolicy {
    /// Reset instead of failing.
    pub reset_automatically: bool,
    /// Reset a start below the low watermark to the earliest offset (else to the latest).
    pub use_earliest: bool,
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

/// Checks a range against the partition's watermarks and applies the reset policy.
pub fn check_range(
    topic: &str,
    r: OffsetRange,
    low: i64,
    high: i64,
    policy: ResetPolicy,
) -> Result<(OffsetRange, Option<ResetEvent>), ReadError> {
    if r.start >= low && r.end <= high {
        return Ok((r, None));
    }
    if !policy.reset_automatically {
        return Err(ReadError::OutOfRange {
            topic: topic.into(),
            partition: r.partition,
            start: r.start,
            end: r.end,
            low,
            high,
        });
    }
    let start = if r.start < low || r.start > high {
        if policy.use_earliest {
            low
        } else {
            high
        }
    } else {
        r.start
    };
    let end = r.end.clamp(start, high.max(start));
    let read = OffsetRange { partition: r.partition, start, end };
    Ok((read, Some(ResetEvent { partition: r.partition, requested: (r.start, r.end), read: (start, end), low, high })))
}

/// How a read ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOutcome {
    /// Per partition, the next offset to read (equal to `end` for a finished partition).
    pub positions: BTreeMap<i32, i64>,
    /// Whether every partition reached its end.
    pub complete: bool,
    /// Records handed to the handler.
    pub delivered: u64,
    /// Ranges moved by the reset policy.
    pub resets: Vec<ResetEvent>,
}

/// Why a range could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A requested offset lies outside the partition's watermarks.
    #[error("topic {topic:?} partition {partition}: requested offsets [{start}, {end}) but the partition holds [{low}, {high})")]
    OutOfRange {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// Requested start.
        start: i64,
        /// Requested end.
        end: i64,
        /// Low watermark (earliest offset kept).
        low: i64,
        /// High watermark (next offset to be written).
        high: i64,
    },
    /// The broker did not answer or the topic is unknown.
    #[error("topic {topic:?} on {bootstrap}: {reason}")]
    Broker {
        /// Topic.
        topic: String,
        /// The bootstrap servers.
        bootstrap: String,
        /// What happened.
        reason: String,
    },
    /// The handler refused a record.
    #[error("record at partition {partition} offset {offset}: {reason}")]
    Handler {
        /// Partition.
        partition: i32,
        /// Offset.
        offset: i64,
        /// The handler's error.
        reason: String,
    },
    /// A malformed request.
    #[error("invalid offset range: {0}")]
    Invalid(String),
}

/// Reads `ranges` of `topic`, handing every record in range to `handler` in offset order per
/// partition, until every partition's position reaches its end or `deadline` passes.
pub fn read_ranges(
    settings: &ConsumerSettings,
    topic: &str,
    ranges: &[OffsetRange],
    policy: ResetPolicy,
    deadline: Option<Instant>,
    mut handler: impl FnMut(Record<'_>) -> Result<(), String>,
) -> Result<ReadOutcome, ReadError> {
    let broker =
        |reason: String| ReadError::Broker { topic: topic.into(), bootstrap: settings.bootstrap().into(), reason };
    let mut positions = BTreeMap::new();
    let mut ends = BTreeMap::new();
    for r in ranges {
        if r.start < 0 || r.end < r.start {
            return Err(ReadError::Invalid(format!("partition {} [{}, {})", r.partition, r.start, r.end)));
        }
        if ends.insert(r.partition, r.end).is_some() {
            return Err(ReadError::Invalid(format!("partition {} given twice", r.partition)));
        }
        positions.insert(r.partition, r.start);
    }
    let consumer: BaseConsumer =
        settings.client_config().create().map_err(|e| broker(format!("cannot create a consumer: {e}")))?;
    let timeout = settings.request_timeout();
    let mut tpl = TopicPartitionList::new();
    let mut resets = Vec::new();
    let mut pending: BTreeMap<i32, i64> = BTreeMap::new();
    for r in ranges.iter().filter(|r| r.end > r.start) {
        let (low, high) =
            consumer.fetch_watermarks(topic, r.partition, timeout).map_err(|e| broker(watermark_error(&e)))?;
        let (r, reset) = check_range(topic, *r, low, high, policy)?;
        if let Some(event) = reset {
            tracing::warn!(topic, partition = r.partition, ?event, "offsets reset: a range is skipped");
            resets.push(event);
            positions.insert(r.partition, r.start);
            ends.insert(r.partition, r.end);
        }
        if r.end > r.start {
            tpl.add_partition_offset(topic, r.partition, Offset::Offset(r.start)).map_err(|e| broker(e.to_string()))?;
            pending.insert(r.partition, r.end);
        } else {
            positions.insert(r.partition, r.end);
        }
    }
    if pending.is_empty() {
        return Ok(ReadOutcome { positions, complete: true, delivered: 0, resets });
    }
    consumer.assign(&tpl).map_err(|e| broker(format!("cannot assign partitions: {e}")))?;
    let mut delivered = 0u64;
    let mut last_progress = Instant::now();
    let stall = settings.stall_timeout();
    while !pending.is_empty() {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(ReadOutcome { positions, complete: false, delivered, resets });
        }
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                let (p, o) = (m.partition(), m.offset());
                let Some(&end) = ends.get(&p) else { continue };
                let next = positions.get(&p).copied().unwrap_or(0);
                // Never deliver outside [position, end): past the end, or a redelivery.
                if o < end && o >= next {
                    handler(Record {
                        partition: p,
                        offset: o,
                        payload: m.payload(),
                        timestamp: m.timestamp().to_millis(),
                    })
                    .map_err(|reason| ReadError::Handler { partition: p, offset: o, reason })?;
                    delivered += 1;
                    positions.insert(p, o + 1);
                    last_progress = Instant::now();
                }
                if o + 1 >= end {
                    positions.insert(p, end);
                    pending.remove(&p);
                }
            }
            Some(Err(KafkaError::PartitionEOF(_))) => {}
            Some(Err(e)) => {
                if last_progress.elapsed() > stall {
                    return Err(broker(format!("no progress for {} s: {e}", stall.as_secs())));
                }
            }
            None => {
                // Gaps: the consumer's position can pass `end` without a record at `end - 1`.
                if let Ok(pos) = consumer.position() {
                    for e in pos.elements_for_topic(topic) {
                        if let (Offset::Offset(next), Some(&end)) = (e.offset(), pending.get(&e.partition())) {
                            if next >= end {
                                positions.insert(e.partition(), end);
                                pending.remove(&e.partition());
                            }
                        }
                    }
                }
                if last_progress.elapsed() > stall {
                    return Err(broker(format!(
                        "no record for {} s while offsets {pending:?} remain to be read",
                        stall.as_secs()
                    )));
                }
            }
        }
    }
    Ok(ReadOutcome { positions, complete: true, delivered, resets })
}

fn watermark_error(e: &KafkaError) -> String {
    format!("cannot read the partition's watermarks ({e}); is the broker running and does the topic exist?")
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: ResetPolicy = ResetPolicy { reset_automatically: false, use_earliest: false };
    const EARLIEST: ResetPolicy = ResetPolicy { reset_automatically: true, use_earliest: true };
    const LATEST: ResetPolicy = ResetPolicy { reset_automatically: true, use_earliest: false };

    fn range(start: i64, end: i64) -> OffsetRange {
        OffsetRange { partition: 3, start, end }
    }

    #[test]
    fn ranges_inside_the_watermarks_are_untouched() {
        assert_eq!(check_range("t", range(10, 20), 5, 20, STRICT).expect("inside"), (range(10, 20), None));
    }

    #[test]
    fn without_reset_an_out_of_range_offset_fails_naming_everything() {
        let err = check_range("clicks", range(2, 20), 5, 30, STRICT).expect_err("gone");
        assert_eq!(
            err.to_string(),
            "topic \"clicks\" partition 3: requested offsets [2, 20) but the partition holds [5, 30)"
        );
        assert!(check_range("clicks", range(10, 40), 5, 30, STRICT).is_err(), "not there yet");
    }

    #[test]
    fn reset_follows_use_earliest_and_is_recorded() {
        let (r, e) = check_range("t", range(2, 20), 5, 30, EARLIEST).expect("reset");
        assert_eq!(r, range(5, 20));
        assert_eq!(e.map(|e| (e.requested, e.read)), Some(((2, 20), (5, 20))));
        let (r, _) = check_range("t", range(2, 20), 5, 30, LATEST).expect("reset");
        assert_eq!(r, range(30, 30), "latest skips to the high watermark: nothing left to read");
        let (r, e) = check_range("t", range(10, 40), 5, 30, EARLIEST).expect("clamped");
        assert_eq!((r, e.map(|e| e.read)), (range(10, 30), Some((10, 30))));
        let (r, _) = check_range("t", range(50, 60), 5, 30, EARLIEST).expect("past the end");
        assert_eq!(r, range(5, 30));
    }
}
