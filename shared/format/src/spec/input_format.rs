//! `inputFormat`: how the bytes of a Kafka record become fields.

use serde::{Deserialize, Serialize};

/// An input format, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum InputFormat {
    /// One JSON object per record.
    #[serde(rename_all = "camelCase")]
    Json {
        /// Nested field flattening.
        flatten_spec: Option<FlattenSpec>,
        /// Jackson parser features: ignored.
        feature_spec: Option<serde_json::Value>,
        /// Keep null columns in discovery: ignored.
        keep_null_columns: Option<bool>,
    },
    /// Comma-separated values.
    #[serde(rename_all = "camelCase")]
    Csv(Delimited),
    /// Tab- (or `delimiter`-) separated values.
    #[serde(rename_all = "camelCase")]
    Tsv(Delimited),
    /// Druid's `kafka` wrapper format: the value is parsed with `valueFormat`.
    #[serde(rename_all = "camelCase")]
    Kafka {
        /// Format of the record value.
        value_format: Box<InputFormat>,
        /// Header, key and timestamp columns: not supported.
        header_format: Option<serde_json::Value>,
        /// Key format: not supported.
        key_format: Option<serde_json::Value>,
    },
}

/// Options of the delimited (CSV/TSV) formats.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delimited {
    /// Column names, in order.
    pub columns: Option<Vec<String>>,
    /// Separator of multi-value fields (default `\u0001`).
    pub list_delimiter: Option<String>,
    /// Field separator for TSV (default tab).
    pub delimiter: Option<String>,
    /// Read column names from the first row.
    #[serde(default)]
    pub find_columns_from_header: bool,
    /// Rows skipped before the header or data.
    #[serde(default)]
    pub skip_header_rows: usize,
}

impl InputFormat {
    /// Builds a CSV/TSV format from the legacy parseSpec fields.
    pub fn from_delimited(
        format: &str,
        columns: Option<Vec<String>>,
        list_delimiter: Option<String>,
        delimiter: Option<String>,
        has_header_row: Option<bool>,
        skip_header_rows: Option<usize>,
    ) -> InputFormat {
        let d = Delimited {
            columns,
            list_delimiter,
            delimiter,
            find_columns_from_header: has_header_row.unwrap_or(false),
            skip_header_rows: skip_header_rows.unwrap_or(0),
        };
        if format == "tsv" {
            InputFormat::Tsv(d)
        } else {
            InputFormat::Csv(d)
        }
    }

    /// The format that parses record values (unwrapping `kafka`).
    pub fn value_format(&self) -> &InputFormat {
        match self {
            InputFormat::Kafka { value_format, .. } => value_format.value_format(),
            other => other,
        }
    }
}

/// `flattenSpec` for nested JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlattenSpec {
    /// Also take every top-level scalar field (default true).
    #[serde(default = "default_true")]
    pub use_field_discovery: bool,
    /// Explicit fields.
    #[serde(default)]
    pub fields: Vec<FlattenField>,
}

fn default_true() -> bool {
    true
}

/// One flattened field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlattenField {
    /// `root`, `path` (JSONPath) or `jq` (not supported).
    #[serde(rename = "type")]
    pub kind: String,
    /// Output field name.
    pub name: String,
    /// The path expression (`path`/`jq`), or the root field name (`root`, defaults to `name`).
    pub expr: Option<String>,
}
