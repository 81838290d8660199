//! Partitions as compaction and retention leave them, served by the real broker (tansu, its
//! log shaped through its SQLite store): a range ending inside a gap ends, offsets in gaps are
//! simply absent, and offsets below the low watermark fail or reset as configured.

use sluice_integration::kafka::{compact_away, create_topic, expire_before, produce};
use sluice_integration::required_env;
use sluice_kafka::{read_ranges, ConsumerSettings, OffsetRange, ReadError, ReadOutcome, ResetPolicy};
use std::collections::BTreeMap;

async fn topic_of_ten() -> (String, String) {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "gaps", 1).await;
    let records: Vec<(i32, Vec<u8>)> = (0..10).map(|n| (0, format!("r{n}").into_bytes())).collect();
    produce(&bootstrap, &topic, &records).await;
    (bootstrap, topic)
}

async fn read(
    bootstrap: &str,
    topic: &str,
    start: i64,
    end: i64,
    policy: ResetPolicy,
) -> (Result<ReadOutcome, ReadError>, Vec<i64>) {
    let settings = ConsumerSettings::new(&BTreeMap::from([
        ("bootstrap.servers".to_string(), bootstrap.to_string()),
        ("sluice.stall.timeout.ms".to_string(), "5000".to_string()),
    ]))
    .expect("settings");
    let topic = topic.to_string();
    tokio::task::spawn_blocking(move || {
        let mut seen = Vec::new();
        let outcome = read_ranges(&settings, &topic, &[OffsetRange { partition: 0, start, end }], policy, None, |r| {
            seen.push(r.offset);
            Ok(())
        });
        (outcome, seen)
    })
    .await
    .expect("reader")
}

#[tokio::test(flavor = "multi_thread")]
async fn ranges_over_compacted_offsets_end_and_skip_the_gaps() {
    let (bootstrap, topic) = topic_of_ten().await;
    compact_away(&topic, 0, &[3, 4, 7]).await;
    let (outcome, seen) = read(&bootstrap, &topic, 0, 5, ResetPolicy::default()).await;
    let outcome = outcome.expect("a range ending in a gap");
    assert!(outcome.complete);
    assert_eq!((outcome.positions, seen), (BTreeMap::from([(0, 5)]), vec![0, 1, 2]));
    let (outcome, seen) = read(&bootstrap, &topic, 5, 10, ResetPolicy::default()).await;
    assert_eq!((outcome.expect("read").positions, seen), (BTreeMap::from([(0, 10)]), vec![5, 6, 8, 9]));
}

#[tokio::test(flavor = "multi_thread")]
async fn offsets_below_the_low_watermark_fail_or_reset() {
    let (bootstrap, topic) = topic_of_ten().await;
    expire_before(&topic, 0, 5).await;
    let (outcome, seen) = read(&bootstrap, &topic, 2, 8, ResetPolicy::default()).await;
    let err = outcome.expect_err("retention took offsets 2 to 4");
    assert!(err.to_string().ends_with("requested offsets [2, 8) but the partition holds [5, 10)"), "{err}");
    assert!(seen.is_empty(), "nothing delivered");
    let earliest = ResetPolicy { reset_automatically: true, use_earliest: true };
    let (outcome, seen) = read(&bootstrap, &topic, 2, 8, earliest).await;
    let outcome = outcome.expect("reset");
    assert_eq!(outcome.resets.iter().map(|r| (r.requested, r.read)).collect::<Vec<_>>(), vec![((2, 8), (5, 8))]);
    assert_eq!(seen, vec![5, 6, 7]);
}
