//! `sluice bench batch`: Druid's Wikipedia sample as a batch task on the embedded backends:
//! the sample's lines, written `--copies` times into one uncompressed file, cut into splits of
//! `--split-mb`, indexed by `--concurrent` jobs at once in this process (as Lambda runs the
//! indexer's invocations) and published once. Prints rows/s end to end, the time to plan the
//! splits, to index them and to publish, and checks every row is visible once.

use super::default_sample;
use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::json;
use sluice_format::time::now_ms;
use sluice_pipeline::batch::{self, allow_in_process, BatchState};
use sluice_pipeline::invoker::{Job, QueueInvoker};
use sluice_pipeline::runner::{JobOutcome, JobPool};
use sluice_store::metadata::{open_metadata, MetadataStore};
use sluice_store::storage::{open_store, ObjectStore};
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Options of `bench batch`.
#[derive(Args, Clone)]
pub struct BatchArgs {
    /// Copies of the sample's 39,244 rows in the input file.
    #[arg(long, default_value_t = 4)]
    copies: usize,
    /// `splitHintSpec.maxSplitSize`, MiB.
    #[arg(long, default_value_t = 16)]
    split_mb: u64,
    /// `maxNumConcurrentSubTasks`: split jobs at once.
    #[arg(long, default_value_t = 2)]
    concurrent: u32,
}

/// Runs `bench batch`.
pub fn run(args: BatchArgs) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(measure(args))
}

async fn measure(args: BatchArgs) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let input = dir.path().join("input");
    std::fs::create_dir(&input)?;
    let file = std::fs::File::open(default_sample()).context("the sample")?;
    let lines: Vec<String> =
        std::io::BufReader::new(flate2::read::GzDecoder::new(file)).lines().collect::<Result<_, _>>()?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(input.join("wikipedia.json"))?);
    for _ in 0..args.copies {
        for l in &lines {
            writeln!(out, "{l}")?;
        }
    }
    out.flush()?;
    drop(out);
    let bytes = std::fs::metadata(input.join("wikipedia.json"))?.len();
    let rows = (lines.len() * args.copies) as u64;
    allow_in_process(Some(&input), None);
    let meta: Arc<dyn MetadataStore> = open_metadata(&format!("file://{}", dir.path().join("meta").display())).await?;
    let store: Arc<dyn ObjectStore> = open_store(&format!("file://{}", dir.path().join("store").display())).await?;
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/specs");
    let supervisor: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{root}/wikipedia-kafka-supervisor.json"))?)?;
    sluice_pipeline::datasource::submit(meta.as_ref(), supervisor, now_ms()).await?;
    let mut spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{root}/wikipedia-index-parallel.json"))?)?;
    spec["spec"]["ioConfig"]["inputSource"] =
        json!({"type": "local", "baseDir": input.display().to_string(), "filter": "*.json"});
    spec["spec"]["ioConfig"]["appendToExisting"] = true.into();
    spec["spec"]["dataSchema"]["granularitySpec"].as_object_mut().map(|g| g.remove("intervals"));
    spec["spec"]["tuningConfig"]["maxNumConcurrentSubTasks"] = args.concurrent.into();
    spec["spec"]["tuningConfig"]["splitHintSpec"] = json!({"type": "maxSize", "maxSplitSize": args.split_mb << 20});

    let started = Instant::now();
    let submitted = batch::submit(meta.as_ref(), &batch::process_access(), spec, now_ms()).await?;
    let planned = started.elapsed();
    let queue = Arc::new(QueueInvoker::default());
    let mut pool = JobPool::default();
    // The last split's end, and the publish's.
    let mut last_split = started;
    let mut publishing = Duration::ZERO;
    batch::drive(meta.as_ref(), queue.as_ref(), "wikipedia", now_ms()).await?;
    loop {
        pool.start(&meta, &store, &queue, Duration::from_secs(900));
        let Some(done) = pool.join_next().await else { break };
        let (job, outcome) = done?;
        match (&job, &outcome) {
            (Job::BatchIndex { .. }, JobOutcome::BatchIndexed(Ok(_))) => last_split = Instant::now(),
            (Job::BatchPublish { .. }, JobOutcome::BatchPublished(Ok(_))) => publishing = last_split.elapsed(),
            (_, JobOutcome::BatchIndexed(Err(e)) | JobOutcome::BatchPublished(Err(e))) => bail!("{job:?}: {e}"),
            _ => {}
        }
    }
    let total = started.elapsed();
    let indexing = last_split.duration_since(started).saturating_sub(planned);
    let Some((task, _)) = batch::find(meta.as_ref(), &submitted.id).await? else { bail!("the task is gone") };
    if task.state != BatchState::Published {
        bail!("the task ended {:?}: {:?}", task.state, task.error);
    }
    let processed = task.meters.map(|m| m.processed).unwrap_or(0);
    let visible: u64 =
        sluice_pipeline::timeline::visible_segments(meta.as_ref(), "wikipedia").await?.iter().map(|s| s.num_rows).sum();
    if processed != rows || visible != rows {
        bail!("{rows} rows in, {processed} processed, {visible} visible");
    }
    println!(
        "batch task: {rows} rows ({:.1} MB of JSON) in {} splits of {} MiB, {} at once: {:.2} s end to end, {:.0} rows/s",
        bytes as f64 / 1e6,
        task.splits,
        args.split_mb,
        args.concurrent,
        total.as_secs_f64(),
        rows as f64 / total.as_secs_f64()
    );
    println!(
        "  plan {:.2} s, index {:.2} s ({:.0} rows/s), publish {:.2} s ({} segments); every row visible once",
        planned.as_secs_f64(),
        indexing.as_secs_f64(),
        rows as f64 / indexing.as_secs_f64().max(1e-9),
        publishing.as_secs_f64(),
        task.segments
    );
    Ok(())
}
