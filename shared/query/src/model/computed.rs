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
            PostAggregator::Arithmetic { name, .. } => name,
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
}
