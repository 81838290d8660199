//! The estimates for each datasource size and query kind, beside Athena's and Druid's price for
//! the same query, the goals checked against them, and their table.

use super::setup::{QueryKind, QuerySetup};
use super::simulate::{self, Shape, Summary};
use crate::prices::{self, DruidCluster};

/// Sluice's estimate for one size and query kind, and the alternatives'.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Estimate {
    /// Rows of the datasource.
    pub rows: f64,
    /// Query kind.
    pub kind: QueryKind,
    /// Segments, bytes and fan-out.
    pub shape: Shape,
    /// Every function warm.
    pub warm: Summary,
    /// Every function cold.
    pub cold: Summary,
    /// Athena's price for scanning the same bytes.
    pub athena: f64,
    /// The Druid cluster holding the same segments.
    pub druid: DruidCluster,
    /// Its price per query at the given query rate.
    pub druid_per_query: f64,
    /// Seconds its historicals take to scan the rows, every vCPU at the benchmark's x86 rate.
    pub druid_scan_secs: f64,
    /// A Druid cluster with the vCPUs to scan the rows as fast as Sluice's warm p50.
    pub druid_as_fast: DruidCluster,
    /// Its price per query at the given query rate.
    pub druid_as_fast_per_query: f64,
}

/// Estimates a query of `kind` over `rows` rows, with Druid priced at `per_minute` queries a
/// minute.
pub fn estimate(rows: f64, kind: &QueryKind, s: &QuerySetup, per_minute: f64) -> Estimate {
    let shape = Shape::of(rows, kind, s);
    let seed = s.seed ^ rows.to_bits() ^ (kind.ms_one_thread.to_bits() << 1);
    let warm = simulate::summarise(&shape, kind, s, true, seed);
    let cold = simulate::summarise(&shape, kind, s, false, seed.rotate_left(17));
    let druid = DruidCluster::sized_for(rows * s.segment_bytes_per_row);
    let scanned = shape.segments as f64 * s.rows_per_segment;
    let druid_as_fast = DruidCluster::sized_for_latency(
        rows * s.segment_bytes_per_row,
        scanned,
        kind.rows_per_sec(),
        s.arm_core_factor,
        warm.p50,
    );
    Estimate {
        druid_as_fast_per_query: druid_as_fast.per_query(per_minute),
        druid_as_fast,
        rows,
        kind: *kind,
        athena: prices::athena(shape.read_bytes),
        druid_per_query: druid.per_query(per_minute),
        druid_scan_secs: druid.scan_secs(scanned, kind.rows_per_sec(), s.arm_core_factor),
        druid,
        shape,
        warm,
        cold,
    }
}

/// One goal and whether the model meets it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Goal {
    /// What is measured against what.
    pub what: String,
    /// The model's figure.
    pub value: f64,
    /// The bound.
    pub bound: f64,
    /// Whether the figure is within the bound.
    pub met: bool,
}

/// The goals: at 10B rows p50 <= 2 s warm and <= 5 s cold, and <= $0.01 a query; at 100B rows
/// p50 <= 10 s, warm and cold. Sizes not estimated are not checked.
pub fn goals(estimates: &[Estimate]) -> Vec<Goal> {
    let mut out = Vec::new();
    let mut check = |what: String, value: f64, bound: f64| {
        out.push(Goal { what, value, bound, met: value <= bound });
    };
    for e in estimates {
        let name = format!("{} rows, {}", rows_label(e.rows), e.kind.name);
        if e.rows == 1e10 {
            check(format!("{name}: p50 warm <= 2 s"), e.warm.p50, 2.0);
            check(format!("{name}: p50 cold <= 5 s"), e.cold.p50, 5.0);
            check(format!("{name}: cost per query <= $0.01"), e.warm.cost.total(), 0.01);
        }
        if e.rows == 1e11 {
            check(format!("{name}: p50 warm <= 10 s"), e.warm.p50, 10.0);
            check(format!("{name}: p50 cold <= 10 s"), e.cold.p50, 10.0);
        }
    }
    out
}

/// `1B`, `10B`, `250M`.
pub fn rows_label(rows: f64) -> String {
    if rows >= 1e9 {
        format!("{}B", rows / 1e9)
    } else {
        format!("{}M", rows / 1e6)
    }
}

fn fanout_label(e: &Estimate) -> String {
    let f = &e.shape.fanout;
    match f.depth {
        0 => "broker".into(),
        1 => "flat".into(),
        _ => format!("tree {}x{}", f.sub_brokers, f.children.iter().copied().max().unwrap_or(0)),
    }
}

