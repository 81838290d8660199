//! Dimension specs and how topN and groupBy order dimension values.

use serde::{Deserialize, Deserializer};

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
    /// The lookup its values are mapped through (folded into a column when the query is read).
    pub lookup: Option<super::DimensionLookup>,
    /// Another extraction function its values go through (folded into a virtual column when
    /// the query is read).
    pub extraction: Option<serde_json::Value>,
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
            extraction_fn: Option<serde_json::Value>,
        }
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(DimensionSpec {
                output_name: s.clone(),
                dimension: s,
                output_type: OutputType::String,
                lookup: None,
                extraction: None,
            }),
            serde_json::Value::Object(map) => {
                let o: Object =
                    serde_json::from_value(serde_json::Value::Object(map.clone())).map_err(D::Error::custom)?;
                let is_lookup = |f: &serde_json::Value| {
                    matches!(f.get("type").and_then(|t| t.as_str()), Some("lookup" | "registeredLookup"))
                };
                let mut extraction = None;
                let lookup = match (o.kind.as_deref(), &o.extraction_fn) {
                    (None | Some("default"), None) => None,
                    (Some("lookup"), None) => Some(super::lookup_dimensions::lookup_spec(&map).map_err(D::Error::custom)?),
                    (Some("extraction"), Some(f)) if is_lookup(f) => {
                        Some(super::lookup_dimensions::extraction(f).map_err(D::Error::custom)?)
                    }
                    (Some("extraction"), Some(f)) => {
                        super::extractions::expression(f, "__time").map_err(D::Error::custom)?;
                        extraction = Some(f.clone());
                        None
                    }
                    (Some(kind), _) => {
                        return Err(D::Error::custom(format!(
                            "dimension spec type {kind:?} is not supported: expected \"default\", \"lookup\" or \"extraction\""
                        )))
                    }
                    (None, Some(_)) => return Err(D::Error::custom("an extractionFn needs \"type\": \"extraction\"")),
                };
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
                    lookup,
                    extraction,
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

/// Why a topN `metric` or a dimension `ordering` cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum MetricSpecError {
    /// Neither a name nor a metric spec object.
    #[error("expected a metric name or {{\"type\": \"numeric\" | \"inverted\" | \"dimension\", ...}}")]
    NotAMetric,
    /// A `numeric` or `inverted` metric spec without its `metric`.
    #[error("{0} topN metric needs \"metric\"")]
    NoMetric(&'static str),
    /// An ordering that is not Druid's.
    #[error("ordering {0}: expected lexicographic, alphanumeric, numeric or strlen")]
    Ordering(String),
}

impl<'de> Deserialize<'de> for TopNMetric {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        fn parse(v: serde_json::Value) -> Result<TopNMetric, MetricSpecError> {
            match v {
                serde_json::Value::String(s) => Ok(TopNMetric::Numeric(s)),
                serde_json::Value::Object(mut o) => {
                    let kind = o.get("type").and_then(|t| t.as_str()).unwrap_or("").to_string();
                    match kind.as_str() {
                        "numeric" => match o.remove("metric") {
                            Some(serde_json::Value::String(s)) => Ok(TopNMetric::Numeric(s)),
                            _ => Err(MetricSpecError::NoMetric("numeric")),
                        },
                        "inverted" => Ok(TopNMetric::Inverted(Box::new(parse(
                            o.remove("metric").ok_or(MetricSpecError::NoMetric("inverted"))?,
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
                        _ => Err(MetricSpecError::NotAMetric),
                    }
                }
                _ => Err(MetricSpecError::NotAMetric),
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
    fn parse(v: &serde_json::Value) -> Result<Self, MetricSpecError> {
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
            _ => Err(MetricSpecError::Ordering(sluice_format::text::excerpt(&v.to_string(), 60).into_owned())),
        }
    }
}

impl<'de> Deserialize<'de> for DimensionOrder {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        DimensionOrder::parse(&serde_json::Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}
