//! A topic's partitions and their watermarks (or those of every topic matching a pattern), as
//! the supervisor sees them each pass.

use super::client::Client;
use super::{ConsumerSettings, ReadError};
use rdkafka::metadata::MetadataTopic;
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
    let broker = broker_error(settings, topic);
    let consumer = Client::create(settings, &settings.client_config())
        .map_err(|e| broker(format!("cannot create a consumer: {e}")))?;
    let metadata = consumer
        .fetch_metadata(Some(topic), settings.request_timeout())
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
    watermarks_of(settings, &consumer, t)
}

/// Lists every topic whose name `matches`, with its partitions' watermarks (blocking). A
/// matching topic the broker reports an error for, or without partitions (being created or
/// deleted), is left out; the next pass sees it again.
pub fn matching_watermarks(
    settings: &ConsumerSettings,
    pattern: &str,
    matches: &dyn Fn(&str) -> bool,
) -> Result<BTreeMap<String, BTreeMap<i32, Watermarks>>, ReadError> {
    let broker = broker_error(settings, pattern);
    let consumer = Client::create(settings, &settings.client_config())
        .map_err(|e| broker(format!("cannot create a consumer: {e}")))?;
    let metadata = consumer
        .fetch_metadata(None, settings.request_timeout())
        .map_err(|e| broker(format!("cannot list the topics ({e}); is the broker running?")))?;
    let mut out = BTreeMap::new();
    for t in metadata.topics().iter().filter(|t| matches(t.name())) {
        if let Some(e) = t.error() {
            tracing::warn!(topic = t.name(), error = ?e, "a topic matching the pattern is not available; left out");
            continue;
        }
        if !t.partitions().is_empty() {
            out.insert(t.name().to_string(), watermarks_of(settings, &consumer, t)?);
        }
    }
    Ok(out)
}

fn broker_error<'a>(settings: &'a ConsumerSettings, topic: &'a str) -> impl Fn(String) -> ReadError + 'a {
    move |reason: String| ReadError::Broker {
        topic: topic.into(),
        bootstrap: settings.bootstrap().into(),
        reason: settings.redact(&reason),
    }
}

fn watermarks_of(
    settings: &ConsumerSettings,
    consumer: &Client,
    topic: &MetadataTopic,
) -> Result<BTreeMap<i32, Watermarks>, ReadError> {
    let broker = broker_error(settings, topic.name());
    let mut out = BTreeMap::new();
    for p in topic.partitions() {
        let (low, high) = consumer
            .fetch_watermarks(topic.name(), p.id(), settings.request_timeout())
            .map_err(|e| broker(format!("cannot read partition {}'s watermarks: {e}", p.id())))?;
        out.insert(p.id(), Watermarks { low, high });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock;
    use sluice_format::spec::TopicPattern;

    #[test]
    fn a_pattern_lists_no_internal_topic_unless_it_names_it() {
        let cluster = mock::cluster(&[("events", 1), ("__amazon_msk_canary", 1), ("__consumer_offsets", 1)]);
        let settings = mock::settings(&cluster);
        let listed = |pattern: &str| {
            let p = TopicPattern::new(pattern).expect("pattern");
            let found = matching_watermarks(&settings, pattern, &|t| p.matches(t)).expect("listed");
            found.into_keys().collect::<Vec<_>>()
        };
        assert_eq!(listed(".*"), ["events"]);
        assert_eq!(listed("__amazon_msk_canary"), ["__amazon_msk_canary"], "named exactly");
    }
}
