//! Avro values (Druid's `avro_stream` input format): a record's value is one Avro datum, its
//! writer schema given inline (`schema_inline`) or named by the Confluent wire format's schema
//! id and fetched from a schema registry (`schema_registry`, cached by id). Each datum becomes a
//! JSON object, flattened by `flattenSpec` as JSON is: unions as the branch they hold, enums
//! and UUIDs as strings, bytes and fixed as base64 (or text with `binaryAsString`), logical
//! types as the numbers they stand for (dates in days, times and timestamps in their unit,
//! decimals scaled to doubles).

use super::confluent::{frame, with_references, DecodeError, SchemaCache, SchemaRegistry};
use apache_avro::headers::HeaderBuilder;
use apache_avro::schema::{Name, ResolvedSchema, Schema};
use apache_avro::types::Value as Avro;
use apache_avro::GenericSingleObjectReader;
use base64::Engine;
use serde_json::{Map, Number, Value as Json};
use std::collections::HashMap;
use std::sync::Arc;

/// Nesting of records, arrays, maps and unions a datum may have.
const MAX_DEPTH: usize = 64;

/// Why an Avro schema was refused, or a datum not converted to JSON.
#[derive(Debug, thiserror::Error)]
pub enum AvroError {
    /// A schema that does not parse or whose names do not resolve.
    #[error("invalid Avro schema: {0}")]
    InvalidSchema(#[source] apache_avro::Error),
    /// A named type that refers to itself.
    #[error("the Avro schema's type {name} refers to itself, which is not supported")]
    Recursive {
        /// The type's name.
        name: String,
    },
    /// A schema naming a type it does not define.
    #[error("the Avro schema refers to an unknown type {name}")]
    UnknownSchemaType {
        /// The type's name.
        name: String,
    },
    /// A datum nesting deeper than the limit.
    #[error("the Avro datum nests deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// A datum of a named type the writer schema does not define.
    #[error("unknown Avro type {name}")]
    UnknownType {
        /// The type's name.
        name: String,
    },
    /// A value of a kind (`union`, `array`, `map`, `record`, `decimal`) whose schema is of
    /// another kind.
    #[error("an Avro {kind} without its schema")]
    WithoutSchema {
        /// The value's kind.
        kind: &'static str,
    },
    /// A union value naming a branch its schema does not have.
    #[error("Avro union branch {branch} is out of range")]
    UnionBranch {
        /// The branch.
        branch: u32,
    },
    /// A decimal whose bytes cannot be had.
    #[error("Avro decimal: {0}")]
    Decimal(#[source] apache_avro::Error),
    /// A decimal wider than 128 bits.
    #[error("Avro decimal of {bytes} bytes is wider than 128 bits")]
    DecimalWidth {
        /// Its bytes.
        bytes: usize,
    },
    /// A record value that converts to something other than an object.
    #[error("the value is not a record but {value}")]
    NotRecord {
        /// The value, as JSON.
        value: String,
    },
}

/// A writer schema with its named types, and the schemas it references (the registry's
/// schema references: named types defined in other subjects).
struct WriterSchema {
    schema: Schema,
    referenced: Vec<Schema>,
    names: HashMap<Name, Schema>,
    /// A decoder with the names resolved once (a schema without references): apache-avro's
    /// `from_avro_datum` resolves them for every datum.
    resolved: Option<GenericSingleObjectReader>,
}

impl std::fmt::Debug for WriterSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterSchema").field("schema", &self.schema).field("referenced", &self.referenced).finish()
    }
}

/// Bare datums: no single-object header before them.
struct NoHeader;

impl HeaderBuilder for NoHeader {
    fn build_header(&self) -> Vec<u8> {
        Vec::new()
    }
}

impl WriterSchema {
    fn parse(text: &str) -> Result<Self, AvroError> {
        Self::parse_with(text, &[])
    }

    /// The schema `text` whose named types may be defined in `references` (schema texts).
    fn parse_with(text: &str, references: &[&str]) -> Result<Self, AvroError> {
        let invalid = AvroError::InvalidSchema;
        let (schema, referenced) = if references.is_empty() {
            (Schema::parse_str(text).map_err(invalid)?, Vec::new())
        } else {
            Schema::parse_str_with_list(text, references).map_err(invalid)?
        };
        // Names resolve in order: the referenced schemas (each after those it references) first.
        let all: Vec<&Schema> = referenced.iter().chain(std::iter::once(&schema)).collect();
        let names = ResolvedSchema::try_from(all)
            .map_err(invalid)?
            .get_names()
            .iter()
            .map(|(n, s)| (n.clone(), (*s).clone()))
            .collect();
        let resolved = if referenced.is_empty() {
            Some(GenericSingleObjectReader::new_with_header_builder(schema.clone(), NoHeader).map_err(invalid)?)
        } else {
            None
        };
        let writer = Self { schema, referenced, names, resolved };
        writer.refuse_recursion(&writer.schema, &mut Vec::new(), &mut Default::default())?;
        Ok(writer)
    }

