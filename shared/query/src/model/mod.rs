//! Druid native queries as JSON: the query types, their common fields and the specs they
//! contain (dimension specs, topN metric specs, `having`, `limitSpec`, post-aggregators and
//! virtual columns). Parsing only; [`super::engine`] runs them.

mod computed;
mod datasource;
mod dimensions;
mod extraction_error;
mod extractions;
mod group_clauses;
mod lookup_dimensions;
mod read_columns;
mod search_query;

pub use computed::{NestedFieldError, PostAggregator, VirtualColumn};
pub use datasource::{
    DataSource, DataSourceError, Join, JoinKey, JoinKind, JoinRight, JoinedColumn, Missing, MAX_JOINS,
};
pub use dimensions::{DimensionOrder, DimensionSpec, MetricSpecError, OutputType, TopNMetric};
pub use extraction_error::ExtractionError;
pub use group_clauses::{Having, LimitSpec, OrderByColumn};
pub use lookup_dimensions::DimensionLookup;
pub use search_query::SearchQuery;

use super::aggregator_spec::QueryAggregator;
use super::QueryError;
use serde::{Deserialize, Deserializer};
use sluice_format::filter::Filter;
use sluice_format::granularity::Granularity;
use sluice_format::time::Interval;
use std::sync::Arc;

/// Timeout of a query whose context gives none: Druid's `druid.server.http.defaultQueryTimeout`.
pub const DEFAULT_TIMEOUT_MS: u64 = 300_000;
/// Longest timeout a query may ask for.
pub const MAX_TIMEOUT_MS: u64 = 3_600_000;

/// A Druid native query.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "queryType")]
pub enum Query {
    /// Aggregates per time bucket.
    #[serde(rename = "timeseries")]
    Timeseries(TimeseriesQuery),
    /// The top values of one dimension per time bucket.
    #[serde(rename = "topN")]
    TopN(TopNQuery),
    /// Aggregates per combination of dimension values.
    #[serde(rename = "groupBy")]
    GroupBy(GroupByQuery),
    /// Raw rows.
    #[serde(rename = "scan")]
    Scan(ScanQuery),
    /// The earliest and latest timestamps.
    #[serde(rename = "timeBoundary")]
    TimeBoundary(TimeBoundaryQuery),
    /// Column types, sizes and cardinalities per segment.
    #[serde(rename = "segmentMetadata")]
    SegmentMetadata(SegmentMetadataQuery),
    /// The values of string dimensions that pass a search spec, with their row counts.
    #[serde(rename = "search")]
    Search(SearchQuery),
    /// The latest ingested event time.
    #[serde(rename = "dataSourceMetadata")]
    DataSourceMetadata(DataSourceMetadataQuery),
}

impl Query {
    /// The datasource the query reads.
    pub fn datasource(&self) -> &str {
        match self {
            Query::Timeseries(q) => &q.common.data_source.name,
            Query::TopN(q) => &q.common.data_source.name,
            Query::GroupBy(q) => &q.common.data_source.name,
            Query::Scan(q) => &q.data_source.name,
            Query::TimeBoundary(q) => &q.data_source.name,
            Query::SegmentMetadata(q) => &q.data_source.name,
            Query::DataSourceMetadata(q) => &q.data_source.name,
            Query::Search(q) => &q.data_source.name,
        }
    }

    /// What the query reads.
    pub fn source(&self) -> &DataSource {
        match self {
            Query::Timeseries(q) => &q.common.data_source,
            Query::TopN(q) => &q.common.data_source,
            Query::GroupBy(q) => &q.common.data_source,
            Query::Scan(q) => &q.data_source,
            Query::TimeBoundary(q) => &q.data_source,
            Query::SegmentMetadata(q) => &q.data_source,
            Query::DataSourceMetadata(q) => &q.data_source,
            Query::Search(q) => &q.data_source,
        }
    }

