//! `sluice bench pipeline`: the whole pipeline in this process (supervisor passes, indexers,
//! mergers, publish) on the embedded backends, fed by librdkafka's in-process mock cluster.
//!
//! Three phases, each on fresh stores:
//! 1. indexer only: the speed pass of `bench indexer` on the same number of records;
//! 2. throughput: records produced in waves (the mock cluster keeps about 5 MB per partition),
//!    each wave taken from first record read to last segment published; time split per stage,
//!    peak resident memory, bytes written per row, requests and capacity units per function;
//! 3. steady: records produced at a steady rate while the supervisor runs every period;
//!    freshness (produce to queryable) per record and lag per pass.

use super::metered::{self, MeteredMeta, MeteredStore, Meters, SharedMeters};
use super::{default_sample, indexer, process, steady, Sample};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use serde::{Deserialize, Serialize};
use sluice_shared::datasource::submit;
use sluice_shared::indexer::TaskOutcome;
use sluice_shared::invoker::{Job, QueueInvoker};
use sluice_shared::merger::MergeOutcome;
use sluice_shared::metadata::{open_metadata, MetadataStore};
use sluice_shared::runner::{run_job, JobOutcome};
use sluice_shared::storage::{open_store, ObjectStore};
use sluice_shared::supervisor::{run_pass, DatasourcePass, SupervisorOptions};
use sluice_shared::timeline::visible_segments;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) const TOPIC: &str = "wikipedia";
const TASK_BUDGET: Duration = Duration::from_secs(900);

/// Options of `bench pipeline`.
#[derive(Args, Clone)]
pub struct PipelineArgs {
    /// Records of the throughput phase (and of the indexer-only pass).
    #[arg(long, default_value_t = 400_000)]
    pub rows: usize,
    /// Partitions of the topic.
    #[arg(long, default_value_t = 4)]
    pub partitions: i32,
    /// Records per partition per wave (the mock cluster keeps about 5 MB per partition).
    #[arg(long, default_value_t = 20_000)]
    pub wave: usize,
    /// Produce rate of the steady phase, records per second.
    #[arg(long, default_value_t = 40_000)]
    pub rate: u64,
    /// Length of the steady phase's production, seconds.
    #[arg(long, default_value_t = 20)]
    pub steady_secs: u64,
    /// Supervisor period of the steady phase, milliseconds.
    #[arg(long, default_value_t = 1_000)]
    pub period_ms: u64,
    /// The Wikipedia sample (newline-delimited JSON, gzipped).
    #[arg(long)]
    pub sample: Option<PathBuf>,
    /// Also writes the report as JSON to this file (the cost model reads it).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Prints the report as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// Seconds per stage of the throughput phase.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Stages {
    /// Consumer open (watermarks, assignment).
    pub open: f64,
    /// Reading records, at the raw consume rate of phase 1.
    pub read: f64,
    /// Parsing and indexing: the task's read loop minus the raw read.
    pub parse_index: f64,
    /// Persisting indexes to hydrant bytes.
    pub persist: f64,
    /// Uploading hydrants.
    pub upload: f64,
    /// Claims and checkpoints.
    pub checkpoint: f64,
    /// Merging hydrants into segments (merger time outside the stores).
    pub merge: f64,
    /// The merger's object store requests (hydrants read, segments written).
    pub merge_storage: f64,
    /// The merger's metadata requests: order check, partition numbers, segment records, the
    /// publish transaction, visibility.
    pub publish: f64,
    /// Supervisor passes.
    pub supervisor: f64,
}

impl Stages {
    /// Sum of the stages.
    pub fn total(&self) -> f64 {
        self.open
            + self.read
            + self.parse_index
            + self.persist
            + self.upload
            + self.checkpoint
            + self.merge
            + self.merge_storage
            + self.publish
            + self.supervisor
    }
}

/// What one kind of function used over a phase.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct FunctionUse {
    /// Invocations.
    pub invocations: u64,
    /// Wall seconds, all invocations.
    pub secs: f64,
    /// Requests and capacity units.
    pub meters: Meters,
}

/// Per function kind.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Functions {
    /// Supervisor passes.
    pub supervisor: FunctionUse,
    /// Indexer attempts.
    pub indexer: FunctionUse,
    /// Merger runs.
    pub merger: FunctionUse,
}

/// The throughput phase.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Throughput {
    /// Rows published.
    pub rows: u64,
    /// Seconds from each wave's first record read to its last segment published, summed.
    pub secs: f64,
    /// Tasks published.
    pub tasks: u64,
    /// Hydrants written.
    pub hydrants: u64,
    /// Visible segments at the end, and their bytes.
    pub segments: u64,
    /// Bytes of the visible segments.
    pub segment_bytes: u64,
    /// Seconds per stage.
    pub stages: Stages,
    /// Per function kind.
    pub functions: Functions,
    /// Peak resident memory of the process during the phase.
    pub peak_rss_bytes: u64,
}

