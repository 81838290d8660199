//! The `kafka` input format's columns beside the value's fields: the record's Kafka timestamp
//! and topic, its key parsed with `keyFormat` (the first column of the key's first row, as
//! Druid takes it; an Avro or Protobuf key's first field, or the key itself when it is not a
//! record) and its headers decoded as strings under `headerColumnPrefix`.

use super::binary::{BinaryDecoder, BinaryFormatError, FormatSources};
use super::confluent::DecodeError;
use super::delimited::{DelimitedDecoder, DelimitedError};
use super::ParseError;
use crate::spec::{InputFormat, KafkaColumns};
use crate::value::Value;

/// What the `kafka` format reads of a record besides its value.
#[derive(Debug, Clone, Copy, Default)]
pub struct KafkaMeta<'a> {
    /// The record's topic.
    pub topic: &'a str,
    /// The record's timestamp (ms), when it has one.
    pub timestamp: Option<i64>,
    /// The record's key, when it has one.
    pub key: Option<&'a [u8]>,
    /// The record's headers in order: name and value (`None`: a null value).
    pub headers: &'a [(&'a str, Option<&'a [u8]>)],
}

/// Why the `kafka` format's `keyFormat` was refused.
#[derive(Debug, thiserror::Error)]
pub enum KeyFormatError {
    /// A CSV or TSV key format's settings.
    #[error(transparent)]
    Delimited(#[from] DelimitedError),
    /// A `kafka` format as the key's.
    #[error("keyFormat: a kafka format cannot nest another")]
    Nested,
    /// An Avro or Protobuf key format's decoder.
    #[error(transparent)]
    Binary(#[from] BinaryFormatError),
}

/// How a key becomes its column's value.
#[derive(Debug)]
enum KeyDecoder {
    /// A JSON object: its first field.
    Json,
    /// A delimited row: its first column.
    Delimited(DelimitedDecoder),
    /// An Avro or Protobuf value: a record's first field, or the value itself.
    Binary(BinaryDecoder),
}

/// The `kafka` format's columns, resolved once per parser.
#[derive(Debug)]
pub(super) struct KafkaInput {
    pub columns: KafkaColumns,
    key: Option<KeyDecoder>,
}

impl KafkaInput {
    pub fn new(columns: KafkaColumns, sources: &FormatSources) -> Result<Self, KeyFormatError> {
        let key = match columns.key.as_ref().map(|(_, f)| f) {
            None => None,
            Some(InputFormat::Json { .. }) => Some(KeyDecoder::Json),
            Some(InputFormat::Csv(d)) => Some(KeyDecoder::Delimited(DelimitedDecoder::new(d, b',')?)),
            Some(InputFormat::Tsv(d)) => Some(KeyDecoder::Delimited(DelimitedDecoder::new(d, b'\t')?)),
            Some(InputFormat::Kafka { .. }) => return Err(KeyFormatError::Nested),
            Some(format @ (InputFormat::AvroStream { .. } | InputFormat::Protobuf { .. })) => {
                BinaryDecoder::for_format(format, sources, "ioConfig.inputFormat.keyFormat")?.map(KeyDecoder::Binary)
            }
        };
        Ok(Self { columns, key })
    }

    /// The key's column value; `Ok(None)` when the key is not read or gives no row.
    pub fn key_value(&mut self, key: &[u8]) -> Result<Option<Value>, ParseError> {
        let text = || {
            std::str::from_utf8(key)
                .map_err(|e| ParseError::new(format!("key is not valid UTF-8 (byte {})", e.valid_up_to())))
        };
        match self.key.as_mut() {
            None => Ok(None),
            Some(KeyDecoder::Json) => match serde_json::from_str::<serde_json::Value>(text()?) {
                Ok(serde_json::Value::Object(obj)) => Ok(obj.into_iter().next().map(|(_, v)| Value::from_json(v))),
                Ok(_) => Err(ParseError::new("key: expected a JSON object")),
                Err(e) => Err(ParseError::new(format!("key: malformed JSON: {e}"))),
            },
            Some(KeyDecoder::Delimited(d)) => {
                let Some(line) = text()?.lines().find(|l| !l.trim().is_empty()) else { return Ok(None) };
                let row = d.decode(line).map_err(|e| ParseError::new(format!("key: {}", e.reason)))?;
                Ok(row.and_then(|values| values.into_iter().next()))
            }
            Some(KeyDecoder::Binary(binary)) => match binary.decode(key) {
                Ok(serde_json::Value::Object(fields)) => {
                    Ok(fields.into_iter().next().map(|(_, v)| Value::from_json(v)))
                }
                Ok(other) => Ok(Some(Value::from_json(other))),
                Err(DecodeError::Unparseable(reason)) => Err(ParseError::new(format!("key: {reason}"))),
                Err(DecodeError::Unavailable(reason)) => {
                    Err(ParseError { reason: format!("key: {reason}"), retry: true })
                }
            },
        }
    }
}
