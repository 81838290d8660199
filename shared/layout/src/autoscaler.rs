//! The body of a datasource's `autoscaler` item: the lag samples the autoscaler decides on and
//! the task-count changes it made (`sluice-pipeline`'s supervisor writes it each pass).
//!
//! The item is bounded in bytes whatever the spec and the partition count: it keeps at most
//! [`MAX_DECISIONS`] changes and [`MAX_KEPT_SAMPLES`] lag samples, numbers chosen so that the
//! widest item (every number at its widest) stays within [`AUTOSCALER_ITEM_BYTES`]. A
//! collection window that would hold more samples is kept thinned: one sample per
//! `lagCollectionRangeMillis / MAX_KEPT_SAMPLES` at most, spread over the whole window, so the
//! decision's fractions are still taken over the range the spec asks for.

use serde::{Deserialize, Serialize};
use sluice_format::spec::autoscaler::{AutoScalerConfig, LagSample};

/// Most task-count changes the item keeps.
pub const MAX_DECISIONS: usize = 50;

/// Bytes of an autoscaler item's body at most: DynamoDB's 400 KB item limit, less room for the
/// keys and attributes.
pub const AUTOSCALER_ITEM_BYTES: usize = 360 << 10;

/// Bytes of the widest lag sample in the item's JSON, with the comma that separates it:
/// `{"at":-9223372036854775808,"lag":18446744073709551615},`.
pub const WIDEST_SAMPLE_BYTES: usize = 55;

/// Bytes of the widest change in the item's JSON, with its comma (every number at its widest).
pub const WIDEST_CHANGE_BYTES: usize = 123;

/// Bytes of the item's other fields at their widest, with the brackets of its lists.
const WIDEST_FIELDS_BYTES: usize = 128;

/// Most lag samples the item keeps: as many of the widest as fit beside the widest changes and
/// fields (6,588).
pub const MAX_KEPT_SAMPLES: usize =
    (AUTOSCALER_ITEM_BYTES - WIDEST_FIELDS_BYTES - MAX_DECISIONS * WIDEST_CHANGE_BYTES) / WIDEST_SAMPLE_BYTES;

/// A task-count change the autoscaler made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleChange {
    /// When, in milliseconds.
    pub at: i64,
    /// The task count before.
    pub from: u32,
    /// The task count asked for.
    pub to: u32,
    /// The samples it was decided on.
    pub samples: usize,
    /// The largest lag among them.
    pub max_lag: u64,
}

/// The `autoscaler` item of a datasource.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AutoscalerItem {
    /// When the autoscaler started watching the datasource.
    pub started: i64,
    /// Lag samples, oldest first, within the collection range.
    pub samples: Vec<LagSample>,
    /// When it last decided.
    pub last_decision: Option<i64>,
    /// Its changes, oldest first.
    pub changes: Vec<ScaleChange>,
}

impl AutoscalerItem {
    /// Adds a sample of `lag` taken at `now`, kept as [`keep_lag_sample`] keeps them.
    pub fn add_sample(&mut self, config: &AutoScalerConfig, lag: u64, now: i64) {
        keep_lag_sample(config, &mut self.samples, lag, now);
    }

    /// Adds a change, keeping the last [`MAX_DECISIONS`].
    pub fn add_change(&mut self, change: ScaleChange) {
        self.changes.push(change);
        let over = self.changes.len().saturating_sub(MAX_DECISIONS);
        self.changes.drain(..over);
    }
}

