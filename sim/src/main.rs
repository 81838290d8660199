//! `sluice-sim`: a discrete-event simulation of Sluice's protocol, driven by the per-stage costs
//! `sluice bench pipeline` measures.
//!
//! - `sluice-sim scale`: 1,000 partitions at 1M rows/s on AWS's limits, with the supervisor's
//!   requests serial (as it was) and concurrent (as it is); lag plots and the bottleneck.
//! - `sluice-sim validate`: the local pipeline simulated against the steady phases of real
//!   `bench pipeline` runs (4 and 16 partitions); throughput and mean lag side by side.
//! - `sluice-sim spike`: a burst of 10 times the rate with the lag-based autoscaler and
//!   without; how long the lag stays over the threshold, scale-out and scale-in, cost.

mod autoscale;
mod engine;
mod outcome;
mod plot;
mod prices;
mod query;
mod realtime;
mod scenario;
mod spike;
mod throttle;
mod validate;

use anyhow::Result;
use clap::{Parser, Subcommand};
use engine::Sim;
use outcome::Outcome;
use scenario::{Costs, Scenario, SupervisorMode};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "sluice-sim", about = "Discrete-event simulation of Sluice's supervisor, indexer, merger and publish")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Sluice on AWS at scale: lag over time, utilisation of each shared resource, bottleneck.
    Scale {
        /// A `sluice bench pipeline --out` report: the measured per-stage costs.
        #[arg(long, default_value = "bench/results/pipeline.json")]
        report: PathBuf,
        /// Kafka partitions (and task groups).
        #[arg(long, default_value_t = 1000)]
        partitions: u32,
        /// Task groups (`taskCount`); the partitions by default.
        #[arg(long)]
        task_groups: Option<u32>,
        /// Produce rate, rows/s.
        #[arg(long, default_value_t = 1_000_000.0)]
        rate: f64,
        /// Minutes of production.
        #[arg(long, default_value_t = 30.0)]
        minutes: f64,
        /// Requests the concurrent supervisor keeps in flight.
        #[arg(long, default_value_t = 32)]
        width: usize,
        /// Folder of the plot and the JSON summary.
        #[arg(long, default_value = "bench/results/sim")]
        out_dir: PathBuf,
        /// TrueType font of the plot's text.
        #[arg(long, default_value = plot::DEFAULT_FONT)]
        font: PathBuf,
        /// `sluice bench pipeline --realtime --out` reports: real-time tasks simulated beside,
        /// with each one's checkpoint period and write units per group-second, when it exists.
        #[arg(long, value_delimiter = ',', default_values = ["bench/results/pipeline-realtime.json", "bench/results/pipeline-realtime-5s.json"])]
        realtime_reports: Vec<PathBuf>,
    },
    /// The local pipeline simulated beside real steady-phase runs.
    Validate {
        /// A report whose costs drive every simulation (default: each run's own report).
        #[arg(long)]
        costs: Option<PathBuf>,
        /// Real runs to compare with (their partitions, rate, period and length are simulated).
        #[arg(long, value_delimiter = ',', default_values = ["bench/results/pipeline.json", "bench/results/pipeline-16p.json"])]
        runs: Vec<PathBuf>,
        /// Folder of the plots.
        #[arg(long, default_value = "bench/results/sim")]
        out_dir: PathBuf,
        /// TrueType font of the plots' text.
        #[arg(long, default_value = plot::DEFAULT_FONT)]
        font: PathBuf,
    },
    /// The query path on AWS: fan-out, latency warm and cold, cost beside Athena and Druid.
    Query(query::QueryArgs),
    /// A burst of production with the lag-based autoscaler and without: lag, scaling, cost.
    Spike(spike::SpikeArgs),
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Scale { report, partitions, task_groups, rate, minutes, width, out_dir, font, realtime_reports } => {
            let costs = Costs::from_report(&report)?;
            let mut scenario = Scenario::aws(partitions, rate, costs);
            scenario.task_groups = task_groups.unwrap_or(partitions);
            scenario.produce_secs = minutes * 60.0;
            let serial = Sim::new(&scenario).run();
            scenario.supervisor = SupervisorMode::Concurrent(width);
            let concurrent = Sim::new(&scenario).run();
            print_scale(&scenario, &serial, &concurrent, width);
            let mut realtime = Vec::new();
            for r in &realtime_reports {
                realtime.extend(realtime_runs(&scenario, r)?);
            }
            std::fs::create_dir_all(&out_dir)?;
            plot::use_font(&font)?;
            let png = out_dir.join(format!("lag-{partitions}p.png"));
            let mut series = vec![
                plot::Series { label: "serial supervisor requests".into(), samples: &serial.samples },
                plot::Series {
                    label: format!("concurrent supervisor requests ({width} in flight)"),
                    samples: &concurrent.samples,
                },
            ];
            for (label, o, _) in &realtime {
                series.push(plot::Series { label: label.clone(), samples: &o.samples });
            }
            plot::lag(
                &png,
                &format!("{partitions} partitions, {} rows/s, supervisor every 60 s", rate as u64),
                &series,
            )?;
            let json = out_dir.join(format!("scale-{partitions}p.json"));
            let realtime_json: Vec<_> = realtime
                .iter()
                .map(|(label, o, f)| serde_json::json!({"label": label, "outcome": o, "freshness": f}))
                .collect();
            std::fs::write(
                &json,
                serde_json::to_string_pretty(
                    &serde_json::json!({"serial": serial, "concurrent": concurrent, "realtime": realtime_json}),
                )?,
            )?;
            println!("plot: {}; samples: {}", png.display(), json.display());
            Ok(())
        }
        Command::Validate { costs, runs, out_dir, font } => validate::run(costs.as_deref(), &runs, &out_dir, &font),
        Command::Query(args) => query::run(&args),
        Command::Spike(args) => spike::run(&args),
    }
}

