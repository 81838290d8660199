//! The `sluice` command.

mod bench;

use clap::{Parser, Subcommand};

/// Serverless, exactly-once Kafka ingestion into Druid-style segments.
#[derive(Parser)]
#[command(name = "sluice", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measures the engine and prints its figures.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Bench(b) => bench::run(b),
    }
}
