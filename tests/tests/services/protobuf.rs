//! Protobuf on the real broker: records written by Confluent's own serializer
//! (`confluent-kafka`'s `ProtobufSerializer`, which registers its schema and the files it
//! imports in the registry it is given, and frames each value with the schema id and message
//! indexes), two versions of one schema in one range, read back by an indexing task whose
//! descriptors come from that registry.

use serde_json::Value;
use sluice_integration::confluent::{assert_hours_of_rows, ingest_through_registry_outage, produce_with_confluent};
use sluice_integration::indexing::{merged_values, spec, Backends};
use sluice_integration::kafka::create_topic;
use sluice_integration::required_env;
use sluice_integration::schema_registry::SchemaRegistry;

#[tokio::test(flavor = "multi_thread")]
async fn records_of_confluents_protobuf_serializer_are_ingested_across_two_schema_versions() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "protobuf", 2).await;
    let registry = SchemaRegistry::start().await;
    let rows = produce_with_confluent("produce_protobuf.py", &bootstrap, &topic, &registry.url, 40);
    assert_eq!(rows.len(), 40);
    let schemas = registry.schemas(&format!("{topic}-value"));
    assert_eq!(schemas.len(), 2, "the serializer registered two versions under the topic's subject");
    assert_eq!(registry.schemas("geo.proto").len(), 1, "and the file both import, once");

    let b = Backends::local().await;
    let format = serde_json::json!({"type": "protobuf",
        "protoBytesDecoder": {"type": "schema_registry", "url": registry.url},
        "flattenSpec": {"fields": [{"type": "path", "name": "country", "expr": "$.geo.country"},
            {"type": "path", "name": "count_x", "expr": "$.counts.x"}]}});
    let mut spec = spec(&sluice_integration::unique("protobuf"), &topic, &bootstrap, format, serde_json::json!({}));
    spec["spec"]["dataSchema"]["timestampSpec"] = serde_json::json!({"column": "time", "format": "iso"});
    spec["spec"]["dataSchema"]["dimensionsSpec"]["dimensions"] =
        serde_json::json!(["page", "userName", "kind", "country", "tags", "count_x", "channel"]);
    let ids: Vec<u32> = schemas.iter().map(|(id, _)| *id).collect();
    let report = ingest_through_registry_outage(&b, &spec, &registry, &ids).await;

    // Every dimension as the producer wrote it (a version 1 record has no channel; an unset
    // user name is null; the repeated tags are multi-valued).
    let column = |name: &str, path: &dyn Fn(&Value) -> Vec<String>| {
        let mut values: Vec<String> = rows.iter().flat_map(path).collect();
        values.sort();
        (name.to_string(), values)
    };
    let text = |v: &Value| vec![v.as_str().map_or_else(|| "Null".to_string(), String::from)];
    for (name, expected) in [
        column("page", &|r| text(&r["page"])),
        column("userName", &|r| text(&r["userName"])),
        column("kind", &|r| text(&r["kind"])),
        column("country", &|r| text(&r["country"])),
        column("channel", &|r| text(&r["channel"])),
        column("count_x", &|r| vec![r["count_x"].to_string()]),
        column("tags", &|r| {
            let tags: Vec<&str> =
                r["tags"].as_array().expect("tags").iter().map(|t| t.as_str().expect("tag")).collect();
            vec![format!("Multi({tags:?})")]
        }),
    ] {
        assert_eq!(merged_values(b.store.as_ref(), &report.hydrants, &name).await, expected, "{name}");
    }
    // The rows' times are the records' Timestamps: three hours of the day.
    assert_hours_of_rows(&report, &rows, "ms");
}
