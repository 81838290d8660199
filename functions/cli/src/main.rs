//! The `sluice` command.

mod autoscaler;
mod backends;
mod bench;
mod compact;
mod compaction;
mod demo;
mod ingest;
mod input;
mod lookups;
mod query;
mod retention;
mod run;
mod segments;
mod serve;
mod sql;
mod supervisor;
mod task;
mod timeline;
mod workers;

use clap::{Parser, Subcommand};
use sluice_pipeline::schemas::{set_descriptor_dir, DescriptorDir, DESCRIPTOR_DIR_ENV};

/// mimalloc: the engine allocates and frees many small strings per row, where it is several
/// times faster than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Serverless, exactly-once Kafka ingestion into Druid-style segments.
#[derive(Parser)]
#[command(name = "sluice", version, about)]
struct Cli {
    #[command(flatten)]
    backends: backends::BackendArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Builds segments from local files with a Druid spec (the segment engine, no Kafka).
    Ingest(ingest::IngestArgs),
    /// Druid's supervisor operations: submit, status, suspend, resume, reset, terminate.
    #[command(subcommand)]
    Supervisor(supervisor::SupervisorCommand),
    /// Druid's batch tasks (`index_parallel`): submit (and run here), status.
    #[command(subcommand)]
    Task(task::TaskCommand),
    /// Druid's automatic compaction configuration: submit, status, remove.
    #[command(subcommand)]
    Compaction(compaction::CompactionCommand),
    /// One compaction pass: retention rules and compaction configurations applied until
    /// nothing is left to drop or compact.
    Compact(compact::CompactArgs),
    /// Druid's retention rules: set, show.
    #[command(subcommand)]
    Retention(retention::RetentionCommand),
    /// Druid's lookups (query-time maps for LOOKUP(), joins and lookup dimensions): put, show,
    /// delete.
    #[command(subcommand)]
    Lookups(lookups::LookupsCommand),
    /// The local pipeline: supervisor passes with indexers and mergers in this process.
    Run(run::RunArgs),
    /// The visible segments of a datasource.
    Segments(segments::SegmentsArgs),
    /// A datasource's timeline head: show it, or make it initializing again after records
    /// were written by hand.
    #[command(subcommand)]
    Timeline(timeline::TimelineCommand),
    /// Runs a Druid native query (a file, or - for standard input) and prints the JSON result.
    Query(query::QueryArgs),
    /// Answers Druid SQL (the text, or - for standard input) and prints a table or a result format.
    Sql(sql::SqlArgs),
    /// Serves Druid's HTTP API (POST /druid/v2, /druid/indexer/v1/supervisor) on the backends.
    Serve(serve::ServeArgs),
    /// Streams Druid's Wikipedia sample through an in-process Kafka into segments and queries
    /// them; everything lives under ./.sluice/demo and a new run starts clean.
    Demo(demo::DemoArgs),
    /// Measures the engine and prints its figures.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Serves as a query worker under the Lambda Runtime API (`AWS_LAMBDA_RUNTIME_API`): the
    /// worker processes of `--workers N`.
    #[command(hide = true)]
    QueryWorker,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("SLUICE_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let descriptors = std::env::var(DESCRIPTOR_DIR_ENV).ok();
    let descriptors = DescriptorDir::from_setting(descriptors.as_deref()).map_err(anyhow::Error::msg)?;
    set_descriptor_dir(descriptors).map_err(anyhow::Error::msg)?;
    let runtime = || tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
    match cli.command {
        Command::Bench(b) => bench::run(b, &cli.backends),
        Command::Ingest(a) => ingest::run(a),
        Command::Supervisor(c) => runtime()?.block_on(supervisor::run(c, &cli.backends)),
        Command::Task(c) => runtime()?.block_on(task::run(c, &cli.backends)),
        Command::Compaction(c) => runtime()?.block_on(compaction::run(c, &cli.backends)),
        Command::Compact(a) => runtime()?.block_on(compact::run(a, &cli.backends)),
        Command::Retention(c) => runtime()?.block_on(retention::run(c, &cli.backends)),
        Command::Lookups(c) => runtime()?.block_on(lookups::run(c, &cli.backends)),
        Command::Run(a) => runtime()?.block_on(run::run(a, &cli.backends)),
        Command::Segments(a) => runtime()?.block_on(segments::run(a, &cli.backends)),
        Command::Timeline(c) => runtime()?.block_on(timeline::run(c, &cli.backends)),
        Command::Query(a) => runtime()?.block_on(query::run(a, &cli.backends)),
        Command::Sql(a) => runtime()?.block_on(sql::run(a, &cli.backends)),
        Command::Serve(a) => runtime()?.block_on(serve::run(a, &cli.backends)),
        Command::Demo(a) => runtime()?.block_on(demo::run(a)),
        Command::QueryWorker => {
            runtime()?.block_on(sluice_broker::runtime::serve()).map_err(|e| anyhow::anyhow!("query worker: {e}"))
        }
    }
}
