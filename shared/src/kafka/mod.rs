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

/// How a read ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOutcome {
    /// Per partition, the next offset to read (equal to `end` for a finished partition).
    pub positions: BTreeMap<i32, i64>,
    /// Whether every partition reached its end.
    pub complete: bool,
    /// Records handed to the handler.
    pub delivered: u64,
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
    for r in ranges.iter().filter(|r| r.end > r.start) {
        let (low, high) =
            consumer.fetch_watermarks(topic, r.partition, timeout).map_err(|e| broker(watermark_error(&e)))?;
        if r.start < low || r.end > high {
            return Err(ReadError::OutOfRange {
                topic: topic.into(),
                partition: r.partition,
                start: r.start,
                end: r.end,
                low,
                high,
            });
        }
        tpl.add_partition_offset(topic, r.partition, Offset::Offset(r.start)).map_err(|e| broker(e.to_string()))?;
    }
    let mut pending: BTreeMap<i32, i64> =
        ranges.iter().filter(|r| r.end > r.start).map(|r| (r.partition, r.end)).collect();
    if pending.is_empty() {
        return Ok(ReadOutcome { positions, complete: true, delivered: 0 });
    }
    consumer.assign(&tpl).map_err(|e| broker(format!("cannot assign partitions: {e}")))?;
    let mut delivered = 0u64;
    let mut last_progress = Instant::now();
    let stall = settings.stall_timeout();
    while !pending.is_empty() {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(ReadOutcome { positions, complete: false, delivered });
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
    Ok(ReadOutcome { positions, complete: true, delivered })
}

fn watermark_error(e: &KafkaError) -> String {
    format!("cannot read the partition's watermarks ({e}); is the broker running and does the topic exist?")
}
