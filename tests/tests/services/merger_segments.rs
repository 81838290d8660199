//! Which segments the merger publishes from a task's checkpointed hydrants (tansu, real
//! stores): each hydrant of at least a quarter of `maxRowsPerSegment` as it was persisted,
//! smaller ones merged, every record once either way.

use sluice_integration::indexing::{visible_values, Backends};
use sluice_integration::protocol::Setup;
use sluice_pipeline::invoker::{Job, QueueInvoker};
use sluice_pipeline::merger::{merge_and_publish, MergeOutcome, MergerOptions};
use sluice_pipeline::runner::{run_job, JobOutcome};
use sluice_pipeline::supervisor::{supervise, SupervisorOptions};
use sluice_pipeline::task::load_progress;
use std::time::Duration;

fn now() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// 60 records over three hourly chunks, a persist every 6 rows and `maxTotalRows` 12: five
/// checkpoints of 4 rows per chunk. With `maxRowsPerSegment` 16 they are a quarter of a
/// segment and published as they are (15 segments); with 20, each chunk's 20 rows are merged
/// into one.
async fn hydrants_are_published_as_persisted_or_merged_by_their_size(b: Backends) {
    for (max_rows_per_segment, as_persisted) in [(16, true), (20, false)] {
        let tuning =
            serde_json::json!({"maxRowsInMemory": 6, "maxTotalRows": 12, "maxRowsPerSegment": max_rows_per_segment});
        let s = Setup::new(b.clone(), 1, 60, 1, 100, tuning).await;
        let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
        let queue = QueueInvoker::default();
        supervise(meta, store, &queue, &SupervisorOptions::at(now()), &s.name).await.expect("supervisor pass");
        let id = s.tasks().await[0].id.clone();
        let indexed = run_job(meta, store, &queue, &Job::Index { task: id.clone() }, Duration::from_secs(60)).await;
        assert!(matches!(indexed, JobOutcome::Indexed(Ok(_))), "{indexed:?}");

        let hydrants = load_progress(meta, &id).await.expect("progress").hydrants;
        let mut persisted: Vec<(u64, u64)> = hydrants.iter().map(|h| (h.num_rows, h.num_bytes)).collect();
        assert_eq!(persisted.len(), 15, "five checkpoints of 4 rows in each of 3 chunks: {persisted:?}");
        assert!(persisted.iter().all(|&(rows, _)| rows == 4), "{persisted:?}");

        let published = merge_and_publish(meta, store, None, &id, &MergerOptions { now_ms: now() }).await;
        let Ok(MergeOutcome::Published { segments }) = published else { panic!("{published:?}") };
        let mut published: Vec<(u64, u64)> = segments.iter().map(|r| (r.num_rows, r.num_bytes)).collect();
        if as_persisted {
            persisted.sort();
            published.sort();
            assert_eq!(published, persisted, "each hydrant a segment of its own bytes");
        } else {
            assert_eq!(published.iter().map(|p| p.0).collect::<Vec<_>>(), [20, 20, 20], "one segment per chunk");
        }
        assert_eq!(visible_values(meta, store, &s.name, "id").await, s.expected(), "each record once");
        s.b.discard(&s.name).await;
    }
}

// The scenarios that run on each metadata backend (`local::`, `aws::`).
sluice_integration::on_backends!(hydrants_are_published_as_persisted_or_merged_by_their_size);
