//! The native queries Turnilo (through plywood) and Grafana's Druid plugin send
//! (`tests/bi_tools/`: timeseries, topN, groupBy, scan, search and the metadata queries, with
//! extraction functions, `interval`/`search`/`columnComparison` filters, `expression`
//! post-aggregators, `cardinality`), each agreeing with DuckDB over the sample through
//! `sluice serve`; the shapes Druid itself refuses (JavaScript, extensions, the plugin's broken
//! serializations) are refused by name.

use super::query_scripts::run;

#[test]
fn turnilo_and_grafana_queries_agree_with_duckdb() {
    let report = run("bi_tools/shapes.py", &["--allow-operations"], &[]);
    assert!(report.ok, "{:#}\n{}", report.json, report.stderr);
    assert_eq!(report.json["passed"], "50 of 50", "{:#}", report.json);
    let ran = report.json.as_object().expect("entries").values().filter(|e| e["rows"].as_u64().is_some_and(|n| n > 0));
    assert!(ran.count() >= 40, "most shapes answer rows: {:#}", report.json);
}
