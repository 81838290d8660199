//! The consumer group Sluice commits a datasource's published offsets to, for Kafka's lag tools
//! only: Sluice never reads them back (its own offsets live in the metadata store).
//!
//! The group is [`CONSUMER_GROUP_PREFIX`] followed by the datasource's name, so that a
//! datasource named like another application's group never writes to that group. Before each
//! commit the group is described, and it is taken as Sluice's only when it does not exist yet
//! or when it has no members and no protocol type: Sluice commits with explicit partitions and
//! never joins a group, while every client that subscribes (joins) leaves its protocol type
//! (`consumer`) on the group, even after its members left. A group that is anyone else's is not
//! written to, and its committed offsets stay as they are.
//!
//! A broker that cannot describe the group (one without the group APIs, ListGroups and
//! DescribeGroups, which every Kafka broker since 0.9 has; or an emulator that fails them) is
//! logged, and the commit is sent: the broker's own check, which refuses an offset commit from
//! outside the group's generation while the group has members, is what stands then. The prefix
//! keeps every group but Sluice's out of reach either way.

use super::client::Client;
use super::ConsumerSettings;
use rdkafka::{Offset, TopicPartitionList};
use std::collections::BTreeMap;

/// What the consumer group Sluice commits a datasource's offsets to starts with: a name space
/// of Sluice's own, which deployments can grant Sluice's role alone (Amazon MSK's IAM
/// `kafka-cluster:*Group` actions on `group/<cluster>/<uuid>/sluice.*`).
pub const CONSUMER_GROUP_PREFIX: &str = "sluice.";

/// The consumer group Sluice commits `datasource`'s published offsets to.
pub fn consumer_group(datasource: &str) -> String {
    format!("{CONSUMER_GROUP_PREFIX}{datasource}")
}

/// Why offsets were not committed to a consumer group.
#[derive(Debug, thiserror::Error)]
pub enum GroupCommitError {
    /// The group is another application's: nothing was written to it.
    #[error("consumer group {group:?} is not sluice's ({reason}); offsets not committed")]
    Foreign {
        /// The group.
        group: String,
        /// What shows it is another application's.
        reason: String,
    },
    /// The broker could not be asked, or refused the commit.
    #[error("consumer group {group:?} on {bootstrap}: {reason}")]
    Broker {
        /// The group.
        group: String,
        /// The bootstrap servers.
        bootstrap: String,
        /// What happened.
        reason: String,
    },
}

/// What the broker says of a group, as far as deciding whose it is goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupView {
    /// Members in the group now.
    pub num_members: usize,
    /// The protocol type its members joined with (empty when none ever joined).
    pub protocol_type: String,
    /// The group's state (`Empty`, `Stable`, `Dead`, ...).
    pub state: String,
}

/// Why the group described by `view` is not Sluice's; `None` when it is (no such group, a dead
/// one, or one without members or protocol type).
pub(crate) fn foreign_reason(view: Option<&GroupView>) -> Option<String> {
    let view = view?;
    if view.state.eq_ignore_ascii_case("dead") && view.num_members == 0 {
        return None;
    }
    if view.num_members > 0 {
        return Some(format!("it has {} member(s) of another client", view.num_members));
    }
    if !view.protocol_type.is_empty() {
        return Some(format!("clients joined it as a {:?} group", view.protocol_type));
    }
    None
}

