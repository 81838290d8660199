//! `bench pipeline --realtime --runs N`: freshness as deployed, N times. Each run is the
//! real-time steady phase on a fresh rig and a new topic, the supervisor's first pass coming
//! before the topic's first record (a schedule does not wait for the producer: the leads are
//! spread evenly over the period, from 0.2 s to nearly a period), then a pass every period. The
//! report lists each run's freshness and the worst run by p99: a supervisor that leaves a new
//! stream's records for its next pass shows there as a p99 of about a period.

use super::rig::{PipelineArgs, Rig, RigTuning};
use super::{default_sample, realtime_steady, Sample};
use anyhow::Result;
use serde::Serialize;
use sluice_report::Freshness;
use std::time::Duration;

/// The least lead of the first pass over the first record.
const LEAST_LEAD: Duration = Duration::from_millis(200);

/// One run's figures.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct FreshnessRun {
    /// How long before the first record the supervisor's first pass ran, seconds.
    lead_secs: f64,
    /// Records produced, each measured once.
    records: u64,
    /// Tasks that read them.
    tasks: u64,
    /// Send to checkpoint, per record.
    freshness_ms: Freshness,
}

/// The runs of `bench pipeline --realtime --runs N`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct FreshnessRuns {
    /// Partitions of each run's topic.
    partitions: i32,
    /// Records per second produced.
    rate: u64,
    /// Seconds of production per run.
    produce_secs: u64,
    /// Supervisor period, milliseconds.
    period_ms: u64,
    /// `checkpointPeriod`, milliseconds.
    checkpoint_ms: u64,
    /// The broker: an address, or the mock cluster.
    broker: String,
    /// Each run, in order.
    runs: Vec<FreshnessRun>,
    /// The worst run by p99 (its index in `runs`).
    worst: usize,
}

/// Runs the freshness runs and prints (or writes) their report.
pub(super) fn run(args: &PipelineArgs, runs: u32) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let report = runtime.block_on(measure(args, runs))?;
    super::pipeline::output(args, &report, print)
}

/// The first pass's lead of run `i` of `runs`: spread evenly over the period.
fn lead(i: u32, runs: u32, period: Duration) -> Duration {
    LEAST_LEAD + period.saturating_sub(LEAST_LEAD) * i / runs.max(1)
}

async fn measure(args: &PipelineArgs, runs: u32) -> Result<FreshnessRuns> {
    let sample = Sample::load(&args.sample.clone().unwrap_or_else(default_sample))?;
    let period = Duration::from_millis(args.period_ms);
    let mut out = Vec::new();
    for i in 0..runs {
        let lead = lead(i, runs, period);
        eprintln!(
            "run {}/{runs}: {} records/s for {} s, the first pass {:.1} s before the first record",
            i + 1,
            args.rate,
            args.steady_secs,
            lead.as_secs_f64()
        );
        let rig = Rig::start_with(
            args.partitions,
            RigTuning::of(args),
            "wikipedia_fresh",
            Some(args.checkpoint_ms),
            args.broker.as_deref(),
        )
        .await?;
        let s = realtime_steady::run(&rig, &sample, args, Some(lead)).await?;
        let f = &s.freshness_ms;
        eprintln!("  p50 {:.2} s, p99 {:.2} s, max {:.2} s", f.p50 / 1e3, f.p99 / 1e3, f.max / 1e3);
        out.push(FreshnessRun {
            lead_secs: lead.as_secs_f64(),
            records: s.rows,
            tasks: s.tasks,
            freshness_ms: s.freshness_ms,
        });
    }
    let worst =
        (0..out.len()).max_by(|&a, &b| out[a].freshness_ms.p99.total_cmp(&out[b].freshness_ms.p99)).unwrap_or(0);
    Ok(FreshnessRuns {
        partitions: args.partitions,
        rate: args.rate,
        produce_secs: args.steady_secs,
        period_ms: args.period_ms,
        checkpoint_ms: args.checkpoint_ms,
        broker: args.broker.clone().unwrap_or_else(|| "the mock cluster".into()),
        runs: out,
        worst,
    })
}

fn print(r: &FreshnessRuns) {
    println!(
        "{} runs: {} records/s for {} s into a new {}-partition topic on {}, real-time tasks checkpointing every {} ms, supervisor every {} ms, its first pass before the first record",
        r.runs.len(),
        r.rate,
        r.produce_secs,
        r.partitions,
        r.broker,
        r.checkpoint_ms,
        r.period_ms
    );
    println!("{:>4} {:>9} {:>9} {:>9} {:>9} {:>6}", "run", "lead s", "p50 s", "p99 s", "max s", "tasks");
    for (i, run) in r.runs.iter().enumerate() {
        let f = &run.freshness_ms;
        println!(
            "{:>4} {:>9.1} {:>9.2} {:>9.2} {:>9.2} {:>6}{}",
            i + 1,
            run.lead_secs,
            f.p50 / 1e3,
            f.p99 / 1e3,
            f.max / 1e3,
            run.tasks,
            if i == r.worst { "  worst" } else { "" }
        );
    }
    if let Some(w) = r.runs.get(r.worst) {
        let f = &w.freshness_ms;
        println!("worst run (by p99): p50 {:.2} s, p99 {:.2} s, max {:.2} s", f.p50 / 1e3, f.p99 / 1e3, f.max / 1e3);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leads_spread_over_the_period_before_the_first_record() {
        let period = Duration::from_secs(60);
        let leads: Vec<Duration> = (0..10).map(|i| lead(i, 10, period)).collect();
        assert_eq!(leads[0], LEAST_LEAD);
        assert!(leads.windows(2).all(|w| w[1] > w[0]), "{leads:?}");
        assert!(leads[9] < period && leads[9] > period * 8 / 10, "{leads:?}");
    }
}
