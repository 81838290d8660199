//! Lookups on each backend: created, replaced only by a greater version (a bulk update all or
//! none), read back and deleted; a query binds them as they are when it starts and groups by
//! `lookup()` over a datasource the pipeline published; a damaged map object is named.

use serde_json::json;
use sluice_integration::indexing::Backends;
use sluice_integration::protocol::Setup;
use sluice_integration::unique;
use sluice_metastore::lookups::{self, LookupCache, LookupError, LookupSpec, DEFAULT_TIER};

fn spec(name: &str, version: &str, map: serde_json::Value) -> LookupSpec {
    let value = json!({"version": version, "lookupExtractorFactory": {"type": "map", "map": map}});
    LookupSpec::parse(DEFAULT_TIER, name, &value).expect("a map lookup")
}

/// Rows per looked-up page of the setup's 60 records (pages p0..p6, `n % 7`).
async fn counts(b: &Backends, datasource: &str, lookup: &str) -> Vec<(String, u64)> {
    let query = json!({"queryType": "groupBy", "dataSource": datasource, "intervals": "2015-09-12/2015-09-13",
        "granularity": "all", "dimensions": ["kind"],
        "virtualColumns": [{"type": "expression", "name": "kind", "expression": format!("lookup(page, '{lookup}', 'other')")}],
        "aggregations": [{"type": "count", "name": "rows"}]});
    let answer = sluice_broker::run_query(b.meta.as_ref(), b.store.as_ref(), None, None, &query.to_string())
        .await
        .expect("the query runs");
    let mut out: Vec<(String, u64)> = (answer.result.as_array().expect("rows").iter())
        .map(|r| (r["event"]["kind"].as_str().expect("kind").to_string(), r["event"]["rows"].as_u64().expect("rows")))
        .collect();
    out.sort();
    out
}

async fn a_query_groups_by_the_lookups_version_it_bound(b: Backends) {
    let s = Setup::new(b, 1, 60, 1, 60, json!({})).await;
    s.catch_up().await;
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    let (pages, other) = (unique("pages"), unique("unused"));
    let v1 = spec(&pages, "v1", json!({"p0": "even", "p2": "even", "p1": "odd"}));
    lookups::put(meta, store, DEFAULT_TIER, &pages, &v1).await.expect("created");
    let want = |even: u64, odd: u64| {
        vec![("even".to_string(), even), ("odd".to_string(), odd), ("other".to_string(), 60 - even - odd)]
    };
    assert_eq!(counts(&s.b, &s.name, &pages).await, want(18, 9));

    // A bulk update whose second lookup is not newer writes neither.
    let updates = [
        (DEFAULT_TIER.to_string(), other.clone(), spec(&other, "v1", json!({}))),
        (DEFAULT_TIER.to_string(), pages.clone(), spec(&pages, "v1", json!({"p0": "odd"}))),
    ];
    let refused = lookups::put_all(meta, store, &updates).await.expect_err("v1 does not replace v1");
    assert!(matches!(refused, LookupError::NotNewer { .. }), "{refused}");
    assert!(lookups::item(meta, DEFAULT_TIER, &other).await.expect("reads").is_none(), "all or none");

    let v2 = spec(&pages, "v2", json!({"p0": "odd", "p1": "odd", "p2": "odd", "p3": "even"}));
    lookups::put(meta, store, DEFAULT_TIER, &pages, &v2).await.expect("replaced");
    assert_eq!(counts(&s.b, &s.name, &pages).await, want(9, 27));
    assert_eq!(lookups::read(meta, store, DEFAULT_TIER, &pages).await.expect("reads"), Some(v2));

    let (item, _) = lookups::item(meta, DEFAULT_TIER, &pages).await.expect("reads").expect("exists");
    store.put(&item.key, bytes::Bytes::from_static(b"[]")).await.expect("damaged");
    let e = lookups::load(meta, store, &LookupCache::default(), DEFAULT_TIER, &[pages.clone()].into())
        .await
        .expect_err("damaged");
    assert!(e.to_string().contains(&item.key), "{e}");
    assert!(lookups::remove(meta, DEFAULT_TIER, &pages).await.expect("removed"));
    assert!(!lookups::remove(meta, DEFAULT_TIER, &pages).await.expect("nothing left"));
}

sluice_integration::on_backends!(a_query_groups_by_the_lookups_version_it_bound);
