//! Druid native queries as JSON: the query types, their common fields and the specs they
//! contain (dimension specs, topN metric specs, `having`, `limitSpec`, post-aggregators and
//! virtual columns). Parsing only; [`super::engine`] runs them.

use super::aggregator_spec::QueryAggregator;
use serde::{Deserialize, Deserializer};
use sluice_format::filter::Filter;
use sluice_format::granularity::Granularity;
use sluice_format::time::Interval;

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
    /// The latest ingested event time.
    #[serde(rename = "dataSourceMetadata")]
    DataSourceMetadata(DataSourceMetadataQuery),
}

impl Query {
    /// The datasource the query reads.
    pub fn datasource(&self) -> &str {
        match self {
            Query::Timeseries(q) => &q.common.data_source.0,
            Query::TopN(q) => &q.common.data_source.0,
            Query::GroupBy(q) => &q.common.data_source.0,
            Query::Scan(q) => &q.data_source.0,
            Query::TimeBoundary(q) => &q.data_source.0,
            Query::SegmentMetadata(q) => &q.data_source.0,
            Query::DataSourceMetadata(q) => &q.data_source.0,
        }
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
        }
    }
}

/// A table datasource: `"name"` or `{"type": "table", "name": "..."}`.
#[derive(Debug, Clone, PartialEq)]
pub struct DataSource(pub String);

impl<'de> Deserialize<'de> for DataSource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(DataSource(s)),
            serde_json::Value::Object(o) => match (o.get("type").and_then(|t| t.as_str()), o.get("name")) {
                (Some("table"), Some(serde_json::Value::String(name))) => Ok(DataSource(name.clone())),
                (Some(kind), _) if kind != "table" => Err(D::Error::custom(format!(
                    "dataSource type {kind:?} is not supported: expected a table name or {{\"type\": \"table\", \"name\": ...}}"
                ))),
                _ => Err(D::Error::custom("expected a table name or {\"type\": \"table\", \"name\": ...}")),
            },
            _ => Err(D::Error::custom("expected a table name or {\"type\": \"table\", \"name\": ...}")),
        }
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
    /// Columns returned (all when empty).
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
    /// Accepted and ignored.
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

/// A dimension to group by: `"name"` or `{"type": "default", "dimension", "outputName",
/// "outputType"}`.
#[derive(Debug, Clone, PartialEq)]
pub struct DimensionSpec {
    /// The column (or virtual column) read.
    pub dimension: String,
    /// The name in results.
    pub output_name: String,
    /// `STRING` (default), `LONG`, `FLOAT` or `DOUBLE`.
    pub output_type: OutputType,
}

/// The type a dimension value is reported as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputType {
    /// Strings.
    #[default]
    String,
    /// Longs.
    Long,
    /// Doubles (`FLOAT` and `DOUBLE`).
    Double,
}

impl OutputType {
    fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_uppercase().as_str() {
            "STRING" => Some(OutputType::String),
            "LONG" => Some(OutputType::Long),
            "FLOAT" | "DOUBLE" => Some(OutputType::Double),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for DimensionSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Object {
            #[serde(rename = "type")]
            kind: Option<String>,
            dimension: String,
            output_name: Option<String>,
            output_type: Option<String>,
        }
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => {
                Ok(DimensionSpec { output_name: s.clone(), dimension: s, output_type: OutputType::String })
            }
            v @ serde_json::Value::Object(_) => {
                let o: Object = serde_json::from_value(v).map_err(D::Error::custom)?;
                if let Some(kind) = o.kind.as_deref().filter(|k| *k != "default") {
                    return Err(D::Error::custom(format!(
                        "dimension spec type {kind:?} is not supported: expected \"default\" (extraction functions are not implemented)"
                    )));
                }
                let output_type = match o.output_type.as_deref() {
                    None => OutputType::String,
                    Some(t) => OutputType::parse(t).ok_or_else(|| {
                        D::Error::custom(format!("outputType {t:?}: expected STRING, LONG, FLOAT or DOUBLE"))
                    })?,
                };
                Ok(DimensionSpec {
                    output_name: o.output_name.unwrap_or_else(|| o.dimension.clone()),
                    dimension: o.dimension,
                    output_type,
                })
            }
            _ => Err(D::Error::custom("expected a dimension name or {\"type\": \"default\", \"dimension\": ...}")),
        }
    }
}

