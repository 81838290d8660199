//! The discrete-event simulation of the protocol: supervisor passes on a schedule plan tasks per
//! group and invoke indexers; an indexer that completes hands its task to a merger; mergers
//! publish strictly in order per group and hand over to the group's next complete task.
//! Lambda concurrency, cold starts, DynamoDB's write units per partition key (the datasource's,
//! and each group's for its indexers) and S3's PUT rate per prefix are shared resources; the supervisor's requests are serial or concurrent.
//! Production may burst (`Scenario::spike`), and on AWS the lag-based autoscaler may change
//! the groups through a drain and a move (`crate::autoscale`; not in the local loop).

use crate::autoscale::{regrouped, Change, Scaler};
use crate::outcome::{Outcome, Sample, Spend, Utilisation};
use crate::scenario::{Scenario, SupervisorMode};
use crate::throttle::KeyThrottle;
use sluice_format::window::MessageWindow;
use sluice_layout::task::{TaskId, TaskItem, TaskState};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// An indexer's lease: Lambda's 15-minute limit.
const LEASE_MS: i64 = 900_000;

/// A task: the protocol's own task item, moved through its transitions at simulated time.
#[derive(Debug, Clone)]
struct Task {
    group: usize,
    seq: usize,
    rows: f64,
    item: TaskItem,
}

impl Task {
    fn state(&self) -> TaskState {
        self.item.state
    }
}

/// Simulated seconds as the task item's milliseconds.
fn ms(t: f64) -> i64 {
    (t * 1000.0) as i64
}

#[derive(Debug, Clone, Copy)]
enum Job {
    Index(usize),
    Merge(usize),
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Tick,
    Sample,
    PassEnd,
    Arrive(Job),
    Done(Job, bool),
}

struct Timed {
    at: f64,
    seq: u64,
    event: Event,
}

impl PartialEq for Timed {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Timed {}
impl PartialOrd for Timed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timed {
    fn cmp(&self, other: &Self) -> Ordering {
        // Earliest first in a max-heap.
        other.at.total_cmp(&self.at).then(other.seq.cmp(&self.seq))
    }
}

#[derive(Debug, Clone, Default)]
struct Group {
    share: f64,
    planned_to: f64,
    committed: f64,
    tasks: Vec<usize>,
}

/// A simulation in progress.
pub struct Sim<'a> {
    s: &'a Scenario,
    now: f64,
    seq: u64,
    events: BinaryHeap<Timed>,
    groups: Vec<Group>,
    tasks: Vec<Task>,
    running: usize,
    waiting: VecDeque<(Job, f64)>,
    idle: Vec<f64>,
    pass_running: bool,
    datasource_key: KeyThrottle,
    group_keys: Vec<KeyThrottle>,
    s3_puts: f64,
    out: Outcome,
    max_task_secs: f64,
    max_running: usize,
    freshness_sum: f64,
    busy_secs: f64,
    scaler: Option<Scaler>,
    invocations: u64,
    supervisor_secs: f64,
    /// Write units of group keys a regroup retired.
    retired_units: f64,
}

/// Each of `g` groups' share of `partitions` (partition `p` in group `p % g`).
fn shares(partitions: u32, g: usize) -> Vec<f64> {
    let mut shares = vec![0.0; g];
    for p in 0..partitions as usize {
        shares[p % g] += 1.0 / f64::from(partitions);
    }
    shares
}

