//! `sluice-sim query`: the query path at AWS scale. The api function is the broker: it reads
//! the catalog, prunes segments, and past what one function should read it invokes
//! query-worker functions per batch of segments (through sub-brokers past a few dozen, as
//! Lambada's invocation tree), merges their partials and finalizes.
//!
//! ```text
//!  client -> broker (api, 2,048 MB) -- DynamoDB: replaces, timeline pages
//!              |  Invoke x sqrt(N)            (depth 2; depth 1 invokes the N workers itself)
//!              v
//!           sub-brokers -- Invoke x sqrt(N) --> workers: S3 ranged GETs (or /tmp), scan,
//!              ^                                   partial in the response (<= 6 MB) or via S3
//!              +---- merged partials <------------ partials
//! ```
//!
//! Scan rates are this project's (`sluice bench query`, 2-core x86_64); S3, Lambda and
//! DynamoDB latencies and limits are published figures or stated assumptions (`setup.rs`);
//! prices are AWS's list prices (`prices.rs`). Variability: lognormal S3 and DynamoDB
//! latencies and throughput, stragglers, failed workers retried once.

mod fanout;
mod invoker;
mod noise;
pub mod report;
mod sensitivity;
pub mod setup;
mod simulate;
mod worker;

use crate::plot;
use anyhow::Result;
use setup::{QuerySetup, KINDS};
use std::path::PathBuf;

/// The options of `sluice-sim query`.
#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// Datasource sizes, rows.
    #[arg(long, value_delimiter = ',', default_values_t = [1e9, 1e10, 1e11])]
    rows: Vec<f64>,
    /// Bytes every query reads per row (its columns), instead of each kind's measured bytes.
    #[arg(long)]
    read_bytes_per_row: Option<f64>,
    /// Speed of an arm64 Lambda core over the benchmark machine's x86 core.
    #[arg(long)]
    arm_core_factor: Option<f64>,
    /// Seconds of work per worker the broker aims at when it splits the segments into batches
    /// (instead of the template's 512 MiB of segments per batch).
    #[arg(long)]
    worker_secs: Option<f64>,
    /// MiB per batch instead.
    #[arg(long)]
    mib_per_worker: Option<f64>,
    /// Most executions one query may use (sub-brokers and workers).
    #[arg(long)]
    max_workers: Option<f64>,
    /// Invokes a worker again once it runs this many times its expected time, taking the first
    /// answer (hedging; 1.5 as the broker does, 0 turns it off).
    #[arg(long)]
    hedge: Option<f64>,
    /// Memory of the query-worker function, MB.
    #[arg(long)]
    worker_mb: Option<f64>,
    /// Share of a warm worker's bytes already in its /tmp (default: the cache's share of the
    /// bytes the query reads).
    #[arg(long)]
    warm_hit: Option<f64>,
    /// Share of the segments inside the query's intervals.
    #[arg(long)]
    time_fraction: Option<f64>,
    /// Share of those the filter keeps.
    #[arg(long)]
    filter_fraction: Option<f64>,
    /// Queries a minute Druid's cluster is priced over.
    #[arg(long, default_value_t = 1.0)]
    queries_per_minute: f64,
    /// Queries simulated per setting.
    #[arg(long)]
    trials: Option<usize>,
    /// Seed of the random draws.
    #[arg(long)]
    seed: Option<u64>,
    /// Prints one JSON object instead of the tables.
    #[arg(long)]
    json: bool,
    /// Skips the sensitivity sweep.
    #[arg(long)]
    no_sensitivity: bool,
    /// Folder of the plot and the JSON summary.
    #[arg(long, default_value = "bench/results/sim")]
    out_dir: PathBuf,
    /// TrueType font of the plot's text.
    #[arg(long, default_value = plot::DEFAULT_FONT)]
    font: PathBuf,
}

