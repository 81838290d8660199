//! The lag-based autoscaler on each backend, with the real broker: a datasource of one task
//! group over a 4-partition topic, its lag above `scaleOutThreshold`, scales out by
//! `scaleOutStep` through the regroup protocol, catches up with every record once, and once
//! its lag is at or below `scaleInThreshold` scales back in by `scaleInStep`; each change is in
//! the `autoscaler` item and the spec's history.

use serde_json::json;
use sluice_integration::indexing::{json_record, spec, visible_values, Backends};
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::{required_env, unique};
use sluice_pipeline::keys::{datasource_pk, AUTOSCALER_SK};
use sluice_pipeline::runner::run_until_caught_up;
use std::time::Duration;

fn now() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

async fn changes(b: &Backends, name: &str) -> Vec<(u64, u64)> {
    let item = b.meta.get(&datasource_pk(name), AUTOSCALER_SK).await.expect("reads").expect("the autoscaler item");
    (item.body["changes"].as_array().expect("changes").iter())
        .map(|c| (c["from"].as_u64().expect("from"), c["to"].as_u64().expect("to")))
        .collect()
}

async fn a_lagging_datasource_scales_out_then_back_in(b: Backends) {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "autoscale", 4).await;
    let records: Vec<(i32, Vec<u8>)> = (0..400).map(|k| ((k % 4) as i32, json_record(&format!("r{k}"), k))).collect();
    produce(&bootstrap, &topic, &records).await;
    let name = unique("autoscale");
    let mut spec = spec(&name, &topic, &bootstrap, json!({"type": "json"}), json!({}));
    spec["spec"]["ioConfig"]["useEarliestOffset"] = true.into();
    spec["spec"]["ioConfig"]["taskCount"] = 1.into();
    spec["spec"]["sluiceConfig"] = json!({"maxRecordsPerTask": 100});
    // Druid's settings with times shortened to this test's passes.
    spec["spec"]["ioConfig"]["autoScalerConfig"] = json!({
        "enableTaskAutoScaler": true, "taskCountMin": 1, "taskCountMax": 4,
        "lagCollectionIntervalMillis": 1, "lagCollectionRangeMillis": 5000,
        "scaleActionStartDelayMillis": 0, "scaleActionPeriodMillis": 1, "minTriggerScaleActionFrequencyMillis": 1,
        "scaleOutThreshold": 350, "triggerScaleOutFractionThreshold": 0.3,
        "scaleInThreshold": 0, "triggerScaleInFractionThreshold": 0.9, "scaleOutStep": 2, "scaleInStep": 1});
    sluice_pipeline::datasource::submit(b.meta.as_ref(), spec, now()).await.expect("submit");

    let (meta, store) = (b.meta.as_ref(), b.store.as_ref());
    let run = || async {
        let passes = run_until_caught_up(meta, store, Some(&name), 60, Duration::from_secs(120), |_, _| {})
            .await
            .expect("pipeline");
        assert!(passes.last().is_some_and(|p| p.caught_up), "{:?}", passes.last());
    };
    run().await;
    let made = changes(&b, &name).await;
    assert_eq!(made.first(), Some(&(1, 3)), "the first decision saw 400 records of lag: {made:?}");
    let mut seen = visible_values(meta, store, &name, "id").await;
    let mut expected: Vec<String> = (0..400).map(|k| format!("r{k}")).collect();
    expected.sort();
    seen.sort();
    assert_eq!(seen, expected, "every record once across the scale-out");

    // Caught up, the lag is 0: each later decision scales in by one, down to taskCountMin.
    for _ in 0..3 {
        run().await;
    }
    let made = changes(&b, &name).await;
    // Out while the lag stayed above the threshold (each change takes effect within its pass),
    // then in by one per decision.
    let first_in = made.iter().position(|(from, to)| to < from).expect("a scale-in");
    assert!(made[..first_in].iter().all(|(from, to)| to > from), "scale-outs first: {made:?}");
    assert!(made[first_in..].iter().all(|(from, to)| to + 1 == *from), "scale-ins by one: {made:?}");
    assert_eq!(made.last(), Some(&(2, 1)), "down to taskCountMin: {made:?}");
    let (spec, _) = sluice_pipeline::datasource::load(meta, &name).await.expect("spec");
    assert_eq!(spec.spec["spec"]["ioConfig"]["taskCount"], 1, "the spec holds the last count");
    let history = sluice_pipeline::datasource::history(meta, &name).await.expect("history");
    assert!(
        history.iter().any(|v| v.spec["spec"]["ioConfig"]["taskCount"] == 3),
        "each change is in the spec's history"
    );
    assert_eq!(visible_values(meta, store, &name, "id").await.len(), 400, "scaling in moved no record");
}

sluice_integration::on_backends!(a_lagging_datasource_scales_out_then_back_in);
