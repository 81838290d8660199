//! The range reader: one consumer over the assigned ranges, read in steps. A step ends when
//! every partition reached its end, when the deadline passes, or when the handler asks to
//! pause (the indexing task pauses to persist and checkpoint, then reads on with the same
//! consumer and its prefetched records).

use super::client::Client;
use super::{check_range, ConsumerSettings, OffsetRange, ReadError, ReadOutcome, Record, ResetEvent, ResetPolicy};
use rdkafka::error::KafkaError;
use rdkafka::{Message, Offset, TopicPartitionList};
use sluice_format::offsets::OPEN_END;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Records between two readings of the clock (deadline and stall checks).
const CLOCK_EVERY: u32 = 64;

/// Why a handler refused a record: its own error, carried by [`ReadError::Handler`].
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// What the handler wants after a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Read on.
    Continue,
    /// End this step after this record; the next step continues from the next offset.
    Pause,
}

/// Why a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Every partition reached its end.
    Complete,
    /// The handler asked to pause.
    Paused,
    /// The deadline passed.
    Deadline,
}

/// A consumer over exact offset ranges of one topic.
pub struct RangeReader {
    consumer: Option<Client>,
    topic: String,
    bootstrap: String,
    positions: BTreeMap<i32, i64>,
    ends: BTreeMap<i32, i64>,
    pending: BTreeMap<i32, i64>,
    resets: Vec<ResetEvent>,
    delivered: u64,
    stall: Duration,
}

impl std::fmt::Debug for RangeReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeReader")
            .field("topic", &self.topic)
            .field("positions", &self.positions)
            .field("ends", &self.ends)
            .finish_non_exhaustive()
    }
}

impl RangeReader {
    /// Checks `ranges` against the partitions' watermarks (applying `policy`) and assigns them.
    pub fn open(
        settings: &ConsumerSettings,
        topic: &str,
        ranges: &[OffsetRange],
        policy: ResetPolicy,
    ) -> Result<Self, ReadError> {
        let broker = |reason: String| ReadError::Broker {
            topic: topic.into(),
            bootstrap: settings.bootstrap().into(),
            reason: settings.redact(&reason),
        };
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
        let mut reader = Self {
            consumer: None,
            topic: topic.into(),
            bootstrap: settings.bootstrap().into(),
            positions,
            ends,
            pending: BTreeMap::new(),
            resets: Vec::new(),
            delivered: 0,
            stall: settings.stall_timeout(),
        };
        if ranges.iter().all(|r| r.end == r.start) {
            return Ok(reader);
        }
        let consumer = Client::create(settings, &settings.client_config_for(ranges.len()))
            .map_err(|e| broker(format!("cannot create a consumer: {e}")))?;
        let timeout = settings.request_timeout();
        let mut tpl = TopicPartitionList::new();
        for r in ranges.iter().filter(|r| r.end > r.start) {
            let (low, high) =
                consumer.fetch_watermarks(topic, r.partition, timeout).map_err(|e| broker(watermark_error(&e)))?;
            let (r, reset) = check_range(topic, *r, low, high, policy)?;
            if let Some(event) = reset {
                tracing::warn!(topic, partition = r.partition, ?event, "offsets reset: a range is skipped");
                reader.resets.push(event);
                reader.positions.insert(r.partition, r.start);
                reader.ends.insert(r.partition, r.end);
            }
            if r.end > r.start {
                tpl.add_partition_offset(topic, r.partition, Offset::Offset(r.start))
                    .map_err(|e| broker(e.to_string()))?;
                reader.pending.insert(r.partition, r.end);
            } else {
                reader.positions.insert(r.partition, r.end);
            }
        }
        if !reader.pending.is_empty() {
            consumer.assign(&tpl).map_err(|e| broker(format!("cannot assign partitions: {e}")))?;
            reader.consumer = Some(consumer);
        }
        Ok(reader)
    }

    /// Per partition, the next offset to read (its end once finished).
    pub fn positions(&self) -> &BTreeMap<i32, i64> {
        &self.positions
    }

    /// Per partition, the end of its range (after any reset).
    pub fn ends(&self) -> &BTreeMap<i32, i64> {
        &self.ends
    }

    /// Ranges moved by the reset policy.
    pub fn resets(&self) -> &[ResetEvent] {
        &self.resets
    }

    /// Records handed to handlers so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Whether every partition reached its end.
    pub fn is_complete(&self) -> bool {
        self.pending.is_empty()
    }

