//! Druid SQL on the Wikipedia sample: Druid's tutorial queries in SQL, the constructs SQL
//! plans into native queries (each checked against the native query or rows worked out from
//! the sample), the metadata tables, result formats and errors.

#[path = "../../../format/tests/common/mod.rs"]
mod common;

mod constructs;
mod errors;
mod joins;
mod lookups;
mod metadata;
mod multi_value;
mod nested;
mod sketches;
#[path = "../../../query/tests/query/theta_tutorial.rs"]
mod theta_tutorial;
mod time_functions;
mod time_zones;
mod tutorials;
mod windows;
mod with_union;

use common::*;
use serde_json::Value;
use sluice_query::QuerySegment;
use sluice_sql::{run_sql, MemorySegments, SqlError, SqlRequest, SqlResult};
use std::sync::{Arc, OnceLock};

/// The sample's records with every one on 2015-09-12, as Druid's tutorial has them.
pub fn tutorial_lines() -> Vec<String> {
    wikipedia_lines()
        .into_iter()
        .map(|l| {
            let stray = l.starts_with("{\"time\":\"2015-09-") && !l.starts_with("{\"time\":\"2015-09-12");
            if stray {
                format!("{{\"time\":\"2015-09-12{}", &l[19..])
            } else {
                l
            }
        })
        .collect()
}

/// The sample with every record on 2015-09-12, as Druid's tutorial has it, in hourly segments.
pub fn wikipedia() -> &'static MemorySegments {
    static SOURCE: OnceLock<MemorySegments> = OnceLock::new();
    SOURCE.get_or_init(|| {
        let lines = tutorial_lines();
        let mut spec = spec("wikipedia-kafka-supervisor.json");
        spec.granularity.segment_granularity =
            sluice_format::granularity::Granularity::from_name("hour").expect("hour");
        let mut source = memory_source("wikipedia", &spec, lines.iter().map(|l| l.as_bytes()));
        source.lookups = lookups::fixture();
        source
    })
}

/// `records` indexed under `spec` as table `table`, one segment per time chunk.
pub fn memory_source<'r>(
    table: &str,
    spec: &sluice_format::spec::DatasourceSpec,
    records: impl IntoIterator<Item = &'r [u8]>,
) -> MemorySegments {
    let (indexes, _) = index_records(spec, records);
    let segments: Vec<QuerySegment> = indexes
        .values()
        .map(|index| {
            let interval = index.interval();
            let segment = merge_all(&[persist(index, "hydrant")], 5_000_000).remove(0);
            QuerySegment { id: format!("{table}_{}_{}_v1", interval.start, interval.end), interval, segment }
        })
        .collect();
    let mut source = MemorySegments::default();
    source.tables.insert(table.into(), Arc::new(segments));
    source
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
    })
}

/// Runs `request` on the sample.
pub fn answer(request: &SqlRequest) -> Result<SqlResult, SqlError> {
    runtime().block_on(run_sql(wikipedia(), request))
}

/// Runs `sql` on the sample and returns its rows as arrays.
pub fn sql(text: &str) -> Vec<Vec<Value>> {
    match answer(&SqlRequest::new(text)) {
        Ok(r) => r.rows,
        Err(e) => panic!("{text}\n  failed: {e}"),
    }
}

/// Runs `sql`, expecting an error that mentions `mentions`.
pub fn refused_naming(text: &str, mentions: &str) {
    let e = sql_error(text).to_string();
    assert!(e.contains(mentions), "{text}: {e} does not mention {mentions:?}");
}

/// Runs `sql`, expecting an error.
pub fn sql_error(text: &str) -> SqlError {
    match answer(&SqlRequest::new(text)) {
        Ok(r) => panic!("{text}\n  answered {:?}", r.rows),
        Err(e) => e,
    }
}

/// Runs a native query on the sample.
pub fn native(query: Value) -> Value {
    let q = sluice_query::parse_query(&query.to_string()).expect("native query parses");
    sluice_query::execute(&q, &wikipedia().tables["wikipedia"]).expect("native query runs")
}
