//! Druid's `kafka` input format on the real broker: each record's Kafka timestamp, topic, key
//! and headers become columns beside its value's fields.

use sluice_integration::indexing::{merged_values, plan, spec, Backends};
use sluice_integration::kafka::{create_topic, produce_full, FullRecord};
use sluice_integration::required_env;
use sluice_kafka::OffsetRange;
use sluice_pipeline::indexer::{run_task, TaskOptions, TaskOutcome};
use std::time::{Duration, Instant};

const HOUR: i64 = 3_600_000;
/// 2015-09-12T00:00:00Z.
const DAY: i64 = 1_442_016_000_000;

#[tokio::test(flavor = "multi_thread")]
async fn keys_headers_timestamps_and_topics_are_columns() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "kafka-columns", 2).await;
    let records: Vec<FullRecord> = (0..30)
        .map(|n: i64| FullRecord {
            partition: (n % 2) as i32,
            // Every fifth record has no key: it keeps its row, without a key.
            key: (n % 5 != 0).then(|| format!("user-{}", n % 3).into_bytes()),
            headers: [
                Some(("env", if n % 2 == 0 { "blue" } else { "green" })),
                Some(("trace", "")),
                (n % 7 == 0).then_some(("env", "prod")),
            ]
            .into_iter()
            .flatten()
            // The trace header has a null value.
            .map(|(k, v)| (k.to_string(), (!v.is_empty()).then(|| v.as_bytes().to_vec())))
            .collect(),
            timestamp: DAY + (n % 3) * HOUR + n,
            // The value has no time of its own: the row's time is the record's.
            value: (n != 29).then(|| format!(r#"{{"id": "k{n}", "page": "p{}", "added": {n}}}"#, n % 4).into_bytes()),
        })
        .collect();
    produce_full(&bootstrap, &topic, &records).await;

    let b = Backends::local().await;
    let format = serde_json::json!({"type": "kafka", "valueFormat": {"type": "json"},
        "keyFormat": {"type": "tsv", "columns": ["k"], "delimiter": "\u{1}"},
        "headerFormat": {"type": "string"}});
    let mut spec = spec(&sluice_integration::unique("kafkacols"), &topic, &bootstrap, format, serde_json::json!({}));
    spec["spec"]["dataSchema"]["timestampSpec"] = serde_json::json!({"column": "kafka.timestamp", "format": "millis"});
    spec["spec"]["dataSchema"]["dimensionsSpec"]["dimensions"] =
        serde_json::json!(["id", "kafka.key", "kafka.topic", "kafka.header.env", "kafka.header.trace"]);
    let ranges = vec![OffsetRange { partition: 0, start: 0, end: 15 }, OffsetRange { partition: 1, start: 0, end: 15 }];
    let id = plan(b.meta.as_ref(), &spec, ranges).await;
    let options = TaskOptions::until(Instant::now() + Duration::from_secs(120));
    let report = match run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options).await.expect("task runs") {
        TaskOutcome::Complete(r) => r,
        other => panic!("expected a complete task, got {other:?}"),
    };
    // The tombstone (record 29) is counted as before; the other 29 are rows.
    assert_eq!((report.meters.processed, report.meters.unparseable), (29, 1));
    // The record timestamps put the rows in the three hours they were produced for.
    let mut hours: Vec<i64> = report.hydrants.iter().map(|h| (h.chunk.start - DAY) / HOUR).collect();
    hours.sort();
    hours.dedup();
    assert_eq!(hours, vec![0, 1, 2]);

    let rows = 0..29i64;
    let mut keys: Vec<String> = rows.clone().filter(|n| n % 5 != 0).map(|n| format!("user-{}", n % 3)).collect();
    keys.sort();
    assert_eq!(non_null(merged_values(b.store.as_ref(), &report.hydrants, "kafka.key").await), keys);
    assert_eq!(merged_values(b.store.as_ref(), &report.hydrants, "kafka.topic").await, vec![topic.clone(); 29]);
    // Of two headers of one name the last wins; a header with a null value is no value.
    let mut envs: Vec<String> = rows
        .clone()
        .map(|n| match (n % 7, n % 2) {
            (0, _) => "prod",
            (_, 0) => "blue",
            _ => "green",
        })
        .map(String::from)
        .collect();
    envs.sort();
    assert_eq!(merged_values(b.store.as_ref(), &report.hydrants, "kafka.header.env").await, envs);
    assert!(non_null(merged_values(b.store.as_ref(), &report.hydrants, "kafka.header.trace").await).is_empty());
}

/// The values that are not null (`merged_values` lists a null row as `Null`).
fn non_null(values: Vec<String>) -> Vec<String> {
    values.into_iter().filter(|v| v != "Null").collect()
}
