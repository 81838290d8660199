//! `sluice bench indexer`: the indexing task end to end on one machine. Records of the
//! Wikipedia sample shape go into a topic of librdkafka's in-process mock cluster; each wave
//! of records is read twice: by an empty handler (the raw consume rate, the ceiling) and by
//! the indexing task (parse, index with rollup off, persist hydrants to local files,
//! checkpoint in the embedded metadata store). The mock cluster keeps only about 5 MB per
//! partition, so records are produced in waves that fit.
//!
//! Memory passes then run the task with `maxRowsInMemory` out of the way and
//! `maxBytesInMemory` set, and report the task's peak resident memory above the process's
//! resident memory before it started.

use super::{default_sample, process, Sample, TUTORIAL_SPEC};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use sluice_kafka::{ConsumerSettings, Flow, OffsetRange, RangeReader, ResetPolicy};
use sluice_pipeline::indexer::{run_task, MessageWindow, StageTimes, TaskOptions, TaskOutcome};
use sluice_pipeline::task::{TaskId, TaskItem};
use sluice_store::metadata::{open_metadata, Condition, Item, MetadataStore};
use sluice_store::storage::{open_store, ObjectStore};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const TOPIC: &str = "wikipedia";
const MIB: u64 = 1 << 20;

/// Options of `bench indexer`.
#[derive(Args)]
pub struct IndexerArgs {
    /// Records to produce and index.
    #[arg(long, default_value_t = 400_000)]
    rows: usize,
    /// Partitions of the topic.
    #[arg(long, default_value_t = 4)]
    partitions: i32,
    /// Records per partition per wave (the mock cluster keeps about 5 MB per partition).
    #[arg(long, default_value_t = 20_000)]
    wave: usize,
    /// maxBytesInMemory budgets (MiB) of the memory passes.
    #[arg(long, value_delimiter = ',', default_values_t = [16u64, 32, 64])]
    memory_budgets: Vec<u64>,
    /// Records of each memory pass (its tasks must be large enough to fill the budgets).
    #[arg(long, default_value_t = 640_000)]
    memory_rows: usize,
    /// Partitions of the memory passes' topic.
    #[arg(long, default_value_t = 16)]
    memory_partitions: i32,
    /// The Wikipedia sample (newline-delimited JSON, gzipped).
    #[arg(long)]
    sample: Option<PathBuf>,
    /// Runs only the memory pass of this budget (MiB) and prints it as JSON: the parent runs
    /// each memory pass in a fresh process, so memory freed by earlier passes hides nothing.
    #[arg(long, hide = true)]
    memory_pass: Option<u64>,
    /// Prints one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// Figures of one pass over every wave.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Pass {
    pub rows: u64,
    pub bytes: u64,
    pub raw_secs: f64,
    pub task_secs: f64,
    pub task_cpu_secs: f64,
    pub open_secs: f64,
    pub read_index_secs: f64,
    pub persist_secs: f64,
    pub upload_secs: f64,
    pub persist_wait_secs: f64,
    pub metadata_secs: f64,
    pub hydrants: u64,
    pub hydrant_bytes: u64,
    pub peak_task_rss: u64,
}

struct Bench {
    sample: Sample,
    cluster: MockCluster<'static, DefaultProducerContext>,
    producer: ThreadedProducer<DefaultProducerContext>,
    meta: std::sync::Arc<dyn MetadataStore>,
    store: std::sync::Arc<dyn ObjectStore>,
    settings: ConsumerSettings,
    partitions: i32,
    produced: usize,
    positions: Vec<i64>,
    seq: u64,
    /// Records moved into the sample's main day.
    one_day: bool,
    _dir: tempfile::TempDir,
}

/// Records produced between flushes.
const PRODUCE_BATCH: usize = 500_000;

/// Runs `bench indexer`.
pub fn run(args: IndexerArgs) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(bench(args))
}

async fn bench(args: IndexerArgs) -> Result<()> {
    let mut b = Bench::start(args.sample.as_deref(), args.partitions).await?;
    if let Some(budget) = args.memory_pass {
        let tuning = serde_json::json!({"maxRowsInMemory": 100_000_000u64, "maxBytesInMemory": budget * MIB});
        let pass = b.pass(args.rows, args.wave, tuning, false).await?;
        println!("{}", serde_json::to_string(&pass)?);
        return Ok(());
    }
    let speed = b.pass(args.rows, args.wave, serde_json::json!({}), true).await?;
    drop(b);
    let mut memory = Vec::new();
    for &budget in &args.memory_budgets {
        memory.push((budget, memory_pass(&args, budget)?));
    }
    print(&args, &speed, &memory)
}

