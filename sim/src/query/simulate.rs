//! One query simulated end to end, and many of them summarised:
//!
//! 1. the broker (the api function) starts, cold or warm, and reads the catalog: the replaces,
//!    then the timeline of the query's time range in 1 MB DynamoDB Query pages, one after
//!    another;
//! 2. it prunes the segments (time, then the filter's share) and plans the fan-out
//!    (`fanout.rs`); with none it scans them itself;
//! 3. each invoker issues its Invokes one after another; each worker downloads, scans and
//!    returns its partial (`worker.rs`); a worker may straggle, and one that fails is retried
//!    once; a sub-broker computes one of its batches itself once it has issued its Invokes,
//!    and does not fail (`invoker.rs`);
//! 4. each invoker merges partials one at a time in order of arrival once it has issued its
//!    Invokes; a sub-broker returns its merged partial to the broker, which finalizes.
//!
//! Latency runs from the broker's invocation (its cold start included when cold) to its answer.
//!
//! The bill: every function's billed seconds (a custom runtime's init included), requests, S3
//! GETs and PUTs, and the catalog's read units.

use super::fanout::Fanout;
use super::invoker::{fan_out, merge, share, Ctx, Meter};
use super::noise::Noise;
use super::setup::{QueryKind, QuerySetup};
use super::worker::{self, Batch, Return};
use crate::prices;

/// What a query's pruned segments are and how they are spread.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Shape {
    /// Rows of the datasource.
    pub rows: f64,
    /// Segment records the catalog reads (the query's time range).
    pub catalog_segments: f64,
    /// Segments read after pruning.
    pub segments: usize,
    /// Bytes downloaded when none is local (whole segments, or the columns read).
    pub bytes: f64,
    /// Bytes of the columns the query reads (what Athena would scan).
    pub read_bytes: f64,
    /// Share of a warm function's bytes already in its /tmp.
    pub warm_hit: f64,
    /// The fan-out.
    pub fanout: Fanout,
}

impl Shape {
    /// The shape of a query of `kind` over a datasource of `rows`.
    pub fn of(rows: f64, kind: &QueryKind, s: &QuerySetup) -> Self {
        let catalog_segments = (rows * s.time_fraction / s.rows_per_segment).ceil().max(1.0);
        let segments = (catalog_segments * s.filter_fraction).ceil().max(1.0) as usize;
        let bytes = segments as f64 * s.rows_per_segment * s.download_bytes_per_row();
        let read_bytes = segments as f64 * s.rows_per_segment * s.read_bytes_per_row;
        let cache = s.tmp_cache_mb * 1024.0 * 1024.0;
        let warm_hit = s.warm_hit_opt.unwrap_or((cache / bytes).min(1.0));
        let fanout = Fanout::plan(bytes, segments, s.bytes_per_worker(kind), s);
        Shape { rows, catalog_segments, segments, bytes, read_bytes, warm_hit, fanout }
    }
}

/// A query's bill, dollars.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Cost {
    /// Lambda duration (GB-seconds).
    pub lambda: f64,
    /// Lambda requests.
    pub requests: f64,
    /// S3 GETs and PUTs.
    pub s3: f64,
    /// DynamoDB read units of the catalog.
    pub dynamodb: f64,
}

impl Cost {
    /// The whole bill.
    pub fn total(&self) -> f64 {
        self.lambda + self.requests + self.s3 + self.dynamodb
    }

    fn add(&mut self, o: &Cost, w: f64) {
        self.lambda += o.lambda * w;
        self.requests += o.requests * w;
        self.s3 += o.s3 * w;
        self.dynamodb += o.dynamodb * w;
    }
}

/// One simulated query.
#[derive(Debug, Clone, Copy)]
pub struct Trial {
    /// Seconds from the broker's invocation to its answer.
    pub latency: f64,
    /// Its bill.
    pub cost: Cost,
    /// Worker invocations retried.
    pub retries: usize,
    /// Worker invocations hedged.
    pub hedges: usize,
    /// Seconds a worker (or the broker alone) downloaded, mean over its runs.
    pub download_secs: f64,
    /// Seconds it scanned, mean.
    pub scan_secs: f64,
}

