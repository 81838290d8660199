//! One attempt of an indexing task in its own process, so a test can kill it at any point.
//! Usage: indexer_attempt METADATA_URL STORAGE_URL DATASOURCE GROUP SEQ LEASE_MS
//! Prints the outcome (`complete`, `incomplete`, `busy`, `lease-lost`) on stdout.

use sluice_pipeline::indexer::{run_task, TaskOptions, TaskOutcome};
use sluice_pipeline::task::TaskId;
use sluice_store::metadata::open_metadata;
use sluice_store::storage::open_store;
use std::time::{Duration, Instant};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [meta, store, datasource, group, seq, lease_ms] = args.as_slice() else {
        panic!("usage: indexer_attempt METADATA_URL STORAGE_URL DATASOURCE GROUP SEQ LEASE_MS");
    };
    let meta = open_metadata(meta).await.expect("metadata store");
    let store = open_store(store).await.expect("object store");
    let id =
        TaskId { datasource: datasource.clone(), group: group.parse().expect("group"), seq: seq.parse().expect("seq") };
    let options = TaskOptions {
        deadline: Some(Instant::now() + Duration::from_secs(120)),
        reserve: Duration::ZERO,
        lease: Duration::from_millis(lease_ms.parse().expect("lease ms")),
    };
    let outcome = run_task(meta.as_ref(), store.as_ref(), &id, &options).await.expect("attempt");
    println!(
        "{}",
        match outcome {
            TaskOutcome::Complete(_) => "complete",
            TaskOutcome::Incomplete(_) => "incomplete",
            TaskOutcome::Busy { .. } => "busy",
            TaskOutcome::LeaseLost { .. } => "lease-lost",
        }
    );
}
