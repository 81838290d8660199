//! Avro on the real broker: records written by Confluent's own serializer (`confluent-kafka`'s
//! `AvroSerializer`, which registers its schemas in the registry it is given and frames each
//! value with the schema id), two versions of one schema in one range (the second naming a
//! type by a schema reference) and Avro keys, read back by an indexing task whose schemas come
//! from that registry.

use serde_json::Value;
use sluice_integration::confluent::{assert_hours_of_rows, ingest_through_registry_outage, produce_with_confluent};
use sluice_integration::indexing::{merged_values, plan, spec, Backends};
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::required_env;
use sluice_integration::schema_registry::SchemaRegistry;
use sluice_kafka::OffsetRange;
use sluice_pipeline::indexer::{run_task, TaskOptions, TaskOutcome};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn records_of_confluents_avro_serializer_are_ingested_across_two_schema_versions() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "avro", 2).await;
    let registry = SchemaRegistry::start().await;
    let rows = produce_with_confluent("produce_avro.py", &bootstrap, &topic, &registry.url, 40);
    assert_eq!(rows.len(), 40);
    let schemas = registry.schemas(&format!("{topic}-value"));
    assert_eq!(schemas.len(), 2, "the serializer registered two versions under the topic's subject");
    assert!(schemas[1].1.contains("\"wiki.Geo\"") && !schemas[1].1.contains("country"), "version 2 references Geo");

    let b = Backends::local().await;
    // The value through the kafka format, its Avro string key a column.
    let keys = registry.schemas(&format!("{topic}-key"));
    assert_eq!(keys.len(), 1, "the key serializer registered the key's schema");
    let format = serde_json::json!({"type": "kafka", "valueFormat": {"type": "avro_stream",
        "avroBytesDecoder": {"type": "schema_registry", "url": registry.url},
        "flattenSpec": {"fields": [{"type": "path", "name": "country", "expr": "$.geo.country"}]}},
        "keyFormat": {"type": "avro_stream", "avroBytesDecoder": {"type": "schema_registry", "url": registry.url}}});
    let mut spec = spec(&sluice_integration::unique("avro"), &topic, &bootstrap, format, serde_json::json!({}));
    spec["spec"]["dataSchema"]["timestampSpec"] = serde_json::json!({"column": "ts", "format": "millis"});
    spec["spec"]["dataSchema"]["dimensionsSpec"]["dimensions"] =
        serde_json::json!(["page", "user", "country", "channel", "kafka.key"]);
    let ids: Vec<u32> = schemas.iter().chain(&keys).map(|(id, _)| *id).collect();
    let report = ingest_through_registry_outage(&b, &spec, &registry, &ids).await;

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
        column("kafka.key", &|r| text(&r["key"])),
    ] {
        assert_eq!(merged_values(b.store.as_ref(), &report.hydrants, &name).await, expected, "{name}");
    }
    // The rows' times are the records' timestamp-millis values: three hours of the day.
    assert_hours_of_rows(&report, &rows, "ts");
}

/// An Avro datum of `{ts: long, page: string}`: zigzag varints, the string length-prefixed.
fn datum(ts: i64, page: &str) -> Vec<u8> {
    fn zigzag(n: i64, out: &mut Vec<u8>) {
        let mut v = ((n << 1) ^ (n >> 63)) as u64;
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    let mut out = Vec::new();
    zigzag(ts, &mut out);
    zigzag(page.len() as i64, &mut out);
    out.extend_from_slice(page.as_bytes());
    out
}

/// One record framed with a schema id the registry never issued, among 4,000 good ones: it is
/// counted as unparseable and kept with its partition, offset and reason, and the task
/// completes with every good record, instead of retrying the range for ever.
#[tokio::test(flavor = "multi_thread")]
async fn a_record_with_a_schema_id_the_registry_never_issued_is_unparseable_not_a_stall() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "avro-unknown-id", 1).await;
    let registry = SchemaRegistry::start().await;
    let schema = r#"{"type": "record", "name": "R", "fields": [{"name": "ts", "type": "long"},
        {"name": "page", "type": "string"}]}"#;
    let id = registry.register(&format!("{topic}-value"), schema);
    let framed = |id: u32, body: Vec<u8>| [vec![0], id.to_be_bytes().to_vec(), body].concat();
    let records: Vec<(i32, Vec<u8>)> = (0..4_001)
        .map(|n| match n {
            2_000 => (0, framed(id + 1_000, datum(1_442_016_000_000, "lost"))),
            n => (0, framed(id, datum(1_442_016_000_000 + n, &format!("p{}", n % 7)))),
        })
        .collect();
    produce(&bootstrap, &topic, &records).await;

    let b = Backends::local().await;
    let format = serde_json::json!({"type": "avro_stream",
        "avroBytesDecoder": {"type": "schema_registry", "url": registry.url}});
    let mut spec = spec(&sluice_integration::unique("avro-unknown"), &topic, &bootstrap, format, serde_json::json!({}));
    spec["spec"]["dataSchema"]["timestampSpec"] = serde_json::json!({"column": "ts", "format": "millis"});
    spec["spec"]["dataSchema"]["dimensionsSpec"]["dimensions"] = serde_json::json!(["page"]);
    let id_of_task = plan(b.meta.as_ref(), &spec, vec![OffsetRange { partition: 0, start: 0, end: 4_001 }]).await;
    let options = TaskOptions::until(Instant::now() + Duration::from_secs(120));
    let report = match run_task(b.meta.as_ref(), b.store.as_ref(), &id_of_task, &options).await.expect("task runs") {
        TaskOutcome::Complete(r) => r,
        other => panic!("expected a complete task, got {other:?}"),
    };
    assert_eq!((report.meters.processed, report.meters.unparseable), (4_000, 1));
    let saved = report.meters.saved_exceptions.back().expect("the exception is kept");
    assert_eq!((saved.partition, saved.offset), (0, 2_000));
    assert!(saved.reason.contains(&format!("schema {} is not in the registry", id + 1_000)), "{}", saved.reason);
    assert_eq!(merged_values(b.store.as_ref(), &report.hydrants, "page").await.len(), 4_000);
}
