//! `sluice supervisor ...`: Druid's supervisor API as commands on the configured backends.

use crate::backends::BackendArgs;
use anyhow::{anyhow, bail, Context, Result};
use clap::Subcommand;
use sluice_format::time::now_ms;
use sluice_pipeline::datasource::{self, Submitted, SupervisorState};
use sluice_pipeline::supervisor::{reset, reset_offsets, status, RESET_WARNING};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Supervisor operations.
#[derive(Subcommand)]
pub enum SupervisorCommand {
    /// Submits (creates or replaces) a datasource's Druid Kafka supervisor spec.
    Submit {
        /// The spec (JSON).
        spec: PathBuf,
    },
    /// Offsets, lag, tasks by state, recent errors and row counters of a datasource.
    Status {
        /// The datasource.
        datasource: String,
        /// Prints JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Plans nothing new; planned tasks finish and publish.
    Suspend {
        /// The datasource.
        datasource: String,
    },
    /// Plans again after a suspend.
    Resume {
        /// The datasource.
        datasource: String,
    },
    /// Clears the committed offsets: the next pass starts where useEarliestOffset says.
    Reset {
        /// The datasource.
        datasource: String,
    },
    /// Sets the committed offsets of partitions: PARTITION=OFFSET ...
    ResetOffsets {
        /// The datasource.
        datasource: String,
        /// PARTITION=OFFSET pairs.
        #[arg(required = true)]
        offsets: Vec<String>,
    },
    /// Stops the datasource for good: nothing is planned or invoked.
    Terminate {
        /// The datasource.
        datasource: String,
    },
    /// What the lag-based autoscaler would decide now and why; with --lag, a dry run over
    /// those lags (one per lagCollectionIntervalMillis, the last now) instead of the samples kept.
    Autoscaler {
        /// The datasource.
        datasource: String,
        /// Total lag samples, oldest first (records behind over every partition).
        #[arg(long, value_delimiter = ',')]
        lag: Vec<u64>,
        /// Prints JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn parse_offsets(pairs: &[String]) -> Result<BTreeMap<i32, i64>> {
    pairs
        .iter()
        .map(|pair| {
            let (p, o) = pair.split_once('=').ok_or_else(|| anyhow!("{pair:?}: expected PARTITION=OFFSET"))?;
            Ok((
                p.trim().parse().with_context(|| format!("{pair:?}: partition"))?,
                o.trim().parse().with_context(|| format!("{pair:?}: offset"))?,
            ))
        })
        .collect()
}

/// Runs a supervisor command.
pub async fn run(command: SupervisorCommand, backends: &BackendArgs) -> Result<()> {
    let b = backends.open().await?;
    let meta = b.meta.as_ref();
    match command {
        SupervisorCommand::Submit { spec } => {
            let text = std::fs::read_to_string(&spec).with_context(|| format!("read {}", spec.display()))?;
            let json: serde_json::Value =
                serde_json::from_str(&text).with_context(|| format!("{} is not JSON", spec.display()))?;
            let (name, what, warnings) = datasource::submit(meta, json, now_ms()).await?;
            for w in warnings {
                eprintln!("warning: {w}");
            }
            match what {
                Submitted::Created => println!("{name}: created"),
                Submitted::Updated { schema_changed: true } => {
                    println!("{name}: updated; the schema changed and applies to tasks planned from now on")
                }
                Submitted::Updated { schema_changed: false } => println!("{name}: updated"),
            }
        }
        SupervisorCommand::Status { datasource, json } => {
            let st = status(meta, &datasource).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&st)?);
                return Ok(());
            }
            let idle = if st.idle { " (idle)" } else { "" };
            println!("{}: {:?}{idle}", st.datasource, st.state);
            // Real-time datasources also show how far records are queryable (checkpointed).
            let realtime = st.partitions.iter().any(|p| p.queryable.is_some());
            let extra = if realtime { format!(" {:>12}", "queryable") } else { String::new() };
            let width = st.partitions.iter().map(|p| p.topic.len()).max().unwrap_or(0).max(5);
            let header = ("topic", "partition", "committed", "high", "lag", "time lag");
            println!(
                "{:<width$} {:>9} {:>12} {:>12} {:>10} {:>10}{extra}",
                header.0, header.1, header.2, header.3, header.4, header.5
            );
            let show = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
            let seconds = |ms: Option<i64>| ms.map_or("-".to_string(), |ms| format!("{:.1} s", ms as f64 / 1000.0));
            for p in &st.partitions {
                let extra = if realtime { format!(" {:>12}", show(p.queryable)) } else { String::new() };
                println!(
                    "{:<width$} {:>9} {:>12} {:>12} {:>10} {:>10}{extra}",
                    p.topic,
                    p.partition,
                    show(p.committed),
                    show(p.high),
                    show(p.lag),
                    seconds(p.time_lag_ms)
                );
            }
            println!("tasks: {:?}", st.tasks);
            let t = &st.totals;
            println!(
                "rows: processed {}, processedWithError {}, unparseable {}, thrownAway {}",
                t.processed, t.processed_with_error, t.unparseable, t.thrown_away
            );
            for e in &st.recent_errors {
                println!("error: {e}");
            }
            if st.idle {
                println!(
                    "idle: no new record for idleConfig.inactiveAfterMillis; no task is invoked until one arrives"
                );
            }
            if let Some(a) = &st.autoscaler {
                crate::autoscaler::print(&st.datasource, a, false);
            }
        }
        SupervisorCommand::Autoscaler { datasource, lag, json } => {
            crate::autoscaler::run(meta, &datasource, &lag, json).await?
        }
        SupervisorCommand::Suspend { datasource } => set(meta, &datasource, SupervisorState::Suspended).await?,
        SupervisorCommand::Resume { datasource } => set(meta, &datasource, SupervisorState::Running).await?,
        SupervisorCommand::Terminate { datasource } => set(meta, &datasource, SupervisorState::Terminated).await?,
        SupervisorCommand::Reset { datasource } => {
            eprintln!("warning: {RESET_WARNING}");
            let abandoned = reset(meta, &datasource, now_ms()).await?;
            println!("{datasource}: offsets cleared, {abandoned} unpublished tasks abandoned");
        }
        SupervisorCommand::ResetOffsets { datasource, offsets } => {
            let offsets = parse_offsets(&offsets)?;
            if offsets.is_empty() {
                bail!("no PARTITION=OFFSET given");
            }
            eprintln!("warning: {RESET_WARNING}");
            let abandoned = reset_offsets(meta, &datasource, &offsets, now_ms()).await?;
            println!("{datasource}: offsets {offsets:?} set, {abandoned} unpublished tasks abandoned");
        }
    }
    Ok(())
}

async fn set(meta: &dyn sluice_store::metadata::MetadataStore, datasource: &str, state: SupervisorState) -> Result<()> {
    datasource::set_state(meta, datasource, state).await?;
    println!("{datasource}: {state:?}");
    Ok(())
}
