//! The `sluice` command.

mod bench;
mod ingest;

use clap::{Parser, Subcommand};

/// mimalloc: the engine allocates and frees many small strings per row, where it is several
/// times faster than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Serverless, exactly-once Kafka ingestion into Druid-style segments.
#[derive(Parser)]
#[command(name = "sluice", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Builds segments from local files with a Druid spec (the segment engine, no Kafka).
    Ingest(ingest::IngestArgs),
    /// Measures the engine and prints its figures.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Bench(b) => bench::run(b),
        Command::Ingest(a) => ingest::run(a),
    }
}
