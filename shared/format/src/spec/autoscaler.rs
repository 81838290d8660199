//! Druid's lag-based autoscaler (`ioConfig.autoScalerConfig`): its settings with Druid's
//! defaults, checked as Druid checks them, and the decision it makes. Every
//! `scaleActionPeriodMillis`, once `scaleActionStartDelayMillis` has passed, the lag samples of
//! the last `lagCollectionRangeMillis` are read: when at least
//! `triggerScaleOutThresholdFrequency` of them are at or above `scaleOutThreshold`, the task
//! count grows by `scaleOutStep` (up to `taskCountMax`); else when at least
//! `triggerScaleInThresholdFrequency` are at or below `scaleInThreshold`, it shrinks by
//! `scaleInStep` (down to `taskCountMin`); and no two changes come closer than
//! `minTriggerScaleActionFrequencyMillis` (Druid's `LagBasedAutoScaler`). The supervisor keeps
//! the samples and acts on the decision (`sluice_pipeline::supervisor`).

use serde::{Deserialize, Serialize};

/// `autoScalerConfig`, with Druid's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AutoScalerConfig {
    /// Whether the autoscaler runs (default false: the settings are then not checked, as in Druid).
    pub enable_task_auto_scaler: bool,
    /// `lagBased`, the only strategy.
    pub auto_scaler_strategy: Option<String>,
    /// Most task groups.
    pub task_count_max: Option<u32>,
    /// Fewest task groups.
    pub task_count_min: Option<u32>,
    /// The task groups a spec without `taskCount` starts with (else `taskCountMin`).
    pub task_count_start: Option<u32>,
    /// How often lag is sampled (30 s).
    pub lag_collection_interval_millis: u64,
    /// How far back samples count (10 minutes).
    pub lag_collection_range_millis: u64,
    /// How long after start no action is taken (5 minutes).
    pub scale_action_start_delay_millis: u64,
    /// How often a decision is made (1 minute).
    pub scale_action_period_millis: u64,
    /// Total lag, in records, at or above which a sample counts toward scaling out (6,000,000).
    pub scale_out_threshold: u64,
    /// Total lag at or below which a sample counts toward scaling in (1,000,000).
    pub scale_in_threshold: u64,
    /// Fraction of samples above the out threshold that scales out (0.3).
    #[serde(alias = "triggerScaleOutFractionThreshold")]
    pub trigger_scale_out_threshold_frequency: f64,
    /// Fraction of samples below the in threshold that scales in (0.9).
    #[serde(alias = "triggerScaleInFractionThreshold")]
    pub trigger_scale_in_threshold_frequency: f64,
    /// Groups removed per scale-in (1).
    pub scale_in_step: u32,
    /// Groups added per scale-out (2).
    pub scale_out_step: u32,
    /// Least time between two changes (10 minutes).
    pub min_trigger_scale_action_frequency_millis: u64,
}

impl Default for AutoScalerConfig {
    fn default() -> Self {
        Self {
            enable_task_auto_scaler: false,
            auto_scaler_strategy: None,
            task_count_max: None,
            task_count_min: None,
            task_count_start: None,
            lag_collection_interval_millis: 30_000,
            lag_collection_range_millis: 600_000,
            scale_action_start_delay_millis: 300_000,
            scale_action_period_millis: 60_000,
            scale_out_threshold: 6_000_000,
            scale_in_threshold: 1_000_000,
            trigger_scale_out_threshold_frequency: 0.3,
            trigger_scale_in_threshold_frequency: 0.9,
            scale_in_step: 1,
            scale_out_step: 2,
            min_trigger_scale_action_frequency_millis: 600_000,
        }
    }
}

/// Most lag samples a window holds: ranges and intervals whose ratio is larger are refused.
pub const MAX_LAG_SAMPLES: u64 = 10_000;
/// Most task groups the autoscaler may ask for.
pub const MAX_TASK_COUNT: u32 = 10_000;

/// A lag sample: when it was taken (ms) and the total lag of the datasource's partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LagSample {
    /// When, in milliseconds.
    pub at: i64,
    /// Records behind, over every partition.
    pub lag: u64,
}

