//! `sluice compaction ...`: Druid's automatic compaction configuration API as commands on the
//! configured backends.

use crate::backends::BackendArgs;
use anyhow::{bail, Context, Result};
use clap::Subcommand;
use sluice_pipeline::compaction;
use std::io::Read;
use std::path::PathBuf;

/// What a stored configuration does in this release: it is checked and kept, nothing applies
/// it yet.
pub const NOT_APPLIED: &str =
    "compaction runs are not built yet: the configuration is checked and stored, and no segment is compacted";

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
            let text = if config.as_os_str() == "-" {
                let mut text = String::new();
                std::io::stdin().read_to_string(&mut text).context("read standard input")?;
                text
            } else {
                std::fs::read_to_string(&config).with_context(|| format!("read {}", config.display()))?
            };
            let json: serde_json::Value =
                serde_json::from_str(&text).with_context(|| format!("{} is not JSON", config.display()))?;
            let loaded = compaction::submit(meta, json).await?;
            for w in &loaded.warnings {
                eprintln!("warning: {w}");
            }
            eprintln!("warning: {NOT_APPLIED}");
            println!("{}: compaction config stored", loaded.config.data_source);
        }
        CompactionCommand::Status { datasource: Some(name) } => match compaction::get(meta, &name).await? {
            Some(c) => println!("{}", serde_json::to_string_pretty(&c.json)?),
            None => bail!("datasource {name:?} has no compaction config"),
        },
        CompactionCommand::Status { datasource: None } => {
            let configs: Vec<serde_json::Value> = compaction::list(meta).await?.into_iter().map(|c| c.json).collect();
            println!("{}", serde_json::to_string_pretty(&serde_json::json!({"compactionConfigs": configs}))?);
        }
        CompactionCommand::Remove { datasource } => {
            if !compaction::remove(meta, &datasource).await? {
                bail!("datasource {datasource:?} has no compaction config");
            }
            println!("{datasource}: compaction config removed");
        }
    }
    Ok(())
}
