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

/// Held to write the broker's log directly (exclusive) or to produce (shared): tansu fails a
/// produce at once, not after a wait, when its SQLite database is locked by such an edit.
static LOG_EDITS: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Writes `records` (partition, value) in order and waits for every acknowledgement.
pub async fn produce(bootstrap: &str, topic: &str, records: &[(i32, Vec<u8>)]) {
    let _producing = LOG_EDITS.read().await;
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
    acknowledged(topic, deliveries).await;
}

/// A record with everything Kafka carries besides its value.
pub struct FullRecord {
    /// Partition.
    pub partition: i32,
    /// Key, if any.
    pub key: Option<Vec<u8>>,
    /// Headers in order (`None`: a null value).
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    /// The producer's timestamp (ms).
    pub timestamp: i64,
    /// Value (`None`: a tombstone).
    pub value: Option<Vec<u8>>,
}

/// Writes `records` in order, keys, headers and timestamps included, and waits for every
/// acknowledgement.
pub async fn produce_full(bootstrap: &str, topic: &str, records: &[FullRecord]) {
    use rdkafka::message::{Header, OwnedHeaders};
    let _producing = LOG_EDITS.read().await;
    let producer: FutureProducer = ClientConfig::new().set("bootstrap.servers", bootstrap).create().expect("producer");
    let mut deliveries = Vec::with_capacity(records.len());
    for r in records {
        let headers = r
            .headers
            .iter()
            .fold(OwnedHeaders::new(), |h, (key, value)| h.insert(Header { key, value: value.as_deref() }));
        let mut record =
            FutureRecord::<[u8], [u8]>::to(topic).partition(r.partition).timestamp(r.timestamp).headers(headers);
        if let Some(k) = &r.key {
            record = record.key(k.as_slice());
        }
        if let Some(v) = &r.value {
            record = record.payload(v.as_slice());
        }
        deliveries.push(producer.send_result(record).map_err(|(e, _)| e).expect("enqueue a record"));
    }
    acknowledged(topic, deliveries).await;
}

/// Waits for every delivery, in order; a failed one fails the test.
async fn acknowledged(topic: &str, deliveries: Vec<rdkafka::producer::DeliveryFuture>) {
    for (n, delivery) in deliveries.into_iter().enumerate() {
        match delivery.await {
            Ok(Ok(_)) => {}
            Ok(Err((e, _))) => panic!("produce record {n} to {topic}: {e}"),
            Err(_) => panic!("produce record {n} to {topic}: the producer went away"),
        }
    }
}

/// The test broker's log (tansu's SQLite database, `SLUICE_KAFKA_SQLITE`), opened to shape a
/// partition as compaction or retention would leave it: a real broker then serves the gaps.
fn broker_log() -> rusqlite::Connection {
    let path = crate::required_env("SLUICE_KAFKA_SQLITE");
    let db = rusqlite::Connection::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"));
    db.busy_timeout(std::time::Duration::from_secs(10)).expect("busy timeout");
    db
}

const TOPITION: &str =
    "(SELECT t.id FROM topition t JOIN topic ON t.topic = topic.id WHERE topic.name = ?1 AND t.partition = ?2)";

/// Removes the records at `offsets`, as compaction does: their offsets become gaps.
pub async fn compact_away(topic: &str, partition: i32, offsets: &[i64]) {
    let _editing = LOG_EDITS.write().await;
    let db = broker_log();
    for offset in offsets {
        let n = db
            .execute(
                &format!("DELETE FROM record WHERE topition = {TOPITION} AND offset_id = ?3"),
                (topic, partition, offset),
            )
            .expect("delete a record");
        assert_eq!(n, 1, "{topic}/{partition} has no record at {offset}");
    }
}

/// Removes every record below `low` and moves the low watermark there, as retention does.
pub async fn expire_before(topic: &str, partition: i32, low: i64) {
    let _editing = LOG_EDITS.write().await;
    let db = broker_log();
    db.execute(&format!("DELETE FROM record WHERE topition = {TOPITION} AND offset_id < ?3"), (topic, partition, low))
        .expect("delete records");
    let n = db
        .execute(&format!("UPDATE watermark SET low = ?3 WHERE topition = {TOPITION}"), (topic, partition, low))
        .expect("move the low watermark");
    assert_eq!(n, 1, "{topic}/{partition} has no watermark row");
}

/// Deletes `topic` (its partitions, records and offsets), as an operator would, in the
/// broker's log: tansu 0.6's DeleteTopics removes every topic of the cluster.
pub async fn delete_topic(topic: &str) {
    let _editing = LOG_EDITS.write().await;
    let db = broker_log();
    db.execute_batch("PRAGMA foreign_keys = ON").expect("cascading deletes");
    let n = db.execute("DELETE FROM topic WHERE name = ?1", [topic]).expect("delete the topic");
    assert_eq!(n, 1, "no topic {topic}");
}

/// Grows `topic` to `partitions` partitions in the broker's log (tansu 0.6 does not implement
/// CreatePartitions), as an operator adding partitions would.
pub async fn grow_topic(topic: &str, partitions: i32) {
    let _editing = LOG_EDITS.write().await;
    let db = broker_log();
    let (id, current): (i64, i32) = db
        .query_row("SELECT id, partitions FROM topic WHERE name = ?1", [topic], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("the topic");
    for p in current..partitions {
        db.execute("INSERT INTO topition (topic, partition) VALUES (?1, ?2)", (id, p)).expect("add a partition");
        let topition = db.last_insert_rowid();
        db.execute("INSERT INTO watermark (topition, low, high) VALUES (?1, 0, 0)", [topition])
            .expect("its watermarks");
    }
    db.execute("UPDATE topic SET partitions = ?1 WHERE id = ?2", (partitions, id)).expect("the partition count");
}
