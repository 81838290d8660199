//! Druid's row ingestion meters, and the last parse exceptions with where they happened.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// One parse exception: where and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParseException {
    /// Kafka partition.
    pub partition: i32,
    /// Kafka offset.
    pub offset: i64,
    /// The reason, naming the field when there is one.
    pub reason: String,
    /// Whether the row was kept with the bad fields null (`processedWithError`) or dropped.
    pub row_kept: bool,
}

/// The task failed: more parse exceptions than `maxParseExceptions`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("more than maxParseExceptions ({max}) parse exceptions; the last at partition {} offset {}: {}", .last.partition, .last.offset, .last.reason)]
pub struct TooManyParseExceptions {
    /// The limit.
    pub max: u64,
    /// The exception that crossed it.
    pub last: ParseException,
}

/// Counters with Druid's names, and the last `max_saved` parse exceptions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RowMeters {
    /// Rows indexed.
    pub processed: u64,
    /// Bytes of the records processed.
    pub processed_bytes: u64,
    /// Rows indexed with some fields that could not be converted.
    pub processed_with_error: u64,
    /// Records or rows that could not be parsed.
    pub unparseable: u64,
    /// Rows dropped by the filter or outside the message-time window.
    pub thrown_away: u64,
    /// The last parse exceptions, oldest first.
    pub saved_exceptions: VecDeque<ParseException>,
    #[serde(skip, default)]
    max_saved: usize,
    #[serde(skip, default)]
    max_exceptions: u64,
}

/// Parse exceptions a task keeps at most, whatever `maxSavedParseExceptions` asks: the meters
/// travel in every checkpoint item, which must stay under DynamoDB's 400 KB.
pub const MAX_SAVED_PARSE_EXCEPTIONS: usize = 500;
/// Characters of a saved parse exception's reason.
pub const MAX_REASON_CHARS: usize = 200;

impl RowMeters {
    /// Meters that keep `max_saved` exceptions and fail after `max_exceptions`.
    pub fn new(max_saved: u64, max_exceptions: u64) -> Self {
        Self {
            processed: 0,
            processed_bytes: 0,
            processed_with_error: 0,
            unparseable: 0,
            thrown_away: 0,
            saved_exceptions: VecDeque::new(),
            max_saved: usize::try_from(max_saved).unwrap_or(usize::MAX).min(MAX_SAVED_PARSE_EXCEPTIONS),
            max_exceptions,
        }
    }

    /// Meters that go on from counts recorded earlier (a checkpoint), with the given limits.
    pub fn resume(mut self, max_saved: u64, max_exceptions: u64) -> Self {
        let fresh = Self::new(max_saved, max_exceptions);
        self.max_saved = fresh.max_saved;
        self.max_exceptions = max_exceptions;
        while self.saved_exceptions.len() > self.max_saved {
            self.saved_exceptions.pop_front();
        }
        self
    }

    /// Counts a row that was indexed; `errors` are its field conversion errors.
    pub fn processed(
        &mut self,
        bytes: usize,
        partition: i32,
        offset: i64,
        errors: &[String],
    ) -> Result<(), TooManyParseExceptions> {
        self.processed += 1;
        self.processed_bytes += bytes as u64;
        if errors.is_empty() {
            return Ok(());
        }
        self.processed_with_error += 1;
        self.exception(ParseException { partition, offset, reason: errors.join("; "), row_kept: true })
    }

    /// Counts a record or row that could not be parsed.
    pub fn unparseable(&mut self, partition: i32, offset: i64, reason: String) -> Result<(), TooManyParseExceptions> {
        self.unparseable += 1;
        self.exception(ParseException { partition, offset, reason, row_kept: false })
    }

    /// Counts a row thrown away (filter or message-time window).
    pub fn thrown_away(&mut self) {
        self.thrown_away += 1;
    }

    fn exception(&mut self, mut e: ParseException) -> Result<(), TooManyParseExceptions> {
        if let std::borrow::Cow::Owned(cut) = crate::text::excerpt(&e.reason, MAX_REASON_CHARS) {
            e.reason = cut;
        }
        if self.unparseable + self.processed_with_error > self.max_exceptions {
            return Err(TooManyParseExceptions { max: self.max_exceptions, last: e });
        }
        if self.max_saved > 0 {
            if self.saved_exceptions.len() == self.max_saved {
                self.saved_exceptions.pop_front();
            }
            self.saved_exceptions.push_back(e);
        }
        Ok(())
    }
}