/// Simulates one query of `kind` over `shape`, every function warm or every one cold.
pub fn trial(shape: &Shape, kind: &QueryKind, s: &QuerySetup, warm: bool, noise: &mut Noise) -> Trial {
    let c = Ctx { kind, s, warm, hit: if warm { shape.warm_hit } else { 0.0 } };
    let mut m = Meter::default();
    let mut t = if warm { 0.0 } else { s.cold_start() };
    let catalog_bytes = shape.catalog_segments * s.catalog_item_bytes;
    t += noise.lognormal(s.catalog_small_secs, 0.3);
    for _ in 0..(catalog_bytes / 1e6).ceil().max(1.0) as usize {
        t += noise.lognormal(s.catalog_page_secs, 0.3);
    }
    let f = &shape.fanout;
    let (done, groups) = match f.depth {
        0 => {
            let run = worker::run(Batch::of(shape.segments as f64, s), kind, c.hit, s, noise);
            m.ran(&run);
            (t + run.secs, kind.groups_per_partial)
        }
        1 => fan_out(t, &share(shape.segments, f.workers), &c, &mut m, noise),
        _ => {
            let batches = share(shape.segments, f.workers);
            let mut arrivals = Vec::with_capacity(f.sub_brokers);
            let mut next = 0;
            for (j, &n) in f.children.iter().enumerate() {
                let start = t + j as f64 * s.invoke_issue + c.start_delay();
                // A sub-broker invokes a worker for each of its batches but its first, which it
                // computes itself once its Invokes are issued, and merges that partial last.
                let others = &batches[next + 1..next + n];
                let own_start = start + others.len() as f64 * s.invoke_issue;
                let own = worker::run(Batch::of(batches[next], s), kind, c.hit, s, noise);
                m.ran(&own);
                let (children_done, children_groups) =
                    if others.is_empty() { (own_start, 0.0) } else { fan_out(start, others, &c, &mut m, noise) };
                next += n;
                let sub_done =
                    children_done.max(own_start + own.secs) + kind.groups_per_partial * s.merge_secs_per_group;
                let sub_groups = c.merged_groups(&[children_groups, kind.groups_per_partial]);
                let bytes = sub_groups * kind.bytes_per_group;
                let put = match worker::return_path(bytes, s) {
                    Return::Payload => 0.0,
                    Return::ThroughS3 => {
                        m.puts += 1.0;
                        m.gets += 1.0;
                        noise.lognormal(s.s3_first_byte, s.s3_first_byte_sigma) + bytes / s.download_rate()
                    }
                };
                m.requests += 1.0;
                m.worker_secs += sub_done + put - start + c.init_billed();
                let arrival = sub_done + put + s.invoke_rtt / 2.0 + worker::receive_secs(bytes, s, noise);
                arrivals.push((arrival, sub_groups));
            }
            merge(t + f.children.len() as f64 * s.invoke_issue, arrivals, &c)
        }
    };
    let latency = done + groups * s.merge_secs_per_group;
    let broker_secs = latency - if warm { 0.0 } else { s.cold_sandbox };
    let gb = |mb: f64| mb / 1024.0;
    let cost = Cost {
        lambda: (broker_secs * gb(s.broker_mb) + m.worker_secs * gb(s.worker_mb)) * prices::LAMBDA_GB_SECOND,
        requests: (1.0 + m.requests) * prices::LAMBDA_REQUEST,
        s3: m.gets * prices::S3_GET + m.puts * prices::S3_PUT,
        dynamodb: ((catalog_bytes / prices::READ_UNIT_BYTES).ceil() + 1.0) * prices::DYNAMODB_READ_UNIT,
    };
    let runs = m.runs.max(1.0);
    Trial {
        latency,
        cost,
        retries: m.retries,
        hedges: m.hedges,
        download_secs: m.download_secs / runs,
        scan_secs: m.scan_secs / runs,
    }
}

/// Latency percentiles and the mean bill of many queries.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Summary {
    /// Median latency, seconds.
    pub p50: f64,
    /// 99th percentile latency, seconds.
    pub p99: f64,
    /// Mean bill.
    pub cost: Cost,
    /// Worker retries per query, mean.
    pub retries: f64,
    /// Worker invocations hedged per query, mean.
    pub hedges: f64,
    /// Seconds a worker downloaded, mean.
    pub download_secs: f64,
    /// Seconds a worker scanned, mean.
    pub scan_secs: f64,
}