    fn source_mut(&mut self) -> &mut DataSource {
        match self {
            Query::Timeseries(q) => &mut q.common.data_source,
            Query::TopN(q) => &mut q.common.data_source,
            Query::GroupBy(q) => &mut q.common.data_source,
            Query::Scan(q) => &mut q.data_source,
            Query::TimeBoundary(q) => &mut q.data_source,
            Query::SegmentMetadata(q) => &mut q.data_source,
            Query::DataSourceMetadata(q) => &mut q.data_source,
            Query::Search(q) => &mut q.data_source,
        }
    }

    /// Binds the lookups the query sees (`lookup()` in its expressions, lookups it joins).
    pub fn bind_lookups(&mut self, lookups: Arc<sluice_format::lookup::Lookups>) {
        self.source_mut().bind_lookups(lookups);
    }

    /// Folds the datasource's joins into the query's virtual columns and filter
    /// ([`datasource::apply_joins`]); a query type that reads no rows refuses joins.
    pub(crate) fn apply_joins(&mut self) -> Result<(), QueryError> {
        let invalid = |e: ExtractionError| QueryError::invalid("extractionFn", e.to_string());
        match self {
            Query::Timeseries(q) => {
                let c = &mut q.common;
                extractions::fold_filters(c.filter.as_mut(), &mut c.aggregations, &mut c.virtual_columns)
                    .map_err(invalid)?
            }
            Query::TopN(q) => {
                let c = &mut q.common;
                extractions::fold_filters(c.filter.as_mut(), &mut c.aggregations, &mut c.virtual_columns)
                    .map_err(invalid)?;
                extractions::fold_dimensions(std::slice::from_mut(&mut q.dimension), &mut c.virtual_columns)
                    .map_err(invalid)?
            }
            Query::GroupBy(q) => {
                let c = &mut q.common;
                extractions::fold_filters(c.filter.as_mut(), &mut c.aggregations, &mut c.virtual_columns)
                    .map_err(invalid)?;
                extractions::fold_dimensions(&mut q.dimensions, &mut c.virtual_columns).map_err(invalid)?
            }
            Query::Scan(q) => {
                extractions::fold_filters(q.filter.as_mut(), &mut [], &mut q.virtual_columns).map_err(invalid)?
            }
            Query::Search(q) => {
                extractions::fold_filters(q.filter.as_mut(), &mut [], &mut q.virtual_columns).map_err(invalid)?;
                if let Some(dims) = q.search_dimensions.as_mut() {
                    extractions::fold_dimensions(dims, &mut q.virtual_columns).map_err(invalid)?;
                    lookup_dimensions::fold(dims, &mut q.virtual_columns);
                }
            }
            _ => {}
        }
        match self {
            Query::TopN(q) => {
                lookup_dimensions::fold(std::slice::from_mut(&mut q.dimension), &mut q.common.virtual_columns)
            }
            Query::GroupBy(q) => lookup_dimensions::fold(&mut q.dimensions, &mut q.common.virtual_columns),
            _ => {}
        }
        if self.source().joins.is_empty() {
            return Ok(());
        }
        match self {
            Query::Timeseries(q) => {
                datasource::apply_joins(&mut q.common.data_source, &mut q.common.virtual_columns, &mut q.common.filter)
            }
            Query::TopN(q) => {
                datasource::apply_joins(&mut q.common.data_source, &mut q.common.virtual_columns, &mut q.common.filter)
            }
            Query::GroupBy(q) => {
                datasource::apply_joins(&mut q.common.data_source, &mut q.common.virtual_columns, &mut q.common.filter)
            }
            Query::Scan(q) => datasource::apply_joins(&mut q.data_source, &mut q.virtual_columns, &mut q.filter),
            other => Err(QueryError::Unsupported(format!("a join datasource in a {} query", other.kind()))),
        }
    }