/// The speed pass of `bench indexer` alone: `rows` records over `partitions` partitions, each
/// wave read raw and by the indexing task with the tutorial spec's defaults (rollup off);
/// records moved into one day as `bench pipeline` produces them.
pub(super) async fn speed_pass(sample: Option<&Path>, rows: usize, partitions: i32, wave: usize) -> Result<Pass> {
    let mut bench = Bench::start(sample, partitions).await?;
    bench.one_day = true;
    bench.pass(rows, wave, serde_json::json!({}), true).await
}

/// Runs the memory pass of `budget` MiB in a fresh process of this program.
fn memory_pass(args: &IndexerArgs, budget: u64) -> Result<Pass> {
    let mut command = std::process::Command::new(std::env::current_exe()?);
    command.args(["bench", "indexer", "--memory-pass", &budget.to_string()]);
    command.args(["--rows", &args.memory_rows.to_string(), "--partitions", &args.memory_partitions.to_string()]);
    command.args(["--wave", &args.wave.to_string()]);
    if let Some(sample) = &args.sample {
        command.arg("--sample").arg(sample);
    }
    let out = command.output().context("run a memory pass")?;
    if !out.status.success() {
        bail!("the memory pass of {budget} MiB failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    serde_json::from_slice(&out.stdout).context("the memory pass's output")
}

impl Bench {
    async fn start(sample: Option<&Path>, partitions: i32) -> Result<Self> {
        let sample = Sample::load(&sample.map_or_else(default_sample, Path::to_path_buf))?;
        let cluster = MockCluster::new(1).context("mock cluster")?;
        cluster.create_topic(TOPIC, partitions, 1).context("create the topic")?;
        let bootstrap = cluster.bootstrap_servers();
        let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .set("compression.type", "lz4")
            .set("linger.ms", "20")
            .set("batch.size", "1000000")
            .set("queue.buffering.max.messages", "1000000")
            .create()
            .context("producer")?;
        let dir = tempfile::tempdir()?;
        let meta = open_metadata(&format!("file://{}/meta", dir.path().display())).await?;
        let store = open_store(&format!("file://{}/store", dir.path().display())).await?;
        let settings = ConsumerSettings::new(&[("bootstrap.servers".to_string(), bootstrap.clone())].into())
            .map_err(anyhow::Error::msg)?;
        Ok(Bench {
            sample,
            cluster,
            producer,
            meta,
            store,
            settings,
            partitions,
            produced: 0,
            positions: vec![0; partitions as usize],
            seq: 0,
            one_day: false,
            _dir: dir,
        })
    }

    /// Produces and indexes `rows` records in waves of `wave` per partition; `raw` also reads
    /// each wave with an empty handler first.
    async fn pass(&mut self, rows: usize, wave: usize, tuning: serde_json::Value, raw: bool) -> Result<Pass> {
        let mut pass = Pass::default();
        let wave_rows = wave * self.partitions as usize;
        let mut left = rows;
        while left > 0 {
            let n = left.min(wave_rows);
            left -= n;
            let ranges = self.produce_wave(n)?;
            if raw {
                let (settings, ranges) = (self.settings.clone(), ranges.clone());
                // Timed like the task: open and read; the consumer's teardown is not waited for.
                let (bytes, secs, reader) = tokio::task::spawn_blocking(move || {
                    let started = Instant::now();
                    let mut reader = RangeReader::open(&settings, TOPIC, &ranges, ResetPolicy::default())?;
                    let mut bytes = 0u64;
                    reader.read(None, |r| {
                        bytes += r.payload.map_or(0, <[u8]>::len) as u64;
                        Ok(Flow::Continue)
                    })?;
                    Ok::<_, anyhow::Error>(((reader.delivered(), bytes), started.elapsed(), reader))
                })
                .await??;
                std::thread::spawn(move || drop(reader));
                pass.raw_secs += secs.as_secs_f64();
                if bytes.0 != n as u64 {
                    bail!("the raw read delivered {} of {n} records", bytes.0);
                }
                pass.bytes += bytes.1;
            }
            let id = self.plan(ranges, &tuning).await?;
            process::release_freed();
            let before_rss = process::rss();
            process::reset_peak();
            let (cpu, started) = (process::cpu_time(), Instant::now());
            let outcome = run_task(
                self.meta.as_ref(),
                self.store.as_ref(),
                &id,
                &TaskOptions::until(Instant::now() + Duration::from_secs(900)),
            )
            .await?;
            pass.task_secs += started.elapsed().as_secs_f64();
            pass.task_cpu_secs += (process::cpu_time() - cpu).as_secs_f64();
            pass.peak_task_rss = pass.peak_task_rss.max(process::peak_rss().saturating_sub(before_rss));
            let TaskOutcome::Complete(report) = outcome else { bail!("task {id} did not complete: {outcome:?}") };
            if report.meters.processed != n as u64 {
                bail!("task {id} processed {} of {n} records: {:?}", report.meters.processed, report.meters);
            }
            pass.rows += report.meters.processed;
            add_times(&mut pass, &report.times);
            pass.hydrants += report.hydrants.len() as u64;
            pass.hydrant_bytes += report.hydrants.iter().map(|h| h.num_bytes).sum::<u64>();
        }
        Ok(pass)
    }

    /// Produces `n` records round-robin over the partitions and returns the ranges they fill.
    fn produce_wave(&mut self, n: usize) -> Result<Vec<OffsetRange>> {
        let records = if self.one_day {
            self.sample.records_in_one_day(self.produced, n)?
        } else {
            self.sample.records(self.produced, n)?
        };
        for (i, value) in records.iter().enumerate() {
            let p = (i % self.partitions as usize) as i32;
            let record = BaseRecord::<(), _>::to(TOPIC).partition(p).payload(value);
            self.producer.send(record).map_err(|(e, _)| anyhow!("produce: {e}"))?;
            if i % PRODUCE_BATCH == PRODUCE_BATCH - 1 {
                // Within the producer's queue (1,000,000 messages), for waves larger than it.
                self.producer.flush(Duration::from_secs(60))?;
            }
        }
        self.producer.flush(Duration::from_secs(60))?;
        self.produced += n;
        let probe: BaseConsumer =
            ClientConfig::new().set("bootstrap.servers", self.cluster.bootstrap_servers()).create()?;
        let mut ranges = Vec::new();
        for p in 0..self.partitions {
            let (low, high) = probe.fetch_watermarks(TOPIC, p, Duration::from_secs(10))?;
            let start = self.positions[p as usize];
            if low > start {
                bail!("the mock cluster dropped offsets {start}..{low} of partition {p}: lower --wave");
            }
            ranges.push(OffsetRange { partition: p, start, end: high });
            self.positions[p as usize] = high;
        }
        Ok(ranges)
    }

    async fn plan(&mut self, ranges: Vec<OffsetRange>, tuning: &serde_json::Value) -> Result<TaskId> {
        let mut spec: serde_json::Value = serde_json::from_str(TUTORIAL_SPEC)?;
        if spec.get("spec").is_none() {
            // The older top-level form: move the sections under `spec`.
            let sections = spec.as_object_mut().ok_or_else(|| anyhow!("the tutorial spec is not an object"))?;
            let inner: serde_json::Map<String, serde_json::Value> = ["dataSchema", "ioConfig", "tuningConfig"]
                .iter()
                .filter_map(|k| Some((k.to_string(), sections.remove(*k)?)))
                .collect();
            spec["spec"] = inner.into();
        }
        spec["spec"]["ioConfig"]["topic"] = TOPIC.into();
        spec["spec"]["ioConfig"]["consumerProperties"]["bootstrap.servers"] = self.cluster.bootstrap_servers().into();
        spec["spec"]["dataSchema"]["granularitySpec"]["rollup"] = false.into();
        spec["spec"]["tuningConfig"] = serde_json::json!({"type": "kafka"});
        for (k, v) in tuning.as_object().into_iter().flatten() {
            spec["spec"]["tuningConfig"][k] = v.clone();
        }
        self.seq += 1;
        let id = TaskId { datasource: "wikipedia".into(), group: 0, seq: self.seq };
        let item = TaskItem::planned(id.clone(), spec, TOPIC, ranges, MessageWindow::default(), 0);
        self.meta.put(Item::new(id.pk(), id.sk(), serde_json::to_value(&item)?), Condition::Absent).await?;
        Ok(id)
    }
}

fn add_times(pass: &mut Pass, t: &StageTimes) {
    pass.open_secs += t.open.as_secs_f64();
    pass.read_index_secs += t.read_index.as_secs_f64();
    pass.persist_secs += t.persist.as_secs_f64();
    pass.upload_secs += t.upload.as_secs_f64();
    pass.persist_wait_secs += t.persist_wait.as_secs_f64();
    pass.metadata_secs += t.metadata.as_secs_f64();
}

fn print(args: &IndexerArgs, speed: &Pass, memory: &[(u64, Pass)]) -> Result<()> {
    let rate = speed.rows as f64 / speed.task_secs;
    let raw_rate = speed.rows as f64 / speed.raw_secs;
    let mb = |bytes: u64, secs: f64| bytes as f64 / 1e6 / secs;
    if args.json {
        let out = serde_json::json!({
            "source": "librdkafka mock cluster (in process)",
            "rows": speed.rows, "partitions": args.partitions, "rollup": false,
            "indexer_rows_per_sec": rate, "indexer_mb_per_sec": mb(speed.bytes, speed.task_secs),
            "raw_consume_rows_per_sec": raw_rate, "ratio": rate / raw_rate,
            "speed": speed,
            "memory": memory.iter().map(|(b, p)| serde_json::json!({"max_bytes_in_memory_mib": b, "pass": p})).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!(
        "source: librdkafka mock cluster in this process, {} partitions, waves of {} records",
        args.partitions,
        args.wave * args.partitions as usize
    );
    println!("{} rows ({:.1} MB of JSON), rollup off, one indexing thread", speed.rows, speed.bytes as f64 / 1e6);
    println!();
    println!("{:<34} {:>12} {:>10} {:>8}", "stage", "rows/s", "MB/s", "secs");
    println!(
        "{:<34} {:>12.0} {:>10.1} {:>8.2}",
        "raw consume (empty handler)",
        raw_rate,
        mb(speed.bytes, speed.raw_secs),
        speed.raw_secs
    );
    println!(
        "{:<34} {:>12.0} {:>10.1} {:>8.2}",
        "indexing task (Kafka -> hydrants)",
        rate,
        mb(speed.bytes, speed.task_secs),
        speed.task_secs
    );
    println!(
        "  of which consumer open {:.2} s, read+parse+index {:.2} s, metadata {:.2} s; persist {:.2} s and upload {:.2} s \
         beside reading but for the last, waiting for them after a read step {:.2} s",
        speed.open_secs,
        speed.read_index_secs,
        speed.metadata_secs,
        speed.persist_secs,
        speed.upload_secs,
        speed.persist_wait_secs
    );
    println!("indexing task / raw consume: {:.0}%", 100.0 * rate / raw_rate);
    println!(
        "process CPU during the task: {:.2} s for {:.2} s wall ({:.2} cores: librdkafka and the mock broker run their own threads)",
        speed.task_cpu_secs,
        speed.task_secs,
        speed.task_cpu_secs / speed.task_secs
    );
    println!(
        "hydrants: {} ({:.1} MB), peak task memory above the process before it: {:.0} MiB",
        speed.hydrants,
        speed.hydrant_bytes as f64 / 1e6,
        speed.peak_task_rss as f64 / MIB as f64
    );
    if !memory.is_empty() {
        println!();
        println!(
            "memory passes, each in a fresh process: {} rows over {} partitions, maxRowsInMemory out of the way",
            args.memory_rows, args.memory_partitions
        );
        println!(
            "{:<18} {:>9} {:>20} {:>12} {:>10} {:>22}",
            "maxBytesInMemory", "hydrants", "peak task memory", "over budget", "rows/s", "waiting for persists"
        );
        for (budget, p) in memory {
            let peak = p.peak_task_rss as f64 / MIB as f64;
            println!(
                "{:<18} {:>9} {:>16.0} MiB {:>8.0} MiB {:>10.0} {:>20.2} s",
                format!("{budget} MiB"),
                p.hydrants,
                peak,
                peak - *budget as f64,
                p.rows as f64 / p.task_secs,
                p.persist_wait_secs
            );
        }
    }
    Ok(())
}
