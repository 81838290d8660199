//! The query engine's integration tests: Druid's tutorials and the query features.

#[path = "../../../format/tests/common/mod.rs"]
mod common;

mod druid_tutorials;
mod generated;
mod hostile_queries;
mod joins;
mod nested;
mod partials;
mod query_features;
mod query_tutorials;
mod ranged;
mod sketches;
mod theta_tutorial;

/// The segments of `records` indexed under the Kafka spec `spec` (JSON), one per time chunk,
/// each a hydrant merged as the merger merges it.
fn query_segments<'r>(
    spec: &serde_json::Value,
    records: impl IntoIterator<Item = &'r [u8]>,
) -> Vec<sluice_query::QuerySegment> {
    let spec = sluice_format::spec::load_spec(&spec.to_string()).expect("spec").spec;
    let (indexes, _) = common::index_records(&spec, records);
    indexes
        .values()
        .map(|index| {
            let interval = index.interval();
            let segment = common::merge_all(&[common::persist(index, "hydrant")], 5_000_000).remove(0);
            sluice_query::QuerySegment { id: format!("t_{interval}"), interval, segment }
        })
        .collect()
}
