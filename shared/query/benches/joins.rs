//! Joins and lookups against the same question without them, on Druid's Wikipedia sample
//! (39,244 rows, one segment): rows per country by its ISO code (the peer), by the name a
//! lookup maps it to (`lookup()` and a LEFT join to a lookup), and by a column of an inline
//! table of 1,000 of the sample's pages joined on the page (a key of ~17,000 distinct values),
//! INNER.
#![allow(missing_docs)]

#[path = "../../format/tests/common/mod.rs"]
mod common;
mod support;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use sluice_format::lookup::{KeyedTable, Lookups};
use sluice_query::{execute, parse_query};
use std::sync::Arc;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn group_by(source: Value, dimension: &str, virtuals: Value) -> Value {
    json!({"queryType": "groupBy", "dataSource": source, "intervals": "2015-09-01/2015-10-01", "granularity": "all",
           "dimensions": [dimension], "virtualColumns": virtuals, "aggregations": [{"type": "count", "name": "rows"}]})
}

fn joins(c: &mut Criterion) {
    let lines = common::wikipedia_lines();
    let segments = support::segments(&common::spec("wikipedia-kafka-supervisor.json"), &lines);
    let codes = ["US", "GB", "FR", "IT", "JP", "DE", "RU", "CA", "AU", "IN", "BR", "ES", "MX", "KR", "NL"];
    let names =
        KeyedTable::lookup("country_names", "v1", codes.iter().map(|c| (c.to_string(), format!("country {c}"))));
    let lookups: Arc<Lookups> = Arc::new(Lookups::from([("country_names".to_string(), names)]));
    // The first 1,000 pages of the sample, each in one of 7 groups.
    let mut seen = std::collections::BTreeSet::new();
    for l in &lines {
        let record: Value = serde_json::from_str(l).expect("JSON");
        if let Some(p) = record["page"].as_str() {
            if seen.len() < 1000 {
                seen.insert(p.to_string());
            }
        }
    }
    let pages: Vec<Value> = seen.iter().enumerate().map(|(i, p)| json!([p, i % 7])).collect();
    let inline = json!({"type": "inline", "columnNames": ["page", "group"], "rows": pages});
    let join = |right: Value, condition: &str, kind: &str| json!({"type": "join", "left": "wikipedia", "right": right, "rightPrefix": "j.", "condition": condition, "joinType": kind});
    let queries = [
        ("by code (no join)", group_by(json!("wikipedia"), "countryIsoCode", json!([]))),
        (
            "by name: lookup()",
            group_by(
                json!("wikipedia"),
                "name",
                json!([{"type": "expression", "name": "name", "expression": "lookup(countryIsoCode, 'country_names')"}]),
            ),
        ),
        (
            "by name: LEFT join to the lookup",
            group_by(
                join(json!({"type": "lookup", "lookup": "country_names"}), "countryIsoCode == \"j.k\"", "LEFT"),
                "j.v",
                json!([]),
            ),
        ),
        ("by page (no join)", group_by(json!("wikipedia"), "page", json!([]))),
        (
            "by group: INNER join to 1,000 inline pages",
            group_by(join(inline, "page == \"j.page\"", "INNER"), "j.group", json!([])),
        ),
    ];
    let mut g = c.benchmark_group("joins");
    g.sample_size(20);
    for (name, query) in queries {
        let mut q = parse_query(&query.to_string()).expect("parses");
        q.bind_lookups(lookups.clone());
        g.bench_function(name, |b| b.iter(|| execute(&q, &segments).expect("runs")));
    }
    g.finish();
}

criterion_group!(benches, joins);
criterion_main!(benches);
