//! Real-time tasks simulated (`sluiceConfig.realtime`): from the first supervisor pass (which
//! plans them whether or not records have arrived), each group's open task reads as records arrive, at most as fast as its share
//! of a core indexes them, and checkpoints every period; a checkpoint makes what was read
//! queryable once its hydrant is uploaded and its transaction is written, after any
//! DynamoDB throttling on the group's own partition key (its tasks and checkpoints); the
//! mergers write the datasource's key. A task closes at `maxRecordsPerTask` and is merged; its rows
//! were queryable already. Freshness is per row: checkpoint visible minus the row's produce
//! time (rows of a group are produced evenly).

use crate::outcome::{Outcome, Sample, Utilisation};
use crate::scenario::Scenario;
use crate::throttle::KeyThrottle;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What a real-time run adds to a scenario, measured by `bench pipeline --realtime`.
#[derive(Debug, Clone, Copy)]
pub struct Realtime {
    /// Checkpoint period, seconds.
    pub checkpoint_period: f64,
    /// DynamoDB write units one open task uses per second (checkpoints, heartbeats).
    pub write_units_per_group_second: f64,
}

/// Rows-weighted freshness samples: each checkpoint's rows, spread evenly over their range.
#[derive(Default)]
struct Freshness {
    points: Vec<(f64, f64)>,
}

impl Freshness {
    /// `rows` made queryable at once, the oldest `oldest` s and the newest `newest` s ago.
    fn add(&mut self, rows: f64, oldest: f64, newest: f64) {
        const STEPS: usize = 8;
        for k in 0..STEPS {
            let f = newest + (oldest - newest) * (k as f64 + 0.5) / STEPS as f64;
            self.points.push((f, rows / STEPS as f64));
        }
    }

    fn mean_and_p99(mut self) -> (f64, f64) {
        let total: f64 = self.points.iter().map(|p| p.1).sum();
        if total <= 0.0 {
            return (0.0, 0.0);
        }
        let mean = self.points.iter().map(|p| p.0 * p.1).sum::<f64>() / total;
        self.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut seen = 0.0;
        for (f, w) in &self.points {
            seen += w;
            if seen >= 0.99 * total {
                return (mean, *f);
            }
        }
        (mean, self.points.last().map_or(0.0, |p| p.0))
    }
}

/// Freshness of a real-time run: of every row, and of rows produced once every group has
/// caught up (read what was produced before it first read: a group whose share of a core
/// falls behind the rate has a backlog).
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RealtimeFreshness {
    /// Rows-weighted p99, every row, seconds.
    pub p99: f64,
    /// When every group had first caught up, seconds from the start (the run's end if never).
    pub caught_up_at: f64,
    /// Mean, rows produced once every group had caught up.
    pub steady_mean: f64,
    /// Rows-weighted p99, rows produced once every group had caught up.
    pub steady_p99: f64,
}