    /// The query's type, as its `queryType` names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Query::Timeseries(_) => "timeseries",
            Query::TopN(_) => "topN",
            Query::GroupBy(_) => "groupBy",
            Query::Scan(_) => "scan",
            Query::TimeBoundary(_) => "timeBoundary",
            Query::SegmentMetadata(_) => "segmentMetadata",
            Query::DataSourceMetadata(_) => "dataSourceMetadata",
            Query::Search(_) => "search",
        }
    }

    /// Whether the query is answered from per-segment partials ([`crate::partial`]) that
    /// merge, so that its segments may be split between workers: timeseries, topN, groupBy.
    pub fn has_partials(&self) -> bool {
        matches!(self, Query::Timeseries(_) | Query::TopN(_) | Query::GroupBy(_))
    }

    /// What judges, from a segment's summary, that the query's filter matches none of its
    /// rows: `None` without a filter, or where a segment's mere presence shapes the answer
    /// (a timeseries filling empty buckets, or a timeseries or topN over granularity `all`,
    /// stamped with the data's first time, take both from the segments' rows inside the
    /// intervals whatever the filter: those read every segment).
    pub fn pruner(&self) -> Option<sluice_format::summary::SegmentPruner> {
        use sluice_format::granularity::Granularity;
        let (filter, virtuals) = match self {
            Query::GroupBy(q) => (q.common.filter.as_ref()?, &q.common.virtual_columns),
            Query::TopN(q) if q.common.granularity != Granularity::All => {
                (q.common.filter.as_ref()?, &q.common.virtual_columns)
            }
            Query::Timeseries(q) => {
                if !q.skips_empty_buckets() || q.common.granularity == Granularity::All {
                    return None;
                }
                (q.common.filter.as_ref()?, &q.common.virtual_columns)
            }
            Query::Scan(q) => (q.filter.as_ref()?, &q.virtual_columns),
            _ => return None,
        };
        let names: Vec<&str> = virtuals.iter().map(|v| v.name()).collect();
        sluice_format::summary::SegmentPruner::new(filter, &names).ok()
    }

    /// The query's context.
    pub fn context(&self) -> &serde_json::Map<String, serde_json::Value> {
        match self {
            Query::Timeseries(q) => &q.common.context,
            Query::TopN(q) => &q.common.context,
            Query::GroupBy(q) => &q.common.context,
            Query::Scan(q) => &q.context,
            Query::TimeBoundary(q) => &q.context,
            Query::SegmentMetadata(q) => &q.context,
            Query::DataSourceMetadata(q) => &q.context,
            Query::Search(q) => &q.context,
        }
    }

    /// The query's timeout in milliseconds: `context.timeout` (a number or numeric string),
    /// [`DEFAULT_TIMEOUT_MS`] when absent, [`MAX_TIMEOUT_MS`] for 0 ("no timeout" in Druid,
    /// up to the server's maximum) and an error above the maximum, as Druid refuses a timeout
    /// over `druid.server.http.maxQueryTimeout`.
    pub fn timeout_ms(&self) -> Result<u64, QueryError> {
        timeout_ms(self.context())
    }

    /// The intervals the query reads.
    pub fn intervals(&self) -> Vec<Interval> {
        match self {
            Query::Timeseries(q) => q.common.intervals.0.clone(),
            Query::TopN(q) => q.common.intervals.0.clone(),
            Query::GroupBy(q) => q.common.intervals.0.clone(),
            Query::Scan(q) => q.intervals.0.clone(),
            Query::TimeBoundary(q) => Intervals::or_eternity(q.intervals.as_ref()),
            Query::SegmentMetadata(q) => Intervals::or_eternity(q.intervals.as_ref()),
            Query::DataSourceMetadata(_) => Intervals::or_eternity(None),
            Query::Search(q) => q.intervals.0.clone(),
        }
    }
}

