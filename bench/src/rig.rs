//! The rig of `bench pipeline`: a mock cluster, metered embedded stores and a submitted
//! datasource, with the supervisor passes and jobs the phases drive.

use super::billing::Billing;
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, ThreadedProducer};
use sluice_format::time::{now_ms, Period};
use sluice_pipeline::datasource::submit;
use sluice_pipeline::invoker::{Job, QueueInvoker};
use sluice_pipeline::runner::{run_job, JobOutcome};
use sluice_pipeline::supervisor::{run_pass, DatasourcePass, SupervisorOptions};
use sluice_report::Functions;
use sluice_report::Meters;
use sluice_store::metadata::{open_metadata, MetadataStore, MeteredMeta};
use sluice_store::storage::{open_store, MeteredStore, ObjectStore};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

const TOPIC: &str = "wikipedia";

/// Creates a topic of `partitions` named after the time on the broker at `bootstrap`.
async fn create_topic(bootstrap: &str, partitions: i32) -> Result<String> {
    let topic = format!("wikipedia-{}", now_ms());
    let admin: AdminClient<DefaultClientContext> =
        ClientConfig::new().set("bootstrap.servers", bootstrap).create().context("admin client")?;
    let created = admin
        .create_topics(&[NewTopic::new(&topic, partitions, TopicReplication::Fixed(1))], &AdminOptions::new())
        .await
        .context("create the topic")?;
    for result in created {
        result.map_err(|(name, e)| anyhow!("create topic {name}: {e}"))?;
    }
    Ok(topic)
}
pub(super) const TASK_BUDGET: Duration = Duration::from_secs(900);

