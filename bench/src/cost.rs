//! `sluice bench cost`: the monthly AWS cost of Sluice's ingestion at steady rates, computed
//! from a `bench pipeline` report, beside Druid's Kafka tasks for the same rates; the whole
//! deployment's bill follows (`cost_bill`).
//!
//! Every per-function figure (seconds, DynamoDB units, S3 requests) is fitted as
//! `fixed per invocation + per row` from the report's two phases: the throughput phase (few
//! large tasks) and the steady phase (many small ones). Then, at a rate of R rows/s:
//!
//! - partitions P = max(4, R / 1,000); the supervisor runs every 60 s (43,200 passes a month)
//!   and a pass costs `fixed + per partition x P + per group x G`, fitted by least squares
//!   through runs with different partition and group counts (`--scale-reports`);
//! - a function with M MB of memory gets min(1, M / 1,769) of a vCPU, and its measured
//!   single-core seconds stretch by the inverse;
//! - task groups G = min(P, ceil(2 R x indexer seconds per row)): each indexer is busy at most
//!   half the period (at a spilling task's seconds per row when its tasks spill); each group
//!   plans one task per period, of R x 60 / G rows, which
//!   persists a hydrant per 150,000 rows (`maxRowsInMemory`), spilled, and checkpoints one
//!   merged hydrant when `maxRowsPerSegment` nears or the spill holds its 96 MiB (rows at the
//!   hydrant bytes per row measured), which the merger publishes as a segment of its own (a
//!   quarter of `maxRowsPerSegment` or more) or merges; a task that spills is priced per row
//!   from a measured task of that shape, and each checkpointed hydrant beyond the first costs
//!   what [`super::cost_hydrants`] measured;
//! - Lambda = GB-seconds x price + requests x price; DynamoDB on demand; S3 requests.
//!
//! The Druid cluster is sized by Druid's clustered-deployment guidance: one master server
//! (Coordinator, Overlord, ZooKeeper), a PostgreSQL metadata store, and MiddleManagers with one
//! core per task slot and one for the process; one Kafka indexing task per core, indexing at
//! the indexer-only rate measured here (the same per-core rate as Sluice's indexer), replicas 1.

use super::cost_figures::Figures;
use super::cost_hydrants::{indexer_core_secs, ExtraHydrants, ExtraPersists, TaskShape, MAX_ROWS_PER_SEGMENT};
use super::cost_supervisor::SupervisorModel;
use super::prices;
use anyhow::{Context, Result};
use clap::Args;
use sluice_format::spec::{DEFAULT_MAX_ROWS_IN_MEMORY, DEFAULT_MAX_TOTAL_ROWS};
use sluice_pipeline::indexer::SPILL_BYTES;
use sluice_report::{Fit, FunctionUse, PipelineReport};
use std::path::PathBuf;

/// The rates of the table, rows/s.
pub const RATES: [f64; 4] = [1_000.0, 10_000.0, 100_000.0, 1_000_000.0];
pub(super) const PERIOD_SECS: f64 = 60.0;
pub(super) const SECONDS_PER_MONTH: f64 = prices::HOURS_PER_MONTH * 3600.0;
/// Memory of the functions in `template.yaml` (indexer: the `IndexerMemorySize` default).
pub(super) const SUPERVISOR_MB: f64 = 512.0;
pub(super) const INDEXER_MB: f64 = 1024.0;
pub(super) const MERGER_MB: f64 = 1024.0;
/// Cores of an m5.2xlarge, and task slots per MiddleManager on it.
const DRUID_SLOTS_PER_SERVER: f64 = 7.0;

