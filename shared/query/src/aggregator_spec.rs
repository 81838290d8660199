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
