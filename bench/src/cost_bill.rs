//! `bench cost`'s whole bill: a deployment's month at each rate and mode (ingestion, compaction,
//! storage and a stated query load together), beside the smallest production Druid cluster
//! for the same data and queries, its sizes from `docs/druid-cluster.md`.
//!
//! Sluice, at R rows/s in one mode (planned ranges or real-time tasks):
//!
//! - ingestion: the mode's table ([`super::cost`], [`super::cost_realtime`]);
//! - compaction as the defaults run it (`skipOffsetFromLatest` P1D, a pass every 30 minutes):
//!   every row compacted once, the compactor's seconds and requests fitted as `per segment x
//!   segments + per row x rows` through two `bench fragments` runs (small and large
//!   segments); the segments those the mode leaves (planned: a group's task per period, at most
//!   a checkpoint; real time: a group's rows in its hour, at most `maxRecordsPerTask`); and
//!   each pass reads the timeline once;
//! - storage: S3 Standard, the retention's rows at the bytes per row of a 2M-row segment;
//! - queries: Q a minute, each over the last W of rows, the fan-out benchmark's topN,
//!   timeseries and groupBy in equal parts (one warm function over 20M rows) on the query
//!   worker's memory, their summaries read for the records selected (once, then kept: not
//!   priced); each
//!   first reads the timeline (every record in retention, at the units and seconds per record
//!   measured) unless the one it kept is current: with planned ranges at most
//!   once per group's publish, with real-time tasks every query (that view is never kept).
//!
//! The timeline holds hourly chunks (`segmentGranularity` HOUR, an assumption): older than
//! `skipOffsetFromLatest`, ceil(rows per hour / 5M) compacted segments each; the rows within
//! it as the mode left them.
//!
//! Druid: 3 master servers (ZooKeeper on them) and 2 query servers, m5.2xlarge; a Multi-AZ
//! PostgreSQL db.t3.medium; and as many i3.4xlarge data servers as the most demanding of: 2;
//! task slots (4 each, as shipped) for `2 x taskCount` Kafka tasks at the indexer's measured
//! per-core rate plus compaction tasks (one at least) at the compactor's; local disk (3.8 TB
//! each, all of it) for the default load rule's 2 replicas of the retention's segments; and 15
//! processing threads each for the query load at Sluice's per-row cost. Deep storage on S3 as
//! Sluice's. Druid's Kafka tasks are real time: one cluster for both modes.

use super::cost::{dollars, read_report, vcpu, CostArgs, CostModel, PERIOD_SECS, RATES, SECONDS_PER_MONTH};
use super::cost_realtime::{self, GroupSecond, MAX_RECORDS_PER_TASK};
use super::fragments::{CompactionRun, TimelineRead, COMPACTOR_MB};
use super::prices;
use anyhow::{bail, Context, Result};
use sluice_report::Fit;

/// Rows of a compacted segment: `maxRowsPerSegment`'s default.
const MAX_ROWS_PER_SEGMENT: f64 = 5_000_000.0;
/// Memory of the api function (reads the timeline) and of a query worker (scans).
const API_MB: f64 = 2048.0;
const QUERY_WORKER_MB: f64 = 1769.0;
/// The example Data server's task slots (`druid.worker.capacity` as shipped), processing
/// threads (cores - 1) and local NVMe bytes (2 x 1.9 TB).
const DRUID_SLOTS_PER_DATA_SERVER: f64 = 4.0;
const DRUID_THREADS_PER_DATA_SERVER: f64 = 15.0;
const DRUID_DISK_BYTES: f64 = 3.8e12;
/// Druid's default load rule: 2 replicas in `_default_tier`.
const DRUID_REPLICANTS: f64 = 2.0;
/// Master servers (a ZooKeeper quorum on them) and query servers of a minimal HA cluster.
const DRUID_MASTERS: f64 = 3.0;
const DRUID_QUERY_SERVERS: f64 = 2.0;
/// Bytes in a GB as S3 bills storage.
const GB: f64 = (1u64 << 30) as f64;