/// The report of `bench pipeline`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PipelineReport {
    /// Partitions of the topic.
    pub partitions: i32,
    /// Bytes of JSON per record, on average.
    pub record_bytes: f64,
    /// Indexer-only rate (phase 1), rows/s.
    pub indexer_only_rows_per_sec: f64,
    /// Raw consume rate of the same records, rows/s.
    pub raw_read_rows_per_sec: f64,
    /// Throughput phase.
    pub throughput: Throughput,
    /// Steady phase.
    pub steady: steady::Steady,
}

impl PipelineReport {
    /// End-to-end rows/s, first record read to last segment published.
    pub fn end_to_end_rows_per_sec(&self) -> f64 {
        self.throughput.rows as f64 / self.throughput.secs
    }
}

/// Runs `bench pipeline`.
pub fn run(args: PipelineArgs) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let report = runtime.block_on(bench(&args))?;
    if let Some(out) = &args.out {
        std::fs::write(out, serde_json::to_string_pretty(&report)? + "\n")
            .with_context(|| format!("write {}", out.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print(&args, &report);
    }
    Ok(())
}

async fn bench(args: &PipelineArgs) -> Result<PipelineReport> {
    eprintln!("phase 1/3: indexer only, {} records", args.rows);
    let only = indexer::speed_pass(args.sample.as_deref(), args.rows, args.partitions, args.wave).await?;
    let indexer_only = only.rows as f64 / only.task_secs;
    let raw_read = only.rows as f64 / only.raw_secs;
    let sample = Sample::load(&args.sample.clone().unwrap_or_else(default_sample))?;
    eprintln!("phase 2/3: the pipeline, {} records in waves", args.rows);
    let mut rig = Rig::start(args.partitions, "wikipedia").await?;
    let throughput = rig.throughput(&sample, args, only.raw_secs / only.rows as f64).await?;
    drop(rig);
    eprintln!("phase 3/3: steady production at {} records/s for {} s", args.rate, args.steady_secs);
    let rig = Rig::start(args.partitions, "wikipedia_steady").await?;
    let steady = steady::run(&rig, &sample, args).await?;
    Ok(PipelineReport {
        partitions: args.partitions,
        record_bytes: only.bytes as f64 / only.rows as f64,
        indexer_only_rows_per_sec: indexer_only,
        raw_read_rows_per_sec: raw_read,
        throughput,
        steady,
    })
}

/// A mock cluster, metered embedded stores and a submitted datasource.
pub(super) struct Rig {
    pub cluster: MockCluster<'static, DefaultProducerContext>,
    pub producer: ThreadedProducer<DefaultProducerContext>,
    pub meta: Arc<dyn MetadataStore>,
    pub store: Arc<dyn ObjectStore>,
    pub meters: SharedMeters,
    pub datasource: String,
    pub partitions: i32,
    pub queue: QueueInvoker,
    _dir: tempfile::TempDir,
}

impl Rig {
    async fn start(partitions: i32, datasource: &str) -> Result<Self> {
        let cluster = MockCluster::new(1).context("mock cluster")?;
        cluster.create_topic(TOPIC, partitions, 1).context("create the topic")?;
        let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
            .set("bootstrap.servers", cluster.bootstrap_servers())
            .set("compression.type", "lz4")
            .set("linger.ms", "5")
            .set("batch.size", "1000000")
            .set("queue.buffering.max.messages", "1000000")
            .create()
            .context("producer")?;
        let dir = tempfile::tempdir()?;
        let meters = SharedMeters::default();
        let meta: Arc<dyn MetadataStore> = Arc::new(MeteredMeta::new(
            open_metadata(&format!("file://{}/meta", dir.path().display())).await?,
            meters.clone(),
        ));
        let store: Arc<dyn ObjectStore> = Arc::new(MeteredStore::new(
            open_store(&format!("file://{}/store", dir.path().display())).await?,
            meters.clone(),
        ));
        let mut spec: serde_json::Value = serde_json::from_str(super::TUTORIAL_SPEC)?;
        spec["dataSchema"]["dataSource"] = datasource.into();
        spec["ioConfig"]["topic"] = TOPIC.into();
        spec["ioConfig"]["consumerProperties"]["bootstrap.servers"] = cluster.bootstrap_servers().into();
        spec["ioConfig"]["useEarliestOffset"] = true.into();
        let (datasource, _, _) = submit(meta.as_ref(), spec, chrono::Utc::now().timestamp_millis()).await?;
        Ok(Self {
            cluster,
            producer,
            meta,
            store,
            meters,
            datasource,
            partitions,
            queue: QueueInvoker::default(),
            _dir: dir,
        })
    }

    /// Sends `records` round-robin over the partitions, starting at partition `first`.
    pub fn send(&self, records: &[Vec<u8>], first: usize) -> Result<()> {
        for (i, value) in records.iter().enumerate() {
            let p = ((first + i) % self.partitions as usize) as i32;
            self.producer
                .send(BaseRecord::<(), _>::to(TOPIC).partition(p).payload(value))
                .map_err(|(e, _)| anyhow!("produce: {e}"))?;
        }
        Ok(())
    }

    /// One supervisor pass, metered into `functions`.
    pub async fn pass(&self, functions: &mut Functions) -> Result<DatasourcePass> {
        let (before, started) = (metered::read(&self.meters), Instant::now());
        let options = SupervisorOptions::at(chrono::Utc::now().timestamp_millis());
        let passes =
            run_pass(self.meta.as_ref(), self.store.as_ref(), &self.queue, &options, Some(&self.datasource)).await?;
        let f = &mut functions.supervisor;
        f.invocations += 1;
        f.secs += started.elapsed().as_secs_f64();
        f.meters.add(&metered::read(&self.meters).since(&before));
        let (_, pass) = passes.into_iter().next().ok_or_else(|| anyhow!("the supervisor skipped the datasource"))?;
        Ok(pass?)
    }

    /// Runs the queued jobs (and those they queue), metered into `functions`; `on_job` sees
    /// each job's outcome with its meters and wall time.
    pub async fn drain(
        &self,
        functions: &mut Functions,
        mut on_job: impl FnMut(&Job, &JobOutcome, &Meters, Duration),
    ) -> Result<()> {
        while let Some(job) = self.queue.pop() {
            let (before, started) = (metered::read(&self.meters), Instant::now());
            let outcome = run_job(self.meta.as_ref(), self.store.as_ref(), &self.queue, &job, TASK_BUDGET).await;
            let (took, used) = (started.elapsed(), metered::read(&self.meters).since(&before));
            let f = match job {
                Job::Index { .. } => &mut functions.indexer,
                Job::Merge { .. } => &mut functions.merger,
            };
            f.invocations += 1;
            f.secs += took.as_secs_f64();
            f.meters.add(&used);
            match &outcome {
                JobOutcome::Indexed(Err(e)) => bail!("indexer: {e}"),
                JobOutcome::Merged(Err(e)) => bail!("merger: {e}"),
                _ => on_job(&job, &outcome, &used, took),
            }
        }
        Ok(())
    }

    async fn throughput(&mut self, sample: &Sample, args: &PipelineArgs, read_secs_per_row: f64) -> Result<Throughput> {
        let mut t = Throughput::default();
        let wave_rows = args.wave * self.partitions as usize;
        let (mut produced, mut read_rows) = (0usize, 0u64);
        let rss_before = process::rss();
        process::reset_peak();
        while produced < args.rows {
            let n = (args.rows - produced).min(wave_rows);
            self.send(&sample.records_in_one_day(produced, n)?, produced)?;
            self.producer.flush(Duration::from_secs(60))?;
            produced += n;
            let mut first_read: Option<Instant> = None;
            let mut last_publish = Instant::now();
            let mut caught_up = false;
            for _ in 0..50 {
                let supervisor_secs = t.functions.supervisor.secs;
                let pass = self.pass(&mut t.functions).await?;
                t.stages.supervisor += t.functions.supervisor.secs - supervisor_secs;
                if pass.caught_up && pass.high.values().sum::<i64>() == produced as i64 {
                    caught_up = true;
                    break;
                }
                let stages = &mut t.stages;
                let (mut tasks, mut hydrants) = (0u64, 0u64);
                self.drain(&mut t.functions, |_, outcome, used, took| match outcome {
                    JobOutcome::Indexed(Ok(outcome @ (TaskOutcome::Complete(r) | TaskOutcome::Incomplete(r)))) => {
                        let started = Instant::now() - took;
                        first_read = Some(first_read.map_or(started, |f| f.min(started)));
                        let read = read_secs_per_row * r.num_records_read as f64;
                        read_rows += r.num_records_read;
                        stages.open += r.times.open.as_secs_f64();
                        stages.read += read;
                        stages.parse_index += (r.times.read_index.as_secs_f64() - read).max(0.0);
                        stages.persist += r.times.persist.as_secs_f64();
                        stages.upload += r.times.upload.as_secs_f64();
                        stages.checkpoint += r.times.metadata.as_secs_f64();
                        if matches!(outcome, TaskOutcome::Complete(_)) {
                            hydrants += r.hydrants.len() as u64;
                        }
                    }
                    JobOutcome::Merged(Ok(MergeOutcome::Published { .. })) => {
                        last_publish = Instant::now();
                        tasks += 1;
                        stages.merge += (took.as_secs_f64() - used.store_secs - used.meta_secs).max(0.0);
                        stages.merge_storage += used.store_secs;
                        stages.publish += used.meta_secs;
                    }
                    _ => {}
                })
                .await?;
                t.tasks += tasks;
                t.hydrants += hydrants;
            }
            if !caught_up {
                bail!("the pipeline did not catch up with wave ending at record {produced}");
            }
            let first = first_read.ok_or_else(|| anyhow!("no record was read in a wave"))?;
            t.secs += last_publish.duration_since(first).as_secs_f64();
        }
        t.peak_rss_bytes = process::peak_rss().saturating_sub(rss_before);
        let visible = visible_segments(self.meta.as_ref(), &self.datasource).await?;
        t.rows = visible.iter().map(|s| s.num_rows).sum();
        if t.rows != args.rows as u64 || read_rows != args.rows as u64 {
            bail!("{} rows published and {read_rows} read of {} produced", t.rows, args.rows);
        }
        t.segments = visible.len() as u64;
        t.segment_bytes = visible.iter().map(|s| s.num_bytes).sum();
        Ok(t)
    }
}

fn print(args: &PipelineArgs, r: &PipelineReport) {
    let t = &r.throughput;
    let e2e = r.end_to_end_rows_per_sec();
    println!(
        "source: librdkafka mock cluster in this process, {} partitions, {} records ({:.0} bytes of JSON each), rollup off",
        r.partitions, t.rows, r.record_bytes
    );
    println!("stores: embedded metadata and local files, metered as DynamoDB and S3 bill them");
    println!();
    println!("{:<48} {:>12}", "rate", "rows/s");
    println!("{:<48} {:>12.0}", "raw consume (empty handler)", r.raw_read_rows_per_sec);
    println!("{:<48} {:>12.0}", "indexer only (Kafka -> hydrants)", r.indexer_only_rows_per_sec);
    println!("{:<48} {:>12.0}", "end to end (first read -> last publish)", e2e);
    println!("end to end / indexer only: {:.0}% (target 70%)", 100.0 * e2e / r.indexer_only_rows_per_sec);
    println!();
    let s = &t.stages;
    let total = s.total();
    println!("{:<44} {:>8} {:>7}", "stage", "secs", "share");
    for (name, secs) in [
        ("consumer open", s.open),
        ("read (raw consume rate)", s.read),
        ("parse + index", s.parse_index),
        ("persist (index -> hydrant bytes)", s.persist),
        ("upload hydrants", s.upload),
        ("checkpoints, claims", s.checkpoint),
        ("merge", s.merge),
        ("merger storage (hydrants in, segments out)", s.merge_storage),
        ("publish (metadata: order, records, txn)", s.publish),
        ("supervisor passes", s.supervisor),
    ] {
        println!("{name:<44} {secs:>8.3} {:>6.1}%", 100.0 * secs / total);
    }
    println!("{:<44} {total:>8.3}", "sum");
    println!();
    let rows = t.rows as f64;
    let f = &t.functions;
    let written = f.indexer.meters.bytes_put + f.merger.meters.bytes_put;
    let meta_bytes = f.indexer.meters.meta_bytes + f.merger.meters.meta_bytes + f.supervisor.meters.meta_bytes;
    println!(
        "peak memory above the process before: {:.0} MiB; {} tasks, {} hydrants, {} segments",
        t.peak_rss_bytes as f64 / (1 << 20) as f64,
        t.tasks,
        t.hydrants,
        t.segments
    );
    println!(
        "bytes written per row: {:.1} to the object store (hydrants + segments), {:.1} to metadata; segments hold {:.1} bytes/row",
        written as f64 / rows,
        meta_bytes as f64 / rows,
        t.segment_bytes as f64 / rows
    );
    println!();
    println!(
        "{:<12} {:>6} {:>9} {:>10} {:>10} {:>8} {:>8}",
        "function", "calls", "secs", "read RU", "write RU", "S3 PUT", "S3 GET"
    );
    for (name, u) in [("supervisor", &f.supervisor), ("indexer", &f.indexer), ("merger", &f.merger)] {
        println!(
            "{name:<12} {:>6} {:>9.3} {:>10.0} {:>10.0} {:>8} {:>8}",
            u.invocations, u.secs, u.meters.read_units, u.meters.write_units, u.meters.s3_puts, u.meters.s3_gets
        );
    }
    println!();
    steady::print(args, &r.steady);
}
