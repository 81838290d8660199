//! How invokers run their workers: each issues its Invokes one after another, each worker may
//! fail (retried once) or straggle (invoked again when hedging is on), and the invoker merges
//! partials one at a time in order of arrival once it has issued its Invokes. Every run is
//! metered for the bill.

use super::noise::Noise;
use super::setup::{QueryKind, QuerySetup};
use super::worker::{self, Batch, Return};

/// What is metered while a query runs.
#[derive(Default)]
pub(super) struct Meter {
    /// Billed seconds of workers and sub-brokers.
    pub(super) worker_secs: f64,
    /// Invocations beside the broker's.
    pub(super) requests: f64,
    /// S3 GETs.
    pub(super) gets: f64,
    /// S3 PUTs.
    pub(super) puts: f64,
    /// Failed invocations retried.
    pub(super) retries: usize,
    /// Late invocations hedged.
    pub(super) hedges: usize,
    /// Worker runs.
    pub(super) runs: f64,
    /// Seconds the runs downloaded.
    pub(super) download_secs: f64,
    /// Seconds the runs scanned.
    pub(super) scan_secs: f64,
}

impl Meter {
    /// Counts `run`'s GETs and seconds.
    pub(super) fn ran(&mut self, run: &worker::WorkerRun) {
        self.runs += 1.0;
        self.gets += run.gets;
        self.download_secs += run.download_secs;
        self.scan_secs += run.scan_secs;
    }
}

/// What every invocation of one query shares.
pub(super) struct Ctx<'a> {
    /// The query's kind.
    pub(super) kind: &'a QueryKind,
    /// The parameters.
    pub(super) s: &'a QuerySetup,
    /// Every function warm (or every one cold).
    pub(super) warm: bool,
    /// Share of a worker's bytes in its /tmp.
    pub(super) hit: f64,
}

impl Ctx<'_> {
    /// Seconds from an Invoke's arrival to its handler's start.
    pub(super) fn start_delay(&self) -> f64 {
        self.s.invoke_rtt / 2.0 + if self.warm { 0.0 } else { self.s.cold_start() }
    }

    /// Billed seconds beside the handler's: a cold custom runtime's init.
    pub(super) fn init_billed(&self) -> f64 {
        if self.warm {
            0.0
        } else {
            self.s.cold_init
        }
    }

    pub(super) fn merged_groups(&self, groups: &[f64]) -> f64 {
        if self.kind.groups_by_time {
            groups.iter().sum()
        } else {
            groups.iter().copied().fold(0.0, f64::max)
        }
    }
}

/// An invoker free at `t0` starts a worker per batch (segments each) and merges their partials
/// as they arrive; returns when it has merged the last, with the merged groups.
pub(super) fn fan_out(t0: f64, batches: &[f64], c: &Ctx<'_>, m: &mut Meter, noise: &mut Noise) -> (f64, f64) {
    let s = c.s;
    let mut arrivals = Vec::with_capacity(batches.len());
    for (i, &segments) in batches.iter().enumerate() {
        let start = t0 + i as f64 * s.invoke_issue + c.start_delay();
        let (end, answer) = attempt(start, Batch::of(segments, s), c, m, noise);
        let arrival = end + s.invoke_rtt / 2.0 + worker::receive_secs(answer.partial_bytes, s, noise);
        arrivals.push((arrival, c.kind.groups_per_partial));
    }
    merge(t0 + batches.len() as f64 * s.invoke_issue, arrivals, c)
}

/// One batch's invocation from `start`: retried once if it fails, invoked again if hedging
/// finds it late. Returns when the answer taken ends, and that run; bills every run.
fn attempt(start: f64, batch: Batch, c: &Ctx<'_>, m: &mut Meter, noise: &mut Noise) -> (f64, worker::WorkerRun) {
    let s = c.s;
    let run = |m: &mut Meter, noise: &mut Noise| {
        let r = worker::run(batch, c.kind, c.hit, s, noise);
        m.requests += 1.0;
        m.ran(&r);
        if r.returned == Return::ThroughS3 {
            m.puts += 1.0;
            m.gets += 1.0;
        }
        r
    };
    let first = run(m, noise);
    if noise.chance(s.failure_p) {
        let failed_after = noise.uniform() * first.secs;
        m.worker_secs += failed_after + c.init_billed();
        m.retries += 1;
        let again = start + failed_after + s.invoke_rtt / 2.0 + s.invoke_issue + c.start_delay();
        let second = run(m, noise);
        m.worker_secs += second.secs + c.init_billed();
        return (again + second.secs, second);
    }
    m.worker_secs += first.secs + c.init_billed();
    if let Some(h) = s.hedge_opt {
        let expected = worker::run(batch, c.kind, c.hit, s, &mut Noise::off()).secs;
        if first.secs > h * expected {
            // Both run to their end and are billed; the first answer is taken.
            m.hedges += 1;
            let again = start + h * expected + s.invoke_issue + c.start_delay();
            let second = run(m, noise);
            m.worker_secs += second.secs + c.init_billed();
            if again + second.secs < start + first.secs {
                return (again + second.secs, second);
            }
        }
    }
    (start + first.secs, first)
}

/// Merges partials (arrival, groups) one at a time from `free`; the time of the last merge and
/// the merged groups.
pub(super) fn merge(free: f64, mut arrivals: Vec<(f64, f64)>, c: &Ctx<'_>) -> (f64, f64) {
    arrivals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut done = free;
    for &(at, groups) in &arrivals {
        done = done.max(at) + groups * c.s.merge_secs_per_group;
    }
    let groups: Vec<f64> = arrivals.iter().map(|a| a.1).collect();
    (done, c.merged_groups(&groups))
}

/// `segments` shared by `n` batches as evenly as whole segments allow.
pub(super) fn share(segments: usize, n: usize) -> Vec<f64> {
    (0..n).map(|i| (segments / n + usize::from(i < segments % n)) as f64).collect()
}
