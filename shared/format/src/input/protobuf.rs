//! Protobuf values (Druid's `protobuf` input format): a record's value is one message, its type
//! from a descriptor set (`file`, `inline`) or named by the Confluent wire format's schema id
//! and message indexes and fetched from a schema registry (`schema_registry`: the schema as a
//! serialized `FileDescriptorProto`, the files it imports by its references, the Google
//! well-known types built in; cached by id). Each message becomes a JSON object as Druid's
//! converter makes it: the fields that are set, by their JSON names; enums as their names;
//! bytes as base64; 64-bit integers as numbers; wrappers as the value they wrap, `Timestamp`
//! and `Duration` as their JSON strings, `Struct`, `Value` and `ListValue` as the JSON they
//! hold. It is then flattened by `flattenSpec` as JSON is.

use super::confluent::{
    frame, message_indexes, with_references, DecodeError, RegisteredSchema, SchemaCache, SchemaReference,
    SchemaRegistry,
};
use base64::Engine;
use prost::Message;
use prost_reflect::{
    DescriptorPool, DynamicMessage, FileDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage, Value as Proto,
};
use prost_types::{FileDescriptorProto, FileDescriptorSet};
use serde_json::{Map, Number, Value as Json};
use std::sync::Arc;

/// Nesting of messages, lists and maps a value may have.
const MAX_DEPTH: usize = 64;

