//! `dataSchema`: timestamp, dimensions, metrics, granularity and transforms, in both the
//! current form and the legacy `parser.parseSpec` form.

use super::aggregator::AggregatorSpec;
use super::input_format::{AvroBytesDecoder, FlattenSpec, InputFormat, ProtoBytesDecoder};
use crate::filter::Filter;
use crate::granularity::Granularity;
use serde::{Deserialize, Serialize};

/// `dataSchema` as written by the user.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataSchemaJson {
    /// The datasource name.
    pub data_source: String,
    /// Legacy parser holding `parseSpec` (timestamp, dimensions and format).
    pub parser: Option<LegacyParser>,
    /// How the row timestamp is read.
    pub timestamp_spec: Option<TimestampSpec>,
    /// Which fields become dimensions.
    pub dimensions_spec: Option<DimensionsSpec>,
    /// Aggregators computed per row.
    #[serde(default)]
    pub metrics_spec: Vec<AggregatorSpec>,
    /// Segment and query granularity, rollup.
    pub granularity_spec: Option<GranularitySpec>,
    /// Filter and expression transforms applied before indexing.
    pub transform_spec: Option<TransformSpec>,
}

/// The legacy `parser` object.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyParser {
    /// `string` (or `map`) for the parse spec's text formats, `avro_stream` or `protobuf`.
    #[serde(rename = "type", default = "default_parser_type")]
    pub kind: String,
    /// The parse spec.
    pub parse_spec: ParseSpec,
    /// `avro_stream`: where the writer schema comes from.
    pub avro_bytes_decoder: Option<AvroBytesDecoder>,
    /// `protobuf`: where the message type comes from.
    pub proto_bytes_decoder: Option<ProtoBytesDecoder>,
    /// `protobuf`, before `protoBytesDecoder`: the descriptor set file.
    pub descriptor: Option<String>,
    /// `protobuf`, before `protoBytesDecoder`: the message type.
    pub proto_message_type: Option<String>,
}

impl LegacyParser {
    /// The input format equivalent to this parser; the error names the field at fault.
    pub fn input_format(&self) -> Result<InputFormat, (&'static str, String)> {
        let flatten_spec = self.parse_spec.flatten_spec.clone();
        match self.kind.as_str() {
            "string" | "map" => self.parse_spec.input_format().map_err(|m| ("parseSpec.format", m.to_string())),
            "avro_stream" => match &self.avro_bytes_decoder {
                Some(decoder) => Ok(InputFormat::AvroStream {
                    avro_bytes_decoder: decoder.clone(),
                    binary_as_string: false,
                    flatten_spec,
                }),
                None => Err(("avroBytesDecoder", "missing: an avro_stream parser needs avroBytesDecoder".into())),
            },
            "protobuf" => {
                let decoder = match (&self.proto_bytes_decoder, &self.descriptor) {
                    (Some(decoder), _) => decoder.clone(),
                    (None, Some(descriptor)) => ProtoBytesDecoder::File {
                        descriptor: descriptor.clone(),
                        proto_message_type: self.proto_message_type.clone(),
                    },
                    (None, None) => {
                        return Err((
                            "protoBytesDecoder",
                            "missing: a protobuf parser needs protoBytesDecoder (or descriptor)".into(),
                        ))
                    }
                };
                Ok(InputFormat::Protobuf { proto_bytes_decoder: decoder, flatten_spec })
            }
            other => {
                Err(("type", format!("parser type {other:?} is not supported: use string, avro_stream or protobuf")))
            }
        }
    }
}

fn default_parser_type() -> String {
    "string".to_string()
}

/// The legacy `parseSpec`: a format plus timestamp and dimensions.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParseSpec {
    /// `json`, `csv` or `tsv` (`avro` and `json` under the binary parsers, which read their
    /// own values).
    #[serde(default = "default_format")]
    pub format: String,
    /// How the row timestamp is read.
    pub timestamp_spec: TimestampSpec,
    /// Which fields become dimensions.
    pub dimensions_spec: DimensionsSpec,
    /// Nested JSON flattening.
    pub flatten_spec: Option<FlattenSpec>,
    /// CSV/TSV column names.
    pub columns: Option<Vec<String>>,
    /// CSV/TSV multi-value delimiter.
    pub list_delimiter: Option<String>,
    /// TSV field delimiter.
    pub delimiter: Option<String>,
    /// CSV/TSV: the first row holds column names.
    pub has_header_row: Option<bool>,
    /// CSV/TSV: rows to skip at the start.
    pub skip_header_rows: Option<usize>,
}

fn default_format() -> String {
    "json".to_string()
}

/// A legacy `parseSpec.format` that Sluice does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parseSpec format {format:?} is not supported: use json, csv or tsv")]
pub struct UnsupportedParseFormat {
    /// The format given.
    pub format: String,
}

impl ParseSpec {
    /// The input format equivalent to this legacy parse spec.
    pub fn input_format(&self) -> Result<InputFormat, UnsupportedParseFormat> {
        match self.format.as_str() {
            "json" => Ok(InputFormat::Json {
                flatten_spec: self.flatten_spec.clone(),
                feature_spec: None,
                keep_null_columns: None,
            }),
            "csv" | "tsv" => Ok(InputFormat::from_delimited(
                &self.format,
                self.columns.clone(),
                self.list_delimiter.clone(),
                self.delimiter.clone(),
                self.has_header_row,
                self.skip_header_rows,
            )),
            other => Err(UnsupportedParseFormat { format: other.to_string() }),
        }
    }
}

