//! Columns computed at query time: post-aggregators over a group's aggregates, and virtual
//! columns over each row.

use serde::Deserialize;

/// A post-aggregator: computed from a group's aggregates.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PostAggregator {
    /// `fn` applied left to right over `fields`.
    #[serde(rename_all = "camelCase")]
    Arithmetic {
        /// Output name (none inside another post-aggregator).
        #[serde(default)]
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
    /// A Druid expression over the group's aggregates and earlier post-aggregators, by name.
    #[serde(rename_all = "camelCase")]
    Expression {
        /// Output name.
        name: String,
        /// The expression.
        expression: String,
        /// Accepted; results order by their values.
        ordering: Option<String>,
    },
    /// The greatest of its fields as a double, nulls ignored.
    DoubleGreatest(Extreme),
    /// The greatest of its fields as a long.
    LongGreatest(Extreme),
    /// The least of its fields as a double.
    DoubleLeast(Extreme),
    /// The least of its fields as a long.
    LongLeast(Extreme),
    /// The estimate of a `hyperUnique` aggregate.
    #[serde(rename_all = "camelCase")]
    HyperUniqueCardinality {
        /// Output name.
        name: Option<String>,
        /// The aggregator read.
        field_name: String,
    },
    /// The estimate of a theta sketch (`field`: a `fieldAccess` or a `thetaSketchSetOp`).
    #[serde(rename = "thetaSketchEstimate", rename_all = "camelCase")]
    ThetaEstimate {
        /// Output name.
        name: String,
        /// The sketch.
        field: Box<PostAggregator>,
        /// With error bounds of this many standard deviations (1 to 3).
        error_bounds_std_dev: Option<u8>,
    },
    /// A set operation over theta sketches.
    #[serde(rename = "thetaSketchSetOp", rename_all = "camelCase")]
    ThetaSetOp {
        /// Output name.
        name: String,
        /// `UNION`, `INTERSECT` or `NOT`.
        func: String,
        /// Entries the result retains (default 16,384).
        size: Option<u32>,
        /// The sketches.
        fields: Vec<PostAggregator>,
    },
    /// The value at a fraction of a quantiles sketch's ranks.
    #[serde(rename = "quantilesDoublesSketchToQuantile", rename_all = "camelCase")]
    ToQuantile {
        /// Output name.
        name: String,
        /// The sketch.
        field: Box<PostAggregator>,
        /// 0 to 1.
        fraction: f64,
    },
    /// The values at fractions of a quantiles sketch's ranks.
    #[serde(rename = "quantilesDoublesSketchToQuantiles", rename_all = "camelCase")]
    ToQuantiles {
        /// Output name.
        name: String,
        /// The sketch.
        field: Box<PostAggregator>,
        /// Each 0 to 1.
        fractions: Vec<f64>,
    },
    /// The fraction of a quantiles sketch's values below a value.
    #[serde(rename = "quantilesDoublesSketchToRank", rename_all = "camelCase")]
    ToRank {
        /// Output name.
        name: String,
        /// The sketch.
        field: Box<PostAggregator>,
        /// The value.
        value: f64,
    },
    /// The cumulative fractions below each split point, then 1.
    #[serde(rename = "quantilesDoublesSketchToCDF", rename_all = "camelCase")]
    ToCdf {
        /// Output name.
        name: String,
        /// The sketch.
        field: Box<PostAggregator>,
        /// Increasing split points.
        split_points: Vec<f64>,
    },
    /// Counts of values between split points (or in `numBins` equal bins from the minimum to
    /// the maximum).
    #[serde(rename = "quantilesDoublesSketchToHistogram", rename_all = "camelCase")]
    ToHistogram {
        /// Output name.
        name: String,
        /// The sketch.
        field: Box<PostAggregator>,
        /// Increasing split points.
        split_points: Option<Vec<f64>>,
        /// Equal bins (default 10) when no split points are given.
        num_bins: Option<u32>,
    },
}