/// The retention and query load a bill is for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// Days of rows kept.
    pub retention_days: f64,
    /// Dashboard queries a minute.
    pub queries_per_minute: f64,
    /// Seconds of the latest rows each query reads.
    pub window_secs: f64,
    /// Seconds between compaction passes (`CompactionScheduleExpression`).
    pub compaction_every_secs: f64,
    /// Seconds of the latest rows compaction leaves as they are (`skipOffsetFromLatest`).
    pub skip_secs: f64,
}

/// The two ingestion modes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// Planned offset ranges, a task per group per supervisor period.
    Planned,
    /// Real-time tasks checkpointing every second.
    RealTime,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Planned => "planned",
            Mode::RealTime => "real time",
        }
    }
}

/// What the bill is computed from: the models and the measured runs.
pub struct Inputs {
    /// The planned mode's model.
    pub model: CostModel,
    /// The real-time report's per group-second use.
    pub realtime: GroupSecond,
    /// Compaction of small segments and of large ones.
    pub small: CompactionRun,
    pub large: CompactionRun,
    /// Bytes per row of a segment of the size priced (the sized report's).
    pub bytes_per_row: f64,
    /// Seconds per row of a warm query, one core (the fan-out benchmark's mix).
    pub query_secs_per_row: f64,
}

/// Segment records of a datasource's timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Records {
    /// Compacted ones.
    pub compacted: f64,
    /// The last day's, as the mode leaves them.
    pub fresh: f64,
}

/// One line of the bill.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bill {
    /// Rows/s.
    pub rate: f64,
    /// The mode.
    pub mode: Mode,
    /// Sluice's parts, a month each.
    pub ingestion: f64,
    pub compaction: f64,
    pub storage: f64,
    pub queries: f64,
    /// Of `queries`, the timeline reads.
    pub timeline_reads: f64,
    /// Druid's data servers, and its month.
    pub druid_data_servers: f64,
    pub druid: f64,
}

impl Bill {
    /// Sluice's month.
    pub fn sluice(&self) -> f64 {
        self.ingestion + self.compaction + self.storage + self.queries
    }
}

/// The compactor's seconds fitted through the two compaction runs: per input segment and per
/// row merged.
fn secs_fit(inputs: &Inputs) -> Fit {
    let obs = |r: &CompactionRun| (r.segments_before as f64, r.rows_merged as f64, r.pass_secs);
    Fit::through(obs(&inputs.small), obs(&inputs.large))
}

/// A request count fitted through the two compaction runs: per input segment (`fixed`) and
/// per segment written (`per_row`). (GETs are one per input segment, from the small run.)
fn requests_fit(inputs: &Inputs, value: impl Fn(&CompactionRun) -> f64) -> Fit {
    let obs = |r: &CompactionRun| (r.segments_before as f64, r.segments_after as f64, value(r));
    Fit::through(obs(&inputs.small), obs(&inputs.large))
}

impl Load {
    /// The retention and query load `args` name.
    pub fn of(args: &CostArgs) -> Self {
        Load {
            retention_days: args.retention_days,
            queries_per_minute: args.queries_per_minute,
            window_secs: args.query_window_minutes * 60.0,
            compaction_every_secs: args.compaction_every_minutes * 60.0,
            skip_secs: args.skip_offset_hours * 3600.0,
        }
    }
}

impl Inputs {
    /// Reads what `args` name.
    pub fn read(args: &CostArgs) -> Result<Self> {
        let compaction = |path: &std::path::Path| -> Result<CompactionRun> {
            let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
            serde_json::from_str(&text).with_context(|| format!("{} is not a compaction report", path.display()))
        };
        let realtime = args.realtime_reports.first().context("no real-time report")?;
        let sized = read_report(&args.sized_report)?.throughput;
        let fanout = std::fs::read_to_string(&args.fanout_report)
            .with_context(|| format!("read {}", args.fanout_report.display()))?;
        Ok(Inputs {
            model: args.model()?,
            realtime: GroupSecond::from_report(&read_report(realtime)?),
            small: compaction(&args.compaction_report)?,
            large: compaction(&args.large_compaction_report)?,
            bytes_per_row: sized.segment_bytes as f64 / sized.rows.max(1) as f64,
            query_secs_per_row: query_secs_per_row(&fanout)
                .with_context(|| format!("{} is not a `bench fanout` output", args.fanout_report.display()))?,
        })
    }

