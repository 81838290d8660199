//! The monthly cost of compacting every row once beside the planned ranges of
//! [`super::cost`], from a `bench fragments --out` report (a day of small segments compacted by
//! one pass, on one core, through metered stores):
//!
//! - the compactor's seconds per row, as measured (they include re-merging a chunk compacted
//!   in parts, and every per-segment step), on its memory (2 GB: a whole vCPU);
//! - per input segment, the S3 GET and the DynamoDB read and write units of the pass divided by
//!   its segments: at a rate, the planned mode's tasks publish one segment per group per period
//!   (one time chunk per task), each read once by compaction;
//! - the compacted segments' PUTs: as many per segment of `maxRowsPerSegment` rows (Druid's
//!   default, 5M) as the pass made per segment it left (a chunk compacted in parts writes a
//!   segment per part); the scheduled passes' own invocations and reads (one every 30 minutes)
//!   are not counted.
//!
//! The seconds per row are measured on segments of a few hundred rows: an upper bound for the
//! larger segments of higher rates, whose per-segment steps weigh less.

use super::cost::{dollars, vcpu, CostArgs, CostModel, PERIOD_SECS, RATES, SECONDS_PER_MONTH};
use super::fragments::{CompactionRun, COMPACTOR_MB};
use super::prices;
use anyhow::Context;

/// Rows of a compacted segment: Druid's default `maxRowsPerSegment`.
const MAX_ROWS_PER_SEGMENT: f64 = 5_000_000.0;

/// Prints the compaction table when its report exists.
pub fn run(args: &CostArgs) -> anyhow::Result<()> {
    if args.compaction_report.exists() {
        let text = std::fs::read_to_string(&args.compaction_report)
            .with_context(|| format!("read {}", args.compaction_report.display()))?;
        let run: CompactionRun = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a compaction report", args.compaction_report.display()))?;
        println!();
        print!("{}", markdown(&args.model()?, &run));
    }
    Ok(())
}

/// Compaction's monthly cost at `rate` rows/s with `groups` task groups: (Lambda, DynamoDB, S3).
fn monthly(run: &CompactionRun, rate: f64, groups: f64) -> (f64, f64, f64) {
    let rows = rate * SECONDS_PER_MONTH;
    let segments = groups * SECONDS_PER_MONTH / PERIOD_SECS;
    let (m, before) = (&run.meters, run.segments_before.max(1) as f64);
    let secs = rows * run.pass_secs / run.rows.max(1) as f64 / vcpu(COMPACTOR_MB);
    let lambda = secs * COMPACTOR_MB / 1024.0 * prices::LAMBDA_GB_SECOND;
    let dynamodb = segments / before
        * (m.read_units / 1e6 * prices::DYNAMODB_MILLION_READS + m.write_units / 1e6 * prices::DYNAMODB_MILLION_WRITES);
    let gets = segments * m.s3_gets as f64 / before;
    let puts = rows / MAX_ROWS_PER_SEGMENT * m.s3_puts as f64 / run.segments_after.max(1) as f64;
    let s3 = gets / 1e3 * prices::S3_THOUSAND_GETS + puts / 1e3 * prices::S3_THOUSAND_PUTS;
    (lambda, dynamodb, s3)
}

/// The table: compaction per month at each rate, beside the planned ranges' ingestion.
pub fn markdown(model: &CostModel, run: &CompactionRun) -> String {
    let mut out = format!(
        "Compaction (measured: {} segments of {} rows into {} in {:.2} s on one core, {:.0} rows/s; {} S3 GETs, {:.0} read and {:.0} write units): every row compacted once.\n\n",
        run.segments_before,
        run.rows,
        run.segments_after,
        run.pass_secs,
        run.rows as f64 / run.pass_secs,
        run.meters.s3_gets,
        run.meters.read_units,
        run.meters.write_units
    );
    out.push_str("| rows/s | segments compacted / month | Lambda | DynamoDB | S3 requests | compaction / month | ingestion / month | compaction / ingestion |\n");
    out.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for rate in RATES {
        let planned = model.monthly(rate);
        let (lambda, dynamodb, s3) = monthly(run, rate, planned.groups);
        let total = lambda + dynamodb + s3;
        out.push_str(&format!(
            "| {rate:.0} | {:.0} | {} | {} | {} | {} | {} | {:.2}x |\n",
            planned.groups * SECONDS_PER_MONTH / PERIOD_SECS,
            dollars(lambda),
            dollars(dynamodb),
            dollars(s3),
            dollars(total),
            dollars(planned.sluice()),
            total / planned.sluice()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed(name: &str) -> String {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        std::fs::read_to_string(root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    #[test]
    fn the_documented_compaction_table_is_recomputed_from_the_committed_reports() {
        let run: CompactionRun = serde_json::from_str(&committed("bench/results/compaction.json")).expect("report");
        let doc = committed("docs/benchmarks.md");
        let (begin, end) = ("<!-- cost-table-compaction:begin -->\n", "<!-- cost-table-compaction:end -->");
        let start = doc.find(begin).expect("cost-table-compaction:begin marker") + begin.len();
        let stop = doc[start..].find(end).expect("cost-table-compaction:end marker") + start;
        assert_eq!(
            &doc[start..stop],
            markdown(&CostModel::committed(), &run),
            "docs/benchmarks.md's compaction table differs"
        );
    }

    #[test]
    fn rows_cost_compactor_seconds_and_segments_cost_requests() {
        let run = CompactionRun {
            rows: 1_000_000,
            segments_before: 1_000,
            segments_after: 1,
            segments_target: 1,
            rows_merged: 1_000_000,
            pass_secs: 10.0,
            merge_secs: 8.0,
            meters: sluice_report::Meters { s3_gets: 1_000, s3_puts: 1, write_units: 100.0, ..Default::default() },
        };
        // 1 row/s for a month, one group: a segment a minute.
        let (lambda, dynamodb, s3) = monthly(&run, 1.0, 1.0);
        let rows = SECONDS_PER_MONTH;
        assert!((lambda - rows * 1e-5 * 2.0 * prices::LAMBDA_GB_SECOND).abs() < 1e-12, "{lambda}");
        let segments = SECONDS_PER_MONTH / 60.0;
        assert!((dynamodb - segments * 0.1 / 1e6 * prices::DYNAMODB_MILLION_WRITES).abs() < 1e-12, "{dynamodb}");
        let expected_s3 =
            segments / 1e3 * prices::S3_THOUSAND_GETS + rows / MAX_ROWS_PER_SEGMENT / 1e3 * prices::S3_THOUSAND_PUTS;
        assert!((s3 - expected_s3).abs() < 1e-12, "{s3}");
        let (more, _, _) = monthly(&run, 2.0, 1.0);
        assert!((more - 2.0 * lambda).abs() < 1e-12, "Lambda follows the rows");
    }
}
