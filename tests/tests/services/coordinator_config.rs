//! The coordinator's configuration stored and read back on each metadata backend: compaction
//! configurations (Druid's `DataSourceCompactionConfig`) submitted, replaced, listed, removed,
//! and retention rules set, replaced and listed; a refused one changes nothing, and a stored
//! item that no longer checks is named when read. The compaction plan over a datasource whose
//! tasks published one small segment each per chunk.

use sluice_integration::indexing::Backends;
use sluice_integration::protocol::Setup;
use sluice_integration::unique;
use sluice_pipeline::coordinator;
use sluice_pipeline::coordinator::config::{get, list, remove, submit};
use sluice_pipeline::coordinator::plan::plan_now;
use sluice_pipeline::datasource::DatasourceError;
use sluice_pipeline::keys::{catalog_sk, COMPACTION_PK, RULES_PK};
use sluice_store::metadata::{Condition, Item};

async fn configs_are_stored_replaced_listed_and_removed(b: Backends) {
    let meta = b.meta.as_ref();
    let (first, second) = (unique("compact"), unique("compact"));
    let config = |name: &str, rows: u64| {
        serde_json::json!({"dataSource": name, "skipOffsetFromLatest": "PT1H",
            "tuningConfig": {"partitionsSpec": {"type": "dynamic", "maxRowsPerSegment": rows}}})
    };
    submit(meta, config(&first, 1000)).await.expect("submit");
    submit(meta, config(&second, 2000)).await.expect("submit");
    submit(meta, config(&first, 3000)).await.expect("replace");
    let got = get(meta, &first).await.expect("get").expect("stored");
    assert_eq!(got.max_rows_per_segment, 3000, "the later submit replaced the first");
    assert_eq!(got.json["skipOffsetFromLatest"], "PT1H");
    let names: Vec<String> = list(meta).await.expect("list").into_iter().map(|c| c.data_source).collect();
    assert!(names.contains(&first) && names.contains(&second), "{names:?}");

    let refused = serde_json::json!({"dataSource": first, "transformSpec": {"filter": {"type": "true"}}});
    match submit(meta, refused).await {
        Err(DatasourceError::InvalidCompaction { datasource, reason }) => {
            assert_eq!(datasource, first);
            assert!(reason.starts_with("transformSpec:"), "{reason}");
        }
        other => panic!("a transformSpec is refused: {other:?}"),
    }
    assert_eq!(get(meta, &first).await.expect("get").expect("kept").max_rows_per_segment, 3000);

    assert!(remove(meta, &first).await.expect("remove"));
    assert!(!remove(meta, &first).await.expect("remove again"), "nothing left to remove");
    assert!(get(meta, &first).await.expect("get").is_none());
    assert!(remove(meta, &second).await.expect("remove"));
}

async fn a_stored_config_that_no_longer_checks_is_named(b: Backends) {
    let meta = b.meta.as_ref();
    let name = unique("compact");
    let body = serde_json::json!({"config": {"dataSource": name, "skipOffsetFromLatest": "soon"}});
    meta.put(Item::new(COMPACTION_PK, catalog_sk(&name), body), Condition::None).await.expect("put");
    let err = get(meta, &name).await.expect_err("corrupt");
    assert!(err.to_string().contains(&catalog_sk(&name)) && err.to_string().contains("skipOffsetFromLatest"), "{err}");
    assert!(remove(meta, &name).await.expect("remove"));
}

async fn retention_rules_are_set_replaced_and_listed(b: Backends) {
    let meta = b.meta.as_ref();
    let name = unique("retain");
    assert!(coordinator::rules::get(meta, &name).await.expect("get").is_none(), "none set");
    let month = serde_json::json!([{"type": "loadByPeriod", "period": "P1M"}, {"type": "dropForever"}]);
    coordinator::rules::set(meta, &name, month.clone()).await.expect("set");
    let got = coordinator::rules::get(meta, &name).await.expect("get").expect("stored");
    assert_eq!((got.json, got.rules.len()), (month, 2));
    let forever = serde_json::json!([{"type": "loadForever"}]);
    coordinator::rules::set(meta, &name, forever.clone()).await.expect("replace");
    let bad = serde_json::json!([{"type": "dropByPeriod"}]);
    let err = coordinator::rules::set(meta, &name, bad).await.expect_err("no period");
    assert!(err.to_string().contains("[0].period"), "{err}");
    let all = coordinator::rules::list(meta).await.expect("list");
    let mine: Vec<_> = all.iter().filter(|(n, _)| *n == name).map(|(_, r)| r.json.clone()).collect();
    assert_eq!(mine, [forever], "the refused rules left the stored ones");

    let corrupt = serde_json::json!({"rules": [{"type": "dropBeforeByPeriod", "period": "soon"}]});
    meta.put(Item::new(RULES_PK, catalog_sk(&name), corrupt), Condition::None).await.expect("put");
    let err = coordinator::rules::get(meta, &name).await.expect_err("corrupt");
    assert!(err.to_string().contains(&catalog_sk(&name)), "{err}");
    meta.delete(RULES_PK, &catalog_sk(&name), Condition::None).await.expect("delete");
}

/// 60 records over three hourly chunks, published by six tasks of 10 records: six segments
/// per chunk where one would do.
async fn the_plan_finds_chunks_of_many_small_segments(b: Backends) {
    let s = Setup::new(b, 1, 60, 1, 10, serde_json::json!({})).await;
    s.catch_up().await;
    let meta = s.b.meta.as_ref();
    let config =
        |skip: &str| serde_json::json!({"dataSource": s.name, "skipOffsetFromLatest": skip, "maxRowsPerSegment": 100});
    let loaded = submit(meta, config("PT0S")).await.expect("submit");
    let plan = plan_now(meta, &loaded.config).await.expect("plan");
    let awaiting: Vec<(u64, u64, u64)> =
        plan.awaiting.iter().map(|c| (c.segments, c.rows, c.target_segments)).collect();
    assert_eq!(awaiting, [(6, 20, 1); 3], "{plan:?}");
    let recent = submit(meta, config("PT1H")).await.expect("submit").config;
    let plan = plan_now(meta, &recent).await.expect("plan");
    assert_eq!((plan.awaiting.len(), plan.skipped.len()), (2, 1), "the last hour is left to arrive: {plan:?}");
    assert!(remove(meta, &s.name).await.expect("remove"));
}

sluice_integration::on_backends!(
    the_plan_finds_chunks_of_many_small_segments,
    configs_are_stored_replaced_listed_and_removed,
    a_stored_config_that_no_longer_checks_is_named,
    retention_rules_are_set_replaced_and_listed,
);
