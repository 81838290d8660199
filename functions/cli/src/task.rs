//! `sluice task ...`: Druid's batch tasks (`index_parallel`) on the configured backends. A
//! task submitted here runs in this process (its splits, then its publish) unless `--detach`
//! leaves it to the supervisor's passes (`sluice run`, or the supervisor function); the files
//! a `local` input source names are allowed, as this command's user reads them anyway.

use crate::backends::BackendArgs;
use crate::input::read_json;
use anyhow::{bail, Result};
use clap::Subcommand;
use serde_json::{json, Value};
use sluice_format::time::now_ms;
use sluice_pipeline::batch::{self, allow_in_process, BatchState, BatchTaskItem};
use sluice_pipeline::invoker::QueueInvoker;
use sluice_pipeline::runner::drain;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a split or a publish may run in this process (a Lambda's 15 minutes).
const JOB_BUDGET: Duration = Duration::from_secs(900);

/// Batch task operations.
#[derive(Subcommand)]
pub enum TaskCommand {
    /// Submits a batch task: Druid's `index_parallel` spec JSON (a file, or - for standard
    /// input), into a datasource whose supervisor spec was submitted; runs it here until it
    /// publishes or fails.
    Submit {
        /// The spec (JSON).
        spec: PathBuf,
        /// Only submits: the supervisor's passes run it.
        #[arg(long)]
        detach: bool,
        /// Prints one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Prints a batch task's state and row counts (Druid's status and report, in short).
    Status {
        /// The task id.
        id: String,
        /// Prints one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a task command.
pub async fn run(command: TaskCommand, backends: &BackendArgs) -> Result<()> {
    let b = backends.open().await?;
    let (meta, store) = (b.meta.as_ref(), b.store.as_ref());
    match command {
        TaskCommand::Submit { spec, detach, json } => {
            let spec = read_json(&spec)?;
            allow_named_files(&spec);
            let submitted = batch::submit(meta, &batch::process_access(), spec, now_ms()).await?;
            for w in &submitted.warnings {
                eprintln!("warning: {w}");
            }
            let again = if submitted.existed { " (submitted before: the same task)" } else { "" };
            eprintln!("{}: {} splits into {}{again}", submitted.id, submitted.splits, submitted.datasource);
            if detach {
                return print(&load(meta, &submitted.id).await?, json, None);
            }
            let started = Instant::now();
            let queue = QueueInvoker::default();
            loop {
                let task = load(meta, &submitted.id).await?;
                if task.state != BatchState::Running {
                    print(&task, json, Some(started.elapsed()))?;
                    if task.state == BatchState::Failed {
                        bail!("batch task {} failed", task.id);
                    }
                    return Ok(());
                }
                batch::drive(meta, &queue, &task.datasource, now_ms()).await?;
                if queue.is_empty() {
                    // Splits held by another process: wait for them or their leases.
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                drain(meta, store, &queue, JOB_BUDGET, |_, _| {}).await;
            }
        }
        TaskCommand::Status { id, json } => print(&load(meta, &id).await?, json, None),
    }
}

async fn load(meta: &dyn sluice_store::metadata::MetadataStore, id: &str) -> Result<BatchTaskItem> {
    match batch::find(meta, id).await? {
        Some((task, _)) => Ok(task),
        None => bail!("no batch task {id:?}"),
    }
}

/// Allows this process the directories a `local` input source names (its `baseDir`, its files'
/// folders).
fn allow_named_files(spec: &Value) {
    let source = &spec["spec"]["ioConfig"]["inputSource"];
    if source["type"] != "local" {
        return;
    }
    if let Some(dir) = source["baseDir"].as_str() {
        allow_in_process(Some(Path::new(dir)), None);
    }
    for file in source["files"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        if let Some(dir) = Path::new(file).parent() {
            allow_in_process(Some(if dir.as_os_str().is_empty() { Path::new(".") } else { dir }), None);
        }
    }
}

fn print(task: &BatchTaskItem, as_json: bool, took: Option<Duration>) -> Result<()> {
    let m = task.meters.unwrap_or_default();
    if as_json {
        let out = json!({"task": task.id, "dataSource": task.datasource, "state": task.state, "splits": task.splits,
            "segments": task.segments, "replaced": task.replaced, "error": task.error,
            "rowStats": {"processed": m.processed, "processedWithError": m.processed_with_error,
                "unparseable": m.unparseable, "thrownAway": m.thrown_away},
            "seconds": took.map(|t| t.as_secs_f64())});
        println!("{out}");
        return Ok(());
    }
    let state = match task.state {
        BatchState::Running => "RUNNING",
        BatchState::Published => "SUCCESS",
        BatchState::Failed => "FAILED",
    };
    let how = if task.append { "appended" } else { "overwrote" };
    println!(
        "{} {state}: {} {} segments ({} replaced) in {}",
        task.id, how, task.segments, task.replaced, task.datasource
    );
    println!(
        "rows: {} processed ({} with errors), {} unparseable, {} thrown away{}",
        m.processed,
        m.processed_with_error,
        m.unparseable,
        m.thrown_away,
        took.map(|t| format!(" in {:.1}s", t.as_secs_f64())).unwrap_or_default()
    );
    if let Some(e) = &task.error {
        println!("error: {e}");
    }
    Ok(())
}
