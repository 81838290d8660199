//! The datasource's `grouping` item ([`crate::layout::grouping`]) as a pass reads and writes
//! it: created on the first pass, a change recorded when the spec asks for another `taskCount`
//! or topic, the partitions of the epoch's first read and a pattern's topics recorded. Every
//! write is conditioned on the version read. Moving a change on (its snapshot, the next
//! epoch) is [`super::regroup`].

use super::SupervisorError;
use crate::item::{parse_body, to_json};
use crate::keys::{datasource_pk, GROUPING_SK};
use crate::layout::grouping::{GroupingChange, GroupingItem, MAX_PATTERN_TOPICS};
use sluice_format::spec::TopicSource;
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore};
use std::collections::BTreeMap;

/// The `grouping` item and its version.
#[derive(Debug, Clone)]
pub(crate) struct Grouping {
    pub item: GroupingItem,
    pub version: u64,
}

impl Grouping {
    /// Writes `item` in place of the read one; false when another writer moved it first.
    pub(super) async fn replace(
        &mut self,
        meta: &dyn MetadataStore,
        name: &str,
        item: GroupingItem,
    ) -> Result<bool, MetaError> {
        let put = Item::new(datasource_pk(name), GROUPING_SK, to_json(&item));
        match meta.put(put, Condition::Version(self.version)).await {
            Ok(version) => {
                self.item = item;
                self.version = version;
                Ok(true)
            }
            Err(MetaError::ConditionFailed { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Forgets the partitions of the epoch's first read (a reset): the next pass reads them
    /// again, and each starts where `useEarliestOffset` says. False when another writer won.
    pub async fn forget_initial_partitions(&mut self, meta: &dyn MetadataStore, name: &str) -> Result<bool, MetaError> {
        let mut item = GroupingItem { initial_partitions: None, ..self.item.clone() };
        // A pattern's topics keep their numbers (their groups' items were reset in place).
        item.topics.iter_mut().for_each(|t| t.initial_partitions = None);
        self.replace(meta, name, item).await
    }
}

/// The datasource's grouping, read (`None` when it has none yet).
pub(crate) async fn read(meta: &dyn MetadataStore, name: &str) -> Result<Option<Grouping>, SupervisorError> {
    match meta.get(&datasource_pk(name), GROUPING_SK).await? {
        Some(item) => Ok(Some(Grouping { item: parse_body(name, &item)?, version: item.version })),
        None => Ok(None),
    }
}

/// The grouping a pass works with: created on the first pass (a datasource from before
/// groupings had epochs keeps its items as epoch 1), and with a change recorded when the spec
/// asks for another `taskCount` or topic. `None`: another supervisor wrote it first; the pass
/// stops and the next one goes on.
pub(super) async fn load(
    meta: &dyn MetadataStore,
    name: &str,
    task_count: u32,
    source: &TopicSource,
) -> Result<Option<Grouping>, SupervisorError> {
    let (topic, pattern) = (source.text(), source.is_pattern());
    let Some(mut grouping) = read(meta, name).await? else {
        let item = GroupingItem::new(task_count, topic, pattern);
        let put = Item::new(datasource_pk(name), GROUPING_SK, to_json(&item));
        return match meta.put(put, Condition::Absent).await {
            Ok(version) => Ok(Some(Grouping { item, version })),
            Err(MetaError::ConditionFailed { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        };
    };
    if grouping.item.aims_at(task_count, topic, pattern) {
        return Ok(Some(grouping));
    }
    let mut item = grouping.item.clone();
    let snapshot = item.change.take().and_then(|c| c.snapshot);
    tracing::warn!(
        datasource = name,
        from_task_count = item.task_count,
        to_task_count = task_count,
        from_topic = item.topic,
        to_topic = topic,
        "grouping change: the current tasks finish, then the partitions are grouped anew from their committed offsets"
    );
    item.change = Some(GroupingChange { task_count, topic: topic.into(), pattern, snapshot });
    Ok(grouping.replace(meta, name, item).await?.then_some(grouping))
}

/// Records the partitions the epoch's topics have on its first read, and a pattern's topics
/// found since (see [`GroupingItem::with_topics_read`]); false when another supervisor wrote
/// the grouping first.
pub(super) async fn record_topics(
    meta: &dyn MetadataStore,
    name: &str,
    grouping: &mut Grouping,
    found: &BTreeMap<String, Vec<i32>>,
) -> Result<bool, SupervisorError> {
    let known = grouping.item.topic_names();
    let unread = found.keys().filter(|t| !known.contains(&t.as_str())).count();
    if grouping.item.pattern && grouping.item.topics.len() + unread > MAX_PATTERN_TOPICS {
        tracing::error!(
            datasource = name,
            matching = grouping.item.topics.len() + unread,
            "topicPattern matches more than {MAX_PATTERN_TOPICS} topics: those found last are not read"
        );
    }
    match grouping.item.with_topics_read(found) {
        Some(item) => {
            let added: Vec<&str> =
                item.topics.iter().skip(grouping.item.topics.len()).map(|t| t.name.as_str()).collect();
            if !added.is_empty() {
                tracing::info!(datasource = name, ?added, "topics matching the pattern found");
            }
            Ok(grouping.replace(meta, name, item).await?)
        }
        None => Ok(true),
    }
}
