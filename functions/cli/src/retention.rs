//! `sluice retention ...`: Druid's retention rules as commands on the configured backends; rules
//! are printed as the API shows them, any field named as a secret redacted.

use crate::backends::BackendArgs;
use crate::input::read_json;
use anyhow::Result;
use clap::Subcommand;
use sluice_format::spec::redacted_spec;
use sluice_pipeline::coordinator;
use std::path::PathBuf;

/// Retention rule operations.
#[derive(Subcommand)]
pub enum RetentionCommand {
    /// Sets (replaces) a datasource's rules: Druid's rules JSON array, a file or - for
    /// standard input.
    Set {
        /// The datasource.
        datasource: String,
        /// The rules (JSON).
        rules: PathBuf,
    },
    /// Prints a datasource's rules, or every datasource's, as Druid's API returns them.
    Show {
        /// The datasource (all when absent).
        datasource: Option<String>,
    },
}

/// Runs a retention command.
pub async fn run(command: RetentionCommand, backends: &BackendArgs) -> Result<()> {
    let b = backends.open().await?;
    let meta = b.meta.as_ref();
    match command {
        RetentionCommand::Set { datasource, rules } => {
            let loaded = coordinator::rules::set(meta, &datasource, read_json(&rules)?).await?;
            for w in &loaded.warnings {
                eprintln!("warning: {w}");
            }
            println!("{datasource}: {} retention rules stored", loaded.rules.len());
        }
        RetentionCommand::Show { datasource: Some(name) } => {
            let rules =
                coordinator::rules::get(meta, &name).await?.map_or(serde_json::json!([]), |r| redacted_spec(&r.json));
            println!("{}", serde_json::to_string_pretty(&rules)?);
        }
        RetentionCommand::Show { datasource: None } => {
            let all: serde_json::Map<String, serde_json::Value> = coordinator::rules::list(meta)
                .await?
                .into_iter()
                .map(|(name, r)| (name, redacted_spec(&r.json)))
                .collect();
            println!("{}", serde_json::to_string_pretty(&all)?);
        }
    }
    Ok(())
}