    /// Task groups and the rows of a segment the mode leaves at `rate`.
    fn segments(&self, rate: f64, mode: Mode) -> (f64, f64) {
        match mode {
            Mode::Planned => {
                let groups = self.model.monthly(rate).groups;
                (groups, (rate * PERIOD_SECS / groups).min(self.model.rows_per_checkpoint))
            }
            Mode::RealTime => {
                let groups = cost_realtime::monthly(&self.model, &self.realtime, rate).groups;
                (groups, (rate * 3600.0 / groups).min(MAX_RECORDS_PER_TASK))
            }
        }
    }

    /// The records of the timeline: compacted hours beyond `skipOffsetFromLatest`, the rows
    /// within it as the mode left them.
    fn records(&self, rate: f64, segment_rows: f64, load: &Load) -> Records {
        let retained_secs = load.retention_days * 86_400.0;
        let fresh_secs = load.skip_secs.min(retained_secs);
        let compacted_hours = (retained_secs - fresh_secs) / 3600.0;
        Records {
            compacted: compacted_hours * (rate * 3600.0 / MAX_ROWS_PER_SEGMENT).ceil(),
            fresh: rate * fresh_secs / segment_rows.max(1.0),
        }
    }

    /// One read of a timeline of `records`: read units and seconds, at the small run's figures
    /// per record (1,440 records read at once; a record's size does not depend on its
    /// segment's rows, its summary being an item of its own).
    fn timeline_read(&self, records: &Records) -> (f64, f64) {
        let (units, secs) = per_record(&self.small.timeline);
        let n = records.compacted + records.fresh;
        (n * units, n * secs)
    }

    /// Compaction's month for `rows` in `segments` a month (written into segments of
    /// `maxRowsPerSegment`), and the timeline reads of `records` by a pass every `every` seconds.
    fn compaction(&self, rows: f64, segments: f64, records: &Records, every: f64) -> f64 {
        let gb_s = |secs: f64, mb: f64| secs / vcpu(mb) * mb / 1024.0;
        let fitted = secs_fit(self);
        let merge_secs = fitted.fixed * segments + fitted.per_row * rows;
        let written = rows / MAX_ROWS_PER_SEGMENT;
        let requests = |f: Fit| f.fixed * segments + f.per_row * written;
        let passes = SECONDS_PER_MONTH / every;
        let (units, secs) = self.timeline_read(records);
        let lambda = gb_s(merge_secs + passes * secs, COMPACTOR_MB) * prices::LAMBDA_GB_SECOND
            + passes / 1e6 * prices::LAMBDA_MILLION_REQUESTS;
        let reads = requests(requests_fit(self, |r| r.meters.read_units)) + passes * units;
        let dynamodb = reads / 1e6 * prices::DYNAMODB_MILLION_READS
            + requests(requests_fit(self, |r| r.meters.write_units)) / 1e6 * prices::DYNAMODB_MILLION_WRITES;
        let gets_per_segment = self.small.meters.s3_gets as f64 / self.small.segments_before.max(1) as f64;
        let s3 = segments * gets_per_segment / 1e3 * prices::S3_THOUSAND_GETS
            + requests(requests_fit(self, |r| r.meters.s3_puts as f64)) / 1e3 * prices::S3_THOUSAND_PUTS;
        lambda + dynamodb + s3
    }

    /// The queries' month, and of it the timeline reads: the scans, and the reads of `records`,
    /// `rereads` a minute.
    fn queries(&self, rate: f64, records: &Records, rereads: f64, load: &Load) -> (f64, f64) {
        let minutes = SECONDS_PER_MONTH / 60.0;
        let queries = load.queries_per_minute * minutes;
        let scan_secs = queries * rate * load.window_secs * self.query_secs_per_row;
        let (units, secs) = self.timeline_read(records);
        let reads = rereads * minutes;
        let scans = scan_secs / vcpu(QUERY_WORKER_MB) * QUERY_WORKER_MB / 1024.0 * prices::LAMBDA_GB_SECOND
            + 2.0 * queries / 1e6 * prices::LAMBDA_MILLION_REQUESTS;
        let timeline = reads * secs / vcpu(API_MB) * API_MB / 1024.0 * prices::LAMBDA_GB_SECOND
            + reads * units / 1e6 * prices::DYNAMODB_MILLION_READS;
        (scans + timeline, timeline)
    }