impl<'a> Sim<'a> {
    /// A simulation of `s`.
    pub fn new(s: &'a Scenario) -> Self {
        let g = s.task_groups.clamp(1, s.partitions) as usize;
        let groups = shares(s.partitions, g).into_iter().map(|share| Group { share, ..Group::default() }).collect();
        Sim {
            s,
            now: 0.0,
            seq: 0,
            events: BinaryHeap::new(),
            groups,
            tasks: Vec::new(),
            running: 0,
            waiting: VecDeque::new(),
            idle: Vec::new(),
            pass_running: false,
            datasource_key: KeyThrottle::new(s.ddb_partition_wcu),
            group_keys: vec![KeyThrottle::new(s.ddb_partition_wcu); g],
            s3_puts: 0.0,
            out: Outcome {
                samples: Vec::new(),
                published: 0.0,
                last_publish: 0.0,
                throughput: 0.0,
                mean_lag: 0.0,
                mean_freshness: 0.0,
                max_lag: 0.0,
                lag_growth: 0.0,
                cold_starts: 0,
                peak_running: 0,
                throttled_secs: 0.0,
                dynamodb_throttled_secs: 0.0,
                merges_waiting: 0,
                tasks: 0,
                utilisation: Utilisation::default(),
                scaling: Vec::new(),
                spend: Spend::default(),
            },
            max_task_secs: 0.0,
            max_running: 0,
            freshness_sum: 0.0,
            busy_secs: 0.0,
            scaler: s.autoscaler.as_ref().map(|a| Scaler::new(&a.config, s.partitions, a.chained)),
            invocations: 0,
            supervisor_secs: 0.0,
            retired_units: 0.0,
        }
    }

    fn at(&mut self, at: f64, event: Event) {
        self.seq += 1;
        self.events.push(Timed { at, seq: self.seq, event });
    }

    fn high(&self, g: usize, t: f64) -> f64 {
        self.s.produced(t) * self.groups[g].share
    }

    fn lag(&self, t: f64) -> f64 {
        (0..self.groups.len()).map(|g| self.high(g, t) - self.groups[g].committed).sum()
    }

    /// Charges DynamoDB write units at `t` to the datasource's key (plans, offsets, segment
    /// records); returns the throttling delay.
    fn ddb_write(&mut self, t: f64, units: f64) -> f64 {
        let delay = self.datasource_key.write(t, units);
        self.out.dynamodb_throttled_secs += delay;
        delay
    }

    /// Charges DynamoDB write units at `t` to group `g`'s key (its tasks and checkpoints).
    fn group_write(&mut self, g: usize, t: f64, units: f64) -> f64 {
        let delay = self.group_keys[g].write(t, units);
        self.out.dynamodb_throttled_secs += delay;
        delay
    }

    fn in_flight(&self, g: usize) -> usize {
        self.groups[g].tasks.iter().filter(|&&i| self.tasks[i].state() != TaskState::Published).count()
    }

    /// Plans the tasks a pass plans at `t`, against watermarks read at `t`; returns how many.
    fn plan(&mut self, t: f64) -> usize {
        let mut planned = 0;
        for g in 0..self.groups.len() {
            let high = self.high(g, t);
            while self.in_flight(g) < self.s.max_in_flight && self.groups[g].planned_to < high - 0.5 {
                let rows = (high - self.groups[g].planned_to).min(self.s.max_records_per_task);
                let seq = self.groups[g].tasks.len();
                self.groups[g].planned_to += rows;
                let id = TaskId { datasource: "sim".into(), group: g as u32, seq: seq as u64 };
                let item =
                    TaskItem::planned(id, serde_json::Value::Null, "sim", vec![], MessageWindow::default(), ms(t));
                self.tasks.push(Task { group: g, seq, rows, item });
                let id = self.tasks.len() - 1;
                self.groups[g].tasks.push(id);
                planned += 1;
            }
        }
        self.out.tasks += planned;
        planned
    }

    /// The jobs a pass invokes: planned tasks (indexers) and complete ones (mergers).
    fn pass_jobs(&self) -> Vec<Job> {
        let mut jobs = Vec::new();
        for (i, task) in self.tasks.iter().enumerate() {
            match task.state() {
                TaskState::Planned => jobs.push(Job::Index(i)),
                TaskState::Complete => jobs.push(Job::Merge(i)),
                _ => {}
            }
        }
        jobs
    }

    fn requests(&self, n: usize, latency: f64) -> f64 {
        match self.s.supervisor {
            SupervisorMode::Serial => n as f64 * latency,
            SupervisorMode::Concurrent(width) => n.div_ceil(width.max(1)) as f64 * latency,
        }
    }

    /// Whether every task of the grouping is published: a change's drain is over.
    fn drained(&self) -> bool {
        self.groups.iter().flat_map(|g| &g.tasks).all(|&i| self.tasks[i].state() == TaskState::Published)
    }