/// Real-time tasks at the scenario's `taskCount`, and with the groups sized to be 85% busy
/// (as `bench cost` sizes them), when a real-time report exists.
fn realtime_runs(
    s: &Scenario,
    report: &std::path::Path,
) -> Result<Vec<(String, Outcome, realtime::RealtimeFreshness)>> {
    if !report.exists() {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(report)?;
    let r: sluice_report::PipelineReport = serde_json::from_str(&text)?;
    let steady = &r.steady;
    let rt = realtime::Realtime {
        checkpoint_period: steady.checkpoint_ms.unwrap_or(1_000) as f64 / 1000.0,
        write_units_per_group_second: steady.functions.indexer.meters.write_units / steady.secs.max(1.0),
    };
    let sized = (s.rate * s.costs.indexer_per_row / s.cpu.0 / 0.85).ceil() as u32;
    let mut out = Vec::new();
    for groups in [s.task_groups, sized.clamp(1, s.partitions)] {
        let scenario = Scenario { task_groups: groups, ..s.clone() };
        let (o, f) = realtime::run(&scenario, &rt);
        let label = format!("real-time tasks, {groups} task groups, checkpoints every {} s", rt.checkpoint_period);
        print_outcome(&label, &o);
        println!(
            "  freshness p99 {:.1} s; every group caught up at {:.0} s; rows produced after: mean {:.1} s, p99 {:.1} s",
            f.p99, f.caught_up_at, f.steady_mean, f.steady_p99
        );
        out.push((label, o, f));
    }
    Ok(out)
}

fn print_outcome(name: &str, o: &Outcome) {
    let (what, load) = o.bottleneck();
    let max_pass = o.samples.iter().map(|x| x.pass_secs).fold(0.0, f64::max);
    println!("{name}:");
    println!(
        "  throughput {:.0} rows/s, freshness mean {:.1} s, lag mean {:.2}M max {:.2}M records (last quarter / second quarter {:.2}), longest pass {:.1} s",
        o.throughput,
        o.mean_freshness,
        o.mean_lag / 1e6,
        o.max_lag / 1e6,
        o.lag_growth,
        max_pass
    );
    println!(
        "  {} tasks, {} cold starts, peak {} executions, {:.0} s waiting for concurrency, {:.0} s of DynamoDB throttling, {} mergers waited",
        o.tasks, o.cold_starts, o.peak_running, o.throttled_secs, o.dynamodb_throttled_secs, o.merges_waiting
    );
    let u = &o.utilisation;
    println!(
        "  utilisation: supervisor pass/period {:.2}, Lambda concurrency {:.2}, DynamoDB partition key {:.2}, S3 prefix {:.3}, task time limit {:.3}",
        u.supervisor_pass, u.lambda_concurrency, u.dynamodb_partition, u.s3_prefix, u.task_time_limit
    );
    println!("  most loaded: {what} ({load:.2})");
}

fn print_scale(s: &Scenario, serial: &Outcome, concurrent: &Outcome, width: usize) {
    println!(
        "{} partitions, {} task groups, {:.0} rows/s for {:.0} min; Lambda concurrency {}, cold start {:.1} s; costs from the benchmark: indexer {:.2} µs/row + {:.3} s/task, merger {:.2} µs/row + {:.3} s/task",
        s.partitions,
        s.task_groups,
        s.rate,
        s.produce_secs / 60.0,
        s.lambda_concurrency,
        s.cold_start,
        s.costs.indexer_per_row * 1e6,
        s.costs.indexer_fixed,
        s.costs.merger_per_row * 1e6,
        s.costs.merger_fixed
    );
    print_outcome("serial supervisor requests", serial);
    print_outcome(&format!("concurrent supervisor requests ({width} in flight)"), concurrent);
}
