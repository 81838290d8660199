//! The Kafka range reader against the real broker `localstack/up.sh` starts (tansu): exact
//! ranges over several partitions, an empty range, a range past the high watermark, a deadline,
//! an unreachable broker.

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};
use sluice_integration::{required_env, unique};
use sluice_kafka::{read_ranges, ConsumerSettings, OffsetRange, ReadError, ResetPolicy};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Creates a topic with `partitions` partitions and writes `per_partition` records to each:
/// payload `p{partition}-{n}`.
async fn topic_with_records(partitions: i32, per_partition: usize) -> (String, String) {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = unique("range");
    let admin: AdminClient<DefaultClientContext> =
        ClientConfig::new().set("bootstrap.servers", &bootstrap).create().expect("admin");
    let created = admin
        .create_topics(&[NewTopic::new(&topic, partitions, TopicReplication::Fixed(1))], &AdminOptions::new())
        .await
        .expect("create topics");
    assert!(created.iter().all(Result::is_ok), "{created:?}");
    let producer: FutureProducer = ClientConfig::new().set("bootstrap.servers", &bootstrap).create().expect("producer");
    for n in 0..per_partition {
        for p in 0..partitions {
            let payload = format!("p{p}-{n}");
            producer
                .send(FutureRecord::<(), _>::to(&topic).partition(p).payload(&payload), Duration::from_secs(10))
                .await
                .expect("produce");
        }
    }
    (bootstrap, topic)
}

fn settings(bootstrap: &str) -> ConsumerSettings {
    ConsumerSettings::new(&BTreeMap::from([("bootstrap.servers".to_string(), bootstrap.to_string())]))
        .expect("settings")
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_exactly_the_requested_offsets() {
    let (bootstrap, topic) = topic_with_records(3, 10).await;
    let ranges = [
        OffsetRange { partition: 0, start: 2, end: 7 },
        OffsetRange { partition: 1, start: 0, end: 10 },
        OffsetRange { partition: 2, start: 5, end: 5 },
    ];
    let s = settings(&bootstrap);
    let t = topic.clone();
    let (outcome, seen) = tokio::task::spawn_blocking(move || {
        let mut seen: Vec<(i32, i64, String)> = Vec::new();
        let outcome = read_ranges(&s, &t, &ranges, ResetPolicy::default(), None, |r| {
            seen.push((r.partition, r.offset, String::from_utf8_lossy(r.payload.unwrap_or_default()).into_owned()));
            Ok(())
        });
        (outcome, seen)
    })
    .await
    .expect("reader");
    let outcome = outcome.expect("read");
    assert!(outcome.complete);
    assert_eq!(outcome.positions, BTreeMap::from([(0, 7), (1, 10), (2, 5)]));
    assert_eq!(outcome.delivered, 15);
    let mut expected: Vec<(i32, i64, String)> =
        (2..7).map(|o| (0, o, format!("p0-{o}"))).chain((0..10).map(|o| (1, o, format!("p1-{o}")))).collect();
    let mut seen = seen;
    seen.sort();
    expected.sort();
    assert_eq!(seen, expected, "every record of the ranges once, nothing outside them");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_range_past_the_high_watermark_names_the_watermarks() {
    let (bootstrap, topic) = topic_with_records(1, 4).await;
    let s = settings(&bootstrap);
    let t = topic.clone();
    let result = tokio::task::spawn_blocking(move || {
        read_ranges(&s, &t, &[OffsetRange { partition: 0, start: 0, end: 9 }], ResetPolicy::default(), None, |_| Ok(()))
    })
    .await
    .expect("reader");
    match result {
        Err(ReadError::OutOfRange { partition: 0, low: 0, high: 4, end: 9, topic: named, .. }) => {
            assert_eq!(named, topic)
        }
        other => panic!("expected OutOfRange, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_passed_deadline_returns_incomplete_progress() {
    let (bootstrap, topic) = topic_with_records(1, 4).await;
    let s = settings(&bootstrap);
    let outcome = tokio::task::spawn_blocking(move || {
        read_ranges(
            &s,
            &topic,
            &[OffsetRange { partition: 0, start: 1, end: 4 }],
            ResetPolicy::default(),
            Some(Instant::now()),
            |_| Ok(()),
        )
    })
    .await
    .expect("reader")
    .expect("read");
    assert!(!outcome.complete);
    assert_eq!(outcome.positions, BTreeMap::from([(0, 1)]));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_broker_fails_within_bounded_time() {
    let s = ConsumerSettings::new(&BTreeMap::from([
        ("bootstrap.servers".to_string(), "127.0.0.1:9".to_string()),
        ("request.timeout.ms".to_string(), "2000".to_string()),
    ]))
    .expect("settings");
    let started = Instant::now();
    let result = tokio::task::spawn_blocking(move || {
        read_ranges(
            &s,
            "nowhere",
            &[OffsetRange { partition: 0, start: 0, end: 1 }],
            ResetPolicy::default(),
            None,
            |_| Ok(()),
        )
    })
    .await
    .expect("reader");
    let err = result.expect_err("no broker");
    assert!(err.to_string().contains("127.0.0.1:9") && err.to_string().contains("broker running"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread")]
async fn with_reset_a_range_past_the_high_watermark_is_clamped_and_recorded() {
    let (bootstrap, topic) = topic_with_records(1, 4).await;
    let s = settings(&bootstrap);
    let policy = ResetPolicy { reset_automatically: true, use_earliest: true };
    let outcome = tokio::task::spawn_blocking(move || {
        read_ranges(&s, &topic, &[OffsetRange { partition: 0, start: 1, end: 9 }], policy, None, |_| Ok(()))
    })
    .await
    .expect("reader")
    .expect("read");
    assert!(outcome.complete);
    assert_eq!(outcome.delivered, 3);
    assert_eq!(outcome.positions, BTreeMap::from([(0, 4)]));
    assert_eq!(outcome.resets.len(), 1);
    assert_eq!((outcome.resets[0].requested, outcome.resets[0].read, outcome.resets[0].high), ((1, 9), (1, 4), 4));
}
