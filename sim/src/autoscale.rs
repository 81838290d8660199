//! The lag-based autoscaler in the simulation: the supervisor's sampling and Druid's decision
//! (`sluice_format::spec::autoscaler`, the protocol's own code), and a `taskCount` change
//! carried out as the regroup protocol does: the groups freeze and drain (every task of the
//! epoch published), then move to the new grouping, each partition keeping its committed
//! offset. With `chained`, the decision comes before planning and the steps follow each other
//! within a pass; without, the decision comes after planning and each step takes a pass.

use sluice_format::spec::autoscaler::{AutoScalerConfig, LagSample, ScaleState};

/// Where a `taskCount` change is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Change {
    /// None under way.
    None,
    /// Decided after a pass planned (unchained): the next pass starts the drain.
    Decided(u32),
    /// Groups frozen, waiting for their tasks to publish.
    Draining(u32),
    /// Drained and snapshotted (unchained): the next pass moves the groups.
    Snapshot(u32),
    /// Moved by this pass (unchained), which then plans and decides nothing.
    Moved,
}

/// A task-count change, as the `autoscaler` item keeps it.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct ScaleEvent {
    /// Seconds since the start.
    pub t: f64,
    /// Groups before.
    pub from: u32,
    /// Groups asked for.
    pub to: u32,
}

/// The autoscaler's state: its item's samples and decisions, and the change under way.
#[derive(Debug, Clone)]
pub struct Scaler {
    config: AutoScalerConfig,
    /// Whether decisions come before planning and a change's steps follow within a pass.
    pub chained: bool,
    samples: Vec<LagSample>,
    last_decision: Option<i64>,
    /// The changes decided.
    pub events: Vec<ScaleEvent>,
    /// The change under way.
    pub change: Change,
}

fn ms(t: f64) -> i64 {
    (t * 1000.0) as i64
}

impl Scaler {
    /// The autoscaler of `config` over `partitions` (`taskCountMax` capped at them).
    pub fn new(config: &AutoScalerConfig, partitions: u32, chained: bool) -> Self {
        let config =
            AutoScalerConfig { task_count_max: config.task_count_max.map(|m| m.min(partitions)), ..config.clone() };
        Scaler { config, chained, samples: Vec::new(), last_decision: None, events: Vec::new(), change: Change::None }
    }

    /// Samples `lag` at `t` and decides for `task_count` groups: the new count, if any.
    pub fn sample_and_decide(&mut self, t: f64, lag: f64, task_count: u32) -> Option<u32> {
        let now = ms(t);
        sluice_layout::autoscaler::keep_lag_sample(&self.config, &mut self.samples, lag.max(0.0) as u64, now);
        let state = ScaleState {
            task_count,
            started: 0,
            last_change: self.events.last().map(|e| ms(e.t)),
            last_decision: self.last_decision,
        };
        if self.config.decision_due(&state, now) {
            self.last_decision = Some(now);
        }
        let to = self.config.decide(&self.samples, &state, now)?;
        self.events.push(ScaleEvent { t, from: task_count, to });
        self.samples.clear();
        Some(to)
    }
}

/// Each new group's committed rows when `partitions` move from the groups of `committed` (rows
/// per old group, spread evenly over its partitions) to `to` groups.
pub fn regrouped(committed: &[f64], partitions: u32, to: u32) -> Vec<f64> {
    let (from, to) = (committed.len().max(1), to.clamp(1, partitions.max(1)) as usize);
    let mut out = vec![0.0; to];
    for p in 0..partitions.max(1) as usize {
        let members = (0..partitions.max(1) as usize).filter(|q| q % from == p % from).count() as f64;
        out[p % to] += committed[p % from] / members;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_rows_follow_their_partitions() {
        // 4 partitions in 2 groups: group 0 holds 0 and 2 (100 rows), group 1 holds 1 and 3.
        assert_eq!(regrouped(&[100.0, 60.0], 4, 4), vec![50.0, 30.0, 50.0, 30.0]);
        assert_eq!(regrouped(&[100.0, 60.0], 4, 1), vec![160.0]);
        assert_eq!(regrouped(&[100.0, 60.0], 4, 9), vec![50.0, 30.0, 50.0, 30.0], "no more groups than partitions");
    }

    #[test]
    fn a_decision_clears_the_samples_and_waits_for_the_next_period() {
        let config: AutoScalerConfig = serde_json::from_value(serde_json::json!({"enableTaskAutoScaler": true,
            "taskCountMin": 1, "taskCountMax": 8, "scaleActionStartDelayMillis": 0, "scaleOutThreshold": 100,
            "scaleInThreshold": 10, "minTriggerScaleActionFrequencyMillis": 120000, "scaleOutStep": 4}))
        .expect("config");
        let mut s = Scaler::new(&config, 6, true);
        assert_eq!(s.sample_and_decide(0.0, 500.0, 1), Some(5));
        assert_eq!(s.sample_and_decide(60.0, 500.0, 5), None, "within minTriggerScaleActionFrequencyMillis");
        assert_eq!(s.sample_and_decide(120.0, 500.0, 5), Some(6), "capped at the partitions");
        assert_eq!(s.events.len(), 2);
    }
}
