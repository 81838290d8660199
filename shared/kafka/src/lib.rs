//! Kafka: reading an exact offset range `partition -> [start, end)` of a topic with rdkafka.
//! Partitions are assigned with explicit offsets (no group membership, nothing committed,
//! `auto.offset.reset=error`); a partition is done when the consumer's position reaches `end`,
//! so gaps (compaction, transaction markers) end a range as well as records do, and a record
//! at or past `end` is never delivered.

mod client;
mod group;
#[cfg(test)]
mod mock;
pub mod msk_iam;
mod reader;
mod record_time;
mod registry;
mod settings;
mod topic;

pub use group::{commit_datasource_offsets, consumer_group, GroupCommitError, CONSUMER_GROUP_PREFIX};
pub use reader::{read_ranges, Flow, HandlerError, RangeReader, Stop};
pub use record_time::{record_times, MAX_TIMED_PARTITIONS, RECORD_TIME_WAIT};
pub use registry::{
    allow_local_registries, HttpSchemaRegistry, RegistrySettingsError, LOCAL_ENV as REGISTRY_LOCAL_ENV,
};
pub use settings::{
    is_connection_property, is_secret, set_deployment_properties, ConsumerSettings, KafkaDeployment, SettingsError,
    BROKERS_ENV, PREFETCH_KBYTES,
};
pub use topic::{matching_watermarks, partition_watermarks, Watermarks};

pub use sluice_format::offsets::{OffsetRange, ResetEvent};

use std::collections::BTreeMap;

/// A record delivered to the handler.
#[derive(Clone, Copy)]
pub struct Record<'a> {
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// The value (None for a tombstone).
    pub payload: Option<&'a [u8]>,
    /// The record's timestamp, if it has one (ms).
    pub timestamp: Option<i64>,
    /// The record's key, if it has one.
    pub key: Option<&'a [u8]>,
    /// The message read, for what is looked up only when asked for: librdkafka parses a
    /// record's headers on each call (a tenth of a read step when done per record) and the
    /// topic name is validated as UTF-8 on each call.
    message: Option<&'a rdkafka::message::BorrowedMessage<'a>>,
}

impl std::fmt::Debug for Record<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Record")
            .field("topic", &self.topic())
            .field("partition", &self.partition)
            .field("offset", &self.offset)
            .field("timestamp", &self.timestamp)
            .field("key", &self.key.map(<[u8]>::len))
            .field("payload", &self.payload.map(<[u8]>::len))
            .field("headers", &self.header_pairs().len())
            .finish()
    }
}

impl<'a> Record<'a> {
    /// A record with only a value and a timestamp (tests and tools).
    pub fn value(partition: i32, offset: i64, payload: Option<&'a [u8]>, timestamp: Option<i64>) -> Self {
        Self { partition, offset, payload, timestamp, key: None, message: None }
    }

    /// The record of a message read.
    pub(crate) fn of(message: &'a rdkafka::message::BorrowedMessage<'a>) -> Self {
        use rdkafka::Message;
        Self {
            partition: message.partition(),
            offset: message.offset(),
            payload: message.payload(),
            timestamp: message.timestamp().to_millis(),
            key: message.key(),
            message: Some(message),
        }
    }

    /// The record's topic ("" for a record not read from Kafka).
    pub fn topic(&self) -> &'a str {
        use rdkafka::Message;
        self.message.map_or("", |m| m.topic())
    }

    /// The headers as (name, value) pairs, in order.
    pub fn header_pairs(&self) -> Vec<(&'a str, Option<&'a [u8]>)> {
        use rdkafka::message::{Headers, Message};
        self.message.and_then(|m| m.headers()).map_or_else(Vec::new, |h| h.iter().map(|h| (h.key, h.value)).collect())
    }
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

/// Checks a range against the partition's watermarks and applies the reset policy.
pub fn check_range(
    topic: &str,
    r: OffsetRange,
    low: i64,
    high: i64,
    policy: ResetPolicy,
) -> Result<(OffsetRange, Option<ResetEvent>), ReadError> {
    if r.start >= low && r.start <= high && (r.end <= high || r.is_open()) {
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
    let end = if r.is_open() { r.end } else { r.end.clamp(start, high.max(start)) };
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
    #[error("record at partition {partition} offset {offset}: {source}")]
    Handler {
        /// Partition.
        partition: i32,
        /// Offset.
        offset: i64,
        /// The handler's error.
        source: HandlerError,
    },
    /// A malformed request.
    #[error("invalid offset range: {0}")]
    Invalid(String),
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

    #[test]
    fn an_open_range_needs_only_its_start_inside() {
        let open = sluice_format::offsets::OPEN_END;
        assert_eq!(check_range("t", range(30, open), 5, 30, STRICT).expect("at the end").0, range(30, open));
        assert!(check_range("t", range(31, open), 5, 30, STRICT).is_err(), "a start past the data");
        let (r, e) = check_range("t", range(2, open), 5, 30, LATEST).expect("reset");
        assert_eq!((r, e.map(|e| e.read)), (range(30, open), Some((30, open))), "the end stays open");
    }
}
