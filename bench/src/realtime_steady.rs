//! The steady phase of `bench pipeline --realtime`: records produced at a steady rate into a
//! datasource with real-time tasks, the supervisor every period, jobs running concurrently as
//! Lambda runs them. Freshness is the time from a record's send to the checkpoint that makes
//! it queryable (a watcher reads the tasks' checkpoints every 20 ms); lag is measured at each
//! pass as in the batch mode.

use super::rig::{PipelineArgs, Rig, TASK_BUDGET};
use super::steady::{summarize, Production};
use super::Sample;
use anyhow::{anyhow, bail, Result};
use sluice_pipeline::runner::JobPool;
use sluice_pipeline::task::{load_progress, tasks, TaskId};
use sluice_report::Steady;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// Runs the real-time steady phase on a fresh rig. The supervisor's first pass comes `lead`
/// before the first record when given (as deployed: the schedule runs whatever the producer
/// does, and a new topic's first pass finds no record), else once records are flowing; then
/// one every period.
pub(super) async fn run(rig: &Rig, sample: &Sample, args: &PipelineArgs, lead: Option<Duration>) -> Result<Steady> {
    let mut s = Steady {
        rate: args.rate,
        period_ms: args.period_ms,
        checkpoint_ms: Some(args.checkpoint_ms),
        ..Steady::default()
    };
    let period = Duration::from_millis(args.period_ms);
    let mut pool = JobPool::default();
    // The jobs run concurrently, so their use is metered as a whole: everything but the
    // supervisor's passes is booked to the indexer (its mergers included), and its seconds are
    // the phase's wall time per group, as Lambda bills an open task that waits for records.
    let before = rig.meters.read();
    let mut jobs = 0u64;
    let mut next_pass = Instant::now();
    if let Some(lead) = lead {
        rig.pass(&mut s.functions).await?;
        next_pass += period;
        let until = Instant::now() + lead;
        while Instant::now() < until {
            pool.start(&rig.meta, &rig.store, &rig.queue, TASK_BUDGET);
            match tokio::time::timeout_at(until.into(), pool.join_next()).await {
                Ok(Some(done)) => {
                    done.map_err(|e| anyhow!("a job panicked: {e}"))?;
                    jobs += 1;
                }
                Ok(None) => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(_) => {}
            }
        }
    }
    let Production { sends, total, start, producer } = Production::start(rig, sample, args)?;
    if lead.is_none() {
        next_pass = start + Duration::from_millis(200);
    }
    // A crash: when it happened, and each task's attempt then.
    let mut crash: Option<(Instant, HashMap<TaskId, u32>)> = None;
    // Per task and partition, the offset up to which its checkpoints were seen.
    let mut seen: HashMap<TaskId, BTreeMap<i32, i64>> = HashMap::new();
    let mut freshness: Vec<f64> = Vec::with_capacity(total);
    loop {
        if Instant::now() >= next_pass {
            next_pass += period;
            let pass = rig.pass(&mut s.functions).await?;
            // Records not queryable yet: behind what the tasks checkpointed.
            let lag = pass.queryable_lag();
            s.lag.push((start.elapsed().as_secs_f64(), lag));
        }
        pool.start(&rig.meta, &rig.store, &rig.queue, TASK_BUDGET);
        if let Ok(Some(done)) = tokio::time::timeout(Duration::from_millis(20), pool.join_next()).await {
            done.map_err(|e| anyhow!("a job panicked: {e}"))?;
            jobs += 1;
        }
        if let Some(at) = args.kill_at_secs.filter(|_| crash.is_none()) {
            if start.elapsed() >= Duration::from_secs(at) {
                pool.crash();
                let attempts = checkpointed(rig).await?.into_iter().map(|c| (c.id, c.attempt)).collect();
                crash = Some((Instant::now(), attempts));
                eprintln!("every running job dropped at {:.1} s", start.elapsed().as_secs_f64());
            }
        }
        let now = Instant::now();
        for Checkpointed { id, attempt, starts, positions } in checkpointed(rig).await? {
            if let (Some((at, attempts)), None) = (&crash, s.recovery_secs) {
                let moved = seen.get(&id).is_none_or(|from| positions.iter().any(|(p, to)| from.get(p) < Some(to)));
                if moved && attempts.get(&id).is_none_or(|&a| attempt > a) {
                    s.recovery_secs = Some(at.elapsed().as_secs_f64());
                }
            }
            let from = seen.entry(id).or_insert(starts);
            let sends = sends.lock().map_err(|_| anyhow!("producer panicked"))?;
            for (&p, &to) in &positions {
                let start = from.get(&p).copied().unwrap_or(to);
                for offset in start..to {
                    let sent = sends[p as usize]
                        .get(offset as usize)
                        .ok_or_else(|| anyhow!("partition {p} offset {offset} checkpointed before it was sent"))?;
                    freshness.push(now.duration_since(*sent).as_secs_f64() * 1000.0);
                }
                from.insert(p, to);
            }
        }
        if producer.is_finished() && freshness.len() >= total {
            break;
        }
        if start.elapsed() > Duration::from_secs(args.steady_secs + 300) {
            bail!("{} of {total} records checkpointed 300 s after the producer's end", freshness.len());
        }
    }
    s.secs = start.elapsed().as_secs_f64();
    s.tasks = seen.len() as u64;
    let mut used = rig.meters.read().since(&before);
    used = used.since(&s.functions.supervisor.meters);
    let indexer = &mut s.functions.indexer;
    (indexer.invocations, indexer.secs, indexer.meters) = (jobs, s.secs, used);
    summarize(&mut s, producer, freshness)?;
    Ok(s)
}

/// A task's checkpointed progress, as a query would see it.
struct Checkpointed {
    id: TaskId,
    attempt: u32,
    starts: BTreeMap<i32, i64>,
    positions: BTreeMap<i32, i64>,
}

/// Every task's range starts and checkpointed positions.
async fn checkpointed(rig: &Rig) -> Result<Vec<Checkpointed>> {
    let mut out = Vec::new();
    let meta = rig.unmetered_meta.as_ref();
    for task in tasks(meta, &rig.datasource).await? {
        let progress = load_progress(meta, &task.id).await?;
        if let Some(last) = progress.last {
            let starts = task.ranges.iter().map(|r| (r.partition, r.start)).collect();
            out.push(Checkpointed { id: task.id, attempt: task.attempt, starts, positions: last.positions });
        }
    }
    Ok(out)
}
