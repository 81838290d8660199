//! The whole pipeline in one process against the real broker and stores: supervisor passes,
//! indexers and mergers until caught up; every record visible exactly once.

use sluice_integration::indexing::{json_record, spec, visible_values, Backends};
use sluice_integration::kafka::{create_topic, grow_topic, produce};
use sluice_integration::{required_env, unique};
use sluice_pipeline::datasource::submit;
use sluice_pipeline::runner::run_until_caught_up;
use sluice_pipeline::supervisor::offset_at;
use std::time::Duration;

async fn caught_up(b: Backends) {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "pipeline", 3).await;
    let records: Vec<(i32, Vec<u8>)> = (0..150).map(|n| ((n % 3) as i32, json_record(&format!("e{n}"), n))).collect();
    produce(&bootstrap, &topic, &records).await;
    let name = unique("pipeline");
    let mut spec = spec(
        &name,
        &topic,
        &bootstrap,
        serde_json::json!({"type": "json"}),
        serde_json::json!({"maxRowsInMemory": 20}),
    );
    spec["spec"]["ioConfig"]["taskCount"] = 2.into();
    spec["spec"]["ioConfig"]["useEarliestOffset"] = true.into();
    spec["spec"]["sluiceConfig"] = serde_json::json!({"maxRecordsPerTask": 40});
    submit(b.meta.as_ref(), spec, 0).await.expect("submit");
    let mut jobs = 0;
    let passes = run_until_caught_up(
        b.meta.as_ref(),
        b.store.as_ref(),
        Some(&name),
        30,
        Duration::from_secs(60),
        |_, outcome| {
            jobs += 1;
            eprintln!("{outcome:?}");
        },
    )
    .await
    .expect("pipeline");
    assert!(passes.iter().all(|p| p.caught_up), "{passes:?}");
    let mut expected: Vec<String> = (0..150).map(|n| format!("e{n}")).collect();
    expected.sort();
    assert_eq!(visible_values(b.meta.as_ref(), b.store.as_ref(), &name, "id").await, expected);
    assert!(jobs >= 8, "150 records in tasks of at most 40: several indexers and mergers ran ({jobs})");
}

#[tokio::test(flavor = "multi_thread")]
async fn caught_up_on_local_backends() {
    caught_up(Backends::local().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn caught_up_on_s3_and_dynamodb() {
    caught_up(Backends::aws().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn new_partitions_are_picked_up_and_progress_is_committed_to_kafka() {
    use rdkafka::config::ClientConfig;
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let b = Backends::local().await;
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "grow", 2).await;
    let first: Vec<(i32, Vec<u8>)> = (0..20).map(|n| ((n % 2) as i32, json_record(&format!("g{n}"), n))).collect();
    produce(&bootstrap, &topic, &first).await;
    let name = unique("grow");
    let mut spec = spec(&name, &topic, &bootstrap, serde_json::json!({"type": "json"}), serde_json::json!({}));
    spec["spec"]["ioConfig"]["taskCount"] = 2.into();
    spec["spec"]["ioConfig"]["useEarliestOffset"] = true.into();
    spec["spec"]["sluiceConfig"] = serde_json::json!({"commitOffsetsToKafka": true});
    submit(b.meta.as_ref(), spec, 0).await.expect("submit");
    let run =
        || run_until_caught_up(b.meta.as_ref(), b.store.as_ref(), Some(&name), 20, Duration::from_secs(60), |_, _| {});
    assert!(run().await.expect("pipeline").iter().all(|p| p.caught_up));

    grow_topic(&topic, 3).await;
    let second: Vec<(i32, Vec<u8>)> = (20..30).map(|n| (2, json_record(&format!("g{n}"), n))).collect();
    produce(&bootstrap, &topic, &second).await;
    let passes = run().await.expect("pipeline");
    assert_eq!(offset_at(&passes[0].committed, &topic, 2), 10, "the new partition is read from its earliest offset");
    assert_eq!(passes[0].kafka_commit_error, None, "Sluice's own group is committed to");
    let mut expected: Vec<String> = (0..30).map(|n| format!("g{n}")).collect();
    expected.sort();
    assert_eq!(visible_values(b.meta.as_ref(), b.store.as_ref(), &name, "id").await, expected);

    // The lag tools' view: the consumer group under Sluice's prefix; none named as the datasource.
    let committed = |group: &str| {
        let consumer: BaseConsumer =
            ClientConfig::new().set("bootstrap.servers", &bootstrap).set("group.id", group).create().expect("consumer");
        let mut tpl = rdkafka::TopicPartitionList::new();
        for p in 0..3 {
            tpl.add_partition(&topic, p);
        }
        let committed = consumer.committed_offsets(tpl, Duration::from_secs(10)).expect("committed offsets");
        committed.elements().iter().map(|e| (e.partition(), e.offset())).collect::<Vec<(i32, rdkafka::Offset)>>()
    };
    assert_eq!(
        committed(&sluice_kafka::consumer_group(&name)),
        vec![(0, rdkafka::Offset::Offset(10)), (1, rdkafka::Offset::Offset(10)), (2, rdkafka::Offset::Offset(10))]
    );
    assert!(committed(&name).iter().all(|(_, o)| *o == rdkafka::Offset::Invalid), "nothing under the bare name");
}
