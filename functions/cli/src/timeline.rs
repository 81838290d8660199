//! `sluice timeline show|reset DATASOURCE`: a datasource's timeline head (its version, state, the
//! longest record it bounds and the last task published per group), and the head made
//! initializing again after records were written by hand (a retention drop undone).

use crate::backends::BackendArgs;
use anyhow::Result;
use clap::Subcommand;
use sluice_format::time::{format_iso, now_ms};
use sluice_metastore::timeline::head::{self, HeadRead};

/// Timeline operations.
#[derive(Subcommand)]
pub enum TimelineCommand {
    /// Prints the timeline head as JSON: version (0: none yet), state, since, longest, frontier.
    Show {
        /// The datasource.
        datasource: String,
    },
    /// Makes the head initializing again: queries read the whole timeline until the
    /// supervisor's pass makes it ready (every record read once), fifteen minutes later. For
    /// records copied back by hand (`docs/exactly-once.md`, "Undoing a retention drop").
    Reset {
        /// The datasource.
        datasource: String,
    },
}

/// Runs `sluice timeline`.
pub async fn run(command: TimelineCommand, backends: &BackendArgs) -> Result<()> {
    let b = backends.open().await?;
    let meta = b.meta.as_ref();
    match command {
        TimelineCommand::Show { datasource } => {
            let read = HeadRead::read(meta, &datasource).await?;
            let shown = serde_json::json!({"datasource": datasource, "version": read.version, "head": read.head});
            println!("{}", serde_json::to_string_pretty(&shown)?);
        }
        TimelineCommand::Reset { datasource } => {
            sluice_pipeline::datasource::load(meta, &datasource).await?;
            let now = now_ms();
            let version = head::reset(meta, &datasource, now).await?;
            println!(
                "{datasource}: timeline version {version}, initializing since {}: queries read the whole timeline until \
                 a supervisor pass makes it ready",
                format_iso(now)
            );
        }
    }
    Ok(())
}
