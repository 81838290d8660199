//! Druid native queries over the visible segment timeline.
//!
//! ```text
//!  query JSON --parse--> Query (model)
//!  metadata: visible segments of the datasource overlapping the intervals (timeline)
//!  storage -> local segment cache -> mmap                                    (source)
//!          or the parts the query reads, with ranged reads                   (ranged)
//!  per segment: rows in the intervals (binary search on __time)
//!               AND the filter, evaluated on dictionaries and bitmaps   (bitmap_filter)
//!               -> group slots (bucket, dimension values)                     (grouping)
//!               -> aggregator states, a batch of rows at a time     (engine, aggregator)
//!  groups -> post-aggregators -> timeseries / topN / groupBy results in Druid's format
//!  scan, search, timeBoundary, segmentMetadata, dataSourceMetadata read rows or the directories
//! ```
//!
//! Only the columns a query names are decoded, and each part's checksum is verified when it
//! is read: a damaged segment fails the query naming the object, never a partial answer.

pub mod aggregator;
pub mod aggregator_spec;
pub mod bitmap_filter;
pub mod columns;
pub mod engine;
pub mod exact_sum;
mod execute;
mod groupby;
pub mod grouping;
pub mod json;
mod metadata;
pub mod model;
pub mod opened;
pub mod ordering;
pub mod partial_cache;
pub mod post_aggregate;
mod post_sketch;
pub mod ranged;
mod scan;
pub mod scope;
pub mod search;
pub mod source;
mod timeseries;
mod topn;
pub mod wire;

pub use execute::{execute, execute_within, finish, partial, partial_within, Partial};
pub use model::Query;
pub use partial_cache::CacheStats;

/// The per-segment partial cache of timeseries, topN and groupBy.
pub type PartialCache = partial_cache::PartialCache<engine::Aggregated>;
pub use ranged::ReadPlan;
pub use scan::{MAX_RESULT_BYTES, MAX_ROWS_QUEUED_FOR_ORDERING, MAX_SCAN_COLUMNS, MAX_SCAN_ROWS};
pub use source::{
    execute_records, load_pruned, load_segments, open_records, parse_bound, run_query, run_query_pruned,
    visible_records, with_visible_records, Pruning, SegmentCache, DEFAULT_CACHE_BYTES,
};

use sluice_format::segment::{FormatError, Segment};
use sluice_format::time::Interval;

/// A query that cannot be answered.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The query JSON is invalid, naming the field and the expected form.
    #[error("invalid query: {field}: {reason}")]
    Invalid {
        /// The field at fault (a path such as `aggregations[0].fieldName`).
        field: String,
        /// What was expected.
        reason: String,
    },
    /// A query feature Sluice does not implement.
    #[error("not supported: {0}")]
    Unsupported(String),
    /// A segment is damaged (the error names the object).
    #[error(transparent)]
    Segment(#[from] FormatError),
    /// The segment timeline or a segment cannot be read.
    #[error("{0}")]
    Source(String),
    /// The query was not answered within its timeout (`context.timeout`, milliseconds).
    #[error("query timeout: not answered within {0} ms (context.timeout)")]
    Timeout(u64),
}

impl QueryError {
    /// An invalid-query error for `field`.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        QueryError::Invalid { field: field.into(), reason: reason.into() }
    }
}

/// A visible segment opened for querying.
pub struct QuerySegment {
    /// Druid's segment id: `datasource_start_end_version[_partition]`.
    pub id: String,
    /// The time chunk.
    pub interval: Interval,
    /// The opened segment.
    pub segment: Segment,
}

/// Parses a query, naming the field at fault on error.
pub fn parse_query(text: &str) -> Result<Query, QueryError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| QueryError::invalid("(query)", format!("not JSON: {e}")))?;
    let kind =
        match value.get("queryType") {
            Some(serde_json::Value::String(k)) => k.clone(),
            _ => return Err(QueryError::invalid(
                "queryType",
                "expected one of timeseries, topN, groupBy, scan, search, timeBoundary, segmentMetadata, dataSourceMetadata",
            )),
        };
    fn parse<T: serde::de::DeserializeOwned>(value: serde_json::Value, kind: &str) -> Result<T, QueryError> {
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            QueryError::invalid(if path == "." { format!("{kind} query") } else { path }, e.into_inner().to_string())
        })
    }
    let mut query = match kind.as_str() {
        "timeseries" => Query::Timeseries(parse(value, &kind)?),
        "topN" => Query::TopN(parse(value, &kind)?),
        "groupBy" => Query::GroupBy(parse(value, &kind)?),
        "scan" => Query::Scan(parse(value, &kind)?),
        "timeBoundary" => Query::TimeBoundary(parse(value, &kind)?),
        "segmentMetadata" => Query::SegmentMetadata(parse(value, &kind)?),
        "dataSourceMetadata" => Query::DataSourceMetadata(parse(value, &kind)?),
        "search" => Query::Search(parse(value, &kind)?),
        "select" | "movingAverage" => {
            return Err(QueryError::Unsupported(format!("queryType {kind:?} (use scan or groupBy)")))
        }
        other => {
            return Err(QueryError::invalid(
                "queryType",
                format!("{other:?}: expected one of timeseries, topN, groupBy, scan, search, timeBoundary, segmentMetadata, dataSourceMetadata"),
            ))
        }
    };
    query.apply_joins()?;
    Ok(query)
}
