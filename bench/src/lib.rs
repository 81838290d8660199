//! Sluice's benchmarks, run by `sluice bench`: the figures of `docs/benchmarks.md`, measured on
//! Druid's Wikipedia sample repeated with shifted times (dictionaries keep the sample's
//! realistic sizes). The command parses the arguments ([`BenchCommand`]) and hands over what
//! only it has ([`Host`]: the stores it was given, and query workers as processes of its
//! binary); everything else is here.

mod avro_rows;
mod batch;
mod billing;
mod catalog;
mod cost;
mod cost_bill;
mod cost_figures;
mod cost_hydrants;
mod cost_plot;
mod cost_realtime;
mod cost_supervisor;
mod fanout;
mod fragments;
mod freshness_runs;
mod indexer;
mod pipeline;
mod prices;
mod process;
mod protobuf_rows;
mod publish;
mod query;
mod query_sql;
mod read_bytes;
mod realtime_steady;
mod rig;
mod segment;
mod spike;
mod steady;
mod throughput;

use anyhow::{anyhow, Context, Result};
use clap::Subcommand;
use sluice_broker::FanOut;
use sluice_store::metadata::MetadataStore;
use sluice_store::storage::ObjectStore;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use cost::CostArgs;
pub use indexer::IndexerArgs;
pub use query::QueryArgs;
pub use rig::PipelineArgs;
pub use segment::SegmentArgs;

pub(crate) const TUTORIAL_SPEC: &str = include_str!("../../data/specs/wikipedia-kafka-supervisor.json");
const DAY_MS: i64 = 86_400_000;
/// Each copy of the sample is shifted by this much, wrapped within its day.
const SHIFT_MS: i64 = 37 * 60_000;

/// Benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Parse, index, persist and merge rates and segment size, single-threaded.
    Segment(SegmentArgs),
    /// The indexing task from Kafka (the in-process mock cluster) to hydrants on local files,
    /// beside the raw consume rate of the same records, and its peak memory.
    Indexer(IndexerArgs),
    /// The whole pipeline in this process (supervisor, indexers, mergers, publish) on the
    /// embedded backends: end-to-end rate beside the indexer-only rate, time per stage, peak
    /// memory, bytes per row, freshness and lag under steady production.
    Pipeline(PipelineArgs),
    /// The monthly AWS cost at 1k to 1M rows/s from `bench pipeline` reports, ingestion per
    /// mode beside Druid's Kafka tasks, then the whole bill (ingestion, compaction, storage and
    /// a query load) beside Druid's smallest production cluster (Markdown).
    Cost(CostArgs),
    /// Druid queries over the published segment format, single-threaded, beside DuckDB over
    /// Parquet and chdb over MergeTree.
    Query(QueryArgs),
    /// The query benchmark's queries over one day as a stream leaves it (a segment a minute)
    /// and as compaction leaves it, in one run: what compaction buys queries.
    Fragments(fragments::FragmentsArgs),
    /// The query benchmark's queries over segments in deep storage, by one function and fanned
    /// out to 1, 2 and 4 query-worker processes (`bench/fanout.sh` runs it on moto).
    Fanout(fanout::FanoutArgs),
    /// A burst of 10 times the rate on a real broker with the lag-based autoscaler, scaled
    /// down from `sluice-sim spike`: lag, taskCount changes, every record once.
    Spike(spike::SpikeArgs),
    /// Druid's Wikipedia sample as a batch task (`index_parallel`) on the embedded backends:
    /// splits indexed concurrently, published once; rows/s and time per stage.
    Batch(batch::BatchArgs),
    /// One query over one hour as a datasource's history grows (100 to 1,000,000 segment
    /// records): latency, metadata requests, items and read units, cold, warm and after a
    /// publish.
    Catalog(catalog::CatalogArgs),
}

/// The stores a benchmark works on.
pub struct Stores {
    /// Metadata store.
    pub meta: Arc<dyn MetadataStore>,
    /// Deep storage.
    pub store: Arc<dyn ObjectStore>,
    /// Deep storage's URL, as query workers open it.
    pub storage_url: String,
}

/// What the command running a benchmark provides.
#[async_trait::async_trait]
pub trait Host: Sync {
    /// Opens the stores the command was given (`--metadata`, `--storage`).
    async fn stores(&self) -> Result<Stores>;
    /// Starts `n` query workers of `threads` threads each on `storage`, their caches and logs
    /// under `dir`, without partial caches.
    async fn start_workers(&self, n: u16, threads: usize, storage: &str, dir: &Path) -> Result<FanOut>;
}

