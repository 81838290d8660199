//! `sluice-sim spike`: a burst of production (10 times the rate for 10 minutes by default) on
//! AWS as the template deploys it, with the lag-based autoscaler and without it, in one run:
//! how long the lag stays above `scaleOutThreshold`, when the groups scale out and back in, and
//! what the burst costs.

use crate::autoscale::ScaleEvent;
use crate::engine::Sim;
use crate::outcome::Outcome;
use crate::scenario::{Autoscaling, Costs, Scenario, Spike, SupervisorMode};
use anyhow::{Context, Result};
use clap::Args;
use sluice_format::spec::autoscaler::AutoScalerConfig;
use std::path::PathBuf;

/// The autoscaler settings the scenario runs with: Druid's lag-based autoscaler, its timings set
/// to the one-minute schedule (a sample and a decision per pass) and its threshold above the
/// lag the schedule alone leaves at the burst's rate (a minute of records).
const DEFAULT_AUTOSCALER: &str = r#"{"enableTaskAutoScaler": true, "taskCountMin": 1, "taskCountMax": 64,
 "lagCollectionIntervalMillis": 30000, "lagCollectionRangeMillis": 120000, "scaleActionStartDelayMillis": 0,
 "scaleActionPeriodMillis": 60000, "minTriggerScaleActionFrequencyMillis": 60000,
 "scaleOutThreshold": 75000000, "triggerScaleOutFractionThreshold": 0.3,
 "scaleInThreshold": 8000000, "triggerScaleInFractionThreshold": 0.9, "scaleOutStep": 16, "scaleInStep": 4}"#;

/// Options of `sluice-sim spike`.
#[derive(Args)]
pub struct SpikeArgs {
    /// A `sluice bench pipeline --out` report: the measured per-stage costs.
    #[arg(long, default_value = "bench/results/pipeline.json")]
    report: PathBuf,
    /// Kafka partitions.
    #[arg(long, default_value_t = 64)]
    partitions: u32,
    /// Base produce rate, rows/s.
    #[arg(long, default_value_t = 100_000.0)]
    rate: f64,
    /// The burst's rate over the base rate.
    #[arg(long, default_value_t = 10.0)]
    factor: f64,
    /// Minutes before the burst.
    #[arg(long, default_value_t = 10.0)]
    before: f64,
    /// Minutes the burst lasts.
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// Minutes after it.
    #[arg(long, default_value_t = 30.0)]
    after: f64,
    /// `autoScalerConfig` (JSON); the task groups start at its `taskCountMin`.
    #[arg(long, default_value = DEFAULT_AUTOSCALER)]
    autoscaler: String,
    /// Folder of the plot and the JSON summary.
    #[arg(long, default_value = "bench/results/sim")]
    out_dir: PathBuf,
    /// TrueType font of the plot's text.
    #[arg(long, default_value = crate::plot::DEFAULT_FONT)]
    font: PathBuf,
}

/// What one run of the burst found.
#[derive(Debug, serde::Serialize)]
struct SpikeRun {
    label: String,
    /// Seconds from the burst's start until the lag is under `scaleOutThreshold` again and
    /// stays under it (none: it never does within the run; 0: it never went over).
    back_under_secs: Option<f64>,
    /// Seconds the lag was over the threshold.
    over_secs: f64,
    /// Seconds from the burst's end until the groups are back at `taskCountMin`.
    scaled_in_secs: Option<f64>,
    /// Rows produced.
    produced: f64,
    outcome: Outcome,
}

/// Runs `sluice-sim spike`.
pub fn run(a: &SpikeArgs) -> Result<()> {
    let costs = Costs::from_report(&a.report)?;
    let config: AutoScalerConfig =
        serde_json::from_str(&a.autoscaler).context("--autoscaler is not autoScalerConfig")?;
    config.check().map_err(|(field, why)| anyhow::anyhow!("autoScalerConfig.{field}: {why}"))?;
    let min = config.task_count_min.unwrap_or(1);
    let spike = Spike { start: a.before * 60.0, secs: a.minutes * 60.0, factor: a.factor };
    let mut base = Scenario::aws(a.partitions, a.rate, costs);
    base.supervisor = SupervisorMode::Concurrent(32);
    base.produce_secs = (a.before + a.minutes + a.after) * 60.0;
    base.drain_secs = 120.0;
    base.task_groups = min;
    let scaled = |chained: bool| Some(Autoscaling { config: config.clone(), chained });
    let runs = [
        ("no burst, autoscaler on (the baseline)", None, scaled(true)),
        ("burst, taskCount fixed at taskCountMin", Some(spike), None),
        ("burst, autoscaler (decided before planning, a change's steps in one pass)", Some(spike), scaled(true)),
        ("burst, autoscaler (decided after planning, one step per pass)", Some(spike), scaled(false)),
    ];
    let threshold = config.scale_out_threshold as f64;
    let mut out = Vec::new();
    for (label, spike_of, autoscaler) in runs {
        let s = Scenario { spike: spike_of, autoscaler, ..base.clone() };
        let outcome = Sim::new(&s).run();
        out.push(summarise(label, outcome, &s, &spike, threshold, min));
    }
    let fixed_max = Scenario { spike: Some(spike), task_groups: a.partitions, ..base.clone() };
    let outcome = Sim::new(&fixed_max).run();
    out.push(summarise("burst, taskCount fixed at the partitions", outcome, &fixed_max, &spike, threshold, min));
    print(a, &config, &out);
    std::fs::create_dir_all(&a.out_dir)?;
    crate::plot::use_font(&a.font)?;
    let png = a.out_dir.join(format!("spike-{}p.png", a.partitions));
    let series: Vec<crate::plot::Series> =
        out.iter().map(|r| crate::plot::Series { label: r.label.clone(), samples: &r.outcome.samples }).collect();
    let title = format!(
        "{} partitions, {} rows/s, {}x for {} min, supervisor every 60 s",
        a.partitions, a.rate as u64, a.factor, a.minutes
    );
    crate::plot::lag(&png, &title, &series)?;
    let json = a.out_dir.join(format!("spike-{}p.json", a.partitions));
    std::fs::write(&json, serde_json::to_string_pretty(&out)?)?;
    println!("plot: {}; runs: {}", png.display(), json.display());
    Ok(())
}

