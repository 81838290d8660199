//! The clauses of a groupBy that act on its result rows: `having` and `limitSpec`.

use super::dimensions::DimensionOrder;
use serde::{Deserialize, Deserializer};
use sluice_format::filter::Filter;

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
