//! `sluice supervisor autoscaler`: what the lag-based autoscaler of a datasource would decide
//! now and why, from the lag samples its passes kept or, as a dry run, from lags given.

use anyhow::{bail, Result};
use sluice_format::spec::load_spec_value;
use sluice_format::time::{format_iso, now_ms};
use sluice_pipeline::datasource;
use sluice_pipeline::supervisor::{read_autoscaler, simulate_autoscaler, status, AutoscalerStatus};
use sluice_store::metadata::MetadataStore;

/// Most lag samples a dry run takes.
const MAX_GIVEN_LAGS: usize = 10_000;

/// Prints the autoscaler's status of `name`, its decision over `lags` when some are given.
pub async fn run(meta: &dyn MetadataStore, name: &str, lags: &[u64], json: bool) -> Result<()> {
    if lags.len() > MAX_GIVEN_LAGS {
        bail!("at most {MAX_GIVEN_LAGS} lag samples");
    }
    let (item, _) = datasource::load(meta, name).await?;
    let spec = load_spec_value(item.spec)?.spec;
    let Some(config) = spec.io.auto_scaler.as_ref() else {
        bail!("{name}: ioConfig.autoScalerConfig does not enable the autoscaler (enableTaskAutoScaler)");
    };
    let st = status(meta, name).await?;
    let kept = read_autoscaler(meta, name).await?;
    let task_count = st.task_count.unwrap_or(spec.io.task_count);
    let given = (!lags.is_empty()).then_some(lags);
    let sim = simulate_autoscaler(config, kept.as_ref(), given, task_count, st.partitions.len(), now_ms());
    if json {
        println!("{}", serde_json::to_string_pretty(&sim)?);
    } else {
        print(name, &sim, given.is_some());
    }
    Ok(())
}

/// The status as a few lines (also under `sluice supervisor status`).
pub fn print(name: &str, s: &AutoscalerStatus, dry_run: bool) {
    let source = if dry_run { "the lags given" } else { "the samples kept" };
    println!("{name}: autoscaler, {} task groups (from {} to {})", s.task_count, s.task_count_min, s.task_count_max);
    println!(
        "  {} samples in the window ({source}): latest lag {}, largest {}; {:.0}% at or above scaleOutThreshold, {:.0}% at or below scaleInThreshold",
        s.samples,
        s.latest_lag.map_or("-".into(), |l| l.to_string()),
        s.max_lag,
        s.fraction_out * 100.0,
        s.fraction_in * 100.0
    );
    match s.desired {
        Some(to) => {
            println!("  decision: {} -> {to} task groups, at {} or after", s.task_count, format_iso(s.next_decision_ms))
        }
        None => println!("  decision: keep {} task groups", s.task_count),
    }
    for c in &s.changes {
        println!(
            "  changed {} -> {} at {} (largest lag {} over {} samples)",
            c.from,
            c.to,
            format_iso(c.at),
            c.max_lag,
            c.samples
        );
    }
}
