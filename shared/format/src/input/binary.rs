//! The binary formats behind one type, for record values and keys alike: Avro and Protobuf
//! decoders built from a format's spec and the schema sources the caller read for it.

use super::avro::AvroDecoder;
use super::confluent::{DecodeError, SchemaRegistry};
use super::protobuf::ProtobufDecoder;
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

/// A decoder of Avro or Protobuf values.
#[derive(Debug)]
pub(super) enum BinaryDecoder {
    Avro(AvroDecoder),
    Protobuf(ProtobufDecoder),
}

impl BinaryDecoder {
    /// The decoder `format` needs (`None` for the text formats); `at` names the format in the
    /// spec (`ioConfig.inputFormat`, `ioConfig.inputFormat.keyFormat`).
    pub fn for_format(format: &InputFormat, sources: &FormatSources, at: &str) -> Result<Option<Self>, String> {
        Ok(Some(match format {
            InputFormat::AvroStream { avro_bytes_decoder, binary_as_string, .. } => {
                BinaryDecoder::Avro(match (avro_bytes_decoder, &sources.registry) {
                    (AvroBytesDecoder::SchemaInline { schema }, _) => AvroDecoder::inline(schema, *binary_as_string)
                        .map_err(|e| format!("{at}.avroBytesDecoder.schema: {e}"))?,
                    (AvroBytesDecoder::SchemaRegistry(settings), Some(r)) => {
                        AvroDecoder::registry(r.clone(), settings.capacity.unwrap_or(100), *binary_as_string)
                    }
                    (AvroBytesDecoder::SchemaRegistry(_), None) => {
                        return Err(format!(
                            "{at}: avro_stream with a schema_registry decoder needs a registry client here"
                        ))
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
                        return Err(format!(
                            "{at}: protobuf with a schema_registry decoder needs a registry client here"
                        ))
                    }
                    (ProtoBytesDecoder::Inline { descriptor_string, proto_message_type }, _) => {
                        let set = base64::engine::general_purpose::STANDARD
                            .decode(descriptor_string.trim())
                            .map_err(|e| format!("{at}.descriptorString: not base64: {e}"))?;
                        ProtobufDecoder::descriptor_set(&set, proto_message_type.as_deref())
                            .map_err(|e| format!("{at}.descriptorString: {e}"))?
                    }
                    (ProtoBytesDecoder::File { descriptor, proto_message_type }, _) => {
                        let set = sources
                            .descriptor_set
                            .as_ref()
                            .ok_or_else(|| format!("{at}.descriptor {descriptor:?} was not read here"))?;
                        ProtobufDecoder::descriptor_set(set, proto_message_type.as_deref())
                            .map_err(|e| format!("{at}.descriptor {descriptor:?}: {e}"))?
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
