//! Confluent's schema registry as the binary formats use it: the wire format that frames a
//! record value (magic byte 0, the schema id, for Protobuf the message indexes), the registry's
//! answers, and why a framed value could not be decoded.

/// Message indexes one Protobuf value may give: deeper than any real nesting of message types.
const MAX_MESSAGE_INDEXES: usize = 32;
/// Schemas one schema may reference, directly or not.
pub(super) const MAX_REFERENCES: usize = 256;
/// Bytes of schema text one schema and every schema it references may hold in all.
pub const MAX_SCHEMA_BYTES: usize = 16 << 20;

/// Where writer schemas come from by id: Confluent's schema registry.
pub trait SchemaRegistry: Send + Sync + std::fmt::Debug {
    /// The schema at `at`; `serialized` asks for Protobuf schemas as a base64
    /// `FileDescriptorProto` (the registry's `format=serialized`) rather than `.proto` text.
    /// [`RegistryError::Missing`] (the registry says there is no such schema) makes the record
    /// naming it unparseable; [`RegistryError::Unavailable`] fails the read to be retried.
    fn schema(&self, at: SchemaAt<'_>, serialized: bool) -> Result<RegisteredSchema, RegistryError>;
}

/// Why a registry gave no schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The registry answered that the schema, subject or version does not exist: a record
    /// naming it is unparseable (counted and kept), as Druid counts it.
    #[error("{0}")]
    Missing(String),
    /// The registry could not be asked, or did not answer with a schema: the read fails and is
    /// retried, and the record is not counted.
    #[error("{0}")]
    Unavailable(String),
}

/// Which schema to fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaAt<'a> {
    /// By id, as a record's framing names it.
    Id(u32),
    /// A subject's version, as a reference names it.
    Version(&'a str, i64),
}

impl std::fmt::Display for SchemaAt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SchemaAt::Id(id) => write!(f, "schema {id}"),
            SchemaAt::Version(subject, version) => write!(f, "subject {subject:?} version {version}"),
        }
    }
}

/// A schema as the registry answers it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegisteredSchema {
    /// The schema text (Avro JSON, or base64 of a `FileDescriptorProto` when serialized).
    pub schema: String,
    /// The schemas it imports.
    pub references: Vec<SchemaReference>,
}

/// A schema's reference to another: the import `name` is `subject`'s `version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaReference {
    /// The name the schema imports it by (a Protobuf file name).
    pub name: String,
    /// The subject it is registered under.
    pub subject: String,
    /// Its version there.
    pub version: i64,
}

/// Why a binary value was not decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum DecodeError {
    /// The record is unparseable: counted and kept with its partition, offset and reason.
    Unparseable(String),
    /// Its schema could not be had now: the read fails and is retried.
    Unavailable(String),
}

/// Schema `id` from `registry`, and the schemas it references, directly or not, each once and
/// after every schema it references (`skip`: references not to fetch, such as types built in).
/// A schema the registry does not have, or a schema with too many references or too many bytes
/// in all ([`MAX_REFERENCES`], [`MAX_SCHEMA_BYTES`]), makes the record unparseable; a schema
/// that cannot be had now fails the read to be retried.
pub(super) fn with_references(
    registry: &dyn SchemaRegistry,
    id: u32,
    serialized: bool,
    skip: &dyn Fn(&SchemaReference) -> bool,
) -> Result<(RegisteredSchema, Vec<(String, RegisteredSchema)>), DecodeError> {
    let root = fetch(registry, SchemaAt::Id(id), serialized)?;
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut bytes = root.schema.len();
    // Depth first, each reference's own references before it; the seen set ends a cycle, and
    // bounds the depth with the number of schemas.
    fn visit(
        registry: &dyn SchemaRegistry,
        references: &[SchemaReference],
        serialized: bool,
        skip: &dyn Fn(&SchemaReference) -> bool,
        seen: &mut std::collections::HashSet<(String, i64)>,
        bytes: &mut usize,
        out: &mut Vec<(String, RegisteredSchema)>,
    ) -> Result<(), DecodeError> {
        for r in references.iter().filter(|r| !skip(r)) {
            if !seen.insert((r.subject.clone(), r.version)) {
                continue;
            }
            if seen.len() > MAX_REFERENCES {
                return Err(DecodeError::Unparseable(format!("more than {MAX_REFERENCES} schemas are referenced")));
            }
            let schema = fetch(registry, SchemaAt::Version(&r.subject, r.version), serialized)?;
            *bytes += schema.schema.len();
            if *bytes > MAX_SCHEMA_BYTES {
                return Err(DecodeError::Unparseable(format!(
                    "the schemas it references hold more than {MAX_SCHEMA_BYTES} bytes"
                )));
            }
            visit(registry, &schema.references, serialized, skip, seen, bytes, out)?;
            out.push((r.name.clone(), schema));
        }
        Ok(())
    }
    visit(registry, &root.references, serialized, skip, &mut seen, &mut bytes, &mut out).map_err(|e| match e {
        DecodeError::Unparseable(reason) => DecodeError::Unparseable(format!("schema {id}: {reason}")),
        unavailable => unavailable,
    })?;
    Ok((root, out))
}