/// Options of `bench cost`.
#[derive(Args)]
pub struct CostArgs {
    /// A `bench pipeline --out` report.
    #[arg(long, default_value = "bench/results/pipeline.json")]
    pub(super) report: PathBuf,
    /// `bench pipeline --out` reports with other partition and group counts (`--partitions`,
    /// `--task-count`): the supervisor's pass is fitted per partition and per group through
    /// them and `--report`.
    #[arg(long, value_delimiter = ',', default_values = ["bench/results/pipeline-16p.json", "bench/results/pipeline-16p-4g.json"])]
    pub(super) scale_reports: Vec<PathBuf>,
    /// A `bench pipeline --out` report of the same records whose tasks persisted several
    /// times and checkpointed once (`--max-rows-in-memory`): what each persist beyond a
    /// task's first costs.
    #[arg(long, default_value = "bench/results/pipeline-8p.json")]
    pub(super) persists_report: PathBuf,
    /// A `bench pipeline --out` report of one task of the shape priced at high rates
    /// (`--rows 2000000 --partitions 128 --wave 15625`: persists of about 150,000 rows, one
    /// checkpoint): the spill's merge per row at the sizes priced, and a check of the model
    /// against a measured task.
    #[arg(long, default_value = "bench/results/pipeline-2m.json")]
    pub(super) sized_report: PathBuf,
    /// A `bench pipeline --out` report of the same persists checkpointed several times
    /// (`--max-rows-in-memory`, `--max-total-rows`): what each checkpointed hydrant beyond a
    /// task's first costs.
    #[arg(long, default_value = "bench/results/pipeline-8p-4c.json")]
    pub(super) checkpoints_report: PathBuf,
    /// A `bench pipeline --out` report of the same checkpoints, each published as its own
    /// segment (`--max-rows-per-segment` at most four times `--max-total-rows`): what each
    /// hydrant the merger publishes as it is costs.
    #[arg(long, default_value = "bench/results/pipeline-8p-4s.json")]
    pub(super) segments_report: PathBuf,
    /// The `maxRowsInMemory` priced: a task persists a hydrant per this many rows (Druid's
    /// default; a larger one needs the memory, see `bench indexer`'s memory passes).
    #[arg(long, default_value_t = DEFAULT_MAX_ROWS_IN_MEMORY, value_parser = clap::value_parser!(u64).range(1_000..))]
    pub(super) max_rows_in_memory: u64,
    /// The `maxTotalRows` priced: a task checkpoints when the rows since its last checkpoint
    /// near this, `maxRowsPerSegment` (5,000,000) or the spill's bytes (`maxRowsInMemory` or
    /// less: a checkpoint per persist, as before tasks spilled).
    #[arg(long, default_value_t = DEFAULT_MAX_TOTAL_ROWS, value_parser = clap::value_parser!(u64).range(1_000..))]
    pub(super) max_total_rows: u64,
    /// `bench pipeline --realtime --out` reports: the cost of real-time tasks beside, a table
    /// for each (checkpoints every second, every 5 seconds).
    #[arg(long, value_delimiter = ',', default_values = ["bench/results/pipeline-realtime.json", "bench/results/pipeline-realtime-5s.json"])]
    pub(super) realtime_reports: Vec<PathBuf>,
    /// A `bench fragments --out` report of small segments (the default 1,440 a day): with
    /// `--large-compaction-report`, compaction's cost per segment and per row.
    #[arg(long, default_value = "bench/results/compaction.json")]
    pub(super) compaction_report: PathBuf,
    /// A `bench fragments --out` report of the same rows in larger segments (`--per-chunk 7`):
    /// with `--compaction-report`, compaction's cost per segment and per row.
    #[arg(long, default_value = "bench/results/compaction-57k.json")]
    pub(super) large_compaction_report: PathBuf,
    /// A `bench fanout` output: the query load's seconds per row (its one-function column).
    #[arg(long, default_value = "bench/results/fanout-20m.txt")]
    pub(super) fanout_report: PathBuf,
    /// The whole bill's retention, days.
    #[arg(long, default_value_t = 30.0)]
    pub(super) retention_days: f64,
    /// The whole bill's dashboard queries a minute.
    #[arg(long, default_value_t = 10.0)]
    pub(super) queries_per_minute: f64,
    /// Minutes of the latest rows each dashboard query reads.
    #[arg(long, default_value_t = 60.0)]
    pub(super) query_window_minutes: f64,
    /// Minutes between compaction passes (`CompactionScheduleExpression` in `template.yaml`).
    #[arg(long, default_value_t = 30.0)]
    pub(super) compaction_every_minutes: f64,
    /// Hours of the latest rows compaction leaves as they are (`skipOffsetFromLatest`'s
    /// default: P1D).
    #[arg(long, default_value_t = 24.0)]
    pub(super) skip_offset_hours: f64,
    /// Writes the whole bill's plot here (SVG; `docs/cost.svg` is the committed one).
    #[arg(long)]
    pub(super) plot: Option<PathBuf>,
}

