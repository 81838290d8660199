//! The monthly cost of real-time tasks (`sluiceConfig.realtime`), beside the planned ranges'
//! of [`super::cost`], from a `bench pipeline --realtime` report and the same fits:
//!
//! - task groups G = min(P, ceil(R x indexer seconds per row / (vCPU x 0.85))): an open task
//!   runs for as long as records arrive, so each group's indexer is billed the whole month,
//!   and the groups are sized to be 85% busy;
//! - the indexer's requests, write and read units and S3 requests per group-second are the
//!   real-time report's steady phase (checkpoints every period, heartbeats, the plan read
//!   every 10 s, a hydrant per checkpoint), divided by its seconds and its one group;
//! - tasks close after `taskDuration` (1 h) or `maxRecordsPerTask` (2M records), whichever
//!   comes first, and each is merged as in the planned mode (a hydrant per checkpoint); one
//!   invocation per group per `taskTimeBudget` (10 minutes);
//! - a group reading more than `maxRowsInMemory` rows per checkpoint persists the others
//!   beside, each costing the units and PUTs of a planned task's hydrant beyond its first;
//! - the supervisor as in the planned mode, and each pass invokes an indexer per open task
//!   that watches its lease until it sees a heartbeat (about 3 s, estimated).

use super::cost::{
    dollars, read_report, vcpu, CostArgs, CostModel, MonthlyCost, INDEXER_MB, MERGER_MB, PERIOD_SECS, RATES,
    SECONDS_PER_MONTH, SUPERVISOR_MB,
};
use super::cost_figures::Figures;
use super::cost_hydrants::TaskShape;
use super::prices;
use sluice_report::PipelineReport;

/// Prints a real-time table for each real-time report that exists.
pub fn run(args: &CostArgs) -> anyhow::Result<()> {
    let model = args.model()?;
    for path in args.realtime_reports.iter().filter(|p| p.exists()) {
        println!();
        print!("{}", markdown(&model, &read_report(path)?));
    }
    Ok(())
}

/// How busy the groups' indexers are sized to be.
const BUSY: f64 = 0.85;
/// `ioConfig.taskDuration`'s default, seconds.
const TASK_DURATION_SECS: f64 = 3600.0;
/// `sluiceConfig.maxRecordsPerTask`'s default.
pub(super) const MAX_RECORDS_PER_TASK: f64 = 2_000_000.0;
/// `sluiceConfig.taskTimeBudget`'s default, seconds: one invocation per group per budget.
const TASK_BUDGET_SECS: f64 = 600.0;
/// Seconds an indexer watching a live task runs before it sees a heartbeat (each pass watches
/// every open task): about half the 5 s heartbeat plus a 1.25 s poll. Estimated, not measured.
const WATCH_SECS: f64 = 3.1;

/// What one group's open task uses per second, from a real-time report.
#[derive(Debug, Clone, Copy)]
pub struct GroupSecond {
    write_units: f64,
    read_units: f64,
    puts: f64,
    gets: f64,
    /// Seconds between checkpoints: a task persists a hydrant per checkpoint.
    checkpoint_secs: f64,
}

impl GroupSecond {
    /// From the steady phase of a `bench pipeline --realtime` report (one group).
    pub fn from_report(r: &PipelineReport) -> Self {
        let (m, secs) = (&r.steady.functions.indexer.meters, r.steady.secs.max(1.0));
        GroupSecond {
            write_units: m.write_units / secs,
            read_units: m.read_units / secs,
            puts: m.s3_puts as f64 / secs,
            gets: m.s3_gets as f64 / secs,
            checkpoint_secs: r.steady.checkpoint_ms.unwrap_or(1_000).max(1) as f64 / 1000.0,
        }
    }
}