fn summarise(label: &str, o: Outcome, s: &Scenario, spike: &Spike, threshold: f64, min: u32) -> SpikeRun {
    let after: Vec<_> = o.samples.iter().filter(|x| x.t >= spike.start).collect();
    let over: Vec<_> = after.iter().filter(|x| x.lag >= threshold).collect();
    let back_under_secs = match over.last() {
        None => Some(0.0),
        Some(last) => after.iter().find(|x| x.t > last.t && x.lag < threshold).map(|x| x.t - spike.start),
    };
    // The dashboard's samples are every 5 s (those of the passes come between): each one over
    // the threshold stands for 5 s.
    let over_secs = over.iter().filter(|x| x.pass_secs == 0.0).count() as f64 * 5.0;
    let end = spike.start + spike.secs;
    let scaled_in_secs = match o.scaling.last() {
        Some(ScaleEvent { t, to, .. }) if *to == min && *t >= end => Some(t - end),
        Some(_) => None,
        None => Some(0.0),
    };
    let produced = s.produced(s.produce_secs);
    SpikeRun { label: label.into(), back_under_secs, over_secs, scaled_in_secs, produced, outcome: o }
}

fn print(a: &SpikeArgs, config: &AutoScalerConfig, runs: &[SpikeRun]) {
    println!(
        "{} partitions, {:.0} rows/s, {}x for {} min after {} min; Lambda as the template deploys it, supervisor every 60 s",
        a.partitions, a.rate, a.factor, a.minutes, a.before
    );
    println!(
        "autoscaler: taskCount {}..{}, scaleOutThreshold {} records, scaleInThreshold {}, steps +{} / -{}",
        config.task_count_min.unwrap_or(1),
        config.task_count_max.unwrap_or(1),
        config.scale_out_threshold,
        config.scale_in_threshold,
        config.scale_out_step,
        config.scale_in_step
    );
    let baseline = runs.first().map_or(0.0, |r| r.outcome.spend.dollars);
    let secs = |s: Option<f64>| s.map_or("never".to_string(), |s| format!("{s:.0} s"));
    for r in runs {
        let o = &r.outcome;
        println!("{}:", r.label);
        println!(
            "  lag max {:.1}M records, over the threshold {:.0} s, back under it {} after the burst's start; freshness mean {:.1} s; {:.1}% of the rows published by the end",
            o.max_lag / 1e6,
            r.over_secs,
            secs(r.back_under_secs),
            o.mean_freshness,
            100.0 * o.published / r.produced.max(1.0)
        );
        let changes: Vec<String> =
            o.scaling.iter().map(|e| format!("{}->{} at {:.0} s", e.from, e.to, e.t - a.before * 60.0)).collect();
        if !changes.is_empty() {
            println!(
                "  taskCount changes (from the burst's start): {}; back at taskCountMin {} after the burst's end",
                changes.join(", "),
                secs(r.scaled_in_secs)
            );
        }
        println!(
            "  spend ${:.2} ({:.0} GB-s, {} invocations, {:.0} write units, {:.0} PUTs); over the baseline ${:.2}",
            o.spend.dollars,
            o.spend.lambda_gb_secs,
            o.spend.invocations,
            o.spend.write_units,
            o.spend.s3_puts,
            o.spend.dollars - baseline
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default scenario on synthetic costs (an indexer does 250,000 rows/s of a core).
    #[test]
    fn the_autoscaler_brings_the_lag_back_under_and_scales_in_after_the_burst() {
        let costs = Costs::synthetic();
        let config: AutoScalerConfig = serde_json::from_str(DEFAULT_AUTOSCALER).expect("config");
        let spike = Spike { start: 600.0, secs: 600.0, factor: 10.0 };
        let mut s = Scenario::aws(64, 100_000.0, costs);
        s.produce_secs = 3000.0;
        s.task_groups = 1;
        s.spike = Some(spike);
        let threshold = config.scale_out_threshold as f64;
        let run = |autoscaler: Option<Autoscaling>| {
            let s = Scenario { autoscaler, ..s.clone() };
            summarise("run", Sim::new(&s).run(), &s, &spike, threshold, 1)
        };
        let fixed = run(None);
        let chained = run(Some(Autoscaling { config: config.clone(), chained: true }));
        let stepwise = run(Some(Autoscaling { config, chained: false }));
        assert_eq!(fixed.back_under_secs, None, "one group never catches up within the run");
        let (c, w) = (chained.back_under_secs.expect("caught up"), stepwise.back_under_secs.expect("caught up"));
        assert!(c < w, "a change's steps in one pass catch up sooner: {c} vs {w}");
        assert!(chained.outcome.scaling.first().is_some_and(|e| e.to > e.from), "{:?}", chained.outcome.scaling);
        assert!(
            chained.scaled_in_secs.is_some(),
            "back at taskCountMin after the burst: {:?}",
            chained.outcome.scaling
        );
        assert!((chained.outcome.published - chained.produced).abs() < 1.0, "every row published");
    }
}