    /// Decoding a recursive type recurses as deep as the data nests: such schemas are refused.
    /// Each named type is walked once (`done`), however often it is referred to.
    fn refuse_recursion<'a>(
        &'a self,
        schema: &'a Schema,
        open: &mut Vec<&'a Name>,
        done: &mut std::collections::HashSet<&'a Name>,
    ) -> Result<(), AvroError> {
        match schema {
            Schema::Ref { name } => {
                if open.contains(&name) {
                    return Err(AvroError::Recursive { name: name.to_string() });
                }
                if done.contains(name) {
                    return Ok(());
                }
                match self.names.get(name) {
                    Some(s) => self.refuse_recursion(s, open, done),
                    None => Err(AvroError::UnknownSchemaType { name: name.to_string() }),
                }
            }
            Schema::Record(r) => {
                open.push(&r.name);
                let checked = r.fields.iter().try_for_each(|f| self.refuse_recursion(&f.schema, open, done));
                open.pop();
                done.insert(&r.name);
                checked
            }
            Schema::Array(a) => self.refuse_recursion(&a.items, open, done),
            Schema::Map(m) => self.refuse_recursion(&m.types, open, done),
            Schema::Union(u) => u.variants().iter().try_for_each(|v| self.refuse_recursion(v, open, done)),
            _ => Ok(()),
        }
    }
}

/// Where a record's writer schema comes from.
#[derive(Debug)]
enum Source {
    Inline(Arc<WriterSchema>),
    Registry { registry: Arc<dyn SchemaRegistry>, cache: SchemaCache<Arc<WriterSchema>> },
}

/// Decodes record values of one datasource.
#[derive(Debug)]
pub(super) struct AvroDecoder {
    source: Source,
    binary_as_string: bool,
}

impl AvroDecoder {
    /// A decoder with the writer schema `schema` (Avro JSON) for every record.
    pub fn inline(schema: &serde_json::Value, binary_as_string: bool) -> Result<Self, AvroError> {
        bound_allocations();
        let writer = WriterSchema::parse(&schema.to_string())?;
        Ok(Self { source: Source::Inline(Arc::new(writer)), binary_as_string })
    }

    /// A decoder reading the Confluent wire format, schemas from `registry` (at most
    /// `capacity` kept).
    pub fn registry(registry: Arc<dyn SchemaRegistry>, capacity: usize, binary_as_string: bool) -> Self {
        bound_allocations();
        Self { source: Source::Registry { registry, cache: SchemaCache::new(capacity) }, binary_as_string }
    }

    /// One value as JSON.
    pub fn decode(&mut self, bytes: &[u8]) -> Result<Json, DecodeError> {
        let (writer, value) = self.read(bytes)?;
        let convert = Convert { writer: &writer, binary_as_string: self.binary_as_string };
        convert.json(value, &writer.schema, 0).map_err(|e| DecodeError::Unparseable(e.to_string()))
    }

    /// One record's fields, in its schema's order.
    pub fn decode_fields(&mut self, bytes: &[u8]) -> Result<Vec<(String, Json)>, DecodeError> {
        let (writer, value) = self.read(bytes)?;
        let convert = Convert { writer: &writer, binary_as_string: self.binary_as_string };
        let fields = match (value, &writer.schema) {
            (Avro::Record(fields), Schema::Record(r)) => fields
                .into_iter()
                .zip(&r.fields)
                .map(|((name, v), f)| Ok((name, convert.json(v, &f.schema, 1)?)))
                .collect::<Result<_, AvroError>>(),
            (other, schema) => match convert.json(other, schema, 0) {
                Ok(Json::Object(fields)) => Ok(fields.into_iter().collect()),
                Ok(other) => Err(AvroError::NotRecord { value: other.to_string() }),
                Err(e) => Err(e),
            },
        };
        fields.map_err(|e| DecodeError::Unparseable(e.to_string()))
    }

    /// One datum and its writer schema.
    fn read(&mut self, bytes: &[u8]) -> Result<(Arc<WriterSchema>, Avro), DecodeError> {
        let (writer, mut datum) = match &mut self.source {
            Source::Inline(w) => (w.clone(), bytes),
            Source::Registry { registry, cache } => {
                let (id, datum) = frame(bytes)?;
                let writer = cache.get(id, || {
                    let (root, references) = with_references(registry.as_ref(), id, false, &|_| false)?;
                    let texts: Vec<&str> = references.iter().map(|(_, r)| r.schema.as_str()).collect();
                    WriterSchema::parse_with(&root.schema, &texts)
                        .map(Arc::new)
                        .map_err(|e| DecodeError::Unparseable(format!("schema {id}: {e}")))
                })?;
                (writer, datum)
            }
        };
        let value = if let Some(resolved) = &writer.resolved {
            resolved.read_value(&mut datum)
        } else {
            // The names of the referenced schemas, then the schema's own.
            let all = writer.referenced.iter().chain(std::iter::once(&writer.schema)).collect();
            apache_avro::from_avro_datum_schemata(&writer.schema, all, &mut datum, None)
        };
        let value = value.map_err(|e| DecodeError::Unparseable(format!("Avro datum does not decode: {e}")))?;
        if !datum.is_empty() {
            return Err(DecodeError::Unparseable(format!("{} bytes follow the Avro datum", datum.len())));
        }
        Ok((writer, value))
    }
}

