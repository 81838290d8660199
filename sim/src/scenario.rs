//! What a simulation runs: the load, the protocol's settings, AWS's limits and latencies, and
//! the per-stage costs measured by `sluice bench pipeline`.

use anyhow::{Context, Result};
use sluice_format::spec::autoscaler::AutoScalerConfig;
use sluice_report::{Fit, FunctionUse, Functions, PipelineReport};
use std::path::Path;

/// How the supervisor issues its per-group requests (plans, invocations) within a pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SupervisorMode {
    /// One request at a time: the supervisor before `supervisor/groups.rs`.
    Serial,
    /// Up to this many requests in flight (`SupervisorOptions::concurrency`).
    Concurrent(usize),
}

/// Latencies of one request, seconds (AWS, same region).
#[derive(Debug, Clone, Copy)]
pub struct Latency {
    /// Kafka ListOffsets for one partition.
    pub watermark: f64,
    /// DynamoDB TransactWriteItems.
    pub transact: f64,
    /// DynamoDB PutItem / GetItem / Query page.
    pub item: f64,
    /// Lambda Invoke (asynchronous).
    pub invoke: f64,
    /// S3 PUT.
    pub s3_put: f64,
    /// S3 GET.
    pub s3_get: f64,
}

impl Latency {
    /// Typical in-region latencies.
    pub fn aws() -> Self {
        Latency { watermark: 0.003, transact: 0.015, item: 0.006, invoke: 0.025, s3_put: 0.040, s3_get: 0.020 }
    }

    /// The local pipeline: the measured costs already hold the embedded stores' latency.
    pub fn none() -> Self {
        Latency { watermark: 0.0, transact: 0.0, item: 0.0, invoke: 0.0, s3_put: 0.0, s3_get: 0.0 }
    }
}

/// Per-stage costs on one core, measured.
#[derive(Debug, Clone, Copy)]
pub struct Costs {
    /// Indexer seconds per task (claim, consumer open, checkpoints) and per row.
    pub indexer_fixed: f64,
    /// Indexer seconds per row.
    pub indexer_per_row: f64,
    /// Merger seconds per task.
    pub merger_fixed: f64,
    /// Merger seconds per row.
    pub merger_per_row: f64,
    /// Supervisor seconds per pass beside its requests (client set-up, items, planning); the
    /// local pass's watermark reads are in it too.
    pub supervisor_pass: f64,
    /// DynamoDB write units per task (indexer + merger + its plan), fixed part.
    pub write_units_per_task: f64,
    /// DynamoDB write units per row.
    pub write_units_per_row: f64,
    /// Hydrants per row (1 / rows per hydrant).
    pub hydrants_per_row: f64,
}

fn indexer(f: &Functions) -> &FunctionUse {
    &f.indexer
}

fn merger(f: &Functions) -> &FunctionUse {
    &f.merger
}

fn secs(u: &FunctionUse) -> f64 {
    u.secs
}

fn write_units(u: &FunctionUse) -> f64 {
    u.meters.write_units
}

/// `fixed x invocations + per_row x rows` of a function's figure through the report's
/// throughput and steady phases.
fn fit(r: &PipelineReport, function: fn(&Functions) -> &FunctionUse, value: fn(&FunctionUse) -> f64) -> Fit {
    let obs = |functions: &Functions, rows: u64| {
        let f = function(functions);
        (f.invocations as f64, rows as f64, value(f))
    };
    Fit::through(obs(&r.throughput.functions, r.throughput.rows), obs(&r.steady.functions, r.steady.rows))
}

impl Costs {
    /// Synthetic costs for the simulation's tests: an indexer does 250,000 rows/s of a core.
    #[cfg(test)]
    pub fn synthetic() -> Self {
        Costs {
            indexer_fixed: 1.0,
            indexer_per_row: 4e-6,
            merger_fixed: 1.0,
            merger_per_row: 1e-6,
            supervisor_pass: 0.2,
            write_units_per_task: 20.0,
            write_units_per_row: 1e-5,
            hydrants_per_row: 1e-5,
        }
    }

    /// Reads the costs from a `sluice bench pipeline --out` report.
    pub fn from_report(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
        let r: PipelineReport =
            serde_json::from_str(&text).with_context(|| format!("{} is not a pipeline report", path.display()))?;
        let (indexer_secs, merger_secs) = (fit(&r, indexer, secs), fit(&r, merger, secs));
        let (indexer_wu, merger_wu) = (fit(&r, indexer, write_units), fit(&r, merger, write_units));
        let sup = &r.throughput.functions.supervisor;
        let passes = (sup.invocations as f64).max(1.0);
        let rows = (r.throughput.rows as f64).max(1.0);
        Ok(Costs {
            indexer_fixed: indexer_secs.fixed,
            indexer_per_row: indexer_secs.per_row,
            merger_fixed: merger_secs.fixed,
            merger_per_row: merger_secs.per_row,
            supervisor_pass: sup.secs / passes,
            write_units_per_task: indexer_wu.fixed + merger_wu.fixed + 6.0,
            write_units_per_row: indexer_wu.per_row + merger_wu.per_row,
            hydrants_per_row: r.throughput.hydrants as f64 / rows,
        })
    }
}

/// A burst of production: `factor` times the rate from `start` for `secs` seconds.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Spike {
    /// Seconds since the start.
    pub start: f64,
    /// How long it lasts, seconds.
    pub secs: f64,
    /// How many times the base rate.
    pub factor: f64,
}

