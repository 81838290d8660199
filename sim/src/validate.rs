//! The local pipeline simulated beside real runs: each run's steady phase (partitions, produce
//! rate, length, supervisor period) is simulated with per-stage costs fitted to the run's own
//! report (or to one report given for all), and throughput, mean lag and mean freshness are
//! compared.

use crate::engine::Sim;
use crate::outcome::{Outcome, Sample};
use crate::plot;
use crate::scenario::{Costs, Scenario};
use anyhow::{bail, Context, Result};
use sluice_report::PipelineReport;
use std::path::Path;

/// Largest relative difference accepted.
pub const TOLERANCE: f64 = 0.25;

/// One real run beside its simulation.
#[derive(Debug)]
pub struct Comparison {
    /// Partitions of the run.
    pub partitions: u32,
    /// Real rows/s, first send to last publish.
    pub real_throughput: f64,
    /// Simulated rows/s.
    pub sim_throughput: f64,
    /// Real mean lag while producing.
    pub real_lag: f64,
    /// Simulated mean lag.
    pub sim_lag: f64,
    /// Real mean freshness, seconds.
    pub real_freshness: f64,
    /// Simulated mean freshness, seconds.
    pub sim_freshness: f64,
    /// Real lag samples.
    pub real_samples: Vec<Sample>,
    /// The simulation.
    pub sim: Outcome,
}

fn relative(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(f64::EPSILON)
}

impl Comparison {
    /// Whether throughput, mean lag and mean freshness agree within [`TOLERANCE`].
    pub fn agrees(&self) -> bool {
        relative(self.sim_throughput, self.real_throughput) <= TOLERANCE
            && relative(self.sim_lag, self.real_lag) <= TOLERANCE
            && relative(self.sim_freshness, self.real_freshness) <= TOLERANCE
    }
}

/// Simulates the steady phase of the run in `run` with `costs`.
pub fn compare(costs: Costs, run: &Path) -> Result<Comparison> {
    let text = std::fs::read_to_string(run).with_context(|| format!("read {}", run.display()))?;
    let r: PipelineReport =
        serde_json::from_str(&text).with_context(|| format!("{} is not a pipeline report", run.display()))?;
    let s = &r.steady;
    let partitions = r.partitions.max(1) as u32;
    let scenario = Scenario::local(partitions, s.rate as f64, s.produce_secs, s.period_ms as f64 / 1000.0, costs);
    let sim = Sim::new(&scenario).run();
    let real_samples =
        s.lag.iter().map(|&(t, lag)| Sample { t, lag: lag as f64, pass_secs: 0.0, running: 0 }).collect();
    Ok(Comparison {
        partitions,
        real_throughput: s.rows as f64 / s.secs,
        sim_throughput: sim.throughput,
        real_lag: s.mean_lag,
        sim_lag: sim.mean_lag,
        real_freshness: s.freshness_ms.mean / 1000.0,
        sim_freshness: sim.mean_freshness,
        real_samples,
        sim,
    })
}

/// Runs `validate`: prints each comparison and plots it; fails when one disagrees.
pub fn run(costs: Option<&Path>, runs: &[std::path::PathBuf], out_dir: &Path, font: &Path) -> Result<()> {
    let shared = costs.map(Costs::from_report).transpose()?;
    std::fs::create_dir_all(out_dir)?;
    plot::use_font(font)?;
    println!(
        "{:>10} {:>12} {:>12} {:>7} {:>10} {:>10} {:>7} {:>11} {:>11} {:>7}",
        "partitions",
        "real rows/s",
        "sim rows/s",
        "diff",
        "real lag",
        "sim lag",
        "diff",
        "real fresh",
        "sim fresh",
        "diff"
    );
    let mut all = true;
    for path in runs {
        let costs = match shared {
            Some(c) => c,
            None => Costs::from_report(path)?,
        };
        let c = compare(costs, path)?;
        println!(
            "{:>10} {:>12.0} {:>12.0} {:>6.1}% {:>10.0} {:>10.0} {:>6.1}% {:>9.0}ms {:>9.0}ms {:>6.1}%",
            c.partitions,
            c.real_throughput,
            c.sim_throughput,
            100.0 * relative(c.sim_throughput, c.real_throughput),
            c.real_lag,
            c.sim_lag,
            100.0 * relative(c.sim_lag, c.real_lag),
            c.real_freshness * 1000.0,
            c.sim_freshness * 1000.0,
            100.0 * relative(c.sim_freshness, c.real_freshness)
        );
        let png = out_dir.join(format!("validate-{}p.png", c.partitions));
        plot::lag(
            &png,
            &format!("local pipeline, {} partitions: real and simulated lag", c.partitions),
            &[
                plot::Series { label: "real (bench pipeline, steady phase)".into(), samples: &c.real_samples },
                plot::Series { label: "simulated".into(), samples: &c.sim.samples },
            ],
        )?;
        all &= c.agrees();
    }
    if !all {
        bail!("the simulation and a real run differ by more than {:.0}%", TOLERANCE * 100.0);
    }
    println!("every run agrees within {:.0}%", TOLERANCE * 100.0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/results").join(name)
    }

    #[test]
    fn the_simulation_agrees_with_the_committed_real_runs() {
        for run in ["pipeline.json", "pipeline-16p.json"] {
            let costs = Costs::from_report(&results(run)).expect("costs");
            let c = compare(costs, &results(run)).expect("comparison");
            assert!(c.agrees(), "{run}: {c:?}");
        }
    }

    #[test]
    fn a_slower_pipeline_is_simulated_with_more_lag() {
        let costs = Costs::from_report(&results("pipeline.json")).expect("costs");
        let slow = Costs { indexer_per_row: costs.indexer_per_row * 10.0, ..costs };
        let (fast, slow) = (
            compare(costs, &results("pipeline.json")).expect("fast"),
            compare(slow, &results("pipeline.json")).expect("slow"),
        );
        assert!(slow.sim_lag > fast.sim_lag && slow.sim_freshness > fast.sim_freshness, "{fast:?} {slow:?}");
    }
}