/// How topN ranks values.
#[derive(Debug, Clone, PartialEq)]
pub enum TopNMetric {
    /// By an aggregator or post-aggregator, largest first.
    Numeric(String),
    /// The inverse of the inner ordering.
    Inverted(Box<TopNMetric>),
    /// By the dimension value itself.
    Dimension {
        /// `lexicographic` (default), `alphanumeric`, `numeric` or `strlen`.
        ordering: DimensionOrder,
        /// Only values after this one.
        previous_stop: Option<String>,
    },
}

impl<'de> Deserialize<'de> for TopNMetric {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        fn parse(v: serde_json::Value) -> Result<TopNMetric, String> {
            let expected = "expected a metric name or {\"type\": \"numeric\" | \"inverted\" | \"dimension\", ...}";
            match v {
                serde_json::Value::String(s) => Ok(TopNMetric::Numeric(s)),
                serde_json::Value::Object(mut o) => {
                    let kind = o.get("type").and_then(|t| t.as_str()).unwrap_or("").to_string();
                    match kind.as_str() {
                        "numeric" => match o.remove("metric") {
                            Some(serde_json::Value::String(s)) => Ok(TopNMetric::Numeric(s)),
                            _ => Err("numeric topN metric needs \"metric\": a name".into()),
                        },
                        "inverted" => Ok(TopNMetric::Inverted(Box::new(parse(
                            o.remove("metric").ok_or("inverted topN metric needs \"metric\"")?,
                        )?))),
                        "dimension" | "lexicographic" | "alphaNumeric" => {
                            let ordering = match (kind.as_str(), o.get("ordering")) {
                                ("alphaNumeric", _) => DimensionOrder::Alphanumeric,
                                (_, Some(v)) => DimensionOrder::parse(v)?,
                                _ => DimensionOrder::Lexicographic,
                            };
                            let previous_stop = o.get("previousStop").and_then(|v| v.as_str()).map(str::to_string);
                            Ok(TopNMetric::Dimension { ordering, previous_stop })
                        }
                        _ => Err(expected.into()),
                    }
                }
                _ => Err(expected.into()),
            }
        }
        parse(serde_json::Value::deserialize(d)?).map_err(D::Error::custom)
    }
}

/// How dimension values are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DimensionOrder {
    /// By UTF-8 bytes.
    #[default]
    Lexicographic,
    /// Digit runs compared as numbers.
    Alphanumeric,
    /// As numbers; non-numbers last.
    Numeric,
    /// By length, then lexicographically.
    Strlen,
}

impl DimensionOrder {
    fn parse(v: &serde_json::Value) -> Result<Self, String> {
        let name = match v {
            serde_json::Value::String(s) => s.as_str(),
            serde_json::Value::Object(o) => o.get("type").and_then(|t| t.as_str()).unwrap_or(""),
            _ => "",
        };
        match name.to_ascii_lowercase().as_str() {
            "lexicographic" => Ok(DimensionOrder::Lexicographic),
            "alphanumeric" => Ok(DimensionOrder::Alphanumeric),
            "numeric" => Ok(DimensionOrder::Numeric),
            "strlen" => Ok(DimensionOrder::Strlen),
            _ => Err(format!("ordering {v}: expected lexicographic, alphanumeric, numeric or strlen")),
        }
    }
}

