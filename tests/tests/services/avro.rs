//! Avro on the real broker: records written by Confluent's own serializer (`confluent-kafka`'s
//! `AvroSerializer`, which registers its schemas in the registry it is given and frames each
//! value with the schema id), two versions of one schema in one range, read back by an
//! indexing task whose schemas come from that registry.

use serde_json::Value;
use sluice_integration::indexing::{merged_values, plan, spec, Backends};
use sluice_integration::kafka::create_topic;
use sluice_integration::required_env;
use sluice_integration::schema_registry::SchemaRegistry;
use sluice_kafka::OffsetRange;
use sluice_pipeline::indexer::{run_task, TaskOptions, TaskOutcome};
use std::time::{Duration, Instant};

/// Runs `tests/confluent/produce_avro.py`: the rows it produced, as it printed them.
fn produce_with_confluent(bootstrap: &str, topic: &str, registry: &str, count: usize) -> Vec<Value> {
    let python = required_env("SLUICE_PYTHON");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/confluent/produce_avro.py");
    let out = std::process::Command::new(&python)
        .args([script, bootstrap, topic, registry, &count.to_string()])
        .output()
        .expect("run the Confluent producer");
    assert!(out.status.success(), "produce_avro.py: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("a row")).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn records_of_confluents_avro_serializer_are_ingested_across_two_schema_versions() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "avro", 2).await;
    let registry = SchemaRegistry::start().await;
    let rows = produce_with_confluent(&bootstrap, &topic, &registry.url, 40);
    assert_eq!(rows.len(), 40);
    let schemas = registry.schemas(&format!("{topic}-value"));
    assert_eq!(schemas.len(), 2, "the serializer registered two versions under the topic's subject");

    let b = Backends::local().await;
    let format = serde_json::json!({"type": "avro_stream",
        "avroBytesDecoder": {"type": "schema_registry", "url": registry.url},
        "flattenSpec": {"fields": [{"type": "path", "name": "country", "expr": "$.geo.country"}]}});
    let mut spec = spec(&sluice_integration::unique("avro"), &topic, &bootstrap, format, serde_json::json!({}));
    spec["spec"]["dataSchema"]["timestampSpec"] = serde_json::json!({"column": "ts", "format": "millis"});
    spec["spec"]["dataSchema"]["dimensionsSpec"]["dimensions"] =
        serde_json::json!(["page", "user", "country", "channel"]);
    let ranges = vec![OffsetRange { partition: 0, start: 0, end: 20 }, OffsetRange { partition: 1, start: 0, end: 20 }];
    let id = plan(b.meta.as_ref(), &spec, ranges).await;
    let options = TaskOptions::until(Instant::now() + Duration::from_secs(120));
    // With the registry down the attempt fails to be retried, counting nothing, dropping nothing.
    registry.set_down(true);
    match run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options).await {
        Err(e) => assert!(e.to_string().contains("answered HTTP 503"), "{e}"),
        Ok(other) => panic!("expected the attempt to fail, got {other:?}"),
    }
    registry.set_down(false);
    let report = match run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options).await.expect("task runs") {
        TaskOutcome::Complete(r) => r,
        other => panic!("expected a complete task, got {other:?}"),
    };
    assert_eq!((report.meters.processed, report.meters.unparseable), (40, 0), "{:?}", report.meters.saved_exceptions);
    // Each schema was fetched once by the attempt that read, however many records named it
    // (the first record's schema once more by the attempt the registry failed).
    let fetches: usize = schemas.iter().map(|(id, _)| registry.fetches(*id)).sum();
    assert_eq!(fetches, 3);

    // Every dimension as the producer wrote it (a v1 record has no channel; a null user is null).
    let column = |name: &str, path: &dyn Fn(&Value) -> Option<String>| {
        let mut values: Vec<String> = rows.iter().map(|r| path(r).unwrap_or_else(|| "Null".into())).collect();
        values.sort();
        (name.to_string(), values)
    };
    let text = |v: &Value| v.as_str().map(String::from);
    for (name, expected) in [
        column("page", &|r| text(&r["page"])),
        column("user", &|r| text(&r["user"])),
        column("country", &|r| text(&r["geo"]["country"])),
        column("channel", &|r| text(&r["channel"])),
    ] {
        assert_eq!(merged_values(b.store.as_ref(), &report.hydrants, &name).await, expected, "{name}");
    }
    // The rows' times are the records' timestamp-millis values: three hours of the day.
    let mut hours: Vec<i64> = report.hydrants.iter().map(|h| h.chunk.start).collect();
    hours.sort();
    hours.dedup();
    let mut expected: Vec<i64> = rows.iter().map(|r| r["ts"].as_i64().expect("ts") / 3_600_000 * 3_600_000).collect();
    expected.sort();
    expected.dedup();
    assert_eq!(hours, expected);
}
