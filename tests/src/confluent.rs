//! What the binary-format tests share: records produced by Confluent's own serializers (the
//! Python scripts in `tests/confluent/`), and a task run through an outage of the schema
//! registry.

use crate::indexing::{plan, Backends};
use crate::required_env;
use crate::schema_registry::SchemaRegistry;
use serde_json::Value;
use sluice_kafka::OffsetRange;
use sluice_pipeline::indexer::{run_task, TaskOptions, TaskOutcome, TaskReport};
use sluice_pipeline::task::TaskId;
use std::time::{Duration, Instant};

/// Runs `tests/confluent/{script}` (it produces `count` records to `topic` through `registry`):
/// the rows it produced, as it printed them.
pub fn produce_with_confluent(script: &str, bootstrap: &str, topic: &str, registry: &str, count: usize) -> Vec<Value> {
    let python = required_env("SLUICE_PYTHON");
    let path = format!("{}/confluent/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(&python)
        .args([&path, bootstrap, topic, registry, &count.to_string()])
        .output()
        .expect("run the Confluent producer");
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("a row")).collect()
}

/// Indexes the 40 records of `spec`'s topic (20 per partition) as one task, run first with
/// `registry` down, then up, and checks that every record was read and each of `schema_ids`
/// fetched once by the attempt that read (the first record's once more by the attempt the
/// outage failed): the complete task's report.
pub async fn ingest_through_registry_outage(
    b: &Backends,
    spec: &Value,
    registry: &SchemaRegistry,
    schema_ids: &[u32],
) -> TaskReport {
    let ranges = vec![OffsetRange { partition: 0, start: 0, end: 20 }, OffsetRange { partition: 1, start: 0, end: 20 }];
    let id = plan(b.meta.as_ref(), spec, ranges).await;
    let report = run_through_registry_outage(b, &id, registry).await;
    assert_eq!((report.meters.processed, report.meters.unparseable), (40, 0), "{:?}", report.meters.saved_exceptions);
    let fetches: usize = schema_ids.iter().map(|id| registry.fetches(*id)).sum();
    assert_eq!(fetches, schema_ids.len() + 1, "each schema fetched once by the attempt that read");
    report
}

/// Runs task `id` with `registry` down (the attempt fails to be retried, counting nothing,
/// dropping nothing), then up: the complete task's report.
async fn run_through_registry_outage(b: &Backends, id: &TaskId, registry: &SchemaRegistry) -> TaskReport {
    let options = TaskOptions::until(Instant::now() + Duration::from_secs(120));
    registry.set_down(true);
    match run_task(b.meta.as_ref(), b.store.as_ref(), id, &options).await {
        Err(e) => assert!(e.to_string().contains(&format!("{} did not give schema", registry.url)), "{e}"),
        Ok(other) => panic!("expected the attempt to fail, got {other:?}"),
    }
    registry.set_down(false);
    match run_task(b.meta.as_ref(), b.store.as_ref(), id, &options).await.expect("task runs") {
        TaskOutcome::Complete(r) => r,
        other => panic!("expected a complete task, got {other:?}"),
    }
}

/// Checks that the task's hydrants cover exactly the hours of the rows' times (`time_ms`: a
/// row's time in milliseconds).
pub fn assert_hours_of_rows(report: &TaskReport, rows: &[Value], time_ms: &str) {
    let mut hours: Vec<i64> = report.hydrants.iter().map(|h| h.chunk.start).collect();
    hours.sort();
    hours.dedup();
    let mut expected: Vec<i64> =
        rows.iter().map(|r| r[time_ms].as_i64().expect("a time") / 3_600_000 * 3_600_000).collect();
    expected.sort();
    expected.dedup();
    assert_eq!(hours, expected);
}