/// Reads a `bench pipeline --out` report.
pub(super) fn read_report(path: &std::path::Path) -> Result<PipelineReport> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not a pipeline report", path.display()))
}

impl CostArgs {
    /// The defaults, their paths under the repository root (the committed reports).
    #[cfg(test)]
    pub(super) fn committed() -> Self {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            cost: CostArgs,
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut args = Cli::parse_from(["cost"]).cost;
        for path in [
            &mut args.report,
            &mut args.persists_report,
            &mut args.sized_report,
            &mut args.checkpoints_report,
            &mut args.segments_report,
            &mut args.compaction_report,
            &mut args.large_compaction_report,
            &mut args.fanout_report,
        ] {
            *path = root.join(&path);
        }
        args.scale_reports = args.scale_reports.iter().map(|p| root.join(p)).collect();
        args.realtime_reports = args.realtime_reports.iter().map(|p| root.join(p)).collect();
        args
    }

    /// The model of the reports named.
    pub(super) fn model(&self) -> Result<CostModel> {
        let scale = self.scale_reports.iter().map(|p| read_report(p)).collect::<Result<Vec<_>>>()?;
        let spilled = read_report(&self.persists_report)?;
        let checkpointed = read_report(&self.checkpoints_report)?;
        let segmented = read_report(&self.segments_report)?;
        let sized = read_report(&self.sized_report)?;
        let runs = Runs {
            report: &read_report(&self.report)?,
            scale: &scale,
            spilled: &spilled,
            sized: &sized,
            checkpointed: &checkpointed,
            segmented: &segmented,
        };
        let tuning = (self.max_rows_in_memory as f64, self.max_total_rows as f64);
        CostModel::from_reports(runs, tuning).with_context(|| {
            format!(
                "{}, {}, {}, {} and {}",
                self.report.display(),
                self.persists_report.display(),
                self.sized_report.display(),
                self.checkpoints_report.display(),
                self.segments_report.display()
            )
        })
    }
}

/// Runs `bench cost`: the planned mode's table.
pub fn run(args: &CostArgs) -> Result<()> {
    print!("{}", markdown(&args.model()?));
    Ok(())
}

/// Rows a spill holds before its bytes make a checkpoint due, at the hydrant bytes per row
/// the throughput phase's tasks uploaded.
fn spill_rows(t: &sluice_report::Throughput) -> f64 {
    let bytes_per_row = t.functions.indexer.meters.bytes_put as f64 / t.rows.max(1) as f64;
    SPILL_BYTES as f64 / bytes_per_row.max(1.0)
}

/// The fitted figures of one function: fixed per invocation plus per row.
pub type FunctionModel = Figures<Fit>;

impl FunctionModel {
    /// Fits each figure through the throughput and the steady phase: (use, rows) each.
    fn fit(throughput: (&FunctionUse, u64), steady: (&FunctionUse, u64)) -> Self {
        let obs = |u: &FunctionUse, rows: u64, v: f64| (u.invocations as f64, rows as f64, v);
        let (t, tr, s, sr) = (throughput.0, throughput.1, steady.0, steady.1);
        Figures::from_use(|get| Fit::through(obs(t, tr, get(t)), obs(s, sr, get(s))))
    }

    /// The fitted figures of one invocation over `rows` rows.
    pub(super) fn at(&self, rows: f64) -> Figures {
        self.map(|f| f.at(rows))
    }
}

