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