/// Options of `bench pipeline`.
#[derive(Args, Clone)]
pub struct PipelineArgs {
    /// Records of the throughput phase (and of the indexer-only pass).
    #[arg(long, default_value_t = 400_000)]
    pub rows: usize,
    /// Partitions of the topic.
    #[arg(long, default_value_t = 4)]
    pub partitions: i32,
    /// The datasource's `taskCount`: partition groups, each planned and indexed by its own
    /// tasks (the cost model fits the supervisor's pass per partition and per group).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub task_count: u32,
    /// The datasource's `tuningConfig.maxRowsInMemory` (default Druid's 150,000): a smaller one
    /// makes each task persist several hydrants, spilled and merged before its checkpoint.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_rows_in_memory: Option<u64>,
    /// The datasource's `tuningConfig.maxTotalRows` (default 20,000,000): a smaller one makes
    /// each task checkpoint every about this many rows, and each merger merge the hydrants.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_total_rows: Option<u64>,
    /// The datasource's `tuningConfig.maxRowsPerSegment` (default 5,000,000): with
    /// `--max-total-rows` a quarter of it or more, the merger publishes each checkpoint's
    /// hydrant as its own segment instead of merging them.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_rows_per_segment: Option<u64>,
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
    /// Runs the steady phase with real-time tasks (`sluiceConfig.realtime`, checkpoints every
    /// `--checkpoint-ms`): jobs run concurrently and freshness is measured to each record's
    /// checkpoint.
    #[arg(long)]
    pub realtime: bool,
    /// With `--realtime`: `sluiceConfig.realtime.checkpointPeriod`, milliseconds.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub checkpoint_ms: u64,
    /// With `--realtime`: runs only the steady phase, this many times, each on a fresh rig and
    /// topic with the supervisor's first pass before the topic's first record (leads spread
    /// evenly over the period, as a schedule that does not wait for the producer meets a new
    /// stream), and reports each run's freshness and the worst run.
    #[arg(long, requires = "realtime", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: Option<u32>,
    /// With `--realtime`: every running job is dropped this many seconds into the steady
    /// phase, as a crash of every indexer would, and the time until an attempt started after
    /// it checkpoints is reported.
    #[arg(long)]
    pub kill_at_secs: Option<u64>,
    /// Runs the steady phase against this Kafka broker (a new topic on it; for example tansu
    /// from `localstack/up.sh`) instead of the mock cluster.
    #[arg(long)]
    pub broker: Option<String>,
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

/// A mock cluster, metered embedded stores and a submitted datasource.
pub(super) struct Rig {
    /// The mock cluster, unless the rig runs on a broker given to it.
    _cluster: Option<MockCluster<'static, DefaultProducerContext>>,
    /// The broker's bootstrap servers.
    pub bootstrap: String,
    /// The topic.
    pub topic: String,
    pub producer: ThreadedProducer<DefaultProducerContext>,
    pub meta: Arc<dyn MetadataStore>,
    /// The same metadata, not metered: for a benchmark's own watching.
    pub unmetered_meta: Arc<dyn MetadataStore>,
    pub store: Arc<dyn ObjectStore>,
    pub meters: Arc<Billing>,
    pub datasource: String,
    pub partitions: i32,
    pub queue: Arc<QueueInvoker>,
    _dir: tempfile::TempDir,
}

/// What a rig's datasource sets beside the tutorial spec.
#[derive(Debug, Clone, Copy)]
pub(super) struct RigTuning {
    /// `ioConfig.taskCount`.
    pub task_count: u32,
    /// `tuningConfig.maxRowsInMemory`, when set.
    pub max_rows_in_memory: Option<u64>,
    /// `tuningConfig.maxTotalRows`, when set.
    pub max_total_rows: Option<u64>,
    /// `tuningConfig.maxRowsPerSegment`, when set.
    pub max_rows_per_segment: Option<u64>,
}

impl RigTuning {
    /// The tuning `args` ask for.
    pub(super) fn of(args: &PipelineArgs) -> Self {
        Self {
            task_count: args.task_count,
            max_rows_in_memory: args.max_rows_in_memory,
            max_total_rows: args.max_total_rows,
            max_rows_per_segment: args.max_rows_per_segment,
        }
    }
}

impl Rig {
    /// A rig whose datasource is tuned as `tuning` says, and runs real-time tasks
    /// checkpointing every `realtime` ms when given, on `broker` (a new topic there) or on a
    /// mock cluster of its own.
    pub(super) async fn start_with(
        partitions: i32,
        tuning: RigTuning,
        datasource: &str,
        realtime: Option<u64>,
        broker: Option<&str>,
    ) -> Result<Self> {
        let (cluster, bootstrap, topic) = match broker {
            Some(bootstrap) => (None, bootstrap.to_string(), create_topic(bootstrap, partitions).await?),
            None => {
                let cluster = MockCluster::new(1).context("mock cluster")?;
                cluster.create_topic(TOPIC, partitions, 1).context("create the topic")?;
                let bootstrap = cluster.bootstrap_servers();
                (Some(cluster), bootstrap, TOPIC.to_string())
            }
        };
        let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .set("compression.type", "lz4")
            .set("linger.ms", "5")
            .set("batch.size", "1000000")
            .set("queue.buffering.max.messages", "1000000")
            .create()
            .context("producer")?;
        let dir = tempfile::tempdir()?;
        let meters = Arc::new(Billing::default());
        let meta: Arc<dyn MetadataStore> = Arc::new(MeteredMeta::new(
            open_metadata(&format!("file://{}/meta", dir.path().display())).await?,
            meters.clone(),
        ));
        let unmetered_meta = open_metadata(&format!("file://{}/meta", dir.path().display())).await?;
        let store: Arc<dyn ObjectStore> = Arc::new(MeteredStore::new(
            open_store(&format!("file://{}/store", dir.path().display())).await?,
            meters.clone(),
        ));
        let mut spec: serde_json::Value = serde_json::from_str(super::TUTORIAL_SPEC)?;
        spec["dataSchema"]["dataSource"] = datasource.into();
        spec["ioConfig"]["topic"] = topic.clone().into();
        spec["ioConfig"]["consumerProperties"]["bootstrap.servers"] = bootstrap.clone().into();
        spec["ioConfig"]["useEarliestOffset"] = true.into();
        spec["ioConfig"]["taskCount"] = tuning.task_count.into();
        if let Some(rows) = tuning.max_rows_in_memory {
            spec["tuningConfig"]["maxRowsInMemory"] = rows.into();
        }
        if let Some(rows) = tuning.max_total_rows {
            spec["tuningConfig"]["maxTotalRows"] = rows.into();
        }
        if let Some(rows) = tuning.max_rows_per_segment {
            spec["tuningConfig"]["maxRowsPerSegment"] = rows.into();
        }
        if let Some(ms) = realtime {
            let period = Period { months: 0, millis: ms as i64 }.to_string();
            spec["sluiceConfig"] = serde_json::json!({"realtime": {"checkpointPeriod": period}});
        }
        let (datasource, _, _) = submit(meta.as_ref(), spec, now_ms()).await?;
        Ok(Self {
            _cluster: cluster,
            bootstrap,
            topic,
            producer,
            meta,
            unmetered_meta,
            store,
            meters,
            datasource,
            partitions,
            queue: Arc::default(),
            _dir: dir,
        })
    }

    /// Sends `records` round-robin over the partitions, starting at partition `first`.
    pub fn send(&self, records: &[Vec<u8>], first: usize) -> Result<()> {
        for (i, value) in records.iter().enumerate() {
            let p = ((first + i) % self.partitions as usize) as i32;
            self.producer
                .send(BaseRecord::<(), _>::to(&self.topic).partition(p).payload(value))
                .map_err(|(e, _)| anyhow!("produce: {e}"))?;
        }
        Ok(())
    }

    /// One supervisor pass, metered into `functions`.
    pub async fn pass(&self, functions: &mut Functions) -> Result<DatasourcePass> {
        let (before, started) = (self.meters.read(), Instant::now());
        let options = SupervisorOptions::at(now_ms());
        let passes =
            run_pass(self.meta.as_ref(), self.store.as_ref(), self.queue.as_ref(), &options, Some(&self.datasource))
                .await?;
        let f = &mut functions.supervisor;
        f.invocations += 1;
        f.secs += started.elapsed().as_secs_f64();
        f.meters.add(&self.meters.read().since(&before));
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
            let (before, started) = (self.meters.read(), Instant::now());
            let outcome =
                run_job(self.meta.as_ref(), self.store.as_ref(), self.queue.as_ref(), &job, TASK_BUDGET).await;
            let (took, used) = (started.elapsed(), self.meters.read().since(&before));
            let f = if job.for_indexer() { &mut functions.indexer } else { &mut functions.merger };
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
}