impl QueryArgs {
    fn setup(&self) -> QuerySetup {
        let mut s = QuerySetup::default();
        let set = |v: Option<f64>, field: &mut f64| {
            if let Some(v) = v {
                *field = v;
            }
        };
        set(self.read_bytes_per_row, &mut s.read_bytes_per_row);
        s.read_bytes_fixed = self.read_bytes_per_row.is_some();
        set(self.arm_core_factor, &mut s.arm_core_factor);
        if let Some(secs) = self.worker_secs {
            s.worker_secs = secs;
            s.batch_segment_bytes_opt = None;
        }
        set(self.max_workers, &mut s.max_workers);
        s.bytes_per_worker_opt = self.mib_per_worker.map(|m| m * 1024.0 * 1024.0);
        if let Some(h) = self.hedge {
            s.hedge_opt = (h > 0.0).then_some(h);
        }
        set(self.worker_mb, &mut s.worker_mb);
        set(self.time_fraction, &mut s.time_fraction);
        set(self.filter_fraction, &mut s.filter_fraction);
        s.warm_hit_opt = self.warm_hit;
        s.trials = self.trials.unwrap_or(s.trials);
        s.seed = self.seed.unwrap_or(s.seed);
        s
    }
}

/// Runs the model for every size and kind, prints the table (or JSON), and writes the latency
/// plot and the JSON summary under `--out-dir`.
pub fn run(args: &QueryArgs) -> Result<()> {
    let s = args.setup();
    let mut estimates = Vec::new();
    for &rows in &args.rows {
        for kind in &KINDS {
            estimates.push(report::estimate(rows, kind, &s.for_kind(kind), args.queries_per_minute));
        }
    }
    let goals = report::goals(&estimates);
    let sweep_rows = if args.rows.contains(&1e10) { 1e10 } else { args.rows.iter().copied().fold(0.0, f64::max) };
    let (sweep, designs) = if args.no_sensitivity {
        (Vec::new(), Vec::new())
    } else {
        let base = s.for_kind(&KINDS[0]);
        (sensitivity::sweep(sweep_rows, &KINDS[0], &base), sensitivity::designs(sweep_rows, &KINDS[0], &base))
    };
    let summary = serde_json::json!({
        "setup": s, "estimates": estimates, "goals": goals, "sensitivity": sweep, "designs": designs,
        "dominant": {
            "p50_warm": sensitivity::dominant(&sweep, |m| m.p50_warm),
            "p50_cold": sensitivity::dominant(&sweep, |m| m.p50_cold),
            "cost": sensitivity::dominant(&sweep, |m| m.cost),
        },
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        report::print(&s, &estimates, &goals, args.queries_per_minute);
        if !sweep.is_empty() {
            sensitivity::print(sweep_rows, &KINDS[0], &sweep, &designs);
        }
    }
    std::fs::create_dir_all(&args.out_dir)?;
    plot::use_font(&args.font)?;
    let png = args.out_dir.join("query-latency.png");
    let mut series = Vec::new();
    for kind in &KINDS {
        let of = |warm: bool| -> Vec<(f64, f64)> {
            let pick = |e: &report::Estimate| if warm { e.warm.p50 } else { e.cold.p50 };
            estimates.iter().filter(|e| e.kind.name == kind.name).map(|e| (e.rows, pick(e))).collect()
        };
        series.push(plot::XySeries { label: format!("{} warm p50", kind.name), points: of(true), dashed: false });
        series.push(plot::XySeries { label: format!("{} cold p50", kind.name), points: of(false), dashed: true });
    }
    let title = format!(
        "Sluice queries on Lambda: p50 latency vs rows ({}, {} MB workers{})",
        report::read_bytes(&s),
        s.worker_mb,
        s.hedge_opt.map(|h| format!(", hedged at {h}x")).unwrap_or_default()
    );
    let marks = [(2.0, "10B goal, warm: 2 s"), (5.0, "10B goal, cold: 5 s"), (10.0, "100B goal: 10 s")];
    plot::xy_log_x(&png, &title, ("rows in the datasource", "p50 latency, seconds"), &series, &marks)?;
    let json = args.out_dir.join("query.json");
    std::fs::write(&json, serde_json::to_string_pretty(&summary)?)?;
    if !args.json {
        println!("plot: {}; summary: {}", png.display(), json.display());
    }
    Ok(())
}
