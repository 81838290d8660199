//! `commitOffsetsToKafka` on a real Kafka broker: the consumer group Sluice commits to is
//! described first, and a group another client joined (live, or stopped since) is left as it
//! was. Run it against Kafka with `SLUICE_KAFKA=host:port cargo test -p sluice-integration
//! --test services kafka_group -- --ignored`.

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use sluice_integration::kafka::create_topic;
use sluice_integration::{required_env, unique};
use sluice_kafka::{commit_datasource_offsets, consumer_group, ConsumerSettings, GroupCommitError};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn committed(bootstrap: &str, group: &str, topic: &str) -> Vec<Offset> {
    let consumer: BaseConsumer =
        ClientConfig::new().set("bootstrap.servers", bootstrap).set("group.id", group).create().expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition(topic, 0);
    let found = consumer.committed_offsets(tpl, Duration::from_secs(10)).expect("committed offsets");
    found.elements().iter().map(|e| e.offset()).collect()
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a broker that describes consumer groups (Kafka, Amazon MSK): tansu 0.6 fails DescribeGroups on its SQLite storage, and takes commits from outside a group's generation"]
async fn a_group_another_client_joined_is_never_committed_to() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "group", 1).await;
    let datasource = unique("group");
    let group = consumer_group(&datasource);
    let settings = ConsumerSettings::new(&BTreeMap::from([("bootstrap.servers".to_string(), bootstrap.clone())]))
        .expect("settings");
    let published = BTreeMap::from([(topic.clone(), BTreeMap::from([(0, 40)]))]);
    let (b, t, g) = (bootstrap.clone(), topic.clone(), group.clone());
    tokio::task::spawn_blocking(move || {
        // Another application subscribes under the name and commits its own position.
        let member: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &b)
            .set("group.id", &g)
            .set("enable.auto.commit", "false")
            .create()
            .expect("member");
        member.subscribe(&[t.as_str()]).expect("subscribe");
        let deadline = Instant::now() + Duration::from_secs(60);
        while member.assignment().expect("assignment").count() == 0 {
            assert!(Instant::now() < deadline, "the member was never assigned the partition");
            let _ = member.poll(Duration::from_millis(100));
        }
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&t, 0, Offset::Offset(5)).expect("partition");
        member.commit(&tpl, CommitMode::Sync).expect("the member's commit");

        let live = commit_datasource_offsets(&settings, &datasource, &published).expect_err("a live member");
        assert!(matches!(&live, GroupCommitError::Foreign { group, .. } if *group == g), "{live}");
        assert!(live.to_string().contains("member(s)"), "{live}");

        // Stopped: no member left, but the group is still the other application's.
        member.unsubscribe();
        drop(member);
        let stopped = commit_datasource_offsets(&settings, &datasource, &published).expect_err("a stopped member");
        assert!(matches!(&stopped, GroupCommitError::Foreign { group, .. } if *group == g), "{stopped}");
    })
    .await
    .expect("the check ran");
    assert_eq!(committed(&bootstrap, &group, &topic), [Offset::Offset(5)], "the application's offset stays");

    // A group nobody joined is Sluice's, committed to again and again.
    let datasource = unique("group");
    let settings = ConsumerSettings::new(&BTreeMap::from([("bootstrap.servers".to_string(), bootstrap.clone())]))
        .expect("settings");
    let own = tokio::task::spawn_blocking(move || {
        for end in [10, 20] {
            let published = BTreeMap::from([(topic.clone(), BTreeMap::from([(0, end)]))]);
            commit_datasource_offsets(&settings, &datasource, &published).expect("Sluice's own group");
        }
        (consumer_group(&datasource), topic)
    })
    .await
    .expect("commits ran");
    assert_eq!(committed(&bootstrap, &own.0, &own.1), [Offset::Offset(20)]);
}