/// `timestampSpec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimestampSpec {
    /// Input field holding the timestamp (default `timestamp`).
    #[serde(default = "default_ts_column")]
    pub column: String,
    /// `iso`, `millis`, `posix`, `micro`, `nano`, `auto` or a Joda pattern (default `auto`).
    #[serde(default = "default_ts_format")]
    pub format: String,
    /// Timestamp used when the field is missing.
    pub missing_value: Option<serde_json::Value>,
}

fn default_ts_column() -> String {
    "timestamp".to_string()
}

fn default_ts_format() -> String {
    "auto".to_string()
}

/// `dimensionsSpec`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DimensionsSpec {
    /// The dimensions, in order; empty means schemaless discovery.
    #[serde(default)]
    pub dimensions: Vec<DimensionJson>,
    /// Fields never discovered as dimensions.
    #[serde(default)]
    pub dimension_exclusions: Vec<String>,
    /// Spatial dimensions: not supported.
    pub spatial_dimensions: Option<serde_json::Value>,
    /// Druid's typed schema discovery: fields beside the listed dimensions are discovered too,
    /// as `auto` dimensions.
    pub use_schema_discovery: Option<bool>,
    /// Keep discovered dimensions beside the listed ones: not supported.
    pub include_all_dimensions: Option<bool>,
}

/// A dimension: a bare name (string) or an object with a type.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DimensionJson {
    /// A string dimension by name.
    Name(String),
    /// A typed dimension.
    Typed(DimensionSchema),
}

/// A typed dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DimensionSchema {
    /// Dimension name.
    pub name: String,
    /// `string` (default), `long`, `float` or `double`.
    #[serde(rename = "type", default = "default_dim_type")]
    pub kind: DimensionType,
    /// `SORTED_ARRAY` (default), `SORTED_SET` or `ARRAY`.
    #[serde(default)]
    pub multi_value_handling: MultiValueHandling,
    /// Whether a bitmap index is built (default true).
    pub create_bitmap_index: Option<bool>,
}

fn default_dim_type() -> DimensionType {
    DimensionType::String
}

/// The type of a dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DimensionType {
    /// Dictionary-encoded string, with bitmap index.
    String,
    /// 64-bit integer.
    Long,
    /// 32-bit float.
    Float,
    /// 64-bit float.
    Double,
    /// A nested JSON document (`COMPLEX<json>`): stored whole, and each literal path as a
    /// string column of its own with a bitmap index.
    Json,
    /// Druid's `auto` (what `useSchemaDiscovery` discovers): each hydrant stores the column as
    /// the narrowest type that holds its values (long, double, string, multi-value string for
    /// arrays of literals, else json).
    Auto,
}

/// How a multi-value string dimension keeps its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MultiValueHandling {
    /// Values sorted, duplicates kept (Druid's default).
    #[default]
    SortedArray,
    /// Values sorted, duplicates removed.
    SortedSet,
    /// Values in input order.
    Array,
}

impl DimensionJson {
    /// The dimension as a typed schema.
    pub fn schema(&self) -> DimensionSchema {
        match self {
            DimensionJson::Name(name) => DimensionSchema {
                name: name.clone(),
                kind: DimensionType::String,
                multi_value_handling: MultiValueHandling::SortedArray,
                create_bitmap_index: None,
            },
            DimensionJson::Typed(s) => s.clone(),
        }
    }
}

/// `granularitySpec`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GranularitySpec {
    /// `uniform` (default) or `arbitrary`.
    #[serde(rename = "type", default = "default_uniform")]
    pub kind: String,
    /// Time chunk size (default `DAY`).
    #[serde(default = "default_segment_granularity")]
    pub segment_granularity: Granularity,
    /// Timestamp truncation (default `NONE`).
    #[serde(default = "default_query_granularity")]
    pub query_granularity: Granularity,
    /// Whether rows with equal time and dimensions are combined (default true).
    #[serde(default = "default_true")]
    pub rollup: bool,
    /// Batch-only: the intervals to ingest.
    pub intervals: Option<Vec<String>>,
}

fn default_uniform() -> String {
    "uniform".to_string()
}

fn default_segment_granularity() -> Granularity {
    Granularity::from_name("day").unwrap_or(Granularity::All)
}

fn default_query_granularity() -> Granularity {
    Granularity::None
}

fn default_true() -> bool {
    true
}

impl Default for GranularitySpec {
    fn default() -> Self {
        Self {
            kind: default_uniform(),
            segment_granularity: default_segment_granularity(),
            query_granularity: default_query_granularity(),
            rollup: true,
            intervals: None,
        }
    }
}

/// `transformSpec`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TransformSpec {
    /// Rows not matching are dropped (counted as filtered, not as errors).
    pub filter: Option<Filter>,
    /// Expression transforms, each writing a field.
    #[serde(default)]
    pub transforms: Vec<Transform>,
}

/// One transform.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transform {
    /// Only `expression`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Output field name.
    pub name: String,
    /// The Druid expression.
    pub expression: String,
}
