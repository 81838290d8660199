//! The bodies of the coordinator's per-datasource items: a datasource's compaction
//! configuration (`compaction` partition key) and its retention rules (`rules` partition key),
//! each held as Druid's JSON. As in Druid, either may name a datasource that does not exist
//! (yet).

use serde::{Deserialize, Serialize};

/// The body of a datasource's compaction item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionItem {
    /// The configuration as submitted, Druid's defaults filled (as Druid's
    /// `GET /druid/coordinator/v1/config/compaction/{dataSource}` returns it).
    pub config: serde_json::Value,
}

/// The body of a datasource's rules item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RulesItem {
    /// Druid's rules JSON as submitted.
    pub rules: serde_json::Value,
}