/// Prints the estimates as a table, then Druid's clusters and the goals.
pub fn print(s: &QuerySetup, estimates: &[Estimate], goals: &[Goal], per_minute: f64) {
    println!(
        "query model: {} rows/segment, {:.1} bytes/row in segments, {}, {}, batches of {}, \
         {} MB functions ({:.2} vCPU), arm64 core = {} x the benchmark's x86 core, S3 {:.0} MB/s per function, \
         warm hit = /tmp share of the bytes read{}; {} queries per setting",
        s.rows_per_segment,
        s.segment_bytes_per_row,
        read_bytes(s),
        if s.whole_segments() { "segments downloaded whole" } else { "columns read with ranged GETs" },
        match (s.bytes_per_worker_opt, s.batch_segment_bytes_opt) {
            (Some(b), _) => format!("{:.0} MiB downloaded", b / 1048576.0),
            (None, Some(b)) => format!("{:.0} MiB of segments", b / 1048576.0),
            (None, None) => format!("~{} s of work", s.worker_secs),
        },
        s.worker_mb,
        s.worker_mb / super::setup::MB_PER_VCPU,
        s.arm_core_factor,
        s.download_rate() / 1e6,
        s.warm_hit_opt.map(|h| format!(" (set: {h})")).unwrap_or_default(),
        s.trials
    );
    println!(
        "{:>5} {:<10} {:>6} {:>7} {:>7} {:>12} {:>6} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>9} {:>11}",
        "rows",
        "query",
        "segs",
        "GB read",
        "workers",
        "fan-out",
        "hit",
        "p50 warm",
        "p99 warm",
        "p50 cold",
        "p99 cold",
        "$/query",
        "Athena $",
        "Druid $",
        "Druid@p50 $"
    );
    for e in estimates {
        println!(
            "{:>5} {:<10} {:>6} {:>7.1} {:>7} {:>12} {:>5.0}% {:>7.2}s {:>7.2}s {:>7.2}s {:>7.2}s {:>9.4} {:>9.4} {:>9.4} {:>11.4}",
            rows_label(e.rows),
            e.kind.name,
            e.shape.segments,
            e.shape.bytes / 1e9,
            e.shape.fanout.workers,
            fanout_label(e),
            e.shape.warm_hit * 100.0,
            e.warm.p50,
            e.warm.p99,
            e.cold.p50,
            e.cold.p99,
            e.warm.cost.total(),
            e.athena,
            e.druid_per_query,
            e.druid_as_fast_per_query
        );
    }
    println!(
        "$/query: Sluice warm (Lambda + requests + S3 + DynamoDB); Athena: $5/TB of the same bytes; Druid: its \
         cluster's month over {per_minute} query a minute, sized to hold the segments (Druid $) or to scan them \
         as fast as Sluice's warm p50 (Druid@p50 $)"
    );
    for e in estimates.iter().filter(|e| e.kind.name == "topN") {
        let c = &e.warm.cost;
        let d = &e.druid;
        println!(
            "  {} rows, topN: worker {:.2} s download, {:.2} s scan (mean); bill {:.0}% Lambda, {:.0}% requests, {:.0}% S3, \
             {:.0}% DynamoDB; Druid {} x {} + {} broker, ${:.0}/month, the scan {:.1} s on its {} vCPUs; as fast: {} x {}, ${:.0}/month",
            rows_label(e.rows),
            e.warm.download_secs,
            e.warm.scan_secs,
            100.0 * c.lambda / c.total(),
            100.0 * c.requests / c.total(),
            100.0 * c.s3 / c.total(),
            100.0 * c.dynamodb / c.total(),
            d.historicals,
            d.instance.name,
            prices::DRUID_BROKER.name,
            d.monthly,
            e.druid_scan_secs,
            d.historicals * d.instance.vcpu,
            e.druid_as_fast.historicals,
            e.druid_as_fast.instance.name,
            e.druid_as_fast.monthly
        );
    }
    for g in goals {
        println!("goal {}: {:.4} -> {}", g.what, g.value, if g.met { "met" } else { "NOT met" });
    }
}

/// The bytes a query reads per row, as the setup takes them: fixed, or each kind's measured.
pub fn read_bytes(s: &QuerySetup) -> String {
    if s.read_bytes_fixed {
        return format!("{} bytes/row read", s.read_bytes_per_row);
    }
    let kinds: Vec<String> =
        super::setup::KINDS.iter().map(|k| format!("{} {:.2}", k.name, k.read_bytes_per_row)).collect();
    format!("bytes/row read as measured ({})", kinds.join(", "))
}
