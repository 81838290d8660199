//! Fault injection with librdkafka's mock cluster: fetch errors and a broker going down in the
//! middle of a read (the range is still read with every record delivered exactly once), and
//! offsets lost to retention.

use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};
use sluice_kafka::{read_ranges, ConsumerSettings, OffsetRange, ReadError, ResetPolicy};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const PER_PARTITION: i64 = 300;

async fn cluster_with_records(topic: &str) -> MockCluster<'static, rdkafka::producer::DefaultProducerContext> {
    let cluster = MockCluster::new(1).expect("mock cluster");
    cluster.create_topic(topic, 3, 1).expect("topic");
    let producer: FutureProducer =
        ClientConfig::new().set("bootstrap.servers", cluster.bootstrap_servers()).create().expect("producer");
    for n in 0..PER_PARTITION {
        for p in 0..3 {
            let payload = format!("{p}:{n}");
            producer
                .send(FutureRecord::<(), _>::to(topic).partition(p).payload(&payload), Duration::from_secs(10))
                .await
                .expect("produce");
        }
    }
    cluster
}

fn ranges() -> Vec<OffsetRange> {
    (0..3).map(|p| OffsetRange { partition: p, start: 10, end: PER_PARTITION - 5 }).collect()
}

fn check_exactly_once(seen: &[(i32, i64)]) {
    let mut counts: BTreeMap<(i32, i64), u32> = BTreeMap::new();
    for s in seen {
        *counts.entry(*s).or_default() += 1;
    }
    assert!(counts.values().all(|&c| c == 1), "a record was delivered twice");
    let expected: Vec<(i32, i64)> = (0..3).flat_map(|p| (10..PER_PARTITION - 5).map(move |o| (p, o))).collect();
    assert_eq!(counts.keys().copied().collect::<Vec<_>>(), expected, "every offset of the ranges, nothing outside");
}

#[tokio::test(flavor = "multi_thread")]
async fn fetch_errors_are_retried_without_duplicates() {
    let cluster = cluster_with_records("faults").await;
    cluster.request_errors(
        RDKafkaApiKey::Fetch,
        &[
            RDKafkaRespErr::RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
            RDKafkaRespErr::RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
            RDKafkaRespErr::RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
        ],
    );
    let settings =
        ConsumerSettings::new(&BTreeMap::from([("bootstrap.servers".to_string(), cluster.bootstrap_servers())]))
            .expect("settings");
    let outcome = tokio::task::spawn_blocking(move || {
        let mut seen = Vec::new();
        let outcome = read_ranges(&settings, "faults", &ranges(), ResetPolicy::default(), None, |r| {
            seen.push((r.partition, r.offset));
            Ok(())
        });
        (outcome, seen)
    })
    .await
    .expect("reader");
    let (outcome, seen) = outcome;
    assert!(outcome.expect("read").complete);
    check_exactly_once(&seen);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broker_down_mid_read_delays_but_loses_and_repeats_nothing() {
    let cluster = cluster_with_records("down").await;
    let settings = ConsumerSettings::new(&BTreeMap::from([
        ("bootstrap.servers".to_string(), cluster.bootstrap_servers()),
        ("max.partition.fetch.bytes".to_string(), "512".to_string()),
    ]))
    .expect("settings");
    let delivered = Arc::new(AtomicU64::new(0));
    let counter = delivered.clone();
    let reader = tokio::task::spawn_blocking(move || {
        let mut seen = Vec::new();
        let outcome = read_ranges(&settings, "down", &ranges(), ResetPolicy::default(), None, |r| {
            seen.push((r.partition, r.offset));
            counter.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_micros(300));
            Ok(())
        });
        (outcome, seen)
    });
    let waited = std::time::Instant::now();
    while delivered.load(Ordering::Relaxed) < 50 && !reader.is_finished() {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "the read delivered {} records in 30 s",
            delivered.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cluster.broker_down(1).expect("down");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    cluster.broker_up(1).expect("up");
    let (outcome, seen) = reader.await.expect("reader");
    assert!(outcome.expect("read").complete);
    check_exactly_once(&seen);
}

#[tokio::test(flavor = "multi_thread")]
async fn offsets_lost_to_retention_fail_or_reset() {
    // The mock cluster keeps about 5 MB per partition: 80 records of 100 KB push the oldest out.
    let cluster = MockCluster::new(1).expect("mock cluster");
    cluster.create_topic("retention", 1, 1).expect("topic");
    let bootstrap = cluster.bootstrap_servers();
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .set("linger.ms", "0")
        .set("batch.num.messages", "1")
        .create()
        .expect("producer");
    let payload = vec![b'x'; 100_000];
    for _ in 0..80 {
        producer
            .send(FutureRecord::<(), _>::to("retention").partition(0).payload(&payload), Duration::from_secs(10))
            .await
            .expect("produce");
    }
    let (settings, strict_settings) = (
        ConsumerSettings::new(&BTreeMap::from([("bootstrap.servers".to_string(), bootstrap.clone())]))
            .expect("settings"),
        ConsumerSettings::new(&BTreeMap::from([("bootstrap.servers".to_string(), bootstrap)])).expect("settings"),
    );
    let range = [OffsetRange { partition: 0, start: 0, end: 80 }];
    let (strict, reset) = tokio::task::spawn_blocking(move || {
        let strict = read_ranges(&strict_settings, "retention", &range, ResetPolicy::default(), None, |_| Ok(()));
        let earliest = ResetPolicy { reset_automatically: true, use_earliest: true };
        let mut seen = Vec::new();
        let reset = read_ranges(&settings, "retention", &range, earliest, None, |r| {
            seen.push(r.offset);
            Ok(())
        });
        (strict, reset.map(|o| (o, seen)))
    })
    .await
    .expect("reader");
    let err = strict.expect_err("the oldest offsets are gone");
    let ReadError::OutOfRange { low, high, .. } = err else { panic!("expected out of range, got {err}") };
    assert!(low > 0 && high == 80, "watermarks [{low}, {high})");
    let (outcome, seen) = reset.expect("reset read");
    assert_eq!(outcome.resets.len(), 1);
    assert_eq!(outcome.resets[0].read, (low, 80));
    assert_eq!(seen, (low..80).collect::<Vec<_>>(), "the kept offsets, once each");
}
