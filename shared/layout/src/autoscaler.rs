//! The body of a datasource's `autoscaler` item: the lag samples the autoscaler decides on and
//! the task-count changes it made (`sluice-pipeline`'s supervisor writes it each pass).

use serde::{Deserialize, Serialize};
use sluice_format::spec::autoscaler::LagSample;

/// Most task-count changes the item keeps.
pub const MAX_DECISIONS: usize = 50;

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