    /// The groups move to `to` groups, each partition keeping its committed offset; nothing is
    /// in flight (drained), so every group plans from its committed rows.
    fn regroup(&mut self, to: u32) {
        let committed: Vec<f64> = self.groups.iter().map(|g| g.committed).collect();
        let moved = regrouped(&committed, self.s.partitions, to);
        let groups: Vec<Group> = shares(self.s.partitions, moved.len())
            .into_iter()
            .zip(moved)
            .map(|(share, committed)| Group { share, planned_to: committed, committed, tasks: Vec::new() })
            .collect();
        self.retired_units += self.group_keys.iter().skip(groups.len()).map(|k| k.units).sum::<f64>();
        self.group_keys.resize(groups.len(), KeyThrottle::new(self.s.ddb_partition_wcu));
        self.groups = groups;
    }

    /// The autoscaler's part of a pass at `t`: whether the pass may plan. `after`: the call
    /// after planning (unchained decisions).
    fn autoscale(&mut self, t: f64, after: bool) -> bool {
        let (lag, count) = (self.lag(t), self.groups.len() as u32);
        let drained = self.drained();
        let Some(scaler) = self.scaler.as_mut() else { return true };
        let (chained, change) = (scaler.chained, scaler.change);
        let mut regroup_to = None;
        let plans = match (chained, after, change) {
            (true, false, Change::None) => match scaler.sample_and_decide(t, lag, count) {
                Some(to) if drained => {
                    regroup_to = Some(to);
                    true
                }
                Some(to) => {
                    scaler.change = Change::Draining(to);
                    false
                }
                None => true,
            },
            (true, false, Change::Draining(to)) if drained => {
                regroup_to = Some(to);
                scaler.change = Change::None;
                true
            }
            (false, true, Change::None) => {
                if let Some(to) = scaler.sample_and_decide(t, lag, count) {
                    scaler.change = Change::Decided(to);
                }
                true
            }
            (false, true, Change::Draining(to)) if drained => {
                scaler.change = Change::Snapshot(to);
                true
            }
            (false, false, Change::Decided(to)) => {
                scaler.change = Change::Draining(to);
                false
            }
            (false, false, Change::Snapshot(to)) => {
                // The move takes this pass; planning and decisions resume at the next.
                regroup_to = Some(to);
                scaler.change = Change::Moved;
                false
            }
            (false, true, Change::Moved) => {
                scaler.change = Change::None;
                false
            }
            (_, _, Change::None) => true,
            _ => false,
        };
        if let Some(to) = regroup_to {
            self.regroup(to);
        }
        plans
    }

    /// A pass at `now` on AWS: its requests take time; each invocation arrives when issued.
    fn pass(&mut self) {
        let (s, now) = (self.s, self.now);
        let live = self.tasks.iter().filter(|t| t.state() != TaskState::Published).count();
        let mut t = now + s.latency.item * (3.0 + (live as f64 / 300.0).ceil());
        t += s.costs.supervisor_pass / s.cpu.2;
        // Watermarks are read one partition at a time in both modes, as the code does.
        t += f64::from(s.partitions) * s.latency.watermark;
        let plans = self.autoscale(now, false);
        let planned = if plans { self.plan(t) } else { 0 };
        self.autoscale(now, true);
        let plan_units = 6.0 * planned as f64;
        t += self.requests(planned, s.latency.transact) + self.ddb_write(t, plan_units);
        let jobs = self.pass_jobs();
        let width = match s.supervisor {
            SupervisorMode::Serial => 1,
            SupervisorMode::Concurrent(w) => w.max(1),
        };
        for (k, job) in jobs.into_iter().enumerate() {
            if k % width == 0 {
                t += s.latency.invoke;
            }
            self.at(t, Event::Arrive(job));
        }
        t += s.latency.item;
        self.invocations += 1;
        self.supervisor_secs += t - now;
        self.record_sample(t - now);
        self.pass_running = true;
        self.at(t, Event::PassEnd);
    }

    fn record_sample(&mut self, pass_secs: f64) {
        let sample = Sample { t: self.now, lag: self.lag(self.now), pass_secs, running: self.running };
        self.out.samples.push(sample);
    }