impl<'de> Deserialize<'de> for DimensionOrder {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        DimensionOrder::parse(&serde_json::Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// A groupBy `having` clause.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Having {
    /// The aggregate is greater than `value`.
    GreaterThan {
        /// Aggregator or post-aggregator name.
        aggregation: String,
        /// The bound.
        value: f64,
    },
    /// The aggregate is less than `value`.
    LessThan {
        /// Aggregator or post-aggregator name.
        aggregation: String,
        /// The bound.
        value: f64,
    },
    /// The aggregate equals `value`.
    EqualTo {
        /// Aggregator or post-aggregator name.
        aggregation: String,
        /// The value.
        value: f64,
    },
    /// A dimension of the group equals `value`.
    DimSelector {
        /// Output name of the dimension.
        dimension: String,
        /// The value (null matches null).
        value: Option<String>,
    },
    /// A filter over the group's dimensions and aggregates.
    Filter {
        /// The filter.
        filter: Filter,
    },
    /// All of `havingSpecs` hold.
    And {
        /// The operands.
        #[serde(rename = "havingSpecs")]
        having_specs: Vec<Having>,
    },
    /// Any of `havingSpecs` holds.
    Or {
        /// The operands.
        #[serde(rename = "havingSpecs")]
        having_specs: Vec<Having>,
    },
    /// `havingSpec` does not hold.
    Not {
        /// The operand.
        #[serde(rename = "havingSpec")]
        having_spec: Box<Having>,
    },
}

/// groupBy ordering and limit.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitSpec {
    /// Always `default`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// At most this many groups.
    pub limit: Option<usize>,
    /// Groups skipped first.
    #[serde(default)]
    pub offset: usize,
    /// Sort columns, first one first.
    #[serde(default)]
    pub columns: Vec<OrderByColumn>,
}

/// One sort column of a limitSpec: `"name"` or `{"dimension", "direction", "dimensionOrder"}`.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderByColumn {
    /// Dimension output name, aggregator or post-aggregator.
    pub dimension: String,
    /// Largest first.
    pub descending: bool,
    /// How values compare.
    pub order: DimensionOrder,
}

impl<'de> Deserialize<'de> for OrderByColumn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Object {
            dimension: String,
            direction: Option<String>,
            dimension_order: Option<DimensionOrder>,
        }
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => {
                Ok(OrderByColumn { dimension: s, descending: false, order: DimensionOrder::Lexicographic })
            }
            v => {
                let o: Object = serde_json::from_value(v).map_err(D::Error::custom)?;
                let descending = match o.direction.as_deref().map(str::to_ascii_lowercase).as_deref() {
                    None | Some("ascending") | Some("asc") => false,
                    Some("descending") | Some("desc") => true,
                    Some(other) => {
                        return Err(D::Error::custom(format!("direction {other:?}: expected ascending or descending")))
                    }
                };
                Ok(OrderByColumn { dimension: o.dimension, descending, order: o.dimension_order.unwrap_or_default() })
            }
        }
    }
}

/// A post-aggregator: computed from a group's aggregates.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PostAggregator {
    /// `fn` applied left to right over `fields`.
    #[serde(rename_all = "camelCase")]
    Arithmetic {
        /// Output name.
        name: String,
        /// `+`, `-`, `*`, `/` (0 when dividing by 0), `quotient` or `pow`.
        #[serde(rename = "fn")]
        function: String,
        /// Operands.
        fields: Vec<PostAggregator>,
        /// Accepted; `numericFirst` ordering is not implemented.
        ordering: Option<String>,
    },
    /// An aggregate's value (sketches unfinalized).
    #[serde(rename_all = "camelCase")]
    FieldAccess {
        /// Output name.
        name: Option<String>,
        /// The aggregator or post-aggregator read.
        field_name: String,
    },
    /// An aggregate's finalized value.
    #[serde(rename_all = "camelCase")]
    FinalizingFieldAccess {
        /// Output name.
        name: Option<String>,
        /// The aggregator or post-aggregator read.
        field_name: String,
    },
    /// A constant.
    #[serde(rename_all = "camelCase")]
    Constant {
        /// Output name.
        name: Option<String>,
        /// The value.
        value: serde_json::Number,
    },
    /// The estimate of a `hyperUnique` aggregate.
    #[serde(rename_all = "camelCase")]
    HyperUniqueCardinality {
        /// Output name.
        name: Option<String>,
        /// The aggregator read.
        field_name: String,
    },
}

