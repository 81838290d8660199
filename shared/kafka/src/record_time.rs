//! The times of the records at given offsets: the supervisor's time lag (Druid's
//! `ingest/kafka/lag/time`) is how long ago the oldest record not yet published was written.

use super::client::Client;
use super::{ConsumerSettings, ReadError};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Partitions whose record times one call reads at most; the others get none.
pub const MAX_TIMED_PARTITIONS: usize = 1_000;

/// Longest one call waits for the records (blocking): past it, the partitions not answered
/// get no time.
pub const RECORD_TIME_WAIT: Duration = Duration::from_secs(3);

/// The timestamp (ms, as the record carries it: its create or log-append time) of the first
/// record at or after each `(topic, partition, offset)` (blocking: call it off the async
/// threads). A partition the broker answers with an error (an offset out of range, a topic
/// gone), or not within [`RECORD_TIME_WAIT`], or past [`MAX_TIMED_PARTITIONS`], is left out.
pub fn record_times(
    settings: &ConsumerSettings,
    at: &[(String, i32, i64)],
) -> Result<BTreeMap<(String, i32), i64>, ReadError> {
    let mut out = BTreeMap::new();
    let at = &at[..at.len().min(MAX_TIMED_PARTITIONS)];
    if at.is_empty() {
        return Ok(out);
    }
    let broker = |reason: String| ReadError::Broker {
        topic: at[0].0.clone(),
        bootstrap: settings.bootstrap().into(),
        reason: settings.redact(&reason),
    };
    let mut config = settings.client_config_for(at.len());
    // One record per partition is all that is read.
    config.set("fetch.max.bytes", "1048576").set("max.partition.fetch.bytes", "65536");
    let consumer = Client::create(settings, &config).map_err(|e| broker(format!("cannot create a consumer: {e}")))?;
    let mut assignment = TopicPartitionList::new();
    for (topic, partition, offset) in at {
        assignment
            .add_partition_offset(topic, *partition, Offset::Offset(*offset))
            .map_err(|e| broker(format!("partition {partition} at offset {offset}: {e}")))?;
    }
    consumer.assign(&assignment).map_err(|e| broker(format!("cannot assign the partitions: {e}")))?;
    let deadline = Instant::now() + RECORD_TIME_WAIT;
    while out.len() < at.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match consumer.poll(left.min(Duration::from_millis(200))) {
            Some(Ok(m)) => {
                if let Some(ms) = m.timestamp().to_millis() {
                    out.entry((m.topic().to_string(), m.partition())).or_insert(ms);
                }
            }
            // A partition's error (its offset out of range, say) leaves it out; the others
            // are still read.
            Some(Err(e)) => tracing::debug!(error = %e, "a record time not read"),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock;

    #[test]
    fn the_time_of_the_record_at_each_offset_is_read() {
        let cluster = mock::cluster(&[("events", 2)]);
        let settings = mock::settings(&cluster);
        let times: Vec<i64> = (0..5).map(|i| 1_700_000_000_000 + i * 60_000).collect();
        for (i, t) in times.iter().enumerate() {
            mock::produce_at(&cluster, "events", 0, format!("r{i}").as_bytes(), *t);
        }
        mock::produce_at(&cluster, "events", 1, b"only", 1_600_000_000_000);
        let at = [("events".to_string(), 0, 3), ("events".to_string(), 1, 0)];
        let read = record_times(&settings, &at).expect("record times");
        assert_eq!(read.get(&("events".into(), 0)), Some(&times[3]), "{read:?}");
        assert_eq!(read.get(&("events".into(), 1)), Some(&1_600_000_000_000), "{read:?}");
        // An offset past the end has no record yet: left out, within the wait.
        let started = Instant::now();
        let past = record_times(&settings, &[("events".to_string(), 1, 5)]).expect("record times");
        assert!(past.is_empty(), "{past:?}");
        assert!(started.elapsed() < RECORD_TIME_WAIT + Duration::from_secs(2));
    }
}