    /// How long `job` runs, and its effects at its start. `false` with a no-op job.
    fn execute(&mut self, job: Job, start: f64) -> (f64, bool) {
        let (s, c) = (self.s, self.s.costs);
        match job {
            Job::Index(i) => {
                // The planned task is claimed; a duplicate job finds it busy or done.
                if self.tasks[i].state() != TaskState::Planned || self.tasks[i].item.claim(ms(start), LEASE_MS).is_err()
                {
                    return (0.05, false);
                }
                let rows = self.tasks[i].rows;
                let hydrants = (rows * c.hydrants_per_row).ceil().max(1.0);
                let mut secs = (c.indexer_fixed + c.indexer_per_row * rows) / s.cpu.0;
                secs += hydrants * s.latency.s3_put + (hydrants + 3.0) * s.latency.item;
                self.s3_puts += hydrants;
                let units = c.write_units_per_task * 0.5 + c.write_units_per_row * rows * 0.5;
                secs += self.group_write(self.tasks[i].group, start, units);
                self.max_task_secs = self.max_task_secs.max(secs);
                (secs, true)
            }
            Job::Merge(i) => {
                let task = &self.tasks[i];
                if task.state() != TaskState::Complete {
                    return (0.02, false);
                }
                let group = &self.groups[task.group];
                let previous = task.seq.checked_sub(1).map(|p| self.tasks[group.tasks[p]].state());
                if previous.is_some_and(|p| p != TaskState::Published) {
                    self.out.merges_waiting += 1;
                    return (0.02 + 3.0 * s.latency.item, false);
                }
                let rows = task.rows;
                let hydrants = (rows * c.hydrants_per_row).ceil().max(1.0);
                let mut secs = (c.merger_fixed + c.merger_per_row * rows) / s.cpu.1;
                secs += hydrants * s.latency.s3_get + s.latency.s3_put + 8.0 * s.latency.item + s.latency.transact;
                self.s3_puts += 1.0;
                let units = c.write_units_per_task * 0.5 + c.write_units_per_row * rows * 0.5;
                secs += self.ddb_write(start, units);
                (secs, true)
            }
        }
    }

    /// Effects of `job` at its end.
    fn finish(&mut self, job: Job) -> Option<Job> {
        match job {
            Job::Index(i) => {
                self.tasks[i].item.complete(BTreeMap::new());
                Some(Job::Merge(i))
            }
            Job::Merge(i) => {
                self.tasks[i].item.publish("sim", ms(self.now));
                let (g, seq, rows) = (self.tasks[i].group, self.tasks[i].seq, self.tasks[i].rows);
                // Rows are produced evenly over the partitions: a group's row x is the
                // (x / share)-th row produced.
                let from = self.groups[g].committed;
                let produced_at = self.s.time_of((from + rows / 2.0) / self.groups[g].share);
                self.freshness_sum += rows * (self.now - produced_at);
                self.groups[g].committed += rows;
                self.out.published += rows;
                self.out.last_publish = self.now;
                let next = self.groups[g].tasks.get(seq + 1).copied();
                next.filter(|&n| self.tasks[n].state() == TaskState::Complete).map(Job::Merge)
            }
        }
    }

    fn start(&mut self, job: Job, arrived: f64) {
        self.out.throttled_secs += self.now - arrived;
        self.running += 1;
        self.max_running = self.max_running.max(self.running);
        self.idle.retain(|&t| self.now - t <= self.s.keep_warm);
        let cold = if self.idle.pop().is_some() {
            0.0
        } else {
            self.out.cold_starts += 1;
            self.s.cold_start
        };
        let (secs, effective) = self.execute(job, self.now);
        self.busy_secs += cold + secs;
        self.invocations += 1;
        self.at(self.now + cold + secs, Event::Done(job, effective));
    }