/// The timeout a query context asks for, in milliseconds: `timeout` (a number or numeric
/// string), [`DEFAULT_TIMEOUT_MS`] when absent, [`MAX_TIMEOUT_MS`] for 0 and an error above the
/// maximum. Native and SQL queries read it alike.
pub fn timeout_ms(context: &serde_json::Map<String, serde_json::Value>) -> Result<u64, QueryError> {
    let Some(value) = context.get("timeout") else {
        return Ok(DEFAULT_TIMEOUT_MS);
    };
    let millis = match value {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    match millis {
        Some(0) => Ok(MAX_TIMEOUT_MS),
        Some(ms) if ms <= MAX_TIMEOUT_MS => Ok(ms),
        Some(ms) => Err(QueryError::invalid(
            "context.timeout",
            format!("{ms} ms is over this server's maximum of {MAX_TIMEOUT_MS} ms"),
        )),
        None => Err(QueryError::invalid("context.timeout", "expected milliseconds (a number)")),
    }
}

/// The bound a query context sets with `key` (a count, as a number or numeric string): `max`
/// when absent, an error naming `context.{key}` when it is not a count or is above `max`
/// (a context may lower a server's bound, never raise it).
pub fn context_bound(
    context: &serde_json::Map<String, serde_json::Value>,
    key: &str,
    max: usize,
) -> Result<usize, QueryError> {
    let Some(value) = context.get(key) else {
        return Ok(max);
    };
    let count = match value {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    match count.map(usize::try_from) {
        Some(Ok(n)) if n <= max => Ok(n),
        Some(_) => Err(QueryError::invalid(format!("context.{key}"), format!("over this server's maximum of {max}"))),
        None => Err(QueryError::invalid(format!("context.{key}"), "expected a count (a number)")),
    }
}

/// Query intervals: `"a/b"`, `["a/b", ...]` or `{"type": "intervals", "intervals": [...]}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Intervals(pub Vec<Interval>);

impl Intervals {
    /// The given intervals, or all time when the query gives none.
    pub fn or_eternity(given: Option<&Intervals>) -> Vec<Interval> {
        given.map(|i| i.0.clone()).unwrap_or_else(|| {
            vec![Interval::new(sluice_format::time::ETERNITY_START, sluice_format::time::ETERNITY_END)]
        })
    }
}

impl<'de> Deserialize<'de> for Intervals {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let expected = "expected \"start/end\", a list of them, or {\"type\": \"intervals\", \"intervals\": [...]}";
        let list = match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => vec![serde_json::Value::String(s)],
            serde_json::Value::Array(a) => a,
            serde_json::Value::Object(mut o) => match o.remove("intervals") {
                Some(serde_json::Value::Array(a)) => a,
                _ => return Err(D::Error::custom(expected)),
            },
            _ => return Err(D::Error::custom(expected)),
        };
        let mut out = Vec::with_capacity(list.len());
        for v in list {
            let text = v.as_str().ok_or_else(|| D::Error::custom(expected))?;
            out.push(Interval::parse(text).map_err(D::Error::custom)?);
        }
        Ok(Intervals(out))
    }
}

/// Fields shared by timeseries, topN and groupBy.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Common {
    /// The datasource.
    pub data_source: DataSource,
    /// The intervals read.
    pub intervals: Intervals,
    /// How timestamps are bucketed.
    #[serde(default = "all_granularity")]
    pub granularity: Granularity,
    /// Rows considered.
    pub filter: Option<Filter>,
    /// Aggregators.
    #[serde(default)]
    pub aggregations: Vec<QueryAggregator>,
    /// Post-aggregators.
    #[serde(default)]
    pub post_aggregations: Vec<PostAggregator>,
    /// Virtual columns.
    #[serde(default)]
    pub virtual_columns: Vec<VirtualColumn>,
    /// Query context (`skipEmptyBuckets` is read; the rest is accepted and ignored).
    #[serde(default)]
    pub context: serde_json::Map<String, serde_json::Value>,
}

fn all_granularity() -> Granularity {
    Granularity::All
}

/// A timeseries query.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimeseriesQuery {
    /// Common fields.
    #[serde(flatten)]
    pub common: Common,
    /// Newest bucket first.
    #[serde(default)]
    pub descending: bool,
    /// At most this many buckets.
    pub limit: Option<usize>,
}

impl TimeseriesQuery {
    /// Whether the context says `skipEmptyBuckets` (as a boolean or the string `"true"`).
    pub fn skips_empty_buckets(&self) -> bool {
        self.common
            .context
            .get("skipEmptyBuckets")
            .is_some_and(|v| v.as_bool() == Some(true) || v.as_str() == Some("true"))
    }
}