/// The counters of many tasks added up (a group's published tasks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MeterTotals {
    /// Rows indexed.
    pub processed: u64,
    /// Bytes of the records processed.
    pub processed_bytes: u64,
    /// Rows indexed with some fields that could not be converted.
    pub processed_with_error: u64,
    /// Records or rows that could not be parsed.
    pub unparseable: u64,
    /// Rows dropped by the filter or outside the message-time window.
    pub thrown_away: u64,
}

impl MeterTotals {
    /// Adds a task's meters.
    pub fn add(&mut self, m: &RowMeters) {
        self.merge(&MeterTotals {
            processed: m.processed,
            processed_bytes: m.processed_bytes,
            processed_with_error: m.processed_with_error,
            unparseable: m.unparseable,
            thrown_away: m.thrown_away,
        });
    }

    /// Adds other totals.
    pub fn merge(&mut self, other: &MeterTotals) {
        self.processed += other.processed;
        self.processed_bytes += other.processed_bytes;
        self.processed_with_error += other.processed_with_error;
        self.unparseable += other.unparseable;
        self.thrown_away += other.thrown_away;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_exceptions_stay_small_whatever_the_spec_asks() {
        let mut m = RowMeters::new(1_000_000, u64::MAX);
        for n in 0..2_000 {
            m.unparseable(0, n, "x".repeat(10_000)).expect("no limit");
        }
        assert_eq!(m.saved_exceptions.len(), MAX_SAVED_PARSE_EXCEPTIONS);
        assert_eq!(m.saved_exceptions.back().map(|e| e.offset), Some(1_999), "the latest are kept");
        let bytes = serde_json::to_vec(&m).expect("json").len();
        assert!(bytes < 150 << 10, "{bytes} bytes of meters in every checkpoint item");
    }

    #[test]
    fn counts_like_druid_and_keeps_the_last_exceptions() {
        let mut m = RowMeters::new(2, 10);
        m.processed(100, 0, 1, &[]).expect("ok");
        m.processed(50, 0, 2, &["could not convert x".to_string()]).expect("ok");
        m.unparseable(1, 7, "malformed JSON".into()).expect("ok");
        m.unparseable(1, 8, "missing timestamp".into()).expect("ok");
        m.thrown_away();
        assert_eq!(
            (m.processed, m.processed_bytes, m.processed_with_error, m.unparseable, m.thrown_away),
            (2, 150, 1, 2, 1)
        );
        let kept: Vec<(i32, i64)> = m.saved_exceptions.iter().map(|e| (e.partition, e.offset)).collect();
        assert_eq!(kept, vec![(1, 7), (1, 8)], "the last two, oldest first");
    }

    #[test]
    fn fails_past_max_parse_exceptions_naming_the_last() {
        let mut m = RowMeters::new(10, 1);
        m.unparseable(0, 5, "bad".into()).expect("one is allowed");
        let err = m.unparseable(2, 9, "worse".into()).expect_err("two are not");
        assert_eq!(
            err.to_string(),
            "more than maxParseExceptions (1) parse exceptions; the last at partition 2 offset 9: worse"
        );
        let json = serde_json::to_string(&m).expect("meters serialize");
        let resumed = serde_json::from_str::<RowMeters>(&json).expect("meters deserialize").resume(10, 3);
        assert_eq!((resumed.unparseable, resumed.saved_exceptions.len()), (2, 1), "counts survive a checkpoint");
        let mut resumed = resumed;
        resumed.unparseable(3, 1, "third".into()).expect("three are allowed after resuming");
        assert!(resumed.unparseable(3, 2, "fourth".into()).is_err(), "the count goes on from the checkpoint");
        let mut strict = RowMeters::new(10, 0);
        assert!(strict.processed(1, 0, 0, &["x".into()]).is_err(), "reportParseExceptions: the first error fails");
    }
}
