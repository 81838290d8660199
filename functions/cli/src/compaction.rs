//! `sluice compaction ...`: Druid's automatic compaction configuration API as commands on the
//! configured backends; a configuration is printed with its secrets redacted, as the API shows it.

use crate::backends::BackendArgs;
use crate::input::read_json;
use anyhow::{bail, Result};
use clap::Subcommand;
use sluice_format::spec::redacted_spec;
use sluice_pipeline::coordinator;
use std::path::PathBuf;

/// Compaction configuration operations.
#[derive(Subcommand)]
pub enum CompactionCommand {
    /// Submits (creates or replaces) a datasource's compaction configuration: Druid's
    /// `DataSourceCompactionConfig` JSON, a file or - for standard input.
    Submit {
        /// The configuration (JSON).
        config: PathBuf,
    },
    /// Prints the configuration of a datasource, or every one, as Druid's API returns them.
    Status {
        /// The datasource (all when absent).
        datasource: Option<String>,
    },
    /// The time chunks a compaction run would compact now, and those compacted or too recent.
    Plan {
        /// The datasource.
        datasource: String,
    },
    /// Removes a datasource's compaction configuration.
    Remove {
        /// The datasource.
        datasource: String,
    },
}

/// Runs a compaction command.
pub async fn run(command: CompactionCommand, backends: &BackendArgs) -> Result<()> {
    let b = backends.open().await?;
    let meta = b.meta.as_ref();
    match command {
        CompactionCommand::Submit { config } => {
            let loaded = coordinator::config::submit(meta, read_json(&config)?).await?;
            for w in &loaded.warnings {
                eprintln!("warning: {w}");
            }
            println!("{}: compaction config stored", loaded.config.data_source);
        }
        CompactionCommand::Status { datasource: Some(name) } => match coordinator::config::get(meta, &name).await? {
            Some(c) => println!("{}", serde_json::to_string_pretty(&redacted_spec(&c.json))?),
            None => bail!("datasource {name:?} has no compaction config"),
        },
        CompactionCommand::Status { datasource: None } => {
            let configs: Vec<serde_json::Value> =
                coordinator::config::list(meta).await?.iter().map(|c| redacted_spec(&c.json)).collect();
            println!("{}", serde_json::to_string_pretty(&serde_json::json!({"compactionConfigs": configs}))?);
        }
        CompactionCommand::Plan { datasource } => {
            let Some(config) = coordinator::config::get(meta, &datasource).await? else {
                bail!("datasource {datasource:?} has no compaction config");
            };
            let plan = coordinator::plan::plan_now(meta, &config).await?;
            println!("{:<50} {:>9} {:>12} {:>8} {:>10}", "chunk", "segments", "rows", "target", "state");
            let states = [("awaiting", &plan.awaiting), ("compacted", &plan.compacted), ("skipped", &plan.skipped)];
            let mut rows: Vec<(&str, &coordinator::plan::ChunkState)> =
                states.iter().flat_map(|(name, chunks)| chunks.iter().map(move |c| (*name, c))).collect();
            rows.sort_by_key(|(_, c)| c.interval);
            for (state, c) in rows {
                println!(
                    "{:<50} {:>9} {:>12} {:>8} {:>10}",
                    c.interval.to_string(),
                    c.segments,
                    c.rows,
                    c.target_segments,
                    state
                );
            }
        }
        CompactionCommand::Remove { datasource } => {
            if !coordinator::config::remove(meta, &datasource).await? {
                bail!("datasource {datasource:?} has no compaction config");
            }
            println!("{datasource}: compaction config removed");
        }
    }
    Ok(())
}