/// A topN query.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopNQuery {
    /// Common fields.
    #[serde(flatten)]
    pub common: Common,
    /// The dimension ranked.
    pub dimension: DimensionSpec,
    /// How values are ranked.
    pub metric: TopNMetric,
    /// How many values per bucket.
    pub threshold: usize,
}

/// A groupBy query.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupByQuery {
    /// Common fields.
    #[serde(flatten)]
    pub common: Common,
    /// The grouping dimensions.
    #[serde(default)]
    pub dimensions: Vec<DimensionSpec>,
    /// Filters groups after aggregation.
    pub having: Option<Having>,
    /// Orders and limits the groups.
    pub limit_spec: Option<LimitSpec>,
}

/// A scan query.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScanQuery {
    /// The datasource.
    pub data_source: DataSource,
    /// The intervals read.
    pub intervals: Intervals,
    /// Rows returned.
    pub filter: Option<Filter>,
    /// Columns returned (all when empty): at most [`crate::MAX_SCAN_COLUMNS`], none twice.
    #[serde(default)]
    pub columns: Vec<String>,
    /// Virtual columns.
    #[serde(default)]
    pub virtual_columns: Vec<VirtualColumn>,
    /// At most this many rows.
    pub limit: Option<usize>,
    /// Rows skipped first.
    #[serde(default)]
    pub offset: usize,
    /// `none`, `ascending` or `descending` by `__time`.
    #[serde(default)]
    pub order: ScanOrder,
    /// `list` (default) or `compactedList`.
    #[serde(default)]
    pub result_format: ScanFormat,
    /// Accepted and ignored.
    pub batch_size: Option<u64>,
    /// Query context: `timeout`, `maxRowsQueuedForOrdering` and `maxScatterGatherBytes` are
    /// read; the rest is accepted and ignored.
    #[serde(default)]
    pub context: serde_json::Map<String, serde_json::Value>,
}

/// Scan row order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScanOrder {
    /// Segment order.
    #[default]
    None,
    /// Oldest first.
    Ascending,
    /// Newest first.
    Descending,
}

/// Scan result layout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum ScanFormat {
    /// One JSON object per row.
    #[default]
    #[serde(rename = "list")]
    List,
    /// One JSON array per row, in `columns` order.
    #[serde(rename = "compactedList")]
    CompactedList,
}

/// A timeBoundary query.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimeBoundaryQuery {
    /// The datasource.
    pub data_source: DataSource,
    /// `minTime` or `maxTime` to return only one.
    pub bound: Option<String>,
    /// Intervals read (all time by default).
    pub intervals: Option<Intervals>,
    /// Rows considered.
    pub filter: Option<Filter>,
    /// Accepted and ignored.
    #[serde(default)]
    pub context: serde_json::Map<String, serde_json::Value>,
}

/// A segmentMetadata query.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentMetadataQuery {
    /// The datasource.
    pub data_source: DataSource,
    /// Intervals read (all time by default).
    pub intervals: Option<Intervals>,
    /// Merges the per-segment answers into one.
    #[serde(default)]
    pub merge: bool,
    /// Which columns are described.
    pub to_include: Option<ToInclude>,
    /// Accepted; sizes, cardinalities and min/max are always computed.
    pub analysis_types: Option<Vec<String>>,
    /// Accepted and ignored.
    pub lenient_aggregator_merge: Option<bool>,
    /// Accepted and ignored.
    #[serde(default)]
    pub context: serde_json::Map<String, serde_json::Value>,
}

/// segmentMetadata's column selection.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ToInclude {
    /// Every column.
    All,
    /// No column.
    None,
    /// The listed columns.
    List {
        /// Column names.
        columns: Vec<String>,
    },
}

/// A dataSourceMetadata query.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataSourceMetadataQuery {
    /// The datasource.
    pub data_source: DataSource,
    /// Accepted and ignored.
    #[serde(default)]
    pub context: serde_json::Map<String, serde_json::Value>,
}
