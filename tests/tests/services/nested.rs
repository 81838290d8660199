//! Nested JSON through the pipeline on each backend: Druid's nested columns sample produced to
//! the real broker over two partitions, ingested in tasks of two records persisting a hydrant
//! per row (so segments merge hydrants with different paths): once with `json` dimensions,
//! once with `useSchemaDiscovery`; SQL over the published segments gives the tutorial's
//! documented answers, a path filter reading the path's own column.

use serde_json::{json, Value};
use sluice_integration::indexing::{spec, Backends};
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::{required_env, unique};
use sluice_sql::{run_sql, SqlRequest, StoreSegments};

async fn sql(b: &Backends, text: &str) -> Vec<Vec<Value>> {
    let source = StoreSegments::new(b.meta.as_ref(), b.store.as_ref(), None);
    run_sql(&source, &SqlRequest::new(text)).await.unwrap_or_else(|e| panic!("{text}: {e}")).rows
}

async fn the_nested_sample_is_published_and_queried_as_documented(b: Backends) {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "nested", 2).await;
    let path = format!("{}/../data/nested/nested_example_data.json", env!("CARGO_MANIFEST_DIR"));
    let data = std::fs::read_to_string(path).expect("the sample");
    let records: Vec<(i32, Vec<u8>)> =
        data.lines().enumerate().map(|(i, l)| ((i % 2) as i32, l.as_bytes().to_vec())).collect();
    produce(&bootstrap, &topic, &records).await;
    let declared =
        json!(["product", "department", {"type": "json", "name": "shipTo"}, {"type": "json", "name": "details"}]);
    for (name, dimensions) in [
        (unique("nested"), json!({"dimensions": declared})),
        (unique("discovered"), json!({"dimensions": ["product"], "useSchemaDiscovery": true})),
    ] {
        let mut spec = spec(&name, &topic, &bootstrap, json!({"type": "json"}), json!({"maxRowsInMemory": 1}));
        let schema = &mut spec["spec"]["dataSchema"];
        schema["timestampSpec"] = json!({"column": "time", "format": "iso"});
        schema["dimensionsSpec"] = dimensions;
        schema["metricsSpec"] = json!([{"type": "count", "name": "count"}]);
        schema["granularitySpec"]["segmentGranularity"] = json!("day");
        spec["spec"]["ioConfig"]["useEarliestOffset"] = true.into();
        spec["spec"]["sluiceConfig"] = json!({"maxRecordsPerTask": 2});
        sluice_pipeline::datasource::submit(b.meta.as_ref(), spec, 0).await.expect("submit");
        sluice_integration::protocol::catch_up(&b, &name).await;

        // The datasource's own segments (other tests share the backend).
        let metadata = json!({"queryType": "segmentMetadata", "dataSource": name, "merge": true});
        let answer = sluice_broker::run_query(b.meta.as_ref(), b.store.as_ref(), None, None, &metadata.to_string())
            .await
            .expect("segmentMetadata runs");
        let columns = &answer.result[0]["columns"];
        let types: Vec<&Value> = ["department", "details", "shipTo"].iter().map(|c| &columns[c]["type"]).collect();
        assert_eq!(types, [&json!("STRING"), &json!("COMPLEX<json>"), &json!("COMPLEX<json>")], "{name}: {columns}");
        assert!(
            columns.as_object().is_some_and(|c| c.len() == 6),
            "__time, product, department, shipTo, details, count: {columns}"
        );
        let grouped = sql(
            &b,
            &format!(
                "SELECT product, JSON_VALUE(shipTo, '$.address.country'), SUM(JSON_VALUE(details, '$.price' RETURNING BIGINT)) \
                 FROM \"{name}\" WHERE JSON_VALUE(shipTo, '$.address.country') in ('BL', 'CW') GROUP BY 1,2 ORDER BY 3 DESC"
            ),
        )
        .await;
        assert_eq!(json!(grouped), json!([["Bike", "BL", 542], ["Mouse", "CW", 90]]), "{name}");
        let phones =
            sql(&b, &format!("SELECT JSON_VALUE(shipTo, '$.phoneNumbers[0].number') FROM \"{name}\" ORDER BY __time"))
                .await;
        assert_eq!(phones[4], vec![json!("1-788-771-7028 x8627")], "{name}");
    }
}

sluice_integration::on_backends!(the_nested_sample_is_published_and_queried_as_documented);