/// Simulates `s.trials` queries with draws seeded from `seed`.
pub fn summarise(shape: &Shape, kind: &QueryKind, s: &QuerySetup, warm: bool, seed: u64) -> Summary {
    let mut noise = Noise::seeded(seed);
    let n = s.trials.max(1);
    let trials: Vec<Trial> = (0..n).map(|_| trial(shape, kind, s, warm, &mut noise)).collect();
    let mut latencies: Vec<f64> = trials.iter().map(|x| x.latency).collect();
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    let mut cost = Cost::default();
    for x in &trials {
        cost.add(&x.cost, 1.0 / n as f64);
    }
    let mean = |f: fn(&Trial) -> f64| trials.iter().map(f).sum::<f64>() / n as f64;
    Summary {
        p50: at(0.5),
        p99: at(0.99),
        cost,
        retries: mean(|x| x.retries as f64),
        hedges: mean(|x| x.hedges as f64),
        download_secs: mean(|x| x.download_secs),
        scan_secs: mean(|x| x.scan_secs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::setup::KINDS;

    fn quiet(shape: &Shape, kind: &QueryKind, s: &QuerySetup, warm: bool) -> Trial {
        trial(shape, kind, s, warm, &mut Noise::off())
    }

    #[test]
    fn more_rows_never_answer_sooner_at_a_fixed_fan_out() {
        let s = QuerySetup::default();
        for kind in &KINDS {
            let mut last = 0.0;
            for rows in [5e8, 1e9, 2e9, 5e9, 1e10, 5e10] {
                let mut shape = Shape::of(rows, kind, &s);
                shape.fanout = Fanout::tree(100);
                let t = quiet(&shape, kind, &s, true).latency;
                assert!(t >= last, "{} at {rows} rows: {t} after {last}", kind.name);
                last = t;
            }
        }
    }

    #[test]
    fn more_workers_scan_less_each() {
        let s = QuerySetup::default();
        let shape = Shape::of(1e10, &KINDS[0], &s);
        let mut last = f64::INFINITY;
        for workers in [10, 50, 200, 1000] {
            let batch = Batch::of((shape.segments as f64 / workers as f64).ceil(), &s);
            let run = worker::run(batch, &KINDS[0], 0.0, &s, &mut Noise::off());
            assert!(run.scan_secs < last, "{workers} workers: {run:?}");
            last = run.scan_secs;
        }
        let few = Shape { fanout: Fanout::tree(100), ..shape.clone() };
        let many = Shape { fanout: Fanout::tree(900), ..shape };
        assert!(quiet(&many, &KINDS[0], &s, true).latency < quiet(&few, &KINDS[0], &s, true).latency);
    }

    #[test]
    fn the_bill_grows_with_rows_and_a_cold_query_is_slower_and_dearer() {
        let s = QuerySetup::default();
        for kind in &KINDS {
            let bills: Vec<f64> = [1e9, 1e10, 1e11]
                .iter()
                .map(|&rows| quiet(&Shape::of(rows, kind, &s), kind, &s, true).cost.total())
                .collect();
            assert!(bills[0] < bills[1] && bills[1] < bills[2], "{}: {bills:?}", kind.name);
            let shape = Shape::of(1e10, kind, &s);
            let (warm, cold) = (quiet(&shape, kind, &s, true), quiet(&shape, kind, &s, false));
            assert!(cold.latency > warm.latency && cold.cost.total() > warm.cost.total());
        }
    }

    #[test]
    fn catalog_reads_and_gets_are_billed_per_segment() {
        let s = QuerySetup::default().for_kind(&KINDS[1]);
        let shape = Shape::of(1e10, &KINDS[1], &s);
        let cold = quiet(&shape, &KINDS[1], &s, false);
        let units = (shape.catalog_segments * s.catalog_item_bytes / prices::READ_UNIT_BYTES).ceil() + 1.0;
        assert!((cold.cost.dynamodb - units * prices::DYNAMODB_READ_UNIT).abs() < 1e-15);
        // Cold: nothing cached, a first GET and at least a GET per run of parts per segment.
        assert!(cold.cost.s3 >= shape.segments as f64 * (1.0 + s.part_runs) * prices::S3_GET * 0.999);
    }

    #[test]
    fn failures_are_retried_and_hedging_cuts_the_straggler_tail() {
        let failing = QuerySetup { failure_p: 0.05, trials: 50, ..QuerySetup::default() };
        let shape = Shape::of(1e10, &KINDS[0], &failing);
        let summary = summarise(&shape, &KINDS[0], &failing, true, 3);
        assert!(summary.retries > 1.0, "{summary:?}");
        let plain = QuerySetup { straggler_p: 0.05, trials: 50, hedge_opt: None, ..QuerySetup::default() };
        let hedged = QuerySetup { hedge_opt: Some(1.5), ..plain.clone() };
        let (p, h) = (summarise(&shape, &KINDS[0], &plain, true, 5), summarise(&shape, &KINDS[0], &hedged, true, 5));
        assert!(h.p50 < p.p50 && h.hedges > 0.0 && h.cost.total() > p.cost.total(), "{p:?} {h:?}");
    }
}
