//! Query aggregators as a query names them: the ingest aggregators, `filtered` and
//! `HLLSketchMerge` (Druid's JSON); [`crate::aggregator`] runs them.

use serde::{Deserialize, Deserializer};
use sluice_format::filter::Filter;
use sluice_format::spec::aggregator::SketchAgg;
use sluice_format::spec::AggregatorSpec;

/// An aggregator of a query.
#[derive(Debug, Clone)]
pub enum QueryAggregator {
    /// One of the ingest aggregators.
    Plain(AggregatorSpec),
    /// `aggregator` over the rows `filter` matches.
    Filtered {
        /// Output name (the inner aggregator's when absent).
        name: Option<String>,
        /// The rows aggregated.
        filter: Filter,
        /// The inner aggregator.
        aggregator: Box<QueryAggregator>,
    },
    /// Unites HLL sketch columns (`HLLSketchMerge`).
    SketchMerge(SketchAgg),
}

impl QueryAggregator {
    /// The output name.
    pub fn name(&self) -> &str {
        match self {
            QueryAggregator::Plain(s) => s.name(),
            QueryAggregator::Filtered { name, aggregator, .. } => name.as_deref().unwrap_or_else(|| aggregator.name()),
            QueryAggregator::SketchMerge(s) => &s.name,
        }
    }
}

/// Druid's `cardinality` aggregator of one column: the distinct values' estimate from an HLL
/// sketch of Druid's default size (about 1.6% error, as Druid's own collector).
fn cardinality(v: &serde_json::Value) -> Result<AggregatorSpec, CardinalityError> {
    let name = v.get("name").and_then(|n| n.as_str()).ok_or(CardinalityError::Missing("cardinality needs \"name\""))?;
    let fields =
        v.get("fields").and_then(|f| f.as_array()).ok_or(CardinalityError::Missing("cardinality needs \"fields\""))?;
    let field = match fields.as_slice() {
        [serde_json::Value::String(s)] => s.clone(),
        [serde_json::Value::Object(o)] if o.get("extractionFn").is_none() => o
            .get("dimension")
            .and_then(|d| d.as_str())
            .ok_or(CardinalityError::Missing("a cardinality field needs \"dimension\""))?
            .to_string(),
        [_] => return Err(CardinalityError::Extraction),
        _ => return Err(CardinalityError::SeveralFields),
    };
    let round = v.get("round").and_then(|r| r.as_bool()).unwrap_or(false);
    let spec = serde_json::json!({"type": "HLLSketchBuild", "name": name, "fieldName": field, "round": round});
    Ok(serde_json::from_value(spec)?)
}

/// A `cardinality` aggregator Sluice cannot compute.
#[derive(Debug, thiserror::Error)]
enum CardinalityError {
    /// A field it needs is missing.
    #[error("{0}")]
    Missing(&'static str),
    /// Over a dimension spec with an extraction.
    #[error("cardinality over an extraction dimension spec is not supported: use a virtual column")]
    Extraction,
    /// Over several fields.
    #[error("cardinality over several fields is not supported: give one field (a virtual column may combine several)")]
    SeveralFields,
    /// The sketch it becomes does not read.
    #[error(transparent)]
    Sketch(#[from] serde_json::Error),
}

impl<'de> Deserialize<'de> for QueryAggregator {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut v = serde_json::Value::deserialize(d)?;
        let kind = v.get("type").and_then(|t| t.as_str()).unwrap_or("").to_string();
        match kind.as_str() {
            "filtered" => {
                let filter = v
                    .get_mut("filter")
                    .map(serde_json::Value::take)
                    .ok_or_else(|| D::Error::missing_field("filter"))?;
                let inner = v
                    .get_mut("aggregator")
                    .map(serde_json::Value::take)
                    .ok_or_else(|| D::Error::missing_field("aggregator"))?;
                Ok(QueryAggregator::Filtered {
                    name: v.get("name").and_then(|n| n.as_str()).map(str::to_string),
                    filter: serde_json::from_value(filter).map_err(|e| D::Error::custom(format!("filter: {e}")))?,
                    aggregator: Box::new(
                        serde_json::from_value(inner).map_err(|e| D::Error::custom(format!("aggregator: {e}")))?,
                    ),
                })
            }
            // Any value serves: the first is one.
            "longAny" | "doubleAny" | "floatAny" | "stringAny" => {
                v["type"] = serde_json::Value::String(kind.replace("Any", "First"));
                Ok(QueryAggregator::Plain(serde_json::from_value(v).map_err(D::Error::custom)?))
            }
            "cardinality" => cardinality(&v).map(QueryAggregator::Plain).map_err(D::Error::custom),
            "HLLSketchMerge" => {
                if let Some(o) = v.as_object_mut() {
                    o.remove("type");
                }
                Ok(QueryAggregator::SketchMerge(serde_json::from_value(v).map_err(D::Error::custom)?))
            }
            _ => Ok(QueryAggregator::Plain(serde_json::from_value(v).map_err(D::Error::custom)?)),
        }
    }
}
