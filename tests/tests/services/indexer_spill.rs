//! The indexing task spilling persists to local disk between checkpoints (tansu, real
//! stores): a checkpoint is written only when `maxTotalRows` is near, with one merged hydrant
//! per time chunk, and every checkpoint still holds exactly the records before its positions.

use sluice_integration::indexing::{json_record, merged_values, plan, spec, Backends};
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::required_env;
use sluice_kafka::OffsetRange;
use sluice_pipeline::indexer::{run_task, TaskOptions, TaskOutcome};
use sluice_pipeline::task::Checkpoint;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// 60 records over three hourly chunks, a persist every 7 rows and `maxTotalRows` 30: four
/// persists spilled per checkpoint (28 rows), not a checkpoint per persist.
async fn spills_between_checkpoints(b: Backends) {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "task-spill", 1).await;
    let records: Vec<(i32, Vec<u8>)> = (0..60).map(|n| (0, json_record(&format!("s{n}"), n))).collect();
    produce(&bootstrap, &topic, &records).await;
    let tuning = serde_json::json!({"maxRowsInMemory": 7, "maxTotalRows": 30});
    let spec =
        spec(&sluice_integration::unique("spill"), &topic, &bootstrap, serde_json::json!({"type": "json"}), tuning);
    let id = plan(b.meta.as_ref(), &spec, vec![OffsetRange { partition: 0, start: 0, end: 60 }]).await;
    let options = TaskOptions::until(Instant::now() + Duration::from_secs(120));
    let outcome = run_task(b.meta.as_ref(), b.store.as_ref(), &id, &options).await.expect("task runs");
    let TaskOutcome::Complete(report) = outcome else { panic!("expected a complete task, got {outcome:?}") };
    assert_eq!(report.meters.processed, 60);

    let checkpoints = b.meta.query(&id.pk(), &id.checkpoint_prefix()).await.expect("checkpoints");
    assert!(
        (2..=3).contains(&checkpoints.len()),
        "28 rows a checkpoint, not one per persist of 7: {} checkpoints",
        checkpoints.len()
    );
    let mut rows = 0;
    for item in checkpoints {
        let c: Checkpoint = serde_json::from_value(item.body).expect("a checkpoint");
        let chunks: BTreeSet<_> = c.hydrants.iter().map(|h| h.chunk).collect();
        assert_eq!(chunks.len(), c.hydrants.len(), "checkpoint {}: one merged hydrant per time chunk", c.n);
        let in_checkpoint: u64 = c.hydrants.iter().map(|h| h.num_rows).sum();
        assert!(in_checkpoint <= 30, "checkpoint {} holds {in_checkpoint} rows, past maxTotalRows", c.n);
        rows += in_checkpoint;
        assert_eq!(rows, c.positions[&0] as u64, "checkpoint {} holds the records before its positions", c.n);
    }
    assert!(
        report.hydrants.iter().any(|h| h.num_rows > 7),
        "spilled persists of 7 rows were merged: {:?}",
        report.hydrants.iter().map(|h| h.num_rows).collect::<Vec<_>>()
    );
    let mut expected: Vec<String> = (0..60).map(|n| format!("s{n}")).collect();
    expected.sort();
    assert_eq!(merged_values(b.store.as_ref(), &report.hydrants, "id").await, expected, "each record once");
}

// The scenarios that run on each metadata backend (`local::`, `aws::`).
sluice_integration::on_backends!(spills_between_checkpoints);