impl PostAggregator {
    /// The output name.
    pub fn name(&self) -> &str {
        match self {
            PostAggregator::Arithmetic { name, .. } => name,
            PostAggregator::FieldAccess { name, field_name }
            | PostAggregator::FinalizingFieldAccess { name, field_name }
            | PostAggregator::HyperUniqueCardinality { name, field_name } => name.as_deref().unwrap_or(field_name),
            PostAggregator::Constant { name, .. } => name.as_deref().unwrap_or(""),
        }
    }
}

/// A virtual column: a Druid expression over the row.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum VirtualColumn {
    /// An expression column.
    #[serde(rename_all = "camelCase")]
    Expression {
        /// Column name.
        name: String,
        /// The expression.
        expression: String,
        /// `STRING`, `LONG`, `FLOAT` or `DOUBLE` (inferred when absent).
        output_type: Option<String>,
    },
}

impl Query {
    /// The stored columns the query may read (`None`: all of them); `__time` always.
    pub fn columns(&self) -> Option<std::collections::BTreeSet<String>> {
        use std::collections::BTreeSet;
        let mut out: BTreeSet<String> = BTreeSet::from(["__time".to_string()]);
        let common = |c: &Common, out: &mut BTreeSet<String>| {
            if let Some(f) = &c.filter {
                filter_columns(f, out);
            }
            for a in &c.aggregations {
                aggregator_columns(a, out);
            }
            virtual_inputs(&c.virtual_columns, out);
        };
        match self {
            Query::Timeseries(q) => common(&q.common, &mut out),
            Query::TopN(q) => {
                common(&q.common, &mut out);
                out.insert(q.dimension.dimension.clone());
            }
            Query::GroupBy(q) => {
                common(&q.common, &mut out);
                out.extend(q.dimensions.iter().map(|d| d.dimension.clone()));
            }
            Query::Scan(q) => {
                if q.columns.is_empty() {
                    return None;
                }
                out.extend(q.columns.iter().cloned());
                if let Some(f) = &q.filter {
                    filter_columns(f, &mut out);
                }
                virtual_inputs(&q.virtual_columns, &mut out);
            }
            Query::TimeBoundary(q) => {
                if let Some(f) = &q.filter {
                    filter_columns(f, &mut out);
                }
            }
            Query::SegmentMetadata(_) => return None,
            Query::DataSourceMetadata(_) => {}
        }
        Some(out)
    }
}

fn aggregator_columns(a: &QueryAggregator, out: &mut std::collections::BTreeSet<String>) {
    match a {
        QueryAggregator::Plain(spec) => out.extend(spec.field_name().map(str::to_string)),
        QueryAggregator::SketchMerge(s) => {
            out.insert(s.field_name.clone());
        }
        QueryAggregator::Filtered { filter, aggregator, .. } => {
            filter_columns(filter, out);
            aggregator_columns(aggregator, out);
        }
    }
}

fn expression_inputs(text: &str, out: &mut std::collections::BTreeSet<String>) {
    let mut names = Vec::new();
    // A bad expression is reported when the query runs; here it only adds no column.
    let _ = sluice_format::expr::parse(text, &mut |field| {
        names.push(field.to_string());
        names.len() - 1
    });
    out.extend(names);
}

fn virtual_inputs(virtuals: &[VirtualColumn], out: &mut std::collections::BTreeSet<String>) {
    for v in virtuals {
        let VirtualColumn::Expression { expression, .. } = v;
        expression_inputs(expression, out);
    }
}

fn filter_columns(f: &Filter, out: &mut std::collections::BTreeSet<String>) {
    match f {
        Filter::Selector { dimension, .. }
        | Filter::In { dimension, .. }
        | Filter::Bound { dimension, .. }
        | Filter::Like { dimension, .. }
        | Filter::Regex { dimension, .. } => {
            out.insert(dimension.clone());
        }
        Filter::Equals { column, .. } | Filter::Range { column, .. } | Filter::Null { column } => {
            out.insert(column.clone());
        }
        Filter::And { fields } | Filter::Or { fields } => fields.iter().for_each(|f| filter_columns(f, out)),
        Filter::Not { field } => filter_columns(field, out),
        Filter::Expression { expression } => expression_inputs(expression, out),
        Filter::True | Filter::False => {}
    }
}
