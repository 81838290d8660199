//! Which segments the merger publishes from a task's checkpointed hydrants (tansu, real
//! stores): each hydrant of at least a quarter of `maxRowsPerSegment` as it was persisted,
//! smaller ones merged (in batches of the bytes the merger holds), every record once either way.

use sluice_integration::indexing::{visible_values, Backends};
use sluice_integration::protocol::Setup;
use sluice_pipeline::invoker::{Job, QueueInvoker};
use sluice_pipeline::merger::{merge_and_publish, MergeOutcome, MergerOptions};
use sluice_pipeline::runner::{run_job, JobOutcome};
use sluice_pipeline::supervisor::{supervise, SupervisorOptions};
use sluice_pipeline::task::{load_progress, TaskId};
use std::time::Duration;

fn now() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// 60 records over three hourly chunks indexed by one task, a persist every 6 rows and
/// `maxTotalRows` 12: five checkpoints of 4 rows per chunk.
async fn indexed(b: &Backends, max_rows_per_segment: u64) -> (Setup, TaskId) {
    let tuning =
        serde_json::json!({"maxRowsInMemory": 6, "maxTotalRows": 12, "maxRowsPerSegment": max_rows_per_segment});
    let s = Setup::new(b.clone(), 1, 60, 1, 100, tuning).await;
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    let queue = QueueInvoker::default();
    supervise(meta, store, &queue, &SupervisorOptions::at(now()), &s.name).await.expect("supervisor pass");
    let id = s.tasks().await[0].id.clone();
    let indexed = run_job(meta, store, &queue, &Job::Index { task: id.clone() }, Duration::from_secs(60)).await;
    assert!(matches!(indexed, JobOutcome::Indexed(Ok(_))), "{indexed:?}");
    (s, id)
}

/// 60 records over three hourly chunks, a persist every 6 rows and `maxTotalRows` 12: five
/// checkpoints of 4 rows per chunk. With `maxRowsPerSegment` 16 they are a quarter of a
/// segment and published as they are (15 segments); with 20, each chunk's 20 rows are merged
/// into one.
async fn hydrants_are_published_as_persisted_or_merged_by_their_size(b: Backends) {
    for (max_rows_per_segment, as_persisted) in [(16, true), (20, false)] {
        let (s, id) = indexed(&b, max_rows_per_segment).await;
        let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());

        let hydrants = load_progress(meta, &id).await.expect("progress").hydrants;
        let mut persisted: Vec<(u64, u64)> = hydrants.iter().map(|h| (h.num_rows, h.num_bytes)).collect();
        assert_eq!(persisted.len(), 15, "five checkpoints of 4 rows in each of 3 chunks: {persisted:?}");
        assert!(persisted.iter().all(|&(rows, _)| rows == 4), "{persisted:?}");

        let published = merge_and_publish(meta, store, None, &id, &MergerOptions::at(now())).await;
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

/// The same 60 records merged (`maxRowsPerSegment` 20) by a merger that holds two hydrants'
/// bytes at a time: each chunk's five hydrants of 4 rows merged in batches of two, two and
/// one, one segment each, every record once.
async fn a_merger_merges_in_batches_of_the_bytes_it_holds(b: Backends) {
    let (s, id) = indexed(&b, 20).await;
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    let hydrants = load_progress(meta, &id).await.expect("progress").hydrants;
    let (least, most) = (hydrants.iter().map(|h| h.num_bytes).min(), hydrants.iter().map(|h| h.num_bytes).max());
    let (least, most) = (least.expect("hydrants"), most.expect("hydrants"));
    assert!(3 * least > 2 * most, "hydrants of alike sizes: {hydrants:?}");

    let options = MergerOptions { max_batch_bytes: 2 * most, ..MergerOptions::at(now()) };
    let published = merge_and_publish(meta, store, None, &id, &options).await;
    let Ok(MergeOutcome::Published { segments }) = published else { panic!("{published:?}") };
    let mut rows: Vec<u64> = segments.iter().map(|r| r.num_rows).collect();
    rows.sort();
    assert_eq!(rows, [4, 4, 4, 8, 8, 8, 8, 8, 8], "batches of 8, 8 and 4 rows in each of 3 chunks");
    assert_eq!(visible_values(meta, store, &s.name, "id").await, s.expected(), "each record once");
    s.b.discard(&s.name).await;
}

// The scenarios that run on each metadata backend (`local::`, `aws::`).
sluice_integration::on_backends!(
    hydrants_are_published_as_persisted_or_merged_by_their_size,
    a_merger_merges_in_batches_of_the_bytes_it_holds
);
