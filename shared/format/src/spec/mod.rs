//! The datasource spec: a Druid Kafka supervisor spec, loaded unchanged from either the current
//! form (`{"type": "kafka", "spec": {...}}`) or the older top-level form, resolved into the
//! settings Sluice runs with. Options Sluice does not implement become named warnings;
//! invalid values become errors naming the field.

pub mod aggregator;
pub mod autoscaler;
pub mod batch;
pub mod data_schema;
pub mod druid_defaults;
pub mod idle;
pub mod input_format;
pub mod io_config;
mod resolve;
pub mod secrets;
pub mod tuning;

pub use aggregator::{AggregatorSpec, MetricKind};
pub use batch::{load_batch_value, BatchSpec, InputSource, LoadedBatch, SplitHint};
pub use data_schema::{
    DimensionSchema, DimensionType, GranularitySpec, MultiValueHandling, TimestampSpec, TransformSpec,
    UnsupportedParseFormat,
};
pub use input_format::{
    AvroBytesDecoder, HeaderEncoding, HeaderFormat, InputFormat, KafkaColumns, ProtoBytesDecoder, RegistrySettings,
};
pub use resolve::{
    datasource_name_problem, is_internal_topic, topic_name_problem, Compression, DatasourceSpec, IoSettings,
    RealtimeConfig, SluiceConfig, TopicPattern, TopicPatternError, TopicSource, TuningSettings,
    DEFAULT_MAX_BYTES_IN_MEMORY, DEFAULT_MAX_ROWS_IN_MEMORY, MAX_DATASOURCE_BYTES, MAX_PATTERN_CHARS, MAX_TOPIC_CHARS,
};
pub use secrets::{is_secret, redacted_spec, urls_redacted};
pub use tuning::{DEFAULT_MAX_ROWS_PER_SEGMENT, DEFAULT_MAX_TOTAL_ROWS};

use serde::Deserialize;
use std::fmt;

/// An error loading a spec, naming the field at fault.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    /// The text is not JSON.
    #[error("spec is not valid JSON: {0}")]
    Json(String),
    /// A field has an invalid value.
    #[error("{field}: {message}")]
    Field {
        /// Dotted path of the field, e.g. `spec.tuningConfig.maxRowsInMemory`.
        field: String,
        /// What is wrong and what is expected.
        message: String,
    },
}

impl SpecError {
    /// An invalid value of `field`.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        SpecError::Field { field: field.into(), message: message.into() }
    }
}

/// A spec option Sluice reads but does not implement, or does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecWarning {
    /// Dotted path of the option.
    pub field: String,
    /// What Sluice does with it.
    pub message: String,
}

impl fmt::Display for SpecWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// A loaded spec with the warnings found while loading it.
#[derive(Debug, Clone)]
pub struct LoadedSpec {
    /// The resolved spec.
    pub spec: DatasourceSpec,
    /// Options that are ignored or unknown, by name.
    pub warnings: Vec<SpecWarning>,
}

/// The three sections of a supervisor spec, plus Sluice's serverless section.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SupervisorSpecJson {
    #[serde(rename = "type")]
    kind: Option<String>,
    data_schema: data_schema::DataSchemaJson,
    io_config: io_config::IoConfig,
    #[serde(default)]
    tuning_config: tuning::TuningConfig,
    sluice_config: Option<SluiceConfig>,
    context: Option<serde_json::Value>,
    suspended: Option<bool>,
}

/// Loads a Druid Kafka supervisor spec from JSON text.
pub fn load_spec(text: &str) -> Result<LoadedSpec, SpecError> {
    let raw: serde_json::Value = serde_json::from_str(text).map_err(|e| SpecError::Json(e.to_string()))?;
    load_spec_value(raw)
}

/// Loads a Druid Kafka supervisor spec from a parsed JSON value.
pub fn load_spec_value(raw: serde_json::Value) -> Result<LoadedSpec, SpecError> {
    let serde_json::Value::Object(mut top) = raw.clone() else {
        return Err(SpecError::field("spec", "expected a JSON object"));
    };
    let mut warnings = Vec::new();
    if let Some(kind) = top.get("type") {
        if kind.as_str() != Some("kafka") {
            return Err(SpecError::field("type", format!("expected \"kafka\", got {kind}")));
        }
    }
    let (body, prefix) = match top.remove("spec") {
        Some(serde_json::Value::Object(mut inner)) => {
            // Druid's serialized spec repeats the sections at the top; with `spec`, Druid
            // reads only `spec`'s.
            let known = |k: &str| {
                matches!(
                    k,
                    "type"
                        | "context"
                        | "suspended"
                        | "id"
                        | "dataSchema"
                        | "tuningConfig"
                        | "ioConfig"
                        | "sluiceConfig"
                )
            };
            for (key, _) in top.iter().filter(|(k, _)| !known(k)) {
                warnings.push(SpecWarning { field: key.clone(), message: "unknown option, ignored".into() });
            }
            for key in ["context", "suspended", "sluiceConfig"] {
                if let Some(v) = top.get(key) {
                    inner.entry(key.to_string()).or_insert_with(|| v.clone());
                }
            }
            (serde_json::Value::Object(inner), "spec.")
        }
        Some(_) => return Err(SpecError::field("spec", "expected a JSON object")),
        None => (serde_json::Value::Object(top), ""),
    };
    let mut body = body;
    if let serde_json::Value::Object(fields) = &mut body {
        druid_defaults::strip_defaults(fields);
    }
    let mut ignored = Vec::new();
    let parsed: SupervisorSpecJson = {
        let mut record = |path: serde_ignored::Path<'_>| ignored.push(path.to_string());
        let de = serde_ignored::Deserializer::new(body, &mut record);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            SpecError::field(format!("{prefix}{path}"), e.into_inner().to_string())
        })?
    };
    for path in ignored {
        warnings.push(SpecWarning { field: format!("{prefix}{path}"), message: "unknown option, ignored".into() });
    }
    if let Some(kind) = &parsed.kind {
        if kind != "kafka" {
            return Err(SpecError::field(format!("{prefix}type"), format!("expected \"kafka\", got {kind:?}")));
        }
    }
    if parsed.context.is_some() {
        warnings.push(SpecWarning { field: format!("{prefix}context"), message: "task context is ignored".into() });
    }
    let spec = resolve::resolve(parsed, prefix, &mut warnings)?;
    Ok(LoadedSpec { spec, warnings })
}

#[cfg(test)]
mod tests;
