//! A topic's partitions and their watermarks, as the supervisor sees them each pass.

use super::client::Client;
use super::{ConsumerSettings, ReadError};
use rdkafka::{Offset, TopicPartitionList};
use std::collections::BTreeMap;

/// The low and high watermark of a partition: the earliest offset kept and the next offset
/// to be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watermarks {
    /// Earliest offset kept.
    pub low: i64,
    /// Next offset to be written.
    pub high: i64,
}

/// Lists the partitions of `topic` with their watermarks (blocking: call it off the async
/// threads). A topic that does not exist is an error naming it.
pub fn partition_watermarks(settings: &ConsumerSettings, topic: &str) -> Result<BTreeMap<i32, Watermarks>, ReadError> {
    let broker = |reason: String| ReadError::Broker {
        topic: topic.into(),
        bootstrap: settings.bootstrap().into(),
        reason: settings.redact(&reason),
    };
    let consumer = Client::create(settings, &settings.client_config())
        .map_err(|e| broker(format!("cannot create a consumer: {e}")))?;
    let timeout = settings.request_timeout();
    let metadata = consumer
        .fetch_metadata(Some(topic), timeout)
        .map_err(|e| broker(format!("cannot read the topic's metadata ({e}); is the broker running?")))?;
    let Some(t) = metadata.topics().iter().find(|t| t.name() == topic) else {
        return Err(broker("the broker does not list the topic".into()));
    };
    if let Some(e) = t.error() {
        return Err(broker(format!("the topic is not available: {e:?}")));
    }
    if t.partitions().is_empty() {
        return Err(broker("the topic has no partitions (does it exist?)".into()));
    }
    let mut out = BTreeMap::new();
    for p in t.partitions() {
        let (low, high) = consumer
            .fetch_watermarks(topic, p.id(), timeout)
            .map_err(|e| broker(format!("cannot read partition {}'s watermarks: {e}", p.id())))?;
        out.insert(p.id(), Watermarks { low, high });
    }
    Ok(out)
}

/// Commits `offsets` (partition -> next offset) of `topic` to the consumer group `group`, for
/// Kafka's lag tools; Sluice never reads them back (blocking).
pub fn commit_group_offsets(
    settings: &ConsumerSettings,
    group: &str,
    topic: &str,
    offsets: &BTreeMap<i32, i64>,
) -> Result<(), ReadError> {
    let broker = |reason: String| ReadError::Broker {
        topic: topic.into(),
        bootstrap: settings.bootstrap().into(),
        reason: settings.redact(&reason),
    };
    let mut config = settings.client_config();
    config.set("group.id", group);
    let consumer = Client::create(settings, &config).map_err(|e| broker(format!("cannot create a consumer: {e}")))?;
    let mut tpl = TopicPartitionList::new();
    for (&p, &o) in offsets {
        tpl.add_partition_offset(topic, p, Offset::Offset(o)).map_err(|e| broker(e.to_string()))?;
    }
    consumer.commit(&tpl).map_err(|e| broker(format!("cannot commit offsets for group {group:?}: {e}")))
}
