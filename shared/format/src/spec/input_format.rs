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
    /// Druid's `kafka` wrapper format: the value is parsed with `valueFormat`, and the record's
    /// Kafka timestamp, topic, key (with `keyFormat`) and headers (with `headerFormat`) become
    /// columns too; a field of the value wins over a column of the same name.
    #[serde(rename_all = "camelCase")]
    Kafka {
        /// Format of the record value.
        value_format: Box<InputFormat>,
        /// How header values are decoded; without it, headers are not read.
        header_format: Option<HeaderFormat>,
        /// How the key is parsed (its first column is the key column); without it, the key is
        /// not read.
        key_format: Option<Box<InputFormat>>,
        /// Prefix of header columns (default `kafka.header.`).
        #[serde(alias = "headerLabelPrefix")]
        header_column_prefix: Option<String>,
        /// Name of the key column (default `kafka.key`).
        key_column_name: Option<String>,
        /// Name of the record timestamp column, in milliseconds (default `kafka.timestamp`).
        timestamp_column_name: Option<String>,
        /// Name of the topic column (default `kafka.topic`).
        topic_column_name: Option<String>,
    },
    /// Druid's `avro_stream`: each value one Avro datum.
    #[serde(rename = "avro_stream", rename_all = "camelCase")]
    AvroStream {
        /// Where the writer schema comes from.
        avro_bytes_decoder: AvroBytesDecoder,
        /// Bytes and fixed values as UTF-8 text rather than base64 (default false).
        #[serde(default)]
        binary_as_string: bool,
        /// Nested field flattening, as for JSON.
        flatten_spec: Option<FlattenSpec>,
    },
    /// Druid's `protobuf`: each value one Protobuf message.
    #[serde(rename_all = "camelCase")]
    Protobuf {
        /// Where the message type comes from.
        proto_bytes_decoder: ProtoBytesDecoder,
        /// Nested field flattening, as for JSON.
        flatten_spec: Option<FlattenSpec>,
    },
}

/// `avroBytesDecoder`: where an Avro value's writer schema comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AvroBytesDecoder {
    /// Confluent's wire format (magic byte 0, schema id), the schema from a registry.
    SchemaRegistry(RegistrySettings),
    /// One schema for every record; the value is the bare datum.
    SchemaInline {
        /// The Avro schema (JSON).
        schema: serde_json::Value,
    },
}

/// `protoBytesDecoder`: where a Protobuf value's message type comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ProtoBytesDecoder {
    /// Confluent's wire format (magic byte 0, schema id, message indexes), the schema (and the
    /// schemas it references) from a registry.
    SchemaRegistry(RegistrySettings),
    /// A descriptor set file (`protoc --descriptor_set_out`), read where the task runs.
    #[serde(rename_all = "camelCase")]
    File {
        /// The file: a path or a `file://` URL.
        descriptor: String,
        /// The message type, short or full name (default: the set's first message).
        proto_message_type: Option<String>,
    },
    /// A descriptor set in the spec, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Inline {
        /// The descriptor set, base64.
        descriptor_string: String,
        /// The message type, short or full name (default: the set's first message).
        proto_message_type: Option<String>,
    },
}

/// A `schema_registry` decoder's client settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistrySettings {
    /// The registry's URL.
    pub url: Option<String>,
    /// Several URLs, tried in order.
    pub urls: Option<Vec<String>>,
    /// Schemas kept in memory (default 100).
    pub capacity: Option<usize>,
    /// Client settings: `basic.auth.credentials.source` `USER_INFO` with
    /// `basic.auth.user.info` `user:password` (kept secret).
    pub config: Option<std::collections::BTreeMap<String, serde_json::Value>>,
    /// HTTP headers sent with every request (kept secret).
    pub headers: Option<std::collections::BTreeMap<String, String>>,
}

/// `headerFormat` of the `kafka` input format: header values as strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeaderFormat {
    /// `string`, the only type Druid has.
    #[serde(rename = "type")]
    pub kind: String,
    /// Character set of the values: `UTF-8` (default), `ISO-8859-1` or `US-ASCII`.
    pub encoding: Option<String>,
}

/// The columns the `kafka` input format adds beside the value's fields, names resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct KafkaColumns {
    /// The record timestamp column.
    pub timestamp: String,
    /// The topic column.
    pub topic: String,
    /// The key column and the key's format, when the key is read.
    pub key: Option<(String, InputFormat)>,
    /// The header columns' prefix and the values' encoding, when headers are read.
    pub headers: Option<(String, HeaderEncoding)>,
}

/// How header values become strings (invalid bytes become U+FFFD, as Java decodes them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderEncoding {
    /// UTF-8.
    Utf8,
    /// ISO-8859-1: each byte one character.
    Latin1,
    /// US-ASCII.
    Ascii,
}

impl HeaderEncoding {
    /// The encoding named `name` (Java's charset names, case-insensitive).
    pub fn named(name: &str) -> Option<Self> {
        match name.to_ascii_uppercase().replace('_', "-").as_str() {
            "UTF-8" | "UTF8" => Some(Self::Utf8),
            "ISO-8859-1" | "LATIN1" | "ISO8859-1" => Some(Self::Latin1),
            "US-ASCII" | "ASCII" => Some(Self::Ascii),
            _ => None,
        }
    }

    /// Decodes a header value.
    pub fn decode(self, bytes: &[u8]) -> String {
        match self {
            Self::Utf8 => String::from_utf8_lossy(bytes).into_owned(),
            Self::Latin1 => bytes.iter().map(|&b| b as char).collect(),
            Self::Ascii => bytes.iter().map(|&b| if b.is_ascii() { b as char } else { '\u{FFFD}' }).collect(),
        }
    }
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

    /// The columns the `kafka` format adds (`None` for the other formats).
    pub fn kafka_columns(&self) -> Option<KafkaColumns> {
        let InputFormat::Kafka {
            header_format,
            key_format,
            header_column_prefix,
            key_column_name,
            timestamp_column_name,
            topic_column_name,
            ..
        } = self
        else {
            return None;
        };
        let or = |name: &Option<String>, default: &str| name.clone().unwrap_or_else(|| default.to_string());
        Some(KafkaColumns {
            timestamp: or(timestamp_column_name, "kafka.timestamp"),
            topic: or(topic_column_name, "kafka.topic"),
            key: key_format.as_ref().map(|f| (or(key_column_name, "kafka.key"), (**f).clone())),
            headers: header_format.as_ref().map(|h| {
                let encoding = h.encoding.as_deref().and_then(HeaderEncoding::named).unwrap_or(HeaderEncoding::Utf8);
                (or(header_column_prefix, "kafka.header."), encoding)
            }),
        })
    }

    /// The format that parses record values (unwrapping `kafka`).
    pub fn value_format(&self) -> &InputFormat {
        match self {
            InputFormat::Kafka { value_format, .. } => value_format.value_format(),
            other => other,
        }
    }

    /// The schema registry the value format reads its schemas from, if any.
    pub fn registry(&self) -> Option<&RegistrySettings> {
        match self.value_format() {
            InputFormat::AvroStream { avro_bytes_decoder: AvroBytesDecoder::SchemaRegistry(r), .. }
            | InputFormat::Protobuf { proto_bytes_decoder: ProtoBytesDecoder::SchemaRegistry(r), .. } => Some(r),
            _ => None,
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