/// Runs a benchmark command.
pub fn run(command: BenchCommand, host: &dyn Host) -> Result<()> {
    match command {
        BenchCommand::Segment(args) => segment::run(args),
        BenchCommand::Indexer(args) => indexer::run(args),
        BenchCommand::Pipeline(args) => match args.runs {
            Some(runs) => freshness_runs::run(&args, runs),
            None => pipeline::run(args),
        },
        BenchCommand::Cost(args) => cost::run(&args)
            .and_then(|()| cost_realtime::run(&args))
            .and_then(|()| cost_bill::run(&args))
            .and_then(|()| cost_plot::run(&args)),
        BenchCommand::Query(args) => query::run(args),
        BenchCommand::Fragments(args) => fragments::run(args),
        BenchCommand::Fanout(args) => fanout::run(args, host),
        BenchCommand::Spike(args) => spike::run(args),
        BenchCommand::Batch(args) => batch::run(args),
        BenchCommand::Catalog(args) => catalog::run(args),
    }
}

fn default_sample() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../data/wikiticker-2015-09-12-sampled.json.gz"))
}

/// Druid's Wikipedia sample, parsed once.
pub struct Sample {
    lines: Vec<serde_json::Value>,
}

impl Sample {
    /// Loads the sample (newline-delimited JSON, gzipped).
    pub fn load(path: &std::path::Path) -> Result<Self> {
        let file = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
        let lines: Vec<serde_json::Value> = std::io::BufReader::new(flate2::read::GzDecoder::new(file))
            .lines()
            .map(|l| Ok(serde_json::from_str(&l?)?))
            .collect::<Result<_>>()?;
        if lines.is_empty() {
            return Err(anyhow!("{} holds no record", path.display()));
        }
        Ok(Self { lines })
    }

    /// Records `first..first + n` of the sample repeated: copy `k` is shifted by
    /// `k * SHIFT_MS` within its day, so that every row stays in its original time chunk.
    pub fn records(&self, first: usize, n: usize) -> Result<Vec<Vec<u8>>> {
        self.shifted(first, n, None)
    }

    /// As [`Sample::records`], with every record moved into the sample's main day (its 12
    /// records of other days too), as a stream whose tasks each cover one daily chunk.
    pub fn records_in_one_day(&self, first: usize, n: usize) -> Result<Vec<Vec<u8>>> {
        let last = self.lines.last().and_then(|v| v["time"].as_str()).ok_or_else(|| anyhow!("row without time"))?;
        let day = sluice_format::time::parse_iso_instant(last)?.div_euclid(DAY_MS) * DAY_MS;
        self.shifted(first, n, Some(day))
    }

    fn shifted(&self, first: usize, n: usize, one_day: Option<i64>) -> Result<Vec<Vec<u8>>> {
        (first..first + n)
            .map(|i| {
                let copy = (i / self.lines.len()) as i64;
                let mut v = self.lines[i % self.lines.len()].clone();
                let t = sluice_format::time::parse_iso_instant(
                    v["time"].as_str().ok_or_else(|| anyhow!("row without time"))?,
                )?;
                let day = one_day.unwrap_or(t.div_euclid(DAY_MS) * DAY_MS);
                let time_of_day = t.rem_euclid(DAY_MS);
                v["time"] =
                    sluice_format::time::format_iso(day + (time_of_day + copy * SHIFT_MS).rem_euclid(DAY_MS)).into();
                Ok(serde_json::to_vec(&v)?)
            })
            .collect()
    }
}

/// The sample's records repeated to `rows` records.
pub fn wikipedia_records(sample: &std::path::Path, rows: usize) -> Result<Vec<Vec<u8>>> {
    Sample::load(sample)?.records(0, rows)
}

fn best<T>(repeat: usize, mut f: impl FnMut() -> Result<T>) -> Result<(Duration, T)> {
    let mut best: Option<(Duration, T)> = None;
    for _ in 0..repeat.max(1) {
        let start = Instant::now();
        let out = f()?;
        let took = start.elapsed();
        if best.as_ref().is_none_or(|(d, _)| took < *d) {
            best = Some((took, out));
        }
    }
    best.ok_or_else(|| anyhow!("no run"))
}
