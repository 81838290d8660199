//! `sluice run`: the local pipeline loop on the configured backends: supervisor passes, with
//! the indexers and mergers they invoke run in this process, and compaction passes.

use crate::backends::BackendArgs;
use crate::compact::summary;
use anyhow::{anyhow, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use sluice_format::time::now_ms;
use sluice_pipeline::coordinator::{compact_all, CompactOptions};
use sluice_pipeline::indexer::TaskOutcome;
use sluice_pipeline::invoker::QueueInvoker;
use sluice_pipeline::merger::MergeOutcome;
use sluice_pipeline::runner::{JobOutcome, JobPool};
use sluice_pipeline::supervisor::{offset_at, run_pass, status, SupervisorOptions};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Options of `sluice run`.
#[derive(Args)]
pub struct RunArgs {
    /// Stops once every record below the high watermarks seen by the first pass is queryable:
    /// published, or checkpointed by a real-time task (which stays open; the next `sluice run`
    /// takes it over once its lease lapses).
    #[arg(long)]
    until_caught_up: bool,
    /// Only this datasource.
    #[arg(long)]
    datasource: Option<String>,
    /// Seconds between supervisor passes when there is nothing to do.
    #[arg(long, default_value_t = 5)]
    interval: u64,
    /// Time budget of one indexer attempt, in seconds (a Lambda's is at most 900).
    #[arg(long, default_value_t = 600)]
    task_budget: u64,
}

/// How often `sluice run` runs a compaction pass.
const COMPACTION_PERIOD: Duration = Duration::from_secs(60);

/// Runs `sluice run`: a supervisor pass every `interval` (at once when the last pass's jobs
/// are done), its jobs run concurrently in this process, as Lambda would run them; a
/// compaction pass every minute, and one before `--until-caught-up` returns.
pub async fn run(args: RunArgs, backends: &BackendArgs) -> Result<()> {
    let b = backends.open().await?;
    let (meta, store) = (b.meta.as_ref(), b.store.as_ref());
    let queue = Arc::new(QueueInvoker::default());
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}").map_err(|e| anyhow!(e))?);
    bar.enable_steady_tick(Duration::from_millis(200));
    let started = Instant::now();
    let mut target: Option<BTreeMap<(String, String, i32), i64>> = None;
    let (mut published, mut indexed) = (0usize, 0usize);
    let mut jobs = JobPool::default();
    let budget = Duration::from_secs(args.task_budget);
    // The first pass watches every running task: attempts of a process that crashed hold
    // leases until they lapse, and the indexers invoked take their tasks over then.
    let mut watch_running = true;
    let mut last_compaction: Option<Instant> = None;
    loop {
        let options = SupervisorOptions { watch_running, ..SupervisorOptions::at(now_ms()) };
        watch_running = false;
        let passes = run_pass(meta, store, queue.as_ref(), &options, args.datasource.as_deref()).await?;
        // Per partition, where the queryable records end (the committed offsets, unless
        // real-time tasks have checkpointed further).
        let mut queryable = BTreeMap::new();
        let mut lag = 0i64;
        for (datasource, pass) in &passes {
            match pass {
                Ok(p) => {
                    for (topic, partition, _) in p.highs() {
                        let c = offset_at(&p.queryable, topic, partition);
                        queryable.insert((p.datasource.clone(), topic.to_string(), partition), c);
                    }
                    lag += p.queryable_lag();
                    if target.is_none() && args.until_caught_up {
                        let highs = p.highs().map(|(t, part, h)| ((p.datasource.clone(), t.to_string(), part), h));
                        target.get_or_insert_with(BTreeMap::new).extend(highs);
                    }
                }
                Err(e) => bar.suspend(|| eprintln!("error: datasource {datasource}: {e}")),
            }
        }
        bar.set_message(progress(lag, indexed, published));
        if last_compaction.is_none_or(|t| t.elapsed() >= COMPACTION_PERIOD) {
            last_compaction = Some(Instant::now());
            compaction_pass(meta, store, args.datasource.as_deref(), &bar).await;
        }
        let caught_up = match &target {
            Some(t) => t.iter().all(|(k, h)| queryable.get(k).is_some_and(|c| c >= h)),
            None => args.until_caught_up && passes.is_empty(),
        };
        if caught_up {
            // What this run published is compacted before it returns.
            compaction_pass(meta, store, args.datasource.as_deref(), &bar).await;
            bar.finish_and_clear();
            eprintln!(
                "caught up in {:.1} s: {indexed} indexer runs, {published} tasks published",
                started.elapsed().as_secs_f64()
            );
            return Ok(());
        }
        // Jobs run until the next pass is due; once none runs, a pass that handed out jobs is
        // followed by the next at once (their results may need more), one that did not waits.
        let next_pass = tokio::time::Instant::now() + Duration::from_secs(args.interval);
        let handed_out = !queue.is_empty();
        // Real-time tasks stay open: with a target, whether it is queryable is checked every
        // second between passes, so the run ends within a second of it, not at the next pass.
        let mut check = tokio::time::interval(Duration::from_secs(1));
        check.tick().await;
        loop {
            jobs.start(&b.meta, &b.store, &queue, budget);
            if jobs.is_empty() {
                if !handed_out {
                    tokio::time::sleep_until(next_pass).await;
                }
                break;
            }
            tokio::select! {
                Some(done) = jobs.join_next() => {
                    let (_, outcome) = done.map_err(|e| anyhow!("a job panicked: {e}"))?;
                    match outcome {
                        JobOutcome::Indexed(Ok(TaskOutcome::Complete(_) | TaskOutcome::Incomplete(_))) => indexed += 1,
                        JobOutcome::Merged(Ok(MergeOutcome::Published { .. })) => published += 1,
                        JobOutcome::Indexed(Err(e)) => bar.suspend(|| eprintln!("indexer: {e}")),
                        JobOutcome::Merged(Err(e)) => bar.suspend(|| eprintln!("merger: {e}")),
                        _ => {}
                    }
                    bar.set_message(progress(lag, indexed, published));
                }
                () = tokio::time::sleep_until(next_pass) => break,
                _ = check.tick(), if target.is_some() => {
                    if let Some(t) = &target {
                        if queryable_reached(meta, t).await? {
                            break;
                        }
                    }
                }
            }
        }
    }
}

