//! Which parameter dominates: each one halved and doubled in turn, the others at their values,
//! and how far the median latency (warm and cold) and the bill move.

use super::setup::{QueryKind, QuerySetup};
use super::simulate::{self, Shape};

/// A parameter, and how to scale it.
struct Knob {
    name: &'static str,
    scale: fn(&mut QuerySetup, f64),
}

const KNOBS: [Knob; 12] = [
    Knob { name: "arm64 core speed (scan rate)", scale: |s, x| s.arm_core_factor *= x },
    Knob { name: "bytes read per row", scale: |s, x| s.read_bytes_per_row *= x },
    Knob { name: "S3 MB/s per function", scale: |s, x| s.function_mbps *= x },
    Knob { name: "S3 first-byte latency", scale: |s, x| s.s3_first_byte *= x },
    Knob {
        name: "work per worker (batch size)",
        scale: |s, x| {
            s.worker_secs *= x;
            s.batch_segment_bytes_opt = s.batch_segment_bytes_opt.map(|b| b * x);
        },
    },
    Knob { name: "Invoke issue time", scale: |s, x| s.invoke_issue *= x },
    Knob { name: "Invoke round trip", scale: |s, x| s.invoke_rtt *= x },
    Knob {
        name: "cold start (sandbox + init)",
        scale: |s, x| {
            s.cold_sandbox *= x;
            s.cold_init *= x;
        },
    },
    Knob { name: "broker merge per group", scale: |s, x| s.merge_secs_per_group *= x },
    Knob { name: "catalog page time", scale: |s, x| s.catalog_page_secs *= x },
    Knob { name: "straggler chance", scale: |s, x| s.straggler_p *= x },
    Knob { name: "straggler slowness - 1", scale: |s, x| s.straggler_factor = 1.0 + (s.straggler_factor - 1.0) * x },
];

/// The model's figures with one parameter scaled.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Moved {
    /// The parameter.
    pub parameter: &'static str,
    /// Its factor.
    pub factor: f64,
    /// Median latency, warm, seconds.
    pub p50_warm: f64,
    /// Median latency, cold, seconds.
    pub p50_cold: f64,
    /// Mean bill, warm, dollars.
    pub cost: f64,
}

fn figures(rows: f64, kind: &QueryKind, name: &'static str, factor: f64, s: &QuerySetup) -> Moved {
    let shape = Shape::of(rows, kind, s);
    let warm = simulate::summarise(&shape, kind, s, true, s.seed);
    let cold = simulate::summarise(&shape, kind, s, false, s.seed);
    Moved { parameter: name, factor, p50_warm: warm.p50, p50_cold: cold.p50, cost: warm.cost.total() }
}

/// The base figures, then every parameter at half and at twice its value.
pub fn sweep(rows: f64, kind: &QueryKind, base: &QuerySetup) -> Vec<Moved> {
    let run = |name: &'static str, factor: f64, s: &QuerySetup| figures(rows, kind, name, factor, s);
    let mut out = vec![run("(as set)", 1.0, base)];
    for knob in &KNOBS {
        for factor in [0.5, 2.0] {
            let mut s = base.clone();
            (knob.scale)(&mut s, factor);
            out.push(run(knob.name, factor, &s));
        }
    }
    out
}

/// The broker's two design choices: seconds of work per batch (0.25 to 2), without hedging
/// and hedged at 1.5 times a worker's expected time.
pub fn designs(rows: f64, kind: &QueryKind, base: &QuerySetup) -> Vec<Moved> {
    let mut out = Vec::new();
    for (name, hedge) in [("work per worker (s), no hedging", None), ("work per worker (s), hedged at 1.5x", Some(1.5))]
    {
        for secs in [0.25, 0.5, 1.0, 2.0] {
            let s = QuerySetup {
                worker_secs: secs,
                hedge_opt: hedge,
                bytes_per_worker_opt: None,
                batch_segment_bytes_opt: None,
                ..base.clone()
            };
            out.push(figures(rows, kind, name, secs, &s));
        }
    }
    out
}

/// The parameter that moves `figure` most (as a share of the base), and that share.
pub fn dominant(moved: &[Moved], figure: fn(&Moved) -> f64) -> (&'static str, f64) {
    let base = moved.first().map(figure).unwrap_or(1.0).max(f64::EPSILON);
    moved
        .iter()
        .skip(1)
        .map(|m| (m.parameter, (figure(m) - base).abs() / base))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or(("none", 0.0))
}

/// Prints the sweep and the dominant parameter of each figure, then the design choices.
pub fn print(rows: f64, kind: &QueryKind, moved: &[Moved], designs: &[Moved]) {
    println!(
        "sensitivity at {} rows, {}: each parameter x0.5 and x2, the others as set",
        super::report::rows_label(rows),
        kind.name
    );
    println!("  {:<30} {:>6} {:>9} {:>9} {:>9}", "parameter", "factor", "p50 warm", "p50 cold", "$/query");
    for m in moved {
        println!("  {:<30} {:>6} {:>8.2}s {:>8.2}s {:>9.4}", m.parameter, m.factor, m.p50_warm, m.p50_cold, m.cost);
    }
    let show = |what: &str, (name, share): (&str, f64)| {
        println!("  dominant for {what}: {name} (moves it {:.0}%)", share * 100.0)
    };
    show("p50 warm", dominant(moved, |m| m.p50_warm));
    show("p50 cold", dominant(moved, |m| m.p50_cold));
    show("cost", dominant(moved, |m| m.cost));
    println!("design choices at {} rows, {}", super::report::rows_label(rows), kind.name);
    for m in designs {
        println!("  {:<36} {:>5} {:>8.2}s {:>8.2}s {:>9.4}", m.parameter, m.factor, m.p50_warm, m.p50_cold, m.cost);
    }
}