    /// The bill at `rate` in `mode` for `load`.
    pub fn bill(&self, rate: f64, mode: Mode, load: &Load) -> Bill {
        let ingestion = match mode {
            Mode::Planned => self.model.monthly(rate).sluice(),
            Mode::RealTime => cost_realtime::monthly(&self.model, &self.realtime, rate).sluice(),
        };
        let (groups, segment_rows) = self.segments(rate, mode);
        let rows = rate * SECONDS_PER_MONTH;
        let records = self.records(rate, segment_rows, load);
        let segments = rows / segment_rows;
        let compaction = self.compaction(rows, segments, &records, load.compaction_every_secs);
        let retained_bytes = rate * load.retention_days * 86_400.0 * self.bytes_per_row;
        let storage = retained_bytes / GB * prices::S3_GB_MONTH;
        let rereads = match mode {
            Mode::Planned => load.queries_per_minute.min(groups * 60.0 / PERIOD_SECS),
            Mode::RealTime => load.queries_per_minute,
        };
        // Workers keep the segments they read: each new one is downloaded once, if queried.
        let (queries, timeline_reads) = self.queries(rate, &records, rereads, load);
        let downloads = if load.queries_per_minute > 0.0 { segments } else { 0.0 };
        let queries = queries + downloads / 1e3 * prices::S3_THOUSAND_GETS;
        let druid_data_servers = self.druid_data_servers(rate, retained_bytes, load);
        let servers = (DRUID_MASTERS + DRUID_QUERY_SERVERS) * prices::M5_2XLARGE_HOUR
            + druid_data_servers * prices::I3_4XLARGE_HOUR
            + prices::RDS_T3_MEDIUM_MULTI_AZ_HOUR;
        let druid = servers * prices::HOURS_PER_MONTH + storage;
        Bill { rate, mode, ingestion, compaction, storage, queries, timeline_reads, druid_data_servers, druid }
    }

    /// Druid's data servers: for its task slots, its replicas' disk and its query threads.
    fn druid_data_servers(&self, rate: f64, retained_bytes: f64, load: &Load) -> f64 {
        let kafka_tasks = (rate / self.model.druid_rows_per_task).ceil();
        let compaction_secs_per_row = secs_fit(self).per_row;
        let compaction_tasks = (rate * compaction_secs_per_row).ceil().max(1.0);
        let slots = 2.0 * kafka_tasks + compaction_tasks;
        let disk = DRUID_REPLICANTS * retained_bytes / DRUID_DISK_BYTES;
        let busy_threads = load.queries_per_minute / 60.0 * rate * load.window_secs * self.query_secs_per_row;
        let needs = [slots / DRUID_SLOTS_PER_DATA_SERVER, disk, busy_threads / DRUID_THREADS_PER_DATA_SERVER];
        needs.into_iter().fold(2.0, f64::max).ceil()
    }
}

/// Read units and seconds per record of a timeline's read.
fn per_record(t: &TimelineRead) -> (f64, f64) {
    let n = t.records.max(1) as f64;
    (t.read_units / n, t.secs / n)
}

/// The mean seconds per row of the fan-out benchmark's topN, timeseries and groupBy in one
/// function (its "one function" column, ms over the rows its header names).
fn query_secs_per_row(fanout: &str) -> Result<f64> {
    let rows: f64 = fanout
        .lines()
        .find_map(|l| l.split_once(" rows in ").and_then(|(n, _)| n.trim().parse().ok()))
        .context("no \"N rows in\" line")?;
    let names = ["filtered topN", "timeseries by hour", "groupBy channel"];
    let mut ms = Vec::new();
    for name in names {
        let line =
            fanout.lines().find(|l| l.starts_with(&format!("| {name}"))).with_context(|| format!("no {name} row"))?;
        let cell = line.split('|').nth(2).with_context(|| format!("{name}: no one-function column"))?;
        ms.push(cell.trim().parse::<f64>().with_context(|| format!("{name}: {cell:?} is not ms"))?);
    }
    if rows <= 0.0 {
        bail!("no rows");
    }
    Ok(ms.iter().sum::<f64>() / ms.len() as f64 / 1e3 / rows)
}