/// The monthly cost at `rate` rows/s with real-time tasks.
pub fn monthly(model: &CostModel, per_group: &GroupSecond, rate: f64) -> MonthlyCost {
    let mut c = model.monthly(rate);
    let partitions = c.partitions;
    let groups = (rate * model.indexer.secs.per_row / vcpu(INDEXER_MB) / BUSY).ceil().clamp(1.0, partitions);
    let group_secs = groups * SECONDS_PER_MONTH;
    let tasks = (group_secs / TASK_DURATION_SECS).max(rate * SECONDS_PER_MONTH / MAX_RECORDS_PER_TASK);
    let rows_per_task = rate * SECONDS_PER_MONTH / tasks;
    let passes = SECONDS_PER_MONTH / PERIOD_SECS;
    let pass = model.supervisor.pass(partitions, groups);
    // The open tasks' own figures are per group-second, measured at a rate where each
    // checkpoint persisted one hydrant; a group reading more than `maxRowsInMemory` rows per
    // checkpoint persists and checkpoints the others beside (real-time tasks do not spill),
    // each costing what a planned task's extra persist and checkpointed hydrant do.
    let per_checkpoint = 1.0 / per_group.checkpoint_secs;
    let hydrants_per_sec = per_checkpoint.max(rate / groups / model.rows_per_persist);
    let extra = hydrants_per_sec - per_checkpoint;
    let mut extra_per_sec = model.hydrants.indexer.map(|x| x * extra);
    extra_per_sec.secs += model.persists.indexer_secs * extra;
    let shape = TaskShape::checkpointing_every_persist(rows_per_task, group_secs / tasks * hydrants_per_sec);
    let (_, merger) = model.task(rows_per_task, shape);
    let watches = groups * passes;
    let gb_seconds = (group_secs + watches * WATCH_SECS) * INDEXER_MB / 1024.0
        + tasks * merger.secs / vcpu(MERGER_MB) * MERGER_MB / 1024.0
        + passes * pass.secs / vcpu(SUPERVISOR_MB) * SUPERVISOR_MB / 1024.0;
    let requests = passes + watches + group_secs / TASK_BUDGET_SECS + 2.0 * tasks;
    c.groups = groups;
    c.lambda = gb_seconds * prices::LAMBDA_GB_SECOND + requests / 1e6 * prices::LAMBDA_MILLION_REQUESTS;
    // The open tasks' use per group-second, the mergers' per task, the supervisor's per pass.
    let total = |per_second: f64, f: fn(&Figures) -> f64| {
        group_secs * (per_second + f(&extra_per_sec)) + tasks * f(&merger) + passes * f(&pass)
    };
    let writes = total(per_group.write_units, |f| f.write_units);
    let reads = total(per_group.read_units, |f| f.read_units);
    c.dynamodb = writes / 1e6 * prices::DYNAMODB_MILLION_WRITES + reads / 1e6 * prices::DYNAMODB_MILLION_READS;
    let (puts, gets) = (total(per_group.puts, |f| f.puts), total(per_group.gets, |f| f.gets));
    c.s3 = puts / 1000.0 * prices::S3_THOUSAND_PUTS + gets / 1000.0 * prices::S3_THOUSAND_GETS;
    c
}

/// The real-time table beside the planned mode's, as Markdown.
pub fn markdown(model: &CostModel, realtime: &PipelineReport) -> String {
    let per_group = GroupSecond::from_report(realtime);
    let mut out = format!(
        "Real-time tasks (checkpoints every {} s, records arriving all month): per group-second {:.2} write units, {:.2} read units, {:.2} S3 PUTs, {:.2} S3 GETs (measured).\n\n",
        realtime.steady.checkpoint_ms.unwrap_or(1_000) as f64 / 1000.0,
        per_group.write_units,
        per_group.read_units,
        per_group.puts,
        per_group.gets
    );
    out.push_str("| rows/s | task groups | Lambda | DynamoDB | S3 requests | real time / month | planned ranges / month | real time / planned |\n");
    out.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for rate in RATES {
        let (rt, planned) = (monthly(model, &per_group, rate), model.monthly(rate));
        out.push_str(&format!(
            "| {:.0} | {:.0} | {} | {} | {} | {} | {} | {:.2}x |\n",
            rate,
            rt.groups,
            dollars(rt.lambda),
            dollars(rt.dynamodb),
            dollars(rt.s3),
            dollars(rt.sluice()),
            dollars(planned.sluice()),
            rt.sluice() / planned.sluice()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(name: &str) -> PipelineReport {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results").join(name);
        serde_json::from_str(&std::fs::read_to_string(path).expect("report")).expect("a pipeline report")
    }

    #[test]
    fn the_documented_real_time_table_is_recomputed_from_the_committed_reports() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let doc = std::fs::read_to_string(root.join("docs/benchmarks.md")).expect("docs/benchmarks.md");
        let planned = CostModel::committed();
        let table: Vec<String> = ["pipeline-realtime.json", "pipeline-realtime-5s.json"]
            .iter()
            .map(|name| markdown(&planned, &report(name)))
            .collect();
        let table = table.join("\n");
        let (begin, end) = ("<!-- cost-table-realtime:begin -->\n", "<!-- cost-table-realtime:end -->");
        let start = doc.find(begin).expect("cost-table-realtime:begin marker") + begin.len();
        let stop = doc[start..].find(end).expect("cost-table-realtime:end marker") + start;
        assert_eq!(&doc[start..stop], table, "docs/benchmarks.md's real-time table differs from `sluice bench cost`");
    }

    #[test]
    fn an_open_task_is_billed_all_month_and_groups_follow_the_rate() {
        let (model, rt) = (CostModel::committed(), report("pipeline-realtime.json"));
        let per_group = GroupSecond::from_report(&rt);
        let low = monthly(&model, &per_group, 1_000.0);
        let month_of_one_group = SECONDS_PER_MONTH * INDEXER_MB / 1024.0 * prices::LAMBDA_GB_SECOND;
        assert!(low.lambda >= month_of_one_group, "{low:?}");
        let high = monthly(&model, &per_group, 1_000_000.0);
        assert!(high.groups > low.groups && high.sluice() > low.sluice(), "{high:?}");
        assert!(high.sluice() > model.monthly(1_000_000.0).sluice(), "waiting costs more than planned ranges");
    }
}