/// One compaction pass over every configured datasource (or `only`); what it did and what
/// failed is printed, and a failed pass is tried again by the next.
async fn compaction_pass(
    meta: &dyn sluice_store::metadata::MetadataStore,
    store: &dyn sluice_store::storage::ObjectStore,
    only: Option<&str>,
    bar: &ProgressBar,
) {
    let options = CompactOptions::at(now_ms());
    match compact_all(meta, store, only, &options).await {
        Ok(reports) => {
            for (name, report) in reports {
                match report {
                    Ok(r) if r.chunks_compacted + r.segments_dropped > 0 => {
                        bar.suspend(|| eprintln!("{}", summary(&r)))
                    }
                    Ok(_) => {}
                    Err(e) => bar.suspend(|| eprintln!("error: compaction of {name}: {e}")),
                }
            }
        }
        Err(e) => bar.suspend(|| eprintln!("error: compaction pass: {e}")),
    }
}

/// Whether every partition of `target` is queryable up to its offset, as the metadata says now.
async fn queryable_reached(
    meta: &dyn sluice_store::metadata::MetadataStore,
    target: &BTreeMap<(String, String, i32), i64>,
) -> Result<bool> {
    let mut datasources: Vec<&str> = target.keys().map(|(d, _, _)| d.as_str()).collect();
    datasources.dedup();
    for datasource in datasources {
        let status = status(meta, datasource).await?;
        let reached: BTreeMap<(&str, i32), i64> = status
            .partitions
            .iter()
            .filter_map(|p| Some(((p.topic.as_str(), p.partition), p.queryable.or(p.committed)?)))
            .collect();
        let behind = target
            .iter()
            .filter(|((d, _, _), _)| d == datasource)
            .any(|((_, t, p), &high)| reached.get(&(t.as_str(), *p)).is_none_or(|&r| r < high));
        if behind {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The progress line: lag as of the last pass, jobs done so far.
fn progress(lag: i64, indexed: usize, published: usize) -> String {
    format!("lag {lag} records, {indexed} indexer runs, {published} tasks published")
}