/// No length read from a datum may exceed a whole record: a hostile length prefix (a string of
/// a terabyte, an array of billions of nulls) is an error, not an allocation or a long loop.
/// The limit is the process's (the first call sets it).
fn bound_allocations() {
    apache_avro::util::max_allocation_bytes(super::MAX_RECORD_BYTES);
}

struct Convert<'a> {
    writer: &'a WriterSchema,
    binary_as_string: bool,
}

impl Convert<'_> {
    fn json(&self, value: Avro, schema: &Schema, depth: usize) -> Result<Json, AvroError> {
        if depth > MAX_DEPTH {
            return Err(AvroError::TooDeep);
        }
        let schema = match schema {
            Schema::Ref { name } => {
                self.writer.names.get(name).ok_or_else(|| AvroError::UnknownType { name: name.to_string() })?
            }
            s => s,
        };
        let number = |f: f64| Number::from_f64(f).map_or(Json::Null, Json::Number);
        Ok(match value {
            Avro::Null => Json::Null,
            Avro::Boolean(b) => Json::Bool(b),
            Avro::Int(v) | Avro::Date(v) | Avro::TimeMillis(v) => Json::from(v),
            Avro::Long(v)
            | Avro::TimeMicros(v)
            | Avro::TimestampMillis(v)
            | Avro::TimestampMicros(v)
            | Avro::TimestampNanos(v)
            | Avro::LocalTimestampMillis(v)
            | Avro::LocalTimestampMicros(v)
            | Avro::LocalTimestampNanos(v) => Json::from(v),
            Avro::Float(v) => number(v as f64),
            Avro::Double(v) => number(v),
            Avro::Bytes(b) | Avro::Fixed(_, b) => self.binary(&b),
            Avro::String(s) | Avro::Enum(_, s) => Json::String(s),
            Avro::Uuid(u) => Json::String(u.to_string()),
            Avro::Union(i, v) => {
                let Schema::Union(u) = schema else { return Err(AvroError::WithoutSchema { kind: "union" }) };
                let branch = u.variants().get(i as usize).ok_or(AvroError::UnionBranch { branch: i })?;
                self.json(*v, branch, depth + 1)?
            }
            Avro::Array(items) => {
                let Schema::Array(a) = schema else { return Err(AvroError::WithoutSchema { kind: "array" }) };
                Json::Array(items.into_iter().map(|v| self.json(v, &a.items, depth + 1)).collect::<Result<_, _>>()?)
            }
            Avro::Map(entries) => {
                let Schema::Map(m) = schema else { return Err(AvroError::WithoutSchema { kind: "map" }) };
                let mut sorted: Vec<(String, Avro)> = entries.into_iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(&b.0));
                let mut out = Map::new();
                for (k, v) in sorted {
                    out.insert(k, self.json(v, &m.types, depth + 1)?);
                }
                Json::Object(out)
            }
            Avro::Record(fields) => {
                let Schema::Record(r) = schema else { return Err(AvroError::WithoutSchema { kind: "record" }) };
                let mut out = Map::new();
                for ((name, v), f) in fields.into_iter().zip(&r.fields) {
                    out.insert(name, self.json(v, &f.schema, depth + 1)?);
                }
                Json::Object(out)
            }
            Avro::Decimal(d) => {
                let Schema::Decimal(s) = schema else { return Err(AvroError::WithoutSchema { kind: "decimal" }) };
                let bytes = Vec::<u8>::try_from(&d).map_err(AvroError::Decimal)?;
                number(unscaled(&bytes)? / 10f64.powi(s.scale as i32))
            }
            Avro::BigDecimal(d) => d.to_string().parse::<f64>().map_or(Json::Null, number),
            Avro::Duration(d) => serde_json::json!({
                "months": u32::from(d.months()), "days": u32::from(d.days()), "millis": u32::from(d.millis())
            }),
        })
    }

    fn binary(&self, bytes: &[u8]) -> Json {
        if self.binary_as_string {
            Json::String(String::from_utf8_lossy(bytes).into_owned())
        } else {
            Json::String(base64::engine::general_purpose::STANDARD.encode(bytes))
        }
    }
}

/// A decimal's unscaled value: big-endian two's complement, up to 16 bytes.
fn unscaled(bytes: &[u8]) -> Result<f64, AvroError> {
    if bytes.len() > 16 {
        return Err(AvroError::DecimalWidth { bytes: bytes.len() });
    }
    let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
    let mut wide = [if negative { 0xff } else { 0 }; 16];
    wide[16 - bytes.len()..].copy_from_slice(bytes);
    Ok(i128::from_be_bytes(wide) as f64)
}