/// The schema at `at`: one the registry does not have is unparseable, one it cannot give now
/// is to be retried.
fn fetch(registry: &dyn SchemaRegistry, at: SchemaAt<'_>, serialized: bool) -> Result<RegisteredSchema, DecodeError> {
    registry.schema(at, serialized).map_err(|e| match e {
        RegistryError::Missing(e) => DecodeError::Unparseable(format!("{at} is not in the registry: {e}")),
        RegistryError::Unavailable(e) => DecodeError::Unavailable(format!("{at} from the registry: {e}")),
    })
}

/// Schemas by id, at most `capacity` kept (all dropped when full), with why an id's schema is
/// unusable, so that it is not fetched again for every record naming it.
#[derive(Debug)]
pub(super) struct SchemaCache<T> {
    /// Each id's schema, or why it is unparseable.
    entries: std::collections::HashMap<u32, Result<T, DecodeError>>,
    capacity: usize,
}

impl<T: Clone> SchemaCache<T> {
    pub fn new(capacity: usize) -> Self {
        Self { entries: std::collections::HashMap::new(), capacity: capacity.max(1) }
    }

    /// `id`'s schema, made by `fetch` the first time: a schema that cannot be had now
    /// ([`DecodeError::Unavailable`]) is asked for again, an unusable one is kept as such.
    pub fn get(&mut self, id: u32, fetch: impl FnOnce() -> Result<T, DecodeError>) -> Result<T, DecodeError> {
        if !self.entries.contains_key(&id) {
            let made = match fetch() {
                Err(unavailable @ DecodeError::Unavailable(_)) => return Err(unavailable),
                made => made,
            };
            if self.entries.len() >= self.capacity {
                self.entries.clear();
            }
            self.entries.insert(id, made);
        }
        self.entries[&id].clone()
    }
}

/// Splits the wire format: magic byte 0, the schema id (4 bytes, big-endian), the rest.
pub(super) fn frame(bytes: &[u8]) -> Result<(u32, &[u8]), DecodeError> {
    match bytes {
        [0, a, b, c, d, rest @ ..] => Ok((u32::from_be_bytes([*a, *b, *c, *d]), rest)),
        [magic, ..] if *magic != 0 => Err(DecodeError::Unparseable(format!(
            "not in the schema registry's wire format: magic byte {magic}, expected 0"
        ))),
        _ => Err(DecodeError::Unparseable(format!(
            "{} bytes are too short for the schema registry's framing",
            bytes.len()
        ))),
    }
}

/// Reads a Protobuf value's message indexes (the path to its message type among the schema's
/// top-level and nested types, zigzag varints after their count; a count of 0 is `[0]`, the
/// first message) into `indexes`, and returns the message bytes after them.
pub(super) fn message_indexes<'a>(mut bytes: &'a [u8], indexes: &mut Vec<usize>) -> Result<&'a [u8], DecodeError> {
    indexes.clear();
    let count = zigzag(&mut bytes)?;
    if count == 0 {
        indexes.push(0);
        return Ok(bytes);
    }
    if count < 0 || count as usize > MAX_MESSAGE_INDEXES {
        return Err(DecodeError::Unparseable(format!(
            "{count} message indexes in the framing: at most {MAX_MESSAGE_INDEXES} are read"
        )));
    }
    for _ in 0..count {
        let index = zigzag(&mut bytes)?;
        let index = usize::try_from(index)
            .map_err(|_| DecodeError::Unparseable(format!("message index {index} in the framing is negative")))?;
        indexes.push(index);
    }
    Ok(bytes)
}

/// One zigzag varint of at most 64 bits.
fn zigzag(bytes: &mut &[u8]) -> Result<i64, DecodeError> {
    let mut value: u64 = 0;
    for shift in (0..64).step_by(7) {
        let Some((&byte, rest)) = bytes.split_first() else {
            return Err(DecodeError::Unparseable("the framing's message indexes end early".into()));
        };
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
        }
    }
    Err(DecodeError::Unparseable("a message index in the framing is longer than 10 bytes".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_indexes_are_read_as_confluents_serializers_write_them() {
        let mut indexes = Vec::new();
        // [0] is written as a single 0 (no count).
        assert_eq!(message_indexes(&[0, 8, 1], &mut indexes), Ok(&[8u8, 1][..]));
        assert_eq!(indexes, [0]);
        // [1, 2]: count 2 (zigzag 4), then 1 (2) and 2 (4).
        assert_eq!(message_indexes(&[4, 2, 4, 9], &mut indexes), Ok(&[9u8][..]));
        assert_eq!(indexes, [1, 2]);
        // 300 as a zigzag varint: 600 = 0xd8 0x04.
        assert_eq!(message_indexes(&[2, 0xd8, 0x04], &mut indexes), Ok(&[][..]));
        assert_eq!(indexes, [300]);
        for (bytes, reason) in [
            (&[2u8][..], "end early"),
            (&[1, 2][..], "-1 message indexes"),
            (&[2, 1][..], "is negative"),
            (&[0x82, 0x01][..], "65 message indexes"),
            (&[0xff; 11][..], "longer than 10 bytes"),
        ] {
            match message_indexes(bytes, &mut indexes) {
                Err(DecodeError::Unparseable(e)) => assert!(e.contains(reason), "{bytes:?}: {e}"),
                other => panic!("{bytes:?}: {other:?}"),
            }
        }
    }
}