/// The whole bill as Markdown: the load, the table, the retention's weight at the top rate.
pub fn markdown(inputs: &Inputs, load: &Load) -> String {
    let (units, secs) = per_record(&inputs.small.timeline);
    let Fit { fixed: segment, per_row: row } = secs_fit(inputs);
    let mut out = format!(
        "The whole bill: {:.0} days kept; compaction every {:.0} minutes, skipping the latest {:.0} hours; {:.0} dashboard queries a minute, each over the last {:.0} minutes (topN, timeseries and groupBy: {:.1} ns per row, one core); compaction {:.2} ms per segment + {:.3} µs per row (one core); a timeline record {:.2} read units and {:.1} µs; {:.1} bytes per row stored. Druid: 3 masters and 2 query servers (m5.2xlarge), a Multi-AZ db.t3.medium, i3.4xlarge data servers.\n\n",
        load.retention_days,
        load.compaction_every_secs / 60.0,
        load.skip_secs / 3600.0,
        load.queries_per_minute,
        load.window_secs / 60.0,
        inputs.query_secs_per_row * 1e9,
        segment * 1e3,
        row * 1e6,
        units,
        secs * 1e6,
        inputs.bytes_per_row
    );
    out.push_str("| rows/s | mode | ingestion | compaction | storage | queries | Sluice / month | Druid data servers | Druid / month | Sluice / Druid |\n");
    out.push_str("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for rate in RATES {
        for mode in [Mode::Planned, Mode::RealTime] {
            let b = inputs.bill(rate, mode, load);
            out.push_str(&format!(
                "| {:.0} | {} | {} | {} | {} | {} | {} | {:.0} | {} | {:.0}% |\n",
                rate,
                mode.name(),
                dollars(b.ingestion),
                dollars(b.compaction),
                dollars(b.storage),
                dollars(b.queries),
                dollars(b.sluice()),
                b.druid_data_servers,
                dollars(b.druid),
                100.0 * b.sluice() / b.druid
            ));
        }
    }
    let top = RATES[RATES.len() - 1];
    let by_days: Vec<String> = [1.0, 7.0, 30.0, 90.0]
        .iter()
        .map(|&days| {
            let b = inputs.bill(top, Mode::RealTime, &Load { retention_days: days, ..*load });
            format!(
                "{days:.0} days {} / {} ({:.0}%)",
                dollars(b.sluice()),
                dollars(b.druid),
                100.0 * b.sluice() / b.druid
            )
        })
        .collect();
    let b = inputs.bill(top, Mode::RealTime, load);
    out.push_str(&format!(
        "\nAt {top:.0} rows/s in real time, the queries' timeline reads are {:.0}% of Sluice's month (every query reads every segment record first); without them, {} ({:.0}% of Druid).\n",
        100.0 * b.timeline_reads / b.sluice(),
        dollars(b.sluice() - b.timeline_reads),
        100.0 * (b.sluice() - b.timeline_reads) / b.druid
    ));
    out.push_str(&format!("By retention: {}.\n", by_days.join("; ")));
    let by_cadence: Vec<String> = [10.0, 30.0, 60.0, 360.0]
        .iter()
        .map(|&minutes| {
            let b = inputs.bill(top, Mode::RealTime, &Load { compaction_every_secs: minutes * 60.0, ..*load });
            format!("every {minutes:.0} minutes {}", dollars(b.compaction))
        })
        .collect();
    out.push_str(&format!("Compaction, by the passes' cadence: {}.\n", by_cadence.join("; ")));
    let by_skip: Vec<String> = [1.0, 24.0]
        .iter()
        .map(|&hours| {
            let b = inputs.bill(top, Mode::RealTime, &Load { skip_secs: hours * 3600.0, ..*load });
            format!(
                "PT{hours:.0}H {} (compaction {}, queries {})",
                dollars(b.sluice()),
                dollars(b.compaction),
                dollars(b.queries)
            )
        })
        .collect();
    out.push_str(&format!("By `skipOffsetFromLatest`: {}.\n", by_skip.join("; ")));
    out
}

