//! Test helpers: librdkafka's in-process mock cluster, and consumer settings pointing at it.

use super::ConsumerSettings;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::DefaultProducerContext;
use std::collections::BTreeMap;

/// A mock cluster of one broker.
pub(crate) type Cluster = MockCluster<'static, DefaultProducerContext>;

/// A mock cluster holding `topics` (name, partitions).
pub(crate) fn cluster(topics: &[(&str, i32)]) -> Cluster {
    let cluster = MockCluster::new(1).expect("mock cluster");
    for (topic, partitions) in topics {
        cluster.create_topic(topic, *partitions, 1).expect("topic");
    }
    cluster
}

/// Settings of a consumer of `cluster`.
pub(crate) fn settings(cluster: &Cluster) -> ConsumerSettings {
    ConsumerSettings::new(&BTreeMap::from([("bootstrap.servers".to_string(), cluster.bootstrap_servers())]))
        .expect("settings")
}

/// Writes one record to `topic`'s `partition` with timestamp `ms` and waits until the cluster
/// holds it.
pub(crate) fn produce_at(cluster: &Cluster, topic: &str, partition: i32, payload: &[u8], ms: i64) {
    use rdkafka::producer::{BaseRecord, Producer};
    let producer: rdkafka::producer::BaseProducer =
        rdkafka::ClientConfig::new().set("bootstrap.servers", cluster.bootstrap_servers()).create().expect("producer");
    let record = BaseRecord::<(), [u8]>::to(topic).partition(partition).payload(payload).timestamp(ms);
    producer.send(record).map_err(|(e, _)| e).expect("send");
    producer.flush(std::time::Duration::from_secs(10)).expect("flush");
}