/// The `bench pipeline` reports a model is fitted to.
pub struct Runs<'r> {
    /// The model's report: tasks persisting and checkpointing once.
    pub report: &'r PipelineReport,
    /// Runs with other partition and group counts.
    pub scale: &'r [PipelineReport],
    /// The report's tasks persisting several times, checkpointing once.
    pub spilled: &'r PipelineReport,
    /// A task of the shape priced at high rates.
    pub sized: &'r PipelineReport,
    /// The same persists, checkpointed several times.
    pub checkpointed: &'r PipelineReport,
    /// The same checkpoints, each published as its own segment.
    pub segmented: &'r PipelineReport,
}

/// The model: the functions' fits, the supervisor's pass, a persist's and a hydrant's cost.
#[derive(Debug, Clone, Copy)]
pub struct CostModel {
    pub(super) indexer: FunctionModel,
    pub(super) merger: FunctionModel,
    pub(super) supervisor: SupervisorModel,
    pub(super) persists: ExtraPersists,
    pub(super) hydrants: ExtraHydrants,
    /// Rows per persist (`maxRowsInMemory`).
    pub(super) rows_per_persist: f64,
    /// Rows a checkpoint may hold (`min(maxRowsPerSegment, maxTotalRows)`).
    pub(super) rows_per_checkpoint: f64,
    pub(super) druid_rows_per_task: f64,
    /// The sized run's task, to check the model against.
    pub(super) sized: MeasuredTask,
}

/// A task a report measured: its rows, persists and hydrants, and the indexer's seconds.
#[derive(Debug, Clone, Copy)]
pub struct MeasuredTask {
    rows: f64,
    persists: f64,
    hydrants: f64,
    /// The indexer's seconds, as the model's fits count them (the function's).
    secs: f64,
    /// The indexer's stages summed (a persist beside reading counted as well).
    stage_secs: f64,
}