/// Prints the whole bill when its reports exist.
pub fn run(args: &CostArgs) -> Result<()> {
    let needed = [&args.compaction_report, &args.large_compaction_report, &args.fanout_report];
    if needed.iter().all(|p| p.exists()) {
        println!();
        print!("{}", markdown(&Inputs::read(args)?, &Load::of(args)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed() -> (Inputs, Load) {
        let args = CostArgs::committed();
        (Inputs::read(&args).expect("the committed reports"), Load::of(&args))
    }

    #[test]
    fn the_documented_bill_is_recomputed_from_the_committed_reports() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let doc = std::fs::read_to_string(root.join("docs/benchmarks.md")).expect("docs/benchmarks.md");
        let (begin, end) = ("<!-- cost-table-bill:begin -->\n", "<!-- cost-table-bill:end -->");
        let start = doc.find(begin).expect("cost-table-bill:begin marker") + begin.len();
        let stop = doc[start..].find(end).expect("cost-table-bill:end marker") + start;
        let (inputs, load) = committed();
        assert_eq!(&doc[start..stop], markdown(&inputs, &load), "docs/benchmarks.md's whole bill differs");
    }

    #[test]
    fn the_query_rate_is_the_fan_out_runs_mean_and_a_wrong_file_is_refused() {
        let text = "bench fanout: ...\n1000 rows in 2 segments (1 MB)\n| filtered topN (x) | 3 | 9 |\n| timeseries by hour (y) | 6 | 9 |\n| groupBy channel, namespace | 9 | 9 |\n";
        let per_row = query_secs_per_row(text).expect("parses");
        assert!((per_row - 6e-3 / 1000.0).abs() < 1e-15, "{per_row}");
        assert!(query_secs_per_row(&text.replace("| groupBy", "| group")).is_err());
        assert!(query_secs_per_row(&text.replace("| 6 |", "| six |")).is_err());
    }

    #[test]
    fn retention_weighs_on_druids_disks_and_queries_on_both() {
        let (inputs, load) = committed();
        let short = inputs.bill(1_000_000.0, Mode::RealTime, &Load { retention_days: 1.0, ..load });
        let long = inputs.bill(1_000_000.0, Mode::RealTime, &Load { retention_days: 90.0, ..load });
        // 90 days of replicas need more data servers than 1 day; S3 holds the days once.
        assert!(long.druid_data_servers > short.druid_data_servers, "{short:?} {long:?}");
        assert!((long.storage / short.storage - 90.0).abs() < 1e-9);
        // Every query reads the longer timeline first.
        assert!(long.queries > short.queries, "{short:?} {long:?}");
        let idle = inputs.bill(1_000.0, Mode::Planned, &Load { queries_per_minute: 0.0, ..load });
        assert_eq!(idle.queries, 0.0);
        assert_eq!(idle.druid_data_servers, 2.0, "the smallest cluster");
        // A real-time view is never kept: its queries read the timeline at least as often.
        let (planned, realtime) =
            (inputs.bill(1_000.0, Mode::Planned, &load), inputs.bill(1_000.0, Mode::RealTime, &load));
        assert!(realtime.queries >= planned.queries, "{planned:?} {realtime:?}");
    }

    #[test]
    fn compaction_costs_more_for_the_same_rows_in_smaller_segments() {
        let (inputs, _) = committed();
        let rows = 1e9;
        let none = Records { compacted: 0.0, fresh: 0.0 };
        let (small, large) =
            (inputs.compaction(rows, rows / 300.0, &none, 1800.0), inputs.compaction(rows, rows / 2e6, &none, 1800.0));
        assert!(small > 2.0 * large, "{small} {large}");
        let per_segment = secs_fit(&inputs);
        assert!(per_segment.fixed > 0.0 && per_segment.per_row > 0.0, "{per_segment:?}");
    }
}