    /// Runs the AWS scenario.
    fn run_events(&mut self) {
        let end = self.s.produce_secs + self.s.drain_secs;
        let mut tick = 0.0;
        while tick <= end {
            self.at(tick, Event::Tick);
            tick += self.s.period;
        }
        // Lag between passes too: what a dashboard polling every 5 s would see.
        let mut sample = 2.5;
        while sample <= end {
            self.at(sample, Event::Sample);
            sample += 5.0;
        }
        while let Some(Timed { at, event, .. }) = self.events.pop() {
            if at > end {
                break;
            }
            self.now = at;
            match event {
                Event::Tick if !self.pass_running => self.pass(),
                Event::Tick | Event::Sample => self.record_sample(0.0),
                Event::PassEnd => self.pass_running = false,
                Event::Arrive(job) => {
                    if self.running < self.s.lambda_concurrency {
                        self.start(job, at);
                    } else {
                        self.waiting.push_back((job, at));
                    }
                }
                Event::Done(job, effective) => {
                    self.running -= 1;
                    self.idle.push(self.now);
                    if effective {
                        if let Some(next) = self.finish(job) {
                            let invoke = self.s.latency.invoke;
                            self.at(self.now + invoke, Event::Arrive(next));
                        }
                    }
                    if let Some((job, arrived)) = self.waiting.pop_front() {
                        self.start(job, arrived);
                    }
                }
            }
        }
    }

    /// Runs the local pipeline's loop: a pass, then every queued job in order, then the next
    /// period (at once when late).
    fn run_local(&mut self) {
        let end = self.s.produce_secs + self.s.drain_secs;
        let mut next = 0.0;
        let c = self.s.costs;
        while self.now < end {
            self.now = self.now.max(next);
            next += self.s.period;
            let pass_secs = c.supervisor_pass;
            self.record_sample(pass_secs);
            if self.now >= self.s.produce_secs && self.lag(self.now) < 0.5 {
                break;
            }
            self.plan(self.now);
            let mut queue: VecDeque<Job> = self.pass_jobs().into();
            self.now += pass_secs;
            while let Some(job) = queue.pop_front() {
                let (secs, effective) = self.execute(job, self.now);
                self.now += secs;
                if effective {
                    queue.extend(self.finish(job));
                }
            }
        }
    }

    /// Runs the scenario to its end and summarises it.
    pub fn run(mut self) -> Outcome {
        if self.s.local {
            self.run_local();
        } else {
            self.run_events();
        }
        let s = self.s;
        let producing: Vec<&Sample> = self.out.samples.iter().filter(|x| x.t <= s.produce_secs).collect();
        let mean = |xs: &[&Sample]| xs.iter().map(|x| x.lag).sum::<f64>() / xs.len().max(1) as f64;
        self.out.mean_lag = mean(&producing);
        self.out.max_lag = self.out.samples.iter().map(|x| x.lag).fold(0.0, f64::max);
        let q = producing.len() / 4;
        if q > 0 {
            self.out.lag_growth = mean(&producing[3 * q..]) / mean(&producing[q..2 * q]).max(1.0);
        }
        self.out.throughput = self.out.published / self.out.last_publish.max(f64::EPSILON);
        self.out.mean_freshness = self.freshness_sum / self.out.published.max(1.0);
        let u = &mut self.out.utilisation;
        u.supervisor_pass = self.out.samples.iter().map(|x| x.pass_secs).fold(0.0, f64::max) / s.period;
        u.lambda_concurrency = self.busy_secs / (s.lambda_concurrency as f64 * (s.produce_secs + s.drain_secs));
        self.out.peak_running = self.max_running;
        let keys = self.group_keys.iter().chain([&self.datasource_key]);
        u.dynamodb_partition = KeyThrottle::busiest(keys, s.produce_secs);
        u.s3_prefix = self.s3_puts / s.produce_secs / s.s3_prefix_puts;
        u.task_time_limit = self.max_task_secs / s.task_timeout;
        let units =
            self.retired_units + self.group_keys.iter().chain([&self.datasource_key]).map(|k| k.units).sum::<f64>();
        // Indexer and merger at 1,024 MB, the supervisor at 512 MB.
        let gb_secs = self.busy_secs + self.supervisor_secs * 0.5;
        self.out.spend = Spend::of(gb_secs, self.invocations, units, self.s3_puts);
        self.out.scaling = self.scaler.map(|s| s.events).unwrap_or_default();
        self.out
    }
}