impl PostAggregator {
    /// The output name.
    pub fn name(&self) -> &str {
        match self {
            PostAggregator::Arithmetic { name, .. }
            | PostAggregator::Expression { name, .. }
            | PostAggregator::DoubleGreatest(Extreme { name, .. })
            | PostAggregator::LongGreatest(Extreme { name, .. })
            | PostAggregator::DoubleLeast(Extreme { name, .. })
            | PostAggregator::LongLeast(Extreme { name, .. }) => name,
            PostAggregator::FieldAccess { name, field_name }
            | PostAggregator::FinalizingFieldAccess { name, field_name }
            | PostAggregator::HyperUniqueCardinality { name, field_name } => name.as_deref().unwrap_or(field_name),
            PostAggregator::Constant { name, .. } => name.as_deref().unwrap_or(""),
            PostAggregator::ThetaEstimate { name, .. }
            | PostAggregator::ThetaSetOp { name, .. }
            | PostAggregator::ToQuantile { name, .. }
            | PostAggregator::ToQuantiles { name, .. }
            | PostAggregator::ToRank { name, .. }
            | PostAggregator::ToCdf { name, .. }
            | PostAggregator::ToHistogram { name, .. } => name,
        }
    }
}

/// The operands of a greatest or least post-aggregator.
#[derive(Debug, Clone, Deserialize)]
pub struct Extreme {
    /// Output name.
    pub name: String,
    /// Operands.
    pub fields: Vec<PostAggregator>,
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
    /// A right column of a join datasource, made by the join (never given in a query).
    #[serde(skip)]
    Joined(super::datasource::JoinedColumn),
    /// Druid's `nested-field`: the literals at a path of a `json` column, read from the
    /// path's own column where the segment has one.
    #[serde(rename = "nested-field", rename_all = "camelCase")]
    NestedField(NestedField),
}

/// A `nested-field` virtual column.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NestedField {
    /// The `json` column.
    pub column_name: String,
    /// The virtual column's name.
    pub output_name: String,
    /// The path, as JSONPath (`$.a.b`).
    pub path: Option<String>,
    /// The path as parts (`{"type":"field","field":"a"}`, `{"type":"arrayElement","index":0}`),
    /// as Druid writes it.
    pub path_parts: Option<Vec<PathPart>>,
    /// `STRING` (default), `LONG` or `DOUBLE`.
    pub expected_type: Option<String>,
    /// Druid's switch to read documents instead of the path's column: the same answers here.
    pub process_from_raw: Option<bool>,
    /// jq-style paths (`.a.b`): not supported.
    pub use_jq_syntax: Option<bool>,
}

/// A part of a `nested-field` path.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PathPart {
    /// An object's field.
    Field {
        /// Its name.
        field: String,
    },
    /// An array's element.
    ArrayElement {
        /// Its index.
        index: usize,
    },
}

/// Why a `nested-field` virtual column's path or type cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum NestedFieldError {
    /// `useJqSyntax`, which is not read.
    #[error("useJqSyntax is not supported: give the path as JSONPath ($.a.b)")]
    JqSyntax,
    /// Neither `path` nor `pathParts`.
    #[error("give path or pathParts")]
    NoPath,
    /// The path does not parse.
    #[error(transparent)]
    Path(#[from] sluice_format::json_path::JsonPathError),
    /// A type values cannot be cast to.
    #[error("expectedType {0:?} is not one of STRING, LONG, DOUBLE")]
    ExpectedType(String),
}

impl NestedField {
    /// The path and the type values are cast to, checked.
    pub fn resolved(
        &self,
    ) -> Result<(sluice_format::json_path::JsonPath, Option<sluice_format::expr::CastType>), NestedFieldError> {
        use sluice_format::expr::CastType;
        use sluice_format::json_path::{JsonPath, Step};
        if self.use_jq_syntax == Some(true) {
            return Err(NestedFieldError::JqSyntax);
        }
        let path = match (&self.path, &self.path_parts) {
            (Some(p), _) => JsonPath::parse(p)?,
            (None, Some(parts)) => JsonPath(
                parts
                    .iter()
                    .map(|p| match p {
                        PathPart::Field { field } => Step::Field(field.clone()),
                        PathPart::ArrayElement { index } => Step::Index(*index),
                    })
                    .collect(),
            ),
            (None, None) => return Err(NestedFieldError::NoPath),
        };
        let cast = match self.expected_type.as_deref().map(str::to_ascii_uppercase).as_deref() {
            None | Some("STRING") => None,
            Some("LONG") => Some(CastType::Long),
            Some("DOUBLE") | Some("FLOAT") => Some(CastType::Double),
            Some(other) => {
                return Err(NestedFieldError::ExpectedType(sluice_format::text::excerpt(other, 40).into_owned()))
            }
        };
        Ok((path, cast))
    }
}