/// Runs `s` with real-time tasks.
pub fn run(s: &Scenario, rt: &Realtime) -> (Outcome, RealtimeFreshness) {
    let c = s.costs;
    let groups = s.task_groups.clamp(1, s.partitions) as usize;
    let share = 1.0 / groups as f64;
    let group_rate = s.rate * share;
    let end = s.produce_secs + s.drain_secs;
    let high = |t: f64| group_rate * t.min(s.produce_secs);
    // The open tasks start at the first pass, at 0, whether or not records have arrived.
    let first_pass = 0.0;
    let capacity = rt.checkpoint_period * s.cpu.0 / c.indexer_per_row;
    let (mut read, mut since_close) = (vec![0.0_f64; groups], vec![0.0_f64; groups]);
    let mut events: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let key = |t: f64| (t * 1e6) as u64;
    for g in 0..groups {
        let phase = rt.checkpoint_period * g as f64 / groups as f64;
        events.push(Reverse((key(first_pass + phase), g)));
    }
    let (mut throttled, mut s3_puts) = (0.0, 0.0);
    let mut datasource_key = KeyThrottle::new(s.ddb_partition_wcu);
    let mut group_keys = vec![KeyThrottle::new(s.ddb_partition_wcu); groups];
    let (mut freshness, mut steady) = (Freshness::default(), Freshness::default());
    let (mut caught, mut behind, mut caught_up_at) = (vec![false; groups], groups, None::<f64>);
    let (mut published, mut last_publish, mut tasks, mut max_task_secs) = (0.0, 0.0_f64, groups, 0.0_f64);
    let mut samples = Vec::new();
    let mut next_sample = 2.5;
    let queryable = |read: &[f64]| read.iter().sum::<f64>();
    while let Some(Reverse((at, g))) = events.pop() {
        let t = at as f64 / 1e6;
        if t > end {
            break;
        }
        while next_sample <= t {
            let lag = high(next_sample) * groups as f64 - queryable(&read);
            samples.push(Sample { t: next_sample, lag, pass_secs: 0.0, running: groups });
            next_sample += 5.0;
        }
        let to = high(t).min(read[g] + capacity);
        let rows = to - read[g];
        let mut next = t + rt.checkpoint_period;
        if rows > 0.0 {
            let delay = group_keys[g].write(t, rt.write_units_per_group_second * rt.checkpoint_period);
            throttled += delay;
            let visible = t + s.latency.s3_put + s.latency.transact + delay;
            s3_puts += 1.0;
            freshness.add(rows, visible - read[g] / group_rate, visible - to / group_rate);
            if caught_up_at.is_some_and(|at| read[g] / group_rate >= at) {
                steady.add(rows, visible - read[g] / group_rate, visible - to / group_rate);
            }
            if !caught[g] && to >= high(t) {
                caught[g] = true;
                behind -= 1;
                if behind == 0 {
                    caught_up_at = Some(t);
                }
            }
            read[g] = to;
            since_close[g] += rows;
            published += rows;
            last_publish = last_publish.max(visible);
            next = next.max(visible);
            if since_close[g] >= s.max_records_per_task {
                // The task closes and is merged (its rows were queryable already).
                let merge_secs = (c.merger_fixed + c.merger_per_row * since_close[g]) / s.cpu.1;
                max_task_secs = max_task_secs.max(merge_secs);
                throttled += datasource_key.write(t, c.write_units_per_task * 0.5);
                s3_puts += 1.0;
                since_close[g] = 0.0;
                tasks += 1;
            }
        }
        events.push(Reverse((key(next), g)));
    }
    let producing: Vec<&Sample> = samples.iter().filter(|x| x.t <= s.produce_secs).collect();
    let mean_lag = producing.iter().map(|x| x.lag).sum::<f64>() / producing.len().max(1) as f64;
    let (mean_freshness, p99) = freshness.mean_and_p99();
    let (steady_mean, steady_p99) = steady.mean_and_p99();
    let out = Outcome {
        max_lag: samples.iter().map(|x| x.lag).fold(0.0, f64::max),
        samples,
        published,
        last_publish,
        throughput: published / last_publish.max(f64::EPSILON),
        mean_lag,
        mean_freshness,
        lag_growth: 0.0,
        cold_starts: groups as u64,
        peak_running: groups,
        throttled_secs: 0.0,
        dynamodb_throttled_secs: throttled,
        merges_waiting: 0,
        tasks,
        utilisation: Utilisation {
            supervisor_pass: 0.0,
            lambda_concurrency: groups as f64 / s.lambda_concurrency as f64,
            dynamodb_partition: KeyThrottle::busiest(group_keys.iter().chain([&datasource_key]), s.produce_secs),
            s3_prefix: s3_puts / s.produce_secs / s.s3_prefix_puts,
            task_time_limit: max_task_secs / s.task_timeout,
        },
        scaling: Vec::new(),
        spend: Default::default(),
    };
    let caught_up_at = caught_up_at.unwrap_or(end);
    (out, RealtimeFreshness { p99, caught_up_at, steady_mean, steady_p99 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Costs;

    #[test]
    fn open_tasks_read_from_the_first_pass_so_no_row_waits_a_period() {
        let mut s = Scenario::aws(8, 8_000.0, Costs::synthetic());
        s.produce_secs = 300.0;
        s.task_groups = 8;
        let rt = Realtime { checkpoint_period: 1.0, write_units_per_group_second: 2.0 };
        let (out, f) = run(&s, &rt);
        assert!((out.published - 8_000.0 * 300.0).abs() < 1.0, "every row: {}", out.published);
        assert!(f.caught_up_at < 2.0, "every group reads from the start: caught up at {}", f.caught_up_at);
        assert!(f.p99 < 2.0 && f.p99 < s.period / 10.0, "p99 {} s of every row, a period {} s", f.p99, s.period);
    }
}