/// What the autoscaler knows at a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleState {
    /// The current number of task groups.
    pub task_count: u32,
    /// When the autoscaler started watching (the supervisor's start or the config's change).
    pub started: i64,
    /// When it last changed the task count, if ever.
    pub last_change: Option<i64>,
    /// When it last decided, if ever.
    pub last_decision: Option<i64>,
}

impl AutoScalerConfig {
    /// The settings checked as Druid checks them (`taskCountMin`/`Max` only when enabled), and
    /// bounded: the field at fault and why.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if let Some(s) = self.auto_scaler_strategy.as_deref().filter(|s| *s != "lagBased") {
            return Err(("autoScalerStrategy", format!("{s:?} is not supported: use lagBased")));
        }
        if !self.enable_task_auto_scaler {
            return Ok(());
        }
        let (Some(min), Some(max)) = (self.task_count_min, self.task_count_max) else {
            return Err((
                "taskCountMax",
                "taskCountMax and taskCountMin are required when enableTaskAutoScaler is true".into(),
            ));
        };
        if min == 0 {
            return Err(("taskCountMin", "must be at least 1".into()));
        }
        if max < min {
            return Err(("taskCountMax", "must not be lower than taskCountMin".into()));
        }
        if max > MAX_TASK_COUNT {
            return Err(("taskCountMax", format!("at most {MAX_TASK_COUNT}")));
        }
        if self.task_count_start.is_some_and(|s| s < min || s > max) {
            return Err(("taskCountStart", "must be from taskCountMin to taskCountMax".into()));
        }
        for (field, v) in [
            ("triggerScaleOutThresholdFrequency", self.trigger_scale_out_threshold_frequency),
            ("triggerScaleInThresholdFrequency", self.trigger_scale_in_threshold_frequency),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err((field, "must be a fraction from 0 to 1".into()));
            }
        }
        for (field, v) in [("scaleInStep", self.scale_in_step), ("scaleOutStep", self.scale_out_step)] {
            if v == 0 {
                return Err((field, "must be at least 1".into()));
            }
        }
        for (field, v) in [
            ("lagCollectionIntervalMillis", self.lag_collection_interval_millis),
            ("lagCollectionRangeMillis", self.lag_collection_range_millis),
            ("scaleActionPeriodMillis", self.scale_action_period_millis),
        ] {
            if v == 0 {
                return Err((field, "must be positive".into()));
            }
        }
        if self.lag_collection_range_millis / self.lag_collection_interval_millis > MAX_LAG_SAMPLES {
            return Err((
                "lagCollectionRangeMillis",
                format!("holds more than {MAX_LAG_SAMPLES} samples of lagCollectionIntervalMillis"),
            ));
        }
        if self.scale_in_threshold > self.scale_out_threshold {
            return Err(("scaleInThreshold", "must not be above scaleOutThreshold".into()));
        }
        Ok(())
    }

    /// Druid's decision over `lags` (the window's samples) for `current` task groups: the new
    /// count, or `None` to keep it. Scaling out wins over scaling in.
    pub fn desired_task_count(&self, lags: &[u64], current: u32) -> Option<u32> {
        let (Some(min), Some(max)) = (self.task_count_min, self.task_count_max) else { return None };
        if lags.is_empty() {
            return None;
        }
        let n = lags.len() as f64;
        let beyond = lags.iter().filter(|&&l| l >= self.scale_out_threshold).count() as f64 / n;
        let within = lags.iter().filter(|&&l| l <= self.scale_in_threshold).count() as f64 / n;
        if beyond >= self.trigger_scale_out_threshold_frequency {
            return (current != max).then(|| current.saturating_add(self.scale_out_step).min(max));
        }
        if within >= self.trigger_scale_in_threshold_frequency {
            return (current != min).then(|| current.saturating_sub(self.scale_in_step).max(min));
        }
        None
    }

    /// Whether a decision is due at `now`: enabled, past the start delay, a period after the
    /// last decision, and far enough from the last change.
    pub fn decision_due(&self, state: &ScaleState, now: i64) -> bool {
        let after = |t: i64, ms: u64| now.saturating_sub(t) >= i64::try_from(ms).unwrap_or(i64::MAX);
        self.enable_task_auto_scaler
            && after(state.started, self.scale_action_start_delay_millis)
            && state.last_decision.is_none_or(|t| after(t, self.scale_action_period_millis))
            && state.last_change.is_none_or(|t| after(t, self.min_trigger_scale_action_frequency_millis))
    }

    /// The samples of `samples` inside the window ending at `now`, oldest first.
    pub fn window<'a>(&self, samples: &'a [LagSample], now: i64) -> impl Iterator<Item = &'a LagSample> {
        let from = now.saturating_sub(i64::try_from(self.lag_collection_range_millis).unwrap_or(i64::MAX));
        samples.iter().filter(move |s| s.at > from && s.at <= now)
    }

    /// The task groups a spec starts with when it gives no `taskCount`: `taskCountStart`, else
    /// `taskCountMin`. A given `taskCount` wins: it is where the autoscaler writes its changes.
    pub fn start_count(&self) -> Option<u32> {
        self.task_count_start.or(self.task_count_min)
    }

    /// Adds a sample of `lag` at `now` to `samples` (at most one per
    /// `lagCollectionIntervalMillis`) and keeps those of the last `lagCollectionRangeMillis`, at
    /// most [`MAX_LAG_SAMPLES`].
    pub fn add_sample(&self, samples: &mut Vec<LagSample>, lag: u64, now: i64) {
        let interval = i64::try_from(self.lag_collection_interval_millis).unwrap_or(i64::MAX);
        if samples.last().is_none_or(|s| now.saturating_sub(s.at) >= interval) {
            samples.push(LagSample { at: now, lag });
        }
        let range = i64::try_from(self.lag_collection_range_millis).unwrap_or(i64::MAX);
        samples.retain(|s| s.at > now.saturating_sub(range));
        let over = samples.len().saturating_sub(MAX_LAG_SAMPLES as usize);
        samples.drain(..over);
    }

    /// The decision at `now`: the new task count, or `None` (not due, or no change).
    pub fn decide(&self, samples: &[LagSample], state: &ScaleState, now: i64) -> Option<u32> {
        if !self.decision_due(state, now) {
            return None;
        }
        let lags: Vec<u64> = self.window(samples, now).map(|s| s.lag).collect();
        self.desired_task_count(&lags, state.task_count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The example of Druid's Kafka supervisor reference.
    fn documented() -> AutoScalerConfig {
        serde_json::from_value(json!({
            "enableTaskAutoScaler": true, "taskCountMax": 6, "taskCountMin": 2,
            "minTriggerScaleActionFrequencyMillis": 600000, "autoScalerStrategy": "lagBased",
            "lagCollectionIntervalMillis": 30000, "lagCollectionRangeMillis": 600000,
            "scaleOutThreshold": 6000000, "triggerScaleOutFractionThreshold": 0.3,
            "scaleInThreshold": 1000000, "triggerScaleInFractionThreshold": 0.9,
            "scaleActionStartDelayMillis": 300000, "scaleActionPeriodMillis": 60000,
            "scaleInStep": 1, "scaleOutStep": 2
        }))
        .expect("Druid's example reads")
    }

    #[test]
    fn druids_example_scales_as_its_lag_based_autoscaler_does() {
        let c = documented();
        c.check().expect("valid");
        // Twenty samples (ten minutes every 30 s): six at the out threshold is 0.3 of them.
        let mut lags = vec![2_000_000u64; 14];
        lags.extend([6_000_000; 6]);
        assert_eq!(c.desired_task_count(&lags, 2), Some(4), "out by scaleOutStep");
        assert_eq!(c.desired_task_count(&lags, 5), Some(6), "capped at taskCountMax");
        assert_eq!(c.desired_task_count(&lags, 6), None, "already at the maximum");
        lags[19] = 5_999_999;
        assert_eq!(c.desired_task_count(&lags, 2), None, "five of twenty is below 0.3; nor are 0.9 low");
        // Eighteen of twenty at or below the in threshold is 0.9.
        let mut low = vec![1_000_000u64; 18];
        low.extend([3_000_000; 2]);
        assert_eq!(c.desired_task_count(&low, 4), Some(3), "in by scaleInStep");
        assert_eq!(c.desired_task_count(&low, 2), None, "already at the minimum");
        // Out wins over in when both hold.
        let mut both = AutoScalerConfig { trigger_scale_in_threshold_frequency: 0.5, ..c.clone() };
        both.trigger_scale_out_threshold_frequency = 0.1;
        let mixed = [7_000_000, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(both.desired_task_count(&mixed, 3), Some(5));
        assert_eq!(c.desired_task_count(&[], 3), None, "no samples, no action");
    }

    #[test]
    fn decisions_wait_for_the_start_delay_the_period_and_the_last_change() {
        let c = documented();
        let minute = 60_000;
        let samples: Vec<LagSample> = (0..40).map(|i| LagSample { at: i * 30_000, lag: 9_000_000 }).collect();
        let state = ScaleState { task_count: 2, started: 0, last_change: None, last_decision: None };
        assert_eq!(c.decide(&samples, &state, 4 * minute), None, "inside the five-minute start delay");
        assert_eq!(c.decide(&samples, &state, 5 * minute), Some(4));
        let decided = ScaleState { last_decision: Some(5 * minute), ..state };
        assert_eq!(c.decide(&samples, &decided, 5 * minute + 30_000), None, "within a period of the last decision");
        let changed =
            ScaleState { task_count: 4, last_change: Some(5 * minute), last_decision: Some(5 * minute), ..state };
        assert_eq!(c.decide(&samples, &changed, 14 * minute), None, "within ten minutes of the last change");
        assert_eq!(c.decide(&samples, &changed, 15 * minute), Some(6));
        // Only the last ten minutes count: old spikes are forgotten.
        let calm: Vec<LagSample> =
            (0..40).map(|i| LagSample { at: i * 30_000, lag: if i < 20 { 9_000_000 } else { 0 } }).collect();
        assert_eq!(c.decide(&calm, &changed, 20 * minute), Some(3), "the window holds calm samples only");
        assert_eq!(c.window(&calm, 20 * minute).count(), 19, "samples after 10:00 up to 20:00");
        let off = AutoScalerConfig { enable_task_auto_scaler: false, ..c };
        assert_eq!(off.decide(&samples, &state, 60 * minute), None, "disabled");
    }

    #[test]
    fn bad_settings_are_refused_naming_the_field() {
        let with = |v: serde_json::Value| -> AutoScalerConfig {
            let mut base = json!({"enableTaskAutoScaler": true, "taskCountMax": 6, "taskCountMin": 2});
            base.as_object_mut().expect("object").extend(v.as_object().cloned().unwrap_or_default());
            serde_json::from_value(base).expect("reads")
        };
        for (v, field) in [
            (json!({"taskCountMin": null}), "taskCountMax"),
            (json!({"taskCountMax": 1}), "taskCountMax"),
            (json!({"taskCountMin": 0}), "taskCountMin"),
            (json!({"triggerScaleOutThresholdFrequency": 1.5}), "triggerScaleOutThresholdFrequency"),
            (json!({"scaleOutStep": 0}), "scaleOutStep"),
            (json!({"lagCollectionIntervalMillis": 1}), "lagCollectionRangeMillis"),
            (json!({"autoScalerStrategy": "cpu"}), "autoScalerStrategy"),
            (json!({"scaleInThreshold": 7000000}), "scaleInThreshold"),
            (json!({"taskCountStart": 7}), "taskCountStart"),
            (json!({"taskCountStart": 1}), "taskCountStart"),
        ] {
            assert_eq!(with(v.clone()).check().map_err(|e| e.0), Err(field), "{v}");
        }
        let disabled: AutoScalerConfig = serde_json::from_value(json!({})).expect("reads");
        assert_eq!(disabled.check(), Ok(()), "a disabled, empty config is accepted as Druid accepts it");
    }
}