    /// Hands the records in range to `handler`, in offset order per partition, until every
    /// partition is done, the handler pauses, or `deadline` passes.
    pub fn read(
        &mut self,
        deadline: Option<Instant>,
        mut handler: impl FnMut(Record<'_>) -> Result<Flow, HandlerError>,
    ) -> Result<Stop, ReadError> {
        let Some(consumer) = self.consumer.as_ref() else { return Ok(Stop::Complete) };
        // The clock is read on idle polls and every CLOCK_EVERY records, not per record.
        let mut last_progress = Instant::now();
        let (mut since_clock, mut delivered_at_clock) = (0u32, self.delivered);
        while !self.pending.is_empty() {
            since_clock += 1;
            if since_clock >= CLOCK_EVERY {
                since_clock = 0;
                let now = Instant::now();
                if self.delivered != delivered_at_clock {
                    (last_progress, delivered_at_clock) = (now, self.delivered);
                }
                if deadline.is_some_and(|d| now >= d) {
                    return Ok(Stop::Deadline);
                }
            }
            match consumer.poll(Duration::from_millis(100)) {
                Some(Ok(m)) => {
                    let (p, o) = (m.partition(), m.offset());
                    let Some(&end) = self.pending.get(&p) else { continue };
                    let next = self.positions.get(&p).copied().unwrap_or(0);
                    let mut flow = Flow::Continue;
                    // Never deliver outside [position, end): past the end, or a redelivery.
                    if o < end && o >= next {
                        let record = Record::of(&m);
                        flow =
                            handler(record).map_err(|source| ReadError::Handler { partition: p, offset: o, source })?;
                        self.delivered += 1;
                        self.positions.insert(p, o + 1);
                    }
                    if o + 1 >= end {
                        self.positions.insert(p, end);
                        self.pending.remove(&p);
                    }
                    if flow == Flow::Pause {
                        return Ok(if self.pending.is_empty() { Stop::Complete } else { Stop::Paused });
                    }
                }
                Some(Err(KafkaError::PartitionEOF(_))) => since_clock = CLOCK_EVERY,
                Some(Err(e)) => {
                    since_clock = CLOCK_EVERY;
                    if self.delivered != delivered_at_clock {
                        (last_progress, delivered_at_clock) = (Instant::now(), self.delivered);
                    }
                    if last_progress.elapsed() > self.stall {
                        return Err(self.broker(format!("no progress for {} s: {e}", self.stall.as_secs())));
                    }
                }
                None => {
                    since_clock = CLOCK_EVERY;
                    if self.delivered != delivered_at_clock {
                        (last_progress, delivered_at_clock) = (Instant::now(), self.delivered);
                    }
                    advance_over_gaps(consumer, &self.topic, &mut self.pending, &mut self.positions);
                    if last_progress.elapsed() > self.stall / 2 && self.open_ranges_caught_up(consumer) {
                        // An open range at the partition's end waits for records: not a stall.
                        last_progress = Instant::now();
                    }
                    if !self.pending.is_empty() && last_progress.elapsed() > self.stall {
                        return Err(self.broker(format!(
                            "no record for {} s while offsets {:?} remain to be read",
                            self.stall.as_secs(),
                            self.pending
                        )));
                    }
                }
            }
        }
        Ok(Stop::Complete)
    }

    /// Whether every range left is open and read up to its partition's high watermark (one
    /// request per partition, made only after half the stall timeout without records).
    fn open_ranges_caught_up(&self, consumer: &Client) -> bool {
        self.pending.iter().all(|(&p, &end)| {
            end == OPEN_END
                && consumer
                    .fetch_watermarks(&self.topic, p, self.stall / 4)
                    .is_ok_and(|(_, high)| self.positions.get(&p).is_some_and(|&position| position >= high))
        })
    }

    fn broker(&self, reason: String) -> ReadError {
        ReadError::Broker { topic: self.topic.clone(), bootstrap: self.bootstrap.clone(), reason }
    }

    /// The outcome so far.
    pub fn outcome(&self) -> ReadOutcome {
        ReadOutcome {
            positions: self.positions.clone(),
            complete: self.is_complete(),
            delivered: self.delivered,
            resets: self.resets.clone(),
        }
    }
}

/// Reads `ranges` of `topic`, handing every record in range to `handler` in offset order per
/// partition, until every partition's position reaches its end or `deadline` passes.
pub fn read_ranges(
    settings: &ConsumerSettings,
    topic: &str,
    ranges: &[OffsetRange],
    policy: ResetPolicy,
    deadline: Option<Instant>,
    mut handler: impl FnMut(Record<'_>) -> Result<(), HandlerError>,
) -> Result<ReadOutcome, ReadError> {
    let mut reader = RangeReader::open(settings, topic, ranges, policy)?;
    reader.read(deadline, |r| handler(r).map(|()| Flow::Continue))?;
    Ok(reader.outcome())
}

/// Gaps (compaction, transaction markers): the consumer's position can pass `end` without a
/// record at `end - 1`.
fn advance_over_gaps(
    consumer: &Client,
    topic: &str,
    pending: &mut BTreeMap<i32, i64>,
    positions: &mut BTreeMap<i32, i64>,
) {
    let Ok(pos) = consumer.position() else { return };
    for e in pos.elements_for_topic(topic) {
        if let (Offset::Offset(next), Some(&end)) = (e.offset(), pending.get(&e.partition())) {
            if next >= end {
                positions.insert(e.partition(), end);
                pending.remove(&e.partition());
            }
        }
    }
}

fn watermark_error(e: &KafkaError) -> String {
    format!("cannot read the partition's watermarks ({e}); is the broker running and does the topic exist?")
}