/// The lag-based autoscaler a simulation runs, and how its changes take effect.
#[derive(Debug, Clone)]
pub struct Autoscaling {
    /// Its settings (the protocol's own type and decision).
    pub config: AutoScalerConfig,
    /// As the supervisor runs it: decided before planning, a change's steps taken in a row
    /// within a pass. False: decided after planning, one step per pass (the earlier supervisor).
    pub chained: bool,
}

/// One simulation's inputs.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Kafka partitions.
    pub partitions: u32,
    /// Produce rate, rows/s over all partitions.
    pub rate: f64,
    /// Seconds of production.
    pub produce_secs: f64,
    /// Seconds simulated after production ends.
    pub drain_secs: f64,
    /// Supervisor period, seconds.
    pub period: f64,
    /// `taskCount`: partition groups.
    pub task_groups: u32,
    /// `maxRecordsPerTask`.
    pub max_records_per_task: f64,
    /// Unpublished tasks per group the supervisor plans ahead.
    pub max_in_flight: usize,
    /// Lambda concurrent executions available to the indexer and merger.
    pub lambda_concurrency: usize,
    /// Lambda cold start (sandbox and initialisation), seconds.
    pub cold_start: f64,
    /// How long an idle Lambda sandbox stays warm, seconds.
    pub keep_warm: f64,
    /// Share of a core of each function (indexer, merger, supervisor).
    pub cpu: (f64, f64, f64),
    /// The local pipeline: one thread runs a pass, then every queued job, then waits.
    pub local: bool,
    /// How the supervisor issues its requests.
    pub supervisor: SupervisorMode,
    /// Request latencies.
    pub latency: Latency,
    /// DynamoDB write units per second of one partition key (a datasource's, or a group's).
    pub ddb_partition_wcu: f64,
    /// S3 PUT requests per second per prefix.
    pub s3_prefix_puts: f64,
    /// Lambda's time limit, seconds.
    pub task_timeout: f64,
    /// Measured costs.
    pub costs: Costs,
    /// A burst of production, if any.
    pub spike: Option<Spike>,
    /// The autoscaler, if the spec enables it.
    pub autoscaler: Option<Autoscaling>,
}

impl Scenario {
    /// Sluice on AWS as `template.yaml` deploys it: indexer and merger at 1,024 MB
    /// (0.58 vCPU), supervisor at 512 MB, one-minute schedule, the default account
    /// concurrency of 1,000.
    pub fn aws(partitions: u32, rate: f64, costs: Costs) -> Self {
        let vcpu = |mb: f64| (mb / 1769.0_f64).min(1.0);
        Scenario {
            partitions,
            rate,
            produce_secs: 1800.0,
            drain_secs: 300.0,
            period: 60.0,
            task_groups: partitions,
            max_records_per_task: 2_000_000.0,
            max_in_flight: 4,
            lambda_concurrency: 1000,
            cold_start: 0.4,
            keep_warm: 420.0,
            cpu: (vcpu(1024.0), vcpu(1024.0), vcpu(512.0)),
            local: false,
            supervisor: SupervisorMode::Serial,
            latency: Latency::aws(),
            ddb_partition_wcu: 1000.0,
            s3_prefix_puts: 3500.0,
            task_timeout: 900.0,
            costs,
            spike: None,
            autoscaler: None,
        }
    }

    /// The local pipeline of `sluice bench pipeline`'s steady phase.
    pub fn local(partitions: u32, rate: f64, produce_secs: f64, period: f64, costs: Costs) -> Self {
        Scenario {
            partitions,
            rate,
            produce_secs,
            drain_secs: 60.0,
            period,
            task_groups: 1,
            max_records_per_task: 2_000_000.0,
            max_in_flight: 4,
            lambda_concurrency: 1,
            cold_start: 0.0,
            keep_warm: f64::INFINITY,
            cpu: (1.0, 1.0, 1.0),
            local: true,
            supervisor: SupervisorMode::Serial,
            latency: Latency::none(),
            ddb_partition_wcu: f64::INFINITY,
            s3_prefix_puts: f64::INFINITY,
            task_timeout: f64::INFINITY,
            costs,
            spike: None,
            autoscaler: None,
        }
    }

    /// Rows produced (over every partition) by `t`.
    pub fn produced(&self, t: f64) -> f64 {
        let t = t.clamp(0.0, self.produce_secs);
        let extra = self.spike.map_or(0.0, |s| {
            let during = (t.min(s.start + s.secs) - s.start).max(0.0);
            (s.factor - 1.0) * self.rate * during
        });
        self.rate * t + extra
    }

    /// When the `rows`-th row was produced: the inverse of [`Scenario::produced`].
    pub fn time_of(&self, rows: f64) -> f64 {
        let (mut lo, mut hi) = (0.0, self.produce_secs);
        for _ in 0..60 {
            let mid = (lo + hi) / 2.0;
            if self.produced(mid) < rows {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spike_multiplies_the_rate_for_its_length() {
        let costs = Costs {
            indexer_fixed: 0.0,
            indexer_per_row: 0.0,
            merger_fixed: 0.0,
            merger_per_row: 0.0,
            supervisor_pass: 0.0,
            write_units_per_task: 0.0,
            write_units_per_row: 0.0,
            hydrants_per_row: 0.0,
        };
        let mut s = Scenario::aws(4, 100.0, costs);
        s.spike = Some(Spike { start: 60.0, secs: 60.0, factor: 10.0 });
        assert_eq!(s.produced(60.0), 6_000.0);
        assert_eq!(s.produced(120.0), 66_000.0);
        assert_eq!(s.produced(180.0), 72_000.0);
        assert!((s.time_of(36_000.0) - 90.0).abs() < 1e-6);
    }
}
