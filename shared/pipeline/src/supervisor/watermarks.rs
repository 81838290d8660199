//! What a step asks Kafka: the partitions and watermarks of the grouping's topics, the time of
//! the oldest record not yet committed per partition, and the commit of the published offsets
//! to the datasource's consumer group.

use super::SupervisorError;
use crate::layout::datasource::TopicOffsets;
use crate::layout::grouping::GroupingItem;
use sluice_format::spec::TopicPattern;
use sluice_kafka::{
    commit_datasource_offsets, matching_watermarks, partition_watermarks, record_times, ConsumerSettings, Watermarks,
};
use std::collections::BTreeMap;

/// Where a partition with nothing committed is first read from (`useEarliestOffset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FirstRead {
    Earliest,
    Latest,
}

/// Per partition, how long ago (ms before `now_ms`) the oldest record not committed was
/// written: the time of the record at the committed offset (with nothing committed, at the low
/// watermark when the datasource reads from the earliest offset; none when it reads from the
/// latest), 0 for a partition caught up. Informational: a partition whose record is not read in
/// time is left out, and a broker error only logged.
pub(super) async fn time_lags(
    settings: &ConsumerSettings,
    marks: &BTreeMap<String, BTreeMap<i32, Watermarks>>,
    committed: &TopicOffsets,
    first: FirstRead,
    now_ms: i64,
) -> TopicOffsets {
    let mut lags = TopicOffsets::new();
    let mut behind = Vec::new();
    for (topic, partitions) in marks {
        for (&p, w) in partitions {
            let from = match committed.get(topic).and_then(|c| c.get(&p)) {
                Some(&c) => c.max(w.low),
                None if first == FirstRead::Earliest => w.low,
                None => continue,
            };
            if from >= w.high {
                lags.entry(topic.clone()).or_default().insert(p, 0);
            } else {
                behind.push((topic.clone(), p, from));
            }
        }
    }
    if behind.is_empty() {
        return lags;
    }
    let settings = settings.clone();
    match tokio::task::spawn_blocking(move || record_times(&settings, &behind)).await {
        Ok(Ok(times)) => {
            for ((topic, p), at) in times {
                lags.entry(topic).or_default().insert(p, (now_ms - at).max(0));
            }
        }
        Ok(Err(e)) => tracing::warn!(error = %e, "record times not read: no time lag this pass"),
        Err(e) => tracing::warn!(error = %e, "record time reader panicked: no time lag this pass"),
    }
    lags
}

/// The partitions and watermarks of the grouping's topic, or of every topic its pattern
/// matches.
pub(super) async fn topic_watermarks(
    name: &str,
    settings: &ConsumerSettings,
    grouping: &GroupingItem,
) -> Result<BTreeMap<String, BTreeMap<i32, Watermarks>>, SupervisorError> {
    let invalid = |reason: String| SupervisorError::Invalid { datasource: name.into(), reason };
    let (settings, topic) = (settings.clone(), grouping.topic.clone());
    let read = match grouping.pattern {
        false => {
            tokio::task::spawn_blocking(move || {
                partition_watermarks(&settings, &topic).map(|marks| BTreeMap::from([(topic, marks)]))
            })
            .await
        }
        true => {
            let pattern = TopicPattern::new(&topic).map_err(|e| invalid(format!("topicPattern {e}")))?;
            tokio::task::spawn_blocking(move || matching_watermarks(&settings, &topic, &|t| pattern.matches(t))).await
        }
    };
    Ok(read.map_err(|e| invalid(format!("watermark reader panicked: {e}")))??)
}

/// Commits the published offsets to the datasource's Kafka consumer group, for tools that
/// watch consumer lag. Informational only: a failure, or a group that is another
/// application's, is logged and returned for the status, never fatal to the pass.
pub(super) async fn commit_to_consumer_group(
    settings: ConsumerSettings,
    name: &str,
    committed: &TopicOffsets,
) -> Option<String> {
    let (committed, datasource) = (committed.clone(), name.to_string());
    let failed = match tokio::task::spawn_blocking(move || {
        commit_datasource_offsets(&settings, &datasource, &committed)
    })
    .await
    {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(e) => Some(format!("consumer group {:?}: {e}", sluice_kafka::consumer_group(name))),
    };
    if let Some(error) = &failed {
        tracing::warn!(datasource = name, error, "offsets not committed to the Kafka consumer group");
    }
    failed
}