/// Commits `offsets` (topic -> partition -> next offset) to `datasource`'s consumer group
/// ([`consumer_group`]), after checking that the group is Sluice's (blocking: call it off the
/// async threads). Returns the group written to.
pub fn commit_datasource_offsets(
    settings: &ConsumerSettings,
    datasource: &str,
    offsets: &BTreeMap<String, BTreeMap<i32, i64>>,
) -> Result<String, GroupCommitError> {
    let group = consumer_group(datasource);
    let broker = |reason: String| GroupCommitError::Broker {
        group: group.clone(),
        bootstrap: settings.bootstrap().into(),
        reason: settings.redact(&reason),
    };
    let mut config = settings.client_config();
    config.set("group.id", &group);
    let consumer = Client::create(settings, &config).map_err(|e| broker(format!("cannot create a consumer: {e}")))?;
    let view = match consumer.fetch_group_list(Some(group.as_str()), settings.request_timeout()) {
        Ok(list) => list.groups().iter().find(|g| g.name() == group).map(|g| GroupView {
            num_members: g.members().len(),
            protocol_type: g.protocol_type().to_string(),
            state: g.state().to_string(),
        }),
        Err(e) => {
            let error = settings.redact(&e.to_string());
            tracing::warn!(group = %group, error, "cannot describe the consumer group; the broker's own membership check stands");
            None
        }
    };
    if let Some(reason) = foreign_reason(view.as_ref()) {
        return Err(GroupCommitError::Foreign { group: group.clone(), reason });
    }
    let mut tpl = TopicPartitionList::new();
    for (topic, partitions) in offsets {
        for (&p, &o) in partitions {
            tpl.add_partition_offset(topic, p, Offset::Offset(o)).map_err(|e| broker(e.to_string()))?;
        }
    }
    consumer.commit(&tpl).map_err(|e| broker(format!("cannot commit offsets: {e}")))?;
    Ok(group)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(num_members: usize, protocol_type: &str, state: &str) -> GroupView {
        GroupView { num_members, protocol_type: protocol_type.into(), state: state.into() }
    }

    #[test]
    fn the_group_name_is_the_datasource_under_sluices_prefix() {
        assert_eq!(consumer_group("orders"), "sluice.orders");
        assert!(consumer_group("").starts_with(CONSUMER_GROUP_PREFIX));
    }

    #[test]
    fn only_groups_nobody_joined_are_sluices() {
        assert_eq!(foreign_reason(None), None, "a group that does not exist yet");
        assert_eq!(foreign_reason(Some(&view(0, "", "Empty"))), None, "offsets committed without joining");
        assert_eq!(foreign_reason(Some(&view(0, "consumer", "Dead"))), None, "a group being deleted");
        let live = foreign_reason(Some(&view(2, "consumer", "Stable"))).expect("members");
        assert!(live.contains("2 member(s)"), "{live}");
        let stopped = foreign_reason(Some(&view(0, "consumer", "Empty"))).expect("a stopped application's");
        assert!(stopped.contains("\"consumer\""), "{stopped}");
        assert!(foreign_reason(Some(&view(1, "", "Stable"))).is_some(), "any member is another client");
    }

    mod on_a_broker {
        use super::super::*;
        use crate::mock;
        use rdkafka::config::ClientConfig;
        use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
        use std::time::{Duration, Instant};

        fn consumer(bootstrap: &str, group: &str) -> BaseConsumer {
            ClientConfig::new()
                .set("bootstrap.servers", bootstrap)
                .set("group.id", group)
                .set("enable.auto.commit", "false")
                .create()
                .expect("consumer")
        }

        fn offsets(o0: i64, o1: i64) -> TopicPartitionList {
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition_offset("t", 0, Offset::Offset(o0)).expect("partition 0");
            tpl.add_partition_offset("t", 1, Offset::Offset(o1)).expect("partition 1");
            tpl
        }

        fn committed(bootstrap: &str, group: &str) -> Vec<Offset> {
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition("t", 0);
            tpl.add_partition("t", 1);
            let found = consumer(bootstrap, group).committed_offsets(tpl, Duration::from_secs(10)).expect("committed");
            found.elements().iter().map(|e| e.offset()).collect()
        }

        fn published(o0: i64, o1: i64) -> BTreeMap<String, BTreeMap<i32, i64>> {
            BTreeMap::from([("t".to_string(), BTreeMap::from([(0, o0), (1, o1)]))])
        }

        #[test]
        fn a_group_named_as_the_datasource_keeps_its_offsets() {
            let cluster = mock::cluster(&[("t", 2)]);
            let bootstrap = cluster.bootstrap_servers();
            // Another application's offsets, committed without joining (as Flink's source does).
            consumer(&bootstrap, "orders").commit(&offsets(3, 4), CommitMode::Sync).expect("their commit");
            let group =
                commit_datasource_offsets(&mock::settings(&cluster), "orders", &published(7, 9)).expect("commit");
            assert_eq!(group, "sluice.orders");
            assert_eq!(committed(&bootstrap, "sluice.orders"), [Offset::Offset(7), Offset::Offset(9)]);
            assert_eq!(committed(&bootstrap, "orders"), [Offset::Offset(3), Offset::Offset(4)], "left as they were");
        }

        #[test]
        fn a_group_another_client_joined_is_not_committed_to() {
            let cluster = mock::cluster(&[("t", 2)]);
            let bootstrap = cluster.bootstrap_servers();
            let member = consumer(&bootstrap, "sluice.orders");
            member.subscribe(&["t"]).expect("subscribe");
            let deadline = Instant::now() + Duration::from_secs(30);
            while member.assignment().expect("assignment").count() == 0 {
                assert!(Instant::now() < deadline, "the member was never assigned the topic's partitions");
                let _ = member.poll(Duration::from_millis(100));
            }
            member.commit(&offsets(3, 4), CommitMode::Sync).expect("the member's commit");
            let err = commit_datasource_offsets(&mock::settings(&cluster), "orders", &published(7, 9))
                .expect_err("another client's group");
            assert!(err.to_string().contains("consumer group \"sluice.orders\""), "{err}");
            assert_eq!(committed(&bootstrap, "sluice.orders"), [Offset::Offset(3), Offset::Offset(4)], "untouched");
            assert_eq!(committed(&bootstrap, "orders"), [Offset::Invalid, Offset::Invalid], "nor the bare name");
        }
    }
}