impl MeasuredTask {
    /// The first task of a report's throughput phase, all its tasks taken as alike.
    fn of(report: &PipelineReport) -> Self {
        let t = &report.throughput;
        let n = t.tasks.max(1) as f64;
        MeasuredTask {
            rows: t.rows as f64 / n,
            persists: t.persists as f64 / n,
            hydrants: t.hydrants as f64 / n,
            secs: t.functions.indexer.secs / n,
            stage_secs: indexer_core_secs(t),
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MonthlyCost {
    /// Rows/s.
    pub rate: f64,
    /// Kafka partitions.
    pub partitions: f64,
    /// Task groups.
    pub groups: f64,
    /// Lambda duration and requests.
    pub lambda: f64,
    /// DynamoDB requests.
    pub dynamodb: f64,
    /// S3 requests.
    pub s3: f64,
    /// Druid servers: MiddleManagers (plus one master server and the metadata database).
    pub druid_middle_managers: f64,
    /// Druid's monthly cost.
    pub druid: f64,
}

impl MonthlyCost {
    /// Sluice's monthly total.
    pub fn sluice(&self) -> f64 {
        self.lambda + self.dynamodb + self.s3
    }
}

pub(super) fn vcpu(mb: f64) -> f64 {
    (mb / prices::LAMBDA_MB_PER_VCPU).min(1.0)
}

impl CostModel {
    /// Fits the model to `runs`: the functions to the report, the supervisor's pass through
    /// it and the scale runs, a persist's and a checkpointed hydrant's cost through the
    /// spilled and checkpointed runs; pricing a persist per `rows_per_persist` rows and
    /// checkpoints as `max_total_rows` and the defaults say.
    pub fn from_reports(runs: Runs<'_>, (rows_per_persist, max_total_rows): (f64, f64)) -> Result<Self> {
        let r = runs.report;
        let (t, s) = (&r.throughput, &r.steady);
        let passes: Vec<&PipelineReport> = std::iter::once(r).chain(runs.scale).collect();
        let indexer = FunctionModel::fit((&t.functions.indexer, t.rows), (&s.functions.indexer, s.rows));
        Ok(CostModel {
            indexer,
            merger: FunctionModel::fit((&t.functions.merger, t.rows), (&s.functions.merger, s.rows)),
            supervisor: SupervisorModel::fit(&passes),
            persists: ExtraPersists::fit(r, runs.spilled, runs.sized, &indexer.secs)?,
            hydrants: ExtraHydrants::fit(runs.spilled, runs.checkpointed, runs.segmented)?,
            rows_per_persist,
            rows_per_checkpoint: MAX_ROWS_PER_SEGMENT.min(max_total_rows).min(spill_rows(t)),
            druid_rows_per_task: r.indexer_only_rows_per_sec,
            sized: MeasuredTask::of(runs.sized),
        })
    }

    /// The indexer's seconds the model prices for the sized run's task.
    #[cfg(test)]
    pub(super) fn sized_secs(&self) -> f64 {
        let t = &self.sized;
        self.task(t.rows, TaskShape::measured(t.rows, t.persists, t.hydrants)).0.secs
    }

    /// The indexer's and the merger's figures for a task of `rows` rows of `shape`.
    pub(super) fn task(&self, rows: f64, shape: TaskShape) -> (Figures, Figures) {
        let (indexer, merger) = shape.added(rows, &self.persists, &self.hydrants);
        let add = |a: f64, b: f64| a + b;
        (self.indexer.at(rows).zip(indexer, add), self.merger.at(rows).zip(merger, add))
    }

    /// How a planned task of `rows` rows persists and checkpoints.
    pub(super) fn planned(&self, rows: f64) -> TaskShape {
        TaskShape::planned(rows, self.rows_per_persist, self.rows_per_checkpoint)
    }

    /// The model of the committed reports (`bench/results`), as `bench cost` reads them.
    #[cfg(test)]
    pub(super) fn committed() -> Self {
        CostArgs::committed().model().expect("the committed reports")
    }

    /// The monthly cost at `rate` rows/s.
    pub fn monthly(&self, rate: f64) -> MonthlyCost {
        let partitions = (rate / 1000.0).max(4.0).ceil();
        let idx_cpu = vcpu(INDEXER_MB);
        let groups_at = |per_row: f64| (2.0 * rate * per_row / idx_cpu).ceil().clamp(1.0, partitions);
        let mut groups = groups_at(self.indexer.secs.per_row);
        if self.planned(rate * PERIOD_SECS / groups).spill_merged {
            // Tasks that spill take longer per row: groups enough for them to stay half idle.
            groups = groups_at(self.indexer.secs.per_row + self.persists.spilling_secs_per_row);
        }
        let passes = SECONDS_PER_MONTH / PERIOD_SECS;
        let tasks = groups * passes;
        let rows_per_task = rate * PERIOD_SECS / groups;
        let gb_s = |secs: f64, mb: f64| secs / vcpu(mb) * mb / 1024.0;
        let pass = self.supervisor.pass(partitions, groups);
        let (indexer, merger) = self.task(rows_per_task, self.planned(rows_per_task));
        let gb_seconds = gb_s(tasks * indexer.secs, INDEXER_MB)
            + gb_s(tasks * merger.secs, MERGER_MB)
            + gb_s(passes * pass.secs, SUPERVISOR_MB);
        let requests = passes + 2.0 * tasks;
        let lambda = gb_seconds * prices::LAMBDA_GB_SECOND + requests / 1e6 * prices::LAMBDA_MILLION_REQUESTS;
        let sum = |f: fn(&Figures) -> f64| tasks * (f(&indexer) + f(&merger)) + passes * f(&pass);
        let dynamodb = sum(|f| f.write_units) / 1e6 * prices::DYNAMODB_MILLION_WRITES
            + sum(|f| f.read_units) / 1e6 * prices::DYNAMODB_MILLION_READS;
        let s3 =
            sum(|f| f.puts) / 1000.0 * prices::S3_THOUSAND_PUTS + sum(|f| f.gets) / 1000.0 * prices::S3_THOUSAND_GETS;
        let druid_tasks = (rate / self.druid_rows_per_task).ceil();
        let druid_middle_managers = (druid_tasks / DRUID_SLOTS_PER_SERVER).ceil();
        let druid = ((1.0 + druid_middle_managers) * prices::M5_2XLARGE_HOUR + prices::RDS_T3_MEDIUM_HOUR)
            * prices::HOURS_PER_MONTH;
        MonthlyCost { rate, partitions, groups, lambda, dynamodb, s3, druid_middle_managers, druid }
    }
}

pub(super) fn dollars(x: f64) -> String {
    if x < 10.0 {
        format!("${x:.2}")
    } else {
        let whole = format!("{:.0}", x);
        let mut out = String::new();
        for (i, c) in whole.chars().enumerate() {
            if i > 0 && (whole.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        format!("${out}")
    }
}

/// The cost table and the per-million-rows figures, as Markdown.
pub fn markdown(model: &CostModel) -> String {
    let mut out = String::new();
    let (sup, wu) = (&model.supervisor.secs, &model.supervisor.write_units);
    out.push_str(&format!(
        "Prices: {}. maxRowsInMemory {}. Measured: indexer {:.3} µs/row + {:.3} s/task, merger {:.3} µs/row + {:.3} s/task (one core); supervisor pass {:.4} s + {:.5} s/partition + {:.4} s/group, {:.2} + {:.3}/partition + {:.2}/group write units; Druid task {:.0} rows/s/core.\n\n",
        prices::SOURCE,
        model.rows_per_persist,
        model.indexer.secs.per_row * 1e6,
        model.indexer.secs.fixed,
        model.merger.secs.per_row * 1e6,
        model.merger.secs.fixed,
        sup.fixed,
        sup.per_partition,
        sup.per_group,
        wu.fixed,
        wu.per_partition,
        wu.per_group,
        model.druid_rows_per_task
    ));
    out.push_str("| rows/s | partitions | task groups | Lambda | DynamoDB | S3 requests | Sluice / month | Druid MiddleManagers | Druid / month | Sluice / Druid |\n");
    out.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for rate in RATES {
        let c = model.monthly(rate);
        out.push_str(&format!(
            "| {:.0} | {:.0} | {:.0} | {} | {} | {} | {} | {:.0} | {} | {:.0}% |\n",
            c.rate,
            c.partitions,
            c.groups,
            dollars(c.lambda),
            dollars(c.dynamodb),
            dollars(c.s3),
            dollars(c.sluice()),
            c.druid_middle_managers,
            dollars(c.druid),
            100.0 * c.sluice() / c.druid
        ));
    }
    let t = &model.sized;
    out.push_str(&format!(
        "\nTasks that spill are priced per row from a measured task of the shape priced at high rates ({:.0} rows, {:.0} persists, {:.0} checkpointed hydrant{}): its stages summed took {:.2} s ({:.2} s of wall time, a persist beside reading on a second core), {:.3} µs per row against the base fit's {:.3}.\n",
        t.rows,
        t.persists,
        t.hydrants,
        if t.hydrants == 1.0 { "" } else { "s" },
        t.stage_secs,
        t.secs,
        (t.stage_secs - model.indexer.secs.fixed) / t.rows * 1e6,
        model.indexer.secs.per_row * 1e6
    ));
    let top = model.monthly(RATES[RATES.len() - 1]);
    out.push_str(&format!(
        "\nLambda at {:.0} rows/s on x86_64 instead: {} a month ({:.2}x arm64's {}).\n",
        top.rate,
        dollars(top.lambda * prices::LAMBDA_X86_64_GB_SECOND / prices::LAMBDA_GB_SECOND),
        prices::LAMBDA_X86_64_GB_SECOND / prices::LAMBDA_GB_SECOND,
        dollars(top.lambda)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost_hydrants::FitError;

    #[test]
    fn the_documented_table_is_recomputed_from_the_committed_benchmark_reports() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let readme = std::fs::read_to_string(root.join("docs/benchmarks.md")).expect("docs/benchmarks.md");
        let table = markdown(&CostModel::committed());
        let (begin, end) = ("<!-- cost-table:begin -->\n", "<!-- cost-table:end -->");
        let start = readme.find(begin).expect("docs/benchmarks.md cost-table:begin marker") + begin.len();
        let stop = readme[start..].find(end).expect("docs/benchmarks.md cost-table:end marker") + start;
        assert_eq!(
            &readme[start..stop],
            table,
            "the cost table of docs/benchmarks.md differs from `sluice bench cost` on bench/results"
        );
    }

    #[test]
    fn a_spilling_task_is_priced_from_a_measured_task_of_the_size_priced() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
        let read = |name: &str| read_report(&dir.join(name)).expect(name);
        let (one, spilled, sized) = (read("pipeline.json"), read("pipeline-8p.json"), read("pipeline-2m.json"));
        let model = CostModel::committed();
        let base = model.indexer.secs;
        let fit = ExtraPersists::fit(&one, &spilled, &sized, &base).expect("the committed runs");
        // A run that merged no spill, or only persists of 10,000 rows, does not price it.
        for wrong in [&one, &spilled] {
            let e = ExtraPersists::fit(&one, &spilled, wrong, &base).expect_err("not of the size priced");
            assert!(matches!(e, FitError::NoSizedSpill { .. }), "{e}");
        }
        // The sized task itself is priced at its stages summed (when they cost more per row
        // than the base fit, as its larger indexes and its persists and merge do).
        let t = &sized.throughput;
        let core = indexer_core_secs(t);
        assert!(fit.spilling_secs_per_row > 0.0, "{fit:?}");
        assert!(
            (base.fixed + base.per_row * t.rows as f64 + fit.spilling_secs_per_row * t.rows as f64 - core).abs() < 1e-9
        );
        let priced = model.sized_secs();
        let extra_hydrants = model.hydrants.indexer.secs * (t.hydrants as f64 - 1.0);
        assert!((priced - core - extra_hydrants).abs() < 1e-6, "{priced} against {core}");
    }

    #[test]
    fn cost_grows_with_rate_and_druid_needs_more_servers() {
        let model = CostModel::committed();
        let costs: Vec<MonthlyCost> = RATES.iter().map(|&r| model.monthly(r)).collect();
        for pair in costs.windows(2) {
            assert!(pair[1].sluice() > pair[0].sluice(), "{pair:?}");
            assert!(pair[1].druid >= pair[0].druid, "{pair:?}");
        }
    }

    #[test]
    fn persists_cost_lambda_time_and_checkpoints_cost_requests_at_high_rates() {
        let model = CostModel::committed();
        let fewer_persists = CostModel { rows_per_persist: 1_000_000.0, ..model };
        let (a, b) = (model.monthly(1_000_000.0), fewer_persists.monthly(1_000_000.0));
        // Persists of 1M rows fill a checkpoint of the spill's ~2.07M rows as well (2M) as
        // persists of 150,000 do (1.95M): no more checkpoints, so no more requests.
        assert!(b.lambda < a.lambda && b.s3 <= a.s3 && b.dynamodb <= a.dynamodb, "{a:?} {b:?}");
        // A checkpoint per persist, as before spilling: the requests of every hydrant.
        let every_persist = CostModel { rows_per_checkpoint: 150_000.0, ..model };
        let c = every_persist.monthly(1_000_000.0);
        assert!(c.s3 > 5.0 * a.s3 && c.dynamodb > 2.0 * a.dynamodb, "{a:?} {c:?}");
        // A task smaller than any of them persists and checkpoints once: the same bill.
        assert_eq!(model.monthly(1_000.0), fewer_persists.monthly(1_000.0));
        assert_eq!(model.monthly(1_000.0), every_persist.monthly(1_000.0));
    }

    #[test]
    fn a_supervisor_pass_costs_more_with_more_partitions_and_groups() {
        let model = CostModel::committed();
        let (small, wide, grouped) = (
            model.supervisor.pass(4.0, 1.0),
            model.supervisor.pass(1_000.0, 1.0),
            model.supervisor.pass(1_000.0, 14.0),
        );
        // The committed runs write more units with more partitions and with more groups (each
        // group's plan is a transaction): both parts of the fit are kept, and they add up.
        assert!(wide.write_units > small.write_units && grouped.write_units > wide.write_units, "{model:?}");
        let per_group = (grouped.write_units - wide.write_units) / 13.0;
        assert!((per_group - model.supervisor.write_units.per_group).abs() < 1e-9, "{model:?}");
        // Seconds never fall with either.
        assert!(wide.secs >= small.secs && grouped.secs >= wide.secs, "{model:?}");
    }
}
