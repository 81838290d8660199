//! Topics on the test broker: created per test with a unique name, filled with records.

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};

/// Creates a topic named after `name` (made unique) with `partitions` partitions.
pub async fn create_topic(bootstrap: &str, name: &str, partitions: i32) -> String {
    let topic = crate::unique(name);
    let admin: AdminClient<DefaultClientContext> =
        ClientConfig::new().set("bootstrap.servers", bootstrap).create().expect("admin client");
    let created = admin
        .create_topics(&[NewTopic::new(&topic, partitions, TopicReplication::Fixed(1))], &AdminOptions::new())
        .await
        .expect("create topics");
    assert!(created.iter().all(Result::is_ok), "{created:?}");
    topic
}

/// Writes `records` (partition, value) in order and waits for every acknowledgement.
pub async fn produce(bootstrap: &str, topic: &str, records: &[(i32, Vec<u8>)]) {
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("message.max.bytes", "10000000")
        .create()
        .expect("producer");
    // Enqueue everything first, then wait: one round trip per batch, not per record.
    let mut deliveries = Vec::with_capacity(records.len());
    for (p, value) in records {
        let record = FutureRecord::<(), _>::to(topic).partition(*p).payload(value);
        deliveries.push(producer.send_result(record).map_err(|(e, _)| e).expect("enqueue a record"));
    }
    for (n, delivery) in deliveries.into_iter().enumerate() {
        match delivery.await {
            Ok(Ok(_)) => {}
            Ok(Err((e, _))) => panic!("produce record {n} to {topic}: {e}"),
            Err(_) => panic!("produce record {n} to {topic}: the producer went away"),
        }
    }
}