/// Adds a sample of `lag` at `now` to `samples` as `config` keeps them (at most one per
/// `lagCollectionIntervalMillis`, those of the last `lagCollectionRangeMillis`), and at most
/// [`MAX_KEPT_SAMPLES`] of them: a range of more intervals than that is sampled once per
/// `lagCollectionRangeMillis / MAX_KEPT_SAMPLES` instead, so the samples still span it. The
/// supervisor and the simulation keep their samples through this one function.
pub fn keep_lag_sample(config: &AutoScalerConfig, samples: &mut Vec<LagSample>, lag: u64, now: i64) {
    let spread = config.lag_collection_range_millis.div_ceil(MAX_KEPT_SAMPLES as u64);
    let interval = config.lag_collection_interval_millis.max(spread);
    if interval == config.lag_collection_interval_millis {
        config.add_sample(samples, lag, now);
    } else {
        let thinned = AutoScalerConfig { lag_collection_interval_millis: interval, ..config.clone() };
        thinned.add_sample(samples, lag, now);
    }
    if samples.len() > MAX_KEPT_SAMPLES {
        // Samples kept closer together (by an earlier release) are thinned to the spread.
        let mut last = i64::MIN;
        samples.retain(|s| {
            let keep = s.at.saturating_sub(last) >= i64::try_from(interval).unwrap_or(i64::MAX) || s.at == now;
            if keep {
                last = s.at;
            }
            keep
        });
        let over = samples.len().saturating_sub(MAX_KEPT_SAMPLES);
        samples.drain(..over);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_len<T: Serialize>(value: &T) -> usize {
        serde_json::to_string(value).expect("JSON").len()
    }

    #[test]
    fn the_widest_item_fits_its_bytes() {
        let sample = LagSample { at: i64::MIN, lag: u64::MAX };
        assert_eq!(json_len(&sample) + 1, WIDEST_SAMPLE_BYTES);
        let change = ScaleChange { at: i64::MIN, from: u32::MAX, to: u32::MAX, samples: usize::MAX, max_lag: u64::MAX };
        assert_eq!(json_len(&change) + 1, WIDEST_CHANGE_BYTES);
        let widest = AutoscalerItem {
            started: i64::MIN,
            samples: vec![sample; MAX_KEPT_SAMPLES],
            last_decision: Some(i64::MIN),
            changes: vec![change; MAX_DECISIONS],
        };
        let bytes = json_len(&widest);
        assert!(bytes <= AUTOSCALER_ITEM_BYTES, "{bytes} bytes");
        assert!(bytes + WIDEST_SAMPLE_BYTES + WIDEST_FIELDS_BYTES > AUTOSCALER_ITEM_BYTES, "{bytes}: room left");
        let empty = AutoscalerItem { started: i64::MIN, last_decision: Some(i64::MIN), ..Default::default() };
        assert!(json_len(&empty) <= WIDEST_FIELDS_BYTES, "{}", json_len(&empty));
    }

    #[test]
    fn a_window_of_more_samples_than_kept_is_thinned_over_the_whole_range() {
        // Druid's largest window: 10,000 samples a second apart, every pass a second apart.
        let config = AutoScalerConfig {
            lag_collection_interval_millis: 1_000,
            lag_collection_range_millis: 10_000_000,
            ..AutoScalerConfig::default()
        };
        let mut item = AutoscalerItem::default();
        for k in 0..25_000i64 {
            item.add_sample(&config, u64::MAX, k * 1_000);
        }
        let now = 24_999_000;
        assert!(item.samples.len() <= MAX_KEPT_SAMPLES, "{} samples", item.samples.len());
        // A sample per pass at most, so at least every other pass of a spread of 1.5 passes.
        assert!(item.samples.len() >= MAX_KEPT_SAMPLES / 2, "{} samples", item.samples.len());
        let oldest = item.samples[0].at;
        assert!(oldest <= now - 9_990_000, "the samples span the range: the oldest at {oldest}");
        assert!(json_len(&item) <= AUTOSCALER_ITEM_BYTES);
        // A window within the bound is kept as the spec asks: every interval.
        let plain = AutoScalerConfig::default();
        let mut item = AutoscalerItem::default();
        for k in 0..100i64 {
            item.add_sample(&plain, 7, k * 30_000);
        }
        assert_eq!(item.samples.len(), 20, "ten minutes of samples 30 s apart");
        assert!(item.samples.windows(2).all(|w| w[1].at - w[0].at == 30_000));
    }

    #[test]
    fn changes_keep_the_last_ones() {
        let mut item = AutoscalerItem::default();
        for at in 0..(MAX_DECISIONS as i64 + 7) {
            item.add_change(ScaleChange { at, from: 1, to: 2, samples: 1, max_lag: 0 });
        }
        assert_eq!(item.changes.len(), MAX_DECISIONS);
        assert_eq!(item.changes[0].at, 7);
    }
}
