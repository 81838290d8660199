//! Avro on the real broker: records written by Confluent's own serializer (`confluent-kafka`'s
//! `AvroSerializer`, which registers its schemas in the registry it is given and frames each
//! value with the schema id), two versions of one schema in one range (the second naming a
//! type by a schema reference) and Avro keys, read back by an indexing task whose schemas come
//! from that registry.

use serde_json::Value;
use sluice_integration::confluent::{assert_hours_of_rows, ingest_through_registry_outage, produce_with_confluent};
use sluice_integration::indexing::{merged_values, spec, Backends};
use sluice_integration::kafka::create_topic;
use sluice_integration::required_env;
use sluice_integration::schema_registry::SchemaRegistry;

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
