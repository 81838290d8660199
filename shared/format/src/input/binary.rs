//! The binary formats behind one type, for record values and keys alike: Avro and Protobuf
//! decoders built from a format's spec and the schema sources the caller read for it.

use super::avro::{AvroDecoder, AvroError};
use super::confluent::{DecodeError, SchemaRegistry};
use super::protobuf::{ProtobufDecoder, ProtobufError};
use crate::spec::{AvroBytesDecoder, InputFormat, ProtoBytesDecoder};
use base64::Engine;
use serde_json::Value as Json;
use std::sync::Arc;

/// What one format reads its schemas from beside the spec: the registry a `schema_registry`
/// decoder names, and the descriptor set a Protobuf `file` decoder names (read by the caller).
#[derive(Debug, Clone, Default)]
pub struct FormatSources {
    /// The schema registry's client.
    pub registry: Option<Arc<dyn SchemaRegistry>>,
    /// The bytes of the `file` decoder's descriptor set.
    pub descriptor_set: Option<Arc<Vec<u8>>>,
}

/// Why an Avro or Protobuf format's decoder could not be built; `at` names the decoder in the
/// spec.
#[derive(Debug, thiserror::Error)]
pub enum BinaryFormatError {
    /// An inline Avro schema that is refused.
    #[error("{at}.avroBytesDecoder.schema: {source}")]
    AvroSchema {
        /// The format in the spec.
        at: String,
        /// Why the schema is refused.
        source: AvroError,
    },
    /// An Avro `schema_registry` decoder without a registry client.
    #[error("{at}: avro_stream with a schema_registry decoder needs a registry client here")]
    AvroRegistry {
        /// The format in the spec.
        at: String,
    },
    /// A Protobuf `schema_registry` decoder without a registry client.
    #[error("{at}: protobuf with a schema_registry decoder needs a registry client here")]
    ProtobufRegistry {
        /// The decoder in the spec (`....protoBytesDecoder`).
        at: String,
    },
    /// An inline descriptor set that is not base64.
    #[error("{at}.descriptorString: not base64: {source}")]
    DescriptorBase64 {
        /// The decoder in the spec (`....protoBytesDecoder`).
        at: String,
        /// Why it does not decode.
        source: base64::DecodeError,
    },
    /// An inline descriptor set that is refused.
    #[error("{at}.descriptorString: {source}")]
    DescriptorString {
        /// The decoder in the spec (`....protoBytesDecoder`).
        at: String,
        /// Why the set is refused.
        source: ProtobufError,
    },
    /// A descriptor file the caller did not read.
    #[error("{at}.descriptor {descriptor:?} was not read here")]
    DescriptorUnread {
        /// The decoder in the spec (`....protoBytesDecoder`).
        at: String,
        /// The descriptor file named.
        descriptor: String,
    },
    /// A descriptor file that is refused.
    #[error("{at}.descriptor {descriptor:?}: {source}")]
    Descriptor {
        /// The decoder in the spec (`....protoBytesDecoder`).
        at: String,
        /// The descriptor file named.
        descriptor: String,
        /// Why the set is refused.
        source: ProtobufError,
    },
}

/// A decoder of Avro or Protobuf values.
#[derive(Debug)]
pub(super) enum BinaryDecoder {
    Avro(AvroDecoder),
    Protobuf(ProtobufDecoder),
}

impl BinaryDecoder {
    /// The decoder `format` needs (`None` for the text formats); `at` names the format in the
    /// spec (`ioConfig.inputFormat`, `ioConfig.inputFormat.keyFormat`).
    pub fn for_format(
        format: &InputFormat,
        sources: &FormatSources,
        at: &str,
    ) -> Result<Option<Self>, BinaryFormatError> {
        Ok(Some(match format {
            InputFormat::AvroStream { avro_bytes_decoder, binary_as_string, .. } => {
                BinaryDecoder::Avro(match (avro_bytes_decoder, &sources.registry) {
                    (AvroBytesDecoder::SchemaInline { schema }, _) => AvroDecoder::inline(schema, *binary_as_string)
                        .map_err(|source| BinaryFormatError::AvroSchema { at: at.to_string(), source })?,
                    (AvroBytesDecoder::SchemaRegistry(settings), Some(r)) => {
                        AvroDecoder::registry(r.clone(), settings.capacity.unwrap_or(100), *binary_as_string)
                    }
                    (AvroBytesDecoder::SchemaRegistry(_), None) => {
                        return Err(BinaryFormatError::AvroRegistry { at: at.to_string() })
                    }
                })
            }
            InputFormat::Protobuf { proto_bytes_decoder, .. } => {
                let at = format!("{at}.protoBytesDecoder");
                BinaryDecoder::Protobuf(match (proto_bytes_decoder, &sources.registry) {
                    (ProtoBytesDecoder::SchemaRegistry(settings), Some(r)) => {
                        ProtobufDecoder::registry(r.clone(), settings.capacity.unwrap_or(100))
                    }
                    (ProtoBytesDecoder::SchemaRegistry(_), None) => {
                        return Err(BinaryFormatError::ProtobufRegistry { at })
                    }
                    (ProtoBytesDecoder::Inline { descriptor_string, proto_message_type }, _) => {
                        let set = base64::engine::general_purpose::STANDARD
                            .decode(descriptor_string.trim())
                            .map_err(|source| BinaryFormatError::DescriptorBase64 { at: at.clone(), source })?;
                        ProtobufDecoder::descriptor_set(&set, proto_message_type.as_deref())
                            .map_err(|source| BinaryFormatError::DescriptorString { at, source })?
                    }
                    (ProtoBytesDecoder::File { descriptor, proto_message_type }, _) => {
                        let set = sources.descriptor_set.as_ref().ok_or_else(|| {
                            BinaryFormatError::DescriptorUnread { at: at.clone(), descriptor: descriptor.clone() }
                        })?;
                        ProtobufDecoder::descriptor_set(set, proto_message_type.as_deref()).map_err(|source| {
                            BinaryFormatError::Descriptor { at, descriptor: descriptor.clone(), source }
                        })?
                    }
                })
            }
            _ => return Ok(None),
        }))
    }

    /// One value as JSON.
    pub fn decode(&mut self, bytes: &[u8]) -> Result<Json, DecodeError> {
        match self {
            BinaryDecoder::Avro(d) => d.decode(bytes),
            BinaryDecoder::Protobuf(d) => d.decode(bytes),
        }
    }

    /// One record value's fields (it must be a record).
    pub fn decode_fields(&mut self, bytes: &[u8]) -> Result<Vec<(String, Json)>, DecodeError> {
        match self {
            BinaryDecoder::Avro(d) => d.decode_fields(bytes),
            BinaryDecoder::Protobuf(d) => d.decode_fields(bytes),
        }
    }
}