/// Why a descriptor set was refused, or a message not converted to JSON.
#[derive(Debug, thiserror::Error)]
pub enum ProtobufError {
    /// Bytes that are not a serialized `FileDescriptorSet`.
    #[error("not a Protobuf descriptor set: {0}")]
    NotDescriptorSet(#[source] prost::DecodeError),
    /// A descriptor set without files.
    #[error("the descriptor set holds no files")]
    NoFiles,
    /// A descriptor set whose files do not resolve.
    #[error("invalid Protobuf descriptor set: {0}")]
    InvalidSet(#[source] prost_reflect::DescriptorError),
    /// A descriptor set without message types.
    #[error("the descriptor set defines no message type")]
    NoMessageTypes,
    /// A descriptor set without the message type named.
    #[error("the descriptor set has no message type {name:?}")]
    NoMessageType {
        /// The type named.
        name: String,
    },
    /// Message indexes that name no message type of the schema's file.
    #[error("no message type at indexes {indexes:?} of {file}")]
    NoMessageAt {
        /// The indexes.
        indexes: Vec<usize>,
        /// The file's name.
        file: String,
    },
    /// A record value that converts to something other than an object.
    #[error("the value is not a record but {value}")]
    NotRecord {
        /// The value, as JSON.
        value: String,
    },
    /// A message nesting deeper than the limit.
    #[error("the Protobuf message nests deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// A map field whose entry type is unknown.
    #[error("a map without its entry type")]
    MapEntry,
    /// A list or map where a single value belongs.
    #[error("a list or map where one value belongs")]
    NotSingle,
    /// A well-known type without one of its fields.
    #[error("{message} without {field}")]
    MissingField {
        /// The message type's full name.
        message: String,
        /// The field.
        field: String,
    },
    /// A `Timestamp` with negative nanos.
    #[error("Timestamp nanos {nanos} is negative")]
    NegativeNanos {
        /// The nanos.
        nanos: i32,
    },
    /// A `Timestamp` outside the times a row may have.
    #[error("Timestamp {seconds}s {nanos}ns is out of range")]
    TimestampRange {
        /// The seconds.
        seconds: i64,
        /// The nanos.
        nanos: u32,
    },
    /// A `Timestamp`'s or `Duration`'s nanos past a second.
    #[error("nanos {nanos} is out of range")]
    NanosRange {
        /// The nanos.
        nanos: i32,
    },
    /// An `Any` holding a type the schema does not define.
    #[error("google.protobuf.Any holds {url:?}, a type the schema does not define")]
    AnyType {
        /// The `Any`'s type URL.
        url: String,
    },
    /// An `Any` whose value does not decode as its type.
    #[error("google.protobuf.Any of {url:?} does not decode: {source}")]
    AnyDecode {
        /// The `Any`'s type URL.
        url: String,
        /// Why it does not decode.
        source: prost::DecodeError,
    },
}

/// Where a record's message type comes from.
#[derive(Debug)]
enum Source {
    /// One type for every record; the value is the bare message.
    Fixed(MessageDescriptor),
    /// Schemas by id.
    Registry { registry: Arc<dyn SchemaRegistry>, cache: SchemaCache<FileDescriptor> },
}

/// Decodes record values of one datasource.
#[derive(Debug)]
pub(super) struct ProtobufDecoder {
    source: Source,
    /// The current record's message indexes.
    indexes: Vec<usize>,
}

impl ProtobufDecoder {
    /// A decoder of messages of `message_type` (default: the first message of the set's first
    /// file that has one) from a serialized `FileDescriptorSet`.
    pub fn descriptor_set(set: &[u8], message_type: Option<&str>) -> Result<Self, ProtobufError> {
        let set = FileDescriptorSet::decode(set).map_err(ProtobufError::NotDescriptorSet)?;
        let names: Vec<String> = set.file.iter().map(|f| f.name().to_string()).collect();
        if names.is_empty() {
            return Err(ProtobufError::NoFiles);
        }
        let mut pool = DescriptorPool::global();
        // The well-known types are built in: the set's own copies (protoc --include_imports) are
        // skipped rather than refused for differing in their source details.
        let files: Vec<FileDescriptorProto> =
            set.file.into_iter().filter(|f| pool.get_file_by_name(f.name()).is_none()).collect();
        pool.add_file_descriptor_protos(files).map_err(ProtobufError::InvalidSet)?;
        let user: Vec<FileDescriptor> = names.iter().filter_map(|n| pool.get_file_by_name(n)).collect();
        let message = match message_type {
            None => user.iter().find_map(|f| f.messages().next()),
            Some(name) => user.iter().flat_map(|f| f.messages()).find_map(|m| named(m, name, 0)),
        };
        let message = message.ok_or_else(|| match message_type {
            None => ProtobufError::NoMessageTypes,
            Some(name) => ProtobufError::NoMessageType { name: name.to_string() },
        })?;
        Ok(Self { source: Source::Fixed(message), indexes: Vec::new() })
    }

    /// A decoder reading the Confluent wire format, schemas from `registry` (at most
    /// `capacity` kept).
    pub fn registry(registry: Arc<dyn SchemaRegistry>, capacity: usize) -> Self {
        Self { source: Source::Registry { registry, cache: SchemaCache::new(capacity) }, indexes: Vec::new() }
    }

    /// One value as JSON (an object).
    pub fn decode(&mut self, bytes: &[u8]) -> Result<Json, DecodeError> {
        Convert::message(self.read(bytes)?, 0).map_err(|e| DecodeError::Unparseable(e.to_string()))
    }

    /// One message's fields that are set, in field number order.
    pub fn decode_fields(&mut self, bytes: &[u8]) -> Result<Vec<(String, Json)>, DecodeError> {
        Convert::fields(self.read(bytes)?).map_err(|e| DecodeError::Unparseable(e.to_string()))
    }

    /// One message.
    fn read(&mut self, bytes: &[u8]) -> Result<DynamicMessage, DecodeError> {
        let (message, body) = match &mut self.source {
            Source::Fixed(m) => (m.clone(), bytes),
            Source::Registry { registry, cache } => {
                let (id, rest) = frame(bytes)?;
                let body = message_indexes(rest, &mut self.indexes)?;
                let file = cache.get(id, || registry_file(registry.as_ref(), id))?;
                (
                    indexed(&file, &self.indexes).map_err(|e| DecodeError::Unparseable(format!("schema {id}: {e}")))?,
                    body,
                )
            }
        };
        DynamicMessage::decode(message.clone(), body)
            .map_err(|e| DecodeError::Unparseable(format!("Protobuf {} does not decode: {e}", message.full_name())))
    }
}

/// The message type named `name` (its name, its full name, or its name within its package)
/// at or under `message`.
fn named(message: MessageDescriptor, name: &str, depth: usize) -> Option<MessageDescriptor> {
    let package = message.parent_file().package_name().to_string();
    let within = message.full_name().strip_prefix(&package).map(|n| n.trim_start_matches('.'));
    if message.name() == name || message.full_name() == name || within == Some(name) {
        return Some(message);
    }
    if depth >= MAX_DEPTH {
        return None;
    }
    message.child_messages().find_map(|m| named(m, name, depth + 1))
}

/// The message type at `indexes`: the file's top-level message, then nested ones.
fn indexed(file: &FileDescriptor, indexes: &[usize]) -> Result<MessageDescriptor, ProtobufError> {
    let missing = || ProtobufError::NoMessageAt { indexes: indexes.to_vec(), file: file.name().to_string() };
    let (first, rest) = indexes.split_first().ok_or_else(missing)?;
    let mut message = file.messages().nth(*first).ok_or_else(missing)?;
    for i in rest {
        let child = message.child_messages().nth(*i);
        message = child.ok_or_else(missing)?;
    }
    Ok(message)
}

/// Schema `id` with the files it references, fetched from `registry`.
fn registry_file(registry: &dyn SchemaRegistry, id: u32) -> Result<FileDescriptor, DecodeError> {
    let mut pool = DescriptorPool::global();
    let built_in = |r: &SchemaReference| pool.get_file_by_name(&r.name).is_some();
    let (root, references) = with_references(registry, id, true, &built_in)?;
    let file = |name: &str, schema: &RegisteredSchema| {
        let bytes = base64::engine::general_purpose::STANDARD.decode(schema.schema.trim()).map_err(|e| {
            DecodeError::Unparseable(format!("schema {id}: {name} is not a serialized file descriptor (base64: {e})"))
        })?;
        FileDescriptorProto::decode(bytes.as_slice())
            .map_err(|e| DecodeError::Unparseable(format!("schema {id}: {name} is not a file descriptor: {e}")))
    };
    let invalid = |e: prost_reflect::DescriptorError| {
        DecodeError::Unparseable(format!("schema {id}: invalid Protobuf schema: {e}"))
    };
    // A referenced file is imported by its reference name; the schema itself keeps its own.
    for (name, schema) in &references {
        let mut referenced = file(name, schema)?;
        referenced.name = Some(name.clone());
        pool.add_file_descriptor_proto(referenced).map_err(invalid)?;
    }
    let mut root = file(&format!("schema {id}"), &root)?;
    if root.name().is_empty() {
        root.name = Some(format!("schema-{id}.proto"));
    }
    let name = root.name().to_string();
    pool.add_file_descriptor_proto(root).map_err(invalid)?;
    pool.get_file_by_name(&name).ok_or_else(|| DecodeError::Unparseable(format!("schema {id}: no file descriptor")))
}

/// Messages to JSON as Druid's `ProtobufConverter` makes them, taking their values.
struct Convert;

impl Convert {
    /// A record value's fields: its message's, unless it is a well-known type.
    fn fields(mut message: DynamicMessage) -> Result<Vec<(String, Json)>, ProtobufError> {
        if message.descriptor().full_name().starts_with("google.protobuf.") {
            return match Self::message(message, 0)? {
                Json::Object(fields) => Ok(fields.into_iter().collect()),
                other => Err(ProtobufError::NotRecord { value: other.to_string() }),
            };
        }
        message
            .take_fields()
            .map(|(field, value)| Ok((field.json_name().to_string(), Self::field(&field.kind(), value, 0)?)))
            .collect()
    }

    fn message(mut message: DynamicMessage, depth: usize) -> Result<Json, ProtobufError> {
        if depth > MAX_DEPTH {
            return Err(ProtobufError::TooDeep);
        }
        if let Some(local) = message.descriptor().full_name().strip_prefix("google.protobuf.") {
            if WELL_KNOWN.contains(&local) {
                let local = local.to_string();
                return Self::well_known(&local, message, depth);
            }
        }
        let mut out = Map::new();
        for (field, value) in message.take_fields() {
            out.insert(field.json_name().to_string(), Self::field(&field.kind(), value, depth)?);
        }
        Ok(Json::Object(out))
    }

    /// A field's value: a list, a map (keys as strings, in key order) or a single value.
    fn field(kind: &Kind, value: Proto, depth: usize) -> Result<Json, ProtobufError> {
        match value {
            Proto::List(items) => {
                Ok(Json::Array(items.into_iter().map(|v| Self::single(kind, v, depth + 1)).collect::<Result<_, _>>()?))
            }
            Proto::Map(entries) => {
                let value_kind =
                    kind.as_message().map(|m| m.map_entry_value_field().kind()).ok_or(ProtobufError::MapEntry)?;
                let mut sorted: Vec<_> = entries.into_iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(&b.0));
                let mut out = Map::new();
                for (k, v) in sorted {
                    let key = match k {
                        MapKey::String(s) => s,
                        MapKey::Bool(b) => b.to_string(),
                        MapKey::I32(n) => n.to_string(),
                        MapKey::I64(n) => n.to_string(),
                        MapKey::U32(n) => n.to_string(),
                        MapKey::U64(n) => n.to_string(),
                    };
                    out.insert(key, Self::single(&value_kind, v, depth + 1)?);
                }
                Ok(Json::Object(out))
            }
            single => Self::single(kind, single, depth),
        }
    }

    fn single(kind: &Kind, value: Proto, depth: usize) -> Result<Json, ProtobufError> {
        let number = |f: f64| Number::from_f64(f).map_or(Json::Null, Json::Number);
        Ok(match value {
            Proto::Bool(b) => Json::Bool(b),
            Proto::I32(n) => Json::from(n),
            Proto::I64(n) => Json::from(n),
            Proto::U32(n) => Json::from(n),
            Proto::U64(n) => Json::from(n),
            Proto::F32(f) => number(f64::from(f)),
            Proto::F64(f) => number(f),
            Proto::String(s) => Json::String(s),
            Proto::Bytes(b) => Json::String(base64::engine::general_purpose::STANDARD.encode(b)),
            Proto::EnumNumber(n) => match kind.as_enum() {
                Some(e) if e.full_name() == "google.protobuf.NullValue" => Json::Null,
                Some(e) => e.get_value(n).map_or_else(|| Json::from(n), |v| Json::String(v.name().to_string())),
                None => Json::from(n),
            },
            Proto::Message(m) => Self::message(m, depth + 1)?,
            Proto::List(_) | Proto::Map(_) => return Err(ProtobufError::NotSingle),
        })
    }

    /// The well-known types Druid converts to what their JSON form holds (`local` is the name
    /// within `google.protobuf`).
    fn well_known(local: &str, mut message: DynamicMessage, depth: usize) -> Result<Json, ProtobufError> {
        let desc = message.descriptor();
        let mut take = |name: &str| -> Result<(Kind, Proto), ProtobufError> {
            let field = desc.get_field_by_name(name).ok_or_else(|| ProtobufError::MissingField {
                message: desc.full_name().to_string(),
                field: name.to_string(),
            })?;
            let value = message.take_field(&field).unwrap_or_else(|| Proto::default_value_for_field(&field));
            Ok((field.kind(), value))
        };
        Ok(match local {
            "Timestamp" => {
                let (seconds, nanos) = seconds_nanos(&mut take)?;
                let nanos = u32::try_from(nanos).map_err(|_| ProtobufError::NegativeNanos { nanos })?;
                let time = chrono::DateTime::from_timestamp(seconds, nanos)
                    .filter(|t| (super::MIN_TIME..=super::MAX_TIME).contains(&t.timestamp_millis()))
                    .ok_or(ProtobufError::TimestampRange { seconds, nanos })?;
                Json::String(time.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
            }
            "Duration" => {
                let (seconds, nanos) = seconds_nanos(&mut take)?;
                Json::String(duration_text(seconds, nanos))
            }
            "FieldMask" => {
                let paths = match take("paths")?.1 {
                    Proto::List(items) => items.iter().filter_map(|p| p.as_str().map(lower_camel)).collect(),
                    _ => Vec::new(),
                };
                Json::String(paths.join(","))
            }
            "Struct" => {
                let (kind, value) = take("fields")?;
                Self::field(&kind, value, depth)?
            }
            "ListValue" => {
                let (kind, value) = take("values")?;
                Self::field(&kind, value, depth)?
            }
            "Value" => match message.take_fields().next() {
                None => Json::Null,
                Some((f, v)) => Self::field(&f.kind(), v, depth)?,
            },
            "Any" => Self::any(message, depth)?,
            // The wrappers: the value they wrap.
            _ => {
                let (kind, value) = take("value")?;
                Self::single(&kind, value, depth)?
            }
        })
    }

    /// An `Any` as the JSON text of the message it holds with its `@type`, when the schema
    /// defines that type.
    fn any(message: DynamicMessage, depth: usize) -> Result<Json, ProtobufError> {
        let url = message.get_field_by_name("type_url").and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        let value = message.get_field_by_name("value").and_then(|v| v.as_bytes().cloned()).unwrap_or_default();
        let type_name = url.rsplit('/').next().unwrap_or_default();
        let inner = message
            .descriptor()
            .parent_pool()
            .get_message_by_name(type_name)
            .ok_or_else(|| ProtobufError::AnyType { url: url.clone() })?;
        let decoded = DynamicMessage::decode(inner, value)
            .map_err(|source| ProtobufError::AnyDecode { url: url.clone(), source })?;
        let mut out = Map::new();
        out.insert("@type".into(), Json::String(url));
        match Self::message(decoded, depth + 1)? {
            Json::Object(fields) => out.extend(fields),
            other => {
                out.insert("value".into(), other);
            }
        }
        Ok(Json::String(Json::Object(out).to_string()))
    }
}

/// The well-known types converted as Druid converts them, by their name in `google.protobuf`.
const WELL_KNOWN: [&str; 16] = [
    "BoolValue",
    "Int32Value",
    "UInt32Value",
    "Int64Value",
    "UInt64Value",
    "StringValue",
    "BytesValue",
    "FloatValue",
    "DoubleValue",
    "Timestamp",
    "Duration",
    "FieldMask",
    "Struct",
    "Value",
    "ListValue",
    "Any",
];

/// A `Timestamp`'s or `Duration`'s seconds and nanos.
fn seconds_nanos(
    take: &mut impl FnMut(&str) -> Result<(Kind, Proto), ProtobufError>,
) -> Result<(i64, i32), ProtobufError> {
    let seconds = take("seconds")?.1.as_i64().unwrap_or(0);
    let nanos = take("nanos")?.1.as_i32().unwrap_or(0);
    if !(-999_999_999..=999_999_999).contains(&nanos) {
        return Err(ProtobufError::NanosRange { nanos });
    }
    Ok((seconds, nanos))
}

/// A `Duration` as protobuf's JSON writes it: seconds with 0, 3, 6 or 9 fraction digits, `s`
/// (seconds and nanos share their sign).
pub(super) fn duration_text(seconds: i64, nanos: i32) -> String {
    let sign = if seconds < 0 || nanos < 0 { "-" } else { "" };
    let whole = seconds.unsigned_abs();
    match nanos.unsigned_abs() {
        0 => format!("{sign}{whole}s"),
        n if n % 1_000_000 == 0 => format!("{sign}{whole}.{:03}s", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{sign}{whole}.{:06}s", n / 1_000),
        n => format!("{sign}{whole}.{n:09}s"),
    }
}

/// `snake_case` to `lowerCamelCase`, as field masks are written in JSON.
pub(super) fn lower_camel(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut upper = false;
    for c in path.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}
