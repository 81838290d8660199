//! The monthly cost of compaction beside ingestion, from a `bench fragments --out` report: every
//! row is compacted once (a stream's day of small segments into ceil(rows / `maxRowsPerSegment`)
//! segments), at the report's single-core seconds on the compactor's memory and its requests,
//! both per row; the compactor's scheduled passes (every 30 minutes) add one invocation and a
//! few reads each, which are not counted.

use super::cost::{dollars, CostArgs, RATES, SECONDS_PER_MONTH};
use super::fragments::CompactionRun;
use anyhow::Context;

/// Prints the compaction table when the report exists.
pub fn run(args: &CostArgs) -> anyhow::Result<()> {
    if args.compaction_report.exists() {
        let text = std::fs::read_to_string(&args.compaction_report)
            .with_context(|| format!("read {}", args.compaction_report.display()))?;
        let run: CompactionRun = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a compaction report", args.compaction_report.display()))?;
        println!();
        print!("{}", markdown(&run));
    }
    Ok(())
}

/// The table: cost per million rows, and per month at each rate.
pub fn markdown(run: &CompactionRun) -> String {
    let per_million = run.cost_per_million_rows();
    let mut out = format!(
        "Compaction: {:.0} rows/s on one core ({} segments into {}), ${per_million:.4} per million rows\n\n",
        run.rows as f64 / run.pass_secs,
        run.segments_before,
        run.segments_after
    );
    out.push_str("| rows/s | compaction per month |\n| --- | --- |\n");
    for rate in RATES {
        out.push_str(&format!("| {rate:.0} | {} |\n", dollars(rate * SECONDS_PER_MONTH / 1e6 * per_million)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_compaction_table_is_recomputed_from_the_committed_report() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let text = std::fs::read_to_string(root.join("bench/results/compaction.json")).expect("report");
        let run: CompactionRun = serde_json::from_str(&text).expect("a compaction report");
        let doc = std::fs::read_to_string(root.join("docs/benchmarks.md")).expect("docs/benchmarks.md");
        let (begin, end) = ("<!-- cost-table-compaction:begin -->\n", "<!-- cost-table-compaction:end -->");
        let start = doc.find(begin).expect("cost-table-compaction:begin marker") + begin.len();
        let stop = doc[start..].find(end).expect("cost-table-compaction:end marker") + start;
        assert_eq!(&doc[start..stop], markdown(&run), "docs/benchmarks.md's compaction table differs");
    }

    #[test]
    fn the_cost_grows_with_the_rate() {
        let run = CompactionRun {
            rows: 1_000_000,
            segments_before: 1_440,
            segments_after: 1,
            segments_target: 1,
            rows_merged: 1_000_000,
            pass_secs: 10.0,
            merge_secs: 8.0,
            meters: sluice_report::Meters { s3_gets: 1_440, s3_puts: 1, write_units: 100.0, ..Default::default() },
        };
        // 10 s at 2 GB, 1,440 GETs, one PUT, 100 write units for a million rows.
        let expected = 10.0 * 2.0 * super::super::prices::LAMBDA_GB_SECOND
            + 1.44 * super::super::prices::S3_THOUSAND_GETS
            + 0.001 * super::super::prices::S3_THOUSAND_PUTS
            + 1e-4 * super::super::prices::DYNAMODB_MILLION_WRITES;
        assert!((run.cost_per_million_rows() - expected).abs() < 1e-12, "{}", run.cost_per_million_rows());
        let table = markdown(&run);
        assert_eq!(table.lines().filter(|l| l.starts_with("| 1")).count(), 4, "{table}");
    }
}
