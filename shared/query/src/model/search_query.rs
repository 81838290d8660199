//! The search query as Druid writes it ([`crate::search`] answers it).

use super::{DataSource, DimensionOrder, DimensionSpec, Intervals, VirtualColumn};
use serde::Deserialize;
use serde_json::Value;
use sluice_format::filter::Filter;
use sluice_format::granularity::Granularity;
use sluice_format::search::SearchSpec;

/// A search query.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchQuery {
    /// The datasource.
    pub data_source: DataSource,
    /// The intervals read.
    pub intervals: Intervals,
    /// How timestamps are bucketed (`all` by default).
    #[serde(default = "all")]
    pub granularity: Granularity,
    /// Rows considered.
    pub filter: Option<Filter>,
    /// The dimensions searched (every string dimension when absent).
    pub search_dimensions: Option<Vec<DimensionSpec>>,
    /// The test of a value.
    pub query: SearchSpec,
    /// How values are sorted.
    #[serde(default)]
    pub sort: Option<DimensionOrder>,
    /// Most values per bucket.
    pub limit: Option<usize>,
    /// Virtual columns.
    #[serde(default)]
    pub virtual_columns: Vec<VirtualColumn>,
    /// Accepted and ignored.
    #[serde(default)]
    pub context: serde_json::Map<String, Value>,
}

fn all() -> Granularity {
    Granularity::All
}
