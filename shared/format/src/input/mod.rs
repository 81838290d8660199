//! Input parsing: record bytes -> fields (JSON with flattening, CSV/TSV) -> timestamp,
//! transforms and filter -> a [`Row`] whose dimensions and metric inputs are laid out for the
//! incremental index. Bad records give a [`ParseError`] with a reason, never a panic.

mod avro;
mod binary;
mod confluent;
mod delimited;
pub mod flatten;
mod json_fields;
mod kafka;
mod protobuf;
mod values;

use crate::expr::{self, Expr};
use crate::filter::RowFilter;
use crate::row::{DimValue, Row, Spare};
use crate::spec::{AggregatorSpec, DatasourceSpec, DimensionType, InputFormat, MultiValueHandling};
use crate::timestamp::{TimestampError, TimestampFormat};
use crate::value::Value;
pub use avro::AvroError;
use binary::BinaryDecoder;
pub use binary::{BinaryFormatError, FormatSources};
use confluent::DecodeError;
pub use confluent::{RegisteredSchema, RegistryError, SchemaAt, SchemaReference, SchemaRegistry, MAX_SCHEMA_BYTES};
use delimited::DelimitedDecoder;
pub use delimited::DelimitedError;
use flatten::{FlattenError, Flattener};
use kafka::KafkaInput;
pub use kafka::{KafkaMeta, KeyFormatError};
pub use protobuf::ProtobufError;
use std::collections::HashSet;
use std::sync::Arc;
use values::{dim_value, metric_value};

/// Largest record accepted, in bytes; larger records are unparseable.
pub const MAX_RECORD_BYTES: usize = 8 << 20;
pub use crate::value::MAX_VALUE_BYTES;
/// Earliest row time accepted: 0000-01-01T00:00:00Z.
pub const MIN_TIME: i64 = -62_167_219_200_000;
/// Latest row time accepted: 9999-12-31T23:59:59.999Z.
pub const MAX_TIME: i64 = 253_402_300_799_999;

/// Why a record (or a row within it) could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct ParseError {
    /// What is wrong, naming the field when there is one.
    pub reason: String,
    /// The record could not be parsed now (its Avro schema unavailable from the registry),
    /// not because of what it holds: the read fails and is retried, the record is not counted.
    pub retry: bool,
}

impl ParseError {
    fn new(reason: impl Into<String>) -> Self {
        Self { reason: reason.into(), retry: false }
    }
}

/// Why a [`RecordParser`] could not be built for a spec, naming the part of the spec at fault.
#[derive(Debug, thiserror::Error)]
pub enum RecordParserError {
    /// `timestampSpec.format` is not a format.
    #[error(transparent)]
    Timestamp(#[from] TimestampError),
    /// `timestampSpec.missingValue` is neither a number nor a time text.
    #[error("timestampSpec.missingValue {value} is not an instant")]
    MissingValue {
        /// The value, as JSON.
        value: String,
    },
    /// `timestampSpec.missingValue` is a text that is not a time.
    #[error(transparent)]
    MissingTime(#[from] crate::time::TimeError),
    /// A metric's or transform's expression.
    #[error(transparent)]
    Expr(#[from] crate::expr::ExprError),
    /// The transform's filter.
    #[error(transparent)]
    Filter(#[from] crate::filter::FilterError),
    /// The format's `flattenSpec`.
    #[error(transparent)]
    Flatten(#[from] FlattenError),
    /// A CSV or TSV format's settings.
    #[error(transparent)]
    Delimited(#[from] DelimitedError),
    /// An Avro or Protobuf format's decoder.
    #[error(transparent)]
    Binary(#[from] BinaryFormatError),
    /// The `kafka` format's `keyFormat`.
    #[error(transparent)]
    KeyFormat(#[from] KeyFormatError),
    /// A `kafka` format as the value's format.
    #[error("nested kafka inputFormat")]
    NestedKafka,
    /// A format taken for a binary one that is not.
    #[error("not a binary inputFormat")]
    NotBinary,
}

/// The outcome of one row of a record.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// A row to index; `errors` lists fields that could not be converted (the row is kept
    /// with those fields null, counted as "processed with error").
    Row {
        /// The row.
        row: Row,
        /// Conversion errors, by field.
        errors: Vec<String>,
    },
    /// Dropped by the `transformSpec` filter.
    Filtered,
    /// A header row or a skipped row of a delimited format.
    Skipped,
}

/// A dimension as the parser lays it out.
#[derive(Debug, Clone, PartialEq)]
pub struct DimPlan {
    /// Dimension name.
    pub name: String,
    /// Dimension type.
    pub kind: DimensionType,
    /// Multi-value ordering.
    pub multi_value_handling: MultiValueHandling,
    /// Whether it was discovered rather than declared.
    pub discovered: bool,
    /// Whether segments keep a bitmap per value (`createBitmapIndex`, strings only).
    pub bitmap_index: bool,
    slot: usize,
}

impl DimPlan {
    /// A declared dimension outside any parser (rows re-indexed from segments).
    pub fn declared(name: &str, kind: DimensionType, multi_value_handling: MultiValueHandling) -> Self {
        DimPlan {
            name: name.into(),
            kind,
            multi_value_handling,
            discovered: false,
            bitmap_index: true,
            slot: usize::MAX,
        }
    }
}

#[derive(Debug, Clone)]
enum MetricInput {
    None,
    Slot(usize),
    Expr(Expr),
}

#[derive(Debug, Clone, Copy)]
enum Target {
    Slot(usize),
    Time,
}

#[derive(Debug)]
enum Decoder {
    Json(Option<Flattener>),
    Delimited(DelimitedDecoder),
    Binary(BinaryDecoder, Option<Flattener>),
}

/// What a parser reads schemas from beside the spec, for the record value's format and the
/// `kafka` format's `keyFormat`.
#[derive(Debug, Clone, Default)]
pub struct SchemaSources {
    /// The value format's.
    pub value: FormatSources,
    /// The key format's.
    pub key: FormatSources,
}

/// Parses records of one datasource into rows.
#[derive(Debug)]
pub struct RecordParser {
    names: Vec<String>,
    slots: hashbrown::HashMap<String, usize, foldhash::fast::FixedState>,
    ts_slot: usize,
    ts_format: TimestampFormat,
    missing_ts: Option<i64>,
    decoder: Decoder,
    dims: Vec<DimPlan>,
    discover: bool,
    /// `useSchemaDiscovery`: discovered fields become `auto` dimensions.
    schema_discovery: bool,
    /// Slots of `json` and `auto` dimensions: their values are read as documents.
    json_slots: HashSet<usize>,
    not_dimensions: HashSet<String>,
    metrics: Vec<(MetricInput, crate::spec::MetricKind, String)>,
    transforms: Vec<(Target, Expr)>,
    filter: Option<RowFilter>,
    scratch: Vec<Value>,
    /// Emptied strings that JSON string values are read into instead of new allocations.
    pool: Vec<String>,
    /// Emptied rows' vectors that rows are built in instead of new allocations.
    row_pool: Vec<(Vec<DimValue>, Vec<Value>)>,
    /// The `kafka` format's columns beside the value's.
    kafka: Option<KafkaInput>,
    /// The current record's Kafka columns (slot, value): the first of a slot wins, and a
    /// field of the value wins over them.
    meta: Vec<(usize, Value)>,
}

/// Strings kept for reuse at most, and the largest capacity kept: a few hundred KiB.
const POOL_STRINGS: usize = 1_024;
const POOL_STRING_BYTES: usize = 256;
/// Emptied row vectors the parser keeps for the next rows.
const POOL_ROWS: usize = 16;

impl RecordParser {
    /// Builds a parser for a resolved spec; the error names the part of the spec at fault. A
    /// spec reading schemas from a registry or a descriptor file needs
    /// [`RecordParser::with_sources`].
    pub fn new(spec: &DatasourceSpec) -> Result<Self, RecordParserError> {
        Self::with_sources(spec, SchemaSources::default())
    }

    /// Checks that `spec` makes a parser (its formats, flattening, transforms and filter), as a
    /// submission does, with the descriptor sets of `sources`; no schema registry is asked.
    pub fn check(spec: &DatasourceSpec, mut sources: SchemaSources) -> Result<(), RecordParserError> {
        #[derive(Debug)]
        struct NotAsked;
        impl SchemaRegistry for NotAsked {
            fn schema(&self, _: SchemaAt<'_>, _: bool) -> Result<RegisteredSchema, RegistryError> {
                Err(RegistryError::Unavailable("no registry is asked when a spec is checked".into()))
            }
        }
        for format in [&mut sources.value, &mut sources.key] {
            format.registry = Some(Arc::new(NotAsked));
        }
        Self::with_sources(spec, sources).map(drop)
    }

    /// Builds a parser whose writer schemas (of the value, and of the key) come from
    /// `registry` (the spec's `schema_registry` decoders).
    pub fn with_registry(
        spec: &DatasourceSpec,
        registry: Option<Arc<dyn SchemaRegistry>>,
    ) -> Result<Self, RecordParserError> {
        let sources = FormatSources { registry, descriptor_set: None };
        Self::with_sources(spec, SchemaSources { value: sources.clone(), key: sources })
    }

    /// Builds a parser whose schemas come from `sources`.
    pub fn with_sources(spec: &DatasourceSpec, sources: SchemaSources) -> Result<Self, RecordParserError> {
        let mut p = RecordParser {
            names: Vec::new(),
            slots: hashbrown::HashMap::default(),
            ts_slot: 0,
            ts_format: TimestampFormat::parse(&spec.timestamp.format)?,
            missing_ts: match &spec.timestamp.missing_value {
                None => None,
                Some(serde_json::Value::Number(n)) => n.as_i64(),
                Some(serde_json::Value::String(s)) => Some(crate::time::parse_iso_instant(s)?),
                Some(other) => return Err(RecordParserError::MissingValue { value: other.to_string() }),
            },
            decoder: Decoder::Json(None),
            dims: Vec::new(),
            discover: spec.discover_dimensions,
            schema_discovery: spec.schema_discovery,
            json_slots: HashSet::new(),
            not_dimensions: HashSet::new(),
            metrics: Vec::new(),
            transforms: Vec::new(),
            filter: None,
            scratch: Vec::new(),
            pool: Vec::new(),
            row_pool: Vec::new(),
            kafka: spec.input_format.kafka_columns().map(|c| KafkaInput::new(c, &sources.key)).transpose()?,
            meta: Vec::new(),
        };
        p.ts_slot = p.slot(&spec.timestamp.column);
        p.not_dimensions.insert(spec.timestamp.column.clone());
        p.not_dimensions.insert("__time".to_string());
        p.not_dimensions.extend(spec.dimension_exclusions.iter().cloned());
        for d in &spec.dimensions {
            let slot = p.slot(&d.name);
            if matches!(d.kind, DimensionType::Json | DimensionType::Auto) {
                p.json_slots.insert(slot);
            }
            p.dims.push(DimPlan {
                name: d.name.clone(),
                kind: d.kind,
                multi_value_handling: d.multi_value_handling,
                discovered: false,
                bitmap_index: d.create_bitmap_index != Some(false),
                slot,
            });
        }
        for agg in &spec.metrics {
            // A metric's name is no dimension to discover, as in Druid.
            p.not_dimensions.insert(agg.name().to_string());
            let input = match (agg, agg.field_name()) {
                (AggregatorSpec::Count { .. }, _) => MetricInput::None,
                (_, Some(field)) => {
                    p.not_dimensions.insert(field.to_string());
                    MetricInput::Slot(p.slot(field))
                }
                (
                    AggregatorSpec::LongSum(a)
                    | AggregatorSpec::DoubleSum(a)
                    | AggregatorSpec::FloatSum(a)
                    | AggregatorSpec::LongMin(a)
                    | AggregatorSpec::LongMax(a)
                    | AggregatorSpec::DoubleMin(a)
                    | AggregatorSpec::DoubleMax(a)
                    | AggregatorSpec::FloatMin(a)
                    | AggregatorSpec::FloatMax(a),
                    None,
                ) => {
                    let text = a.expression.clone().unwrap_or_default();
                    MetricInput::Expr(expr::parse(&text, &mut |name| p.slot(name))?)
                }
                (_, None) => MetricInput::None,
            };
            p.metrics.push((input, agg.metric_kind(), agg.name().to_string()));
        }
        for t in &spec.transform.transforms {
            let e = expr::parse(&t.expression, &mut |name| p.slot(name))?;
            let target = if t.name == "__time" { Target::Time } else { Target::Slot(p.slot(&t.name)) };
            if let Target::Slot(slot) = target {
                if p.discover && !p.not_dimensions.contains(&t.name) && !p.dims.iter().any(|d| d.name == t.name) {
                    p.dims.push(DimPlan {
                        name: t.name.clone(),
                        kind: DimensionType::String,
                        multi_value_handling: MultiValueHandling::SortedArray,
                        discovered: true,
                        bitmap_index: true,
                        slot,
                    });
                }
            }
            p.transforms.push((target, e));
        }
        if let Some(f) = &spec.transform.filter {
            p.filter = Some(f.compile(&mut |name| p.slot(name))?);
        }
        p.decoder = match spec.input_format.value_format() {
            InputFormat::Json { flatten_spec, .. } => {
                Decoder::Json(flatten_spec.as_ref().map(Flattener::new).transpose()?)
            }
            InputFormat::Csv(d) => Decoder::Delimited(DelimitedDecoder::new(d, b',')?),
            InputFormat::Tsv(d) => Decoder::Delimited(DelimitedDecoder::new(d, b'\t')?),
            InputFormat::Kafka { .. } => return Err(RecordParserError::NestedKafka),
            format @ (InputFormat::AvroStream { flatten_spec, .. } | InputFormat::Protobuf { flatten_spec, .. }) => {
                let flattener = flatten_spec.as_ref().map(Flattener::new).transpose()?;
                match BinaryDecoder::for_format(format, &sources.value, "ioConfig.inputFormat")? {
                    Some(decoder) => Decoder::Binary(decoder, flattener),
                    None => return Err(RecordParserError::NotBinary),
                }
            }
        };
        Ok(p)
    }

    /// Takes strings and row vectors back from rows indexed (emptied here) to read later
    /// records into.
    pub fn recycle(&mut self, spare: &mut Spare) {
        for mut s in spare.strings.drain(..) {
            if self.pool.len() >= POOL_STRINGS {
                break;
            }
            if s.capacity() <= POOL_STRING_BYTES {
                s.clear();
                self.pool.push(s);
            }
        }
        for (mut dims, mut metrics) in spare.rows.drain(..) {
            if self.row_pool.len() >= POOL_ROWS {
                break;
            }
            dims.clear();
            metrics.clear();
            self.row_pool.push((dims, metrics));
        }
    }

    /// The dimensions as laid out in rows so far (discovered ones are appended as seen).
    pub fn dimensions(&self) -> &[DimPlan] {
        &self.dims
    }

    fn slot(&mut self, name: &str) -> usize {
        if let Some(&s) = self.slots.get(name) {
            return s;
        }
        let s = self.names.len();
        self.names.push(name.to_string());
        self.slots.insert(name.to_string(), s);
        s
    }

    /// A slot for a field found in the input; in discovery mode a new field becomes a dimension.
    fn input_slot(&mut self, name: &str) -> usize {
        self.discovered_slot(name, DimensionType::String)
    }

    /// [`input_slot`](Self::input_slot), a new dimension of type `kind`.
    fn discovered_slot(&mut self, name: &str, kind: DimensionType) -> usize {
        if let Some(&s) = self.slots.get(name) {
            return s;
        }
        let s = self.slot(name);
        // Path columns are named with the separator: no field may take such a name.
        if self.discover && !self.not_dimensions.contains(name) && !name.contains(crate::json_path::NESTED_SEPARATOR) {
            if matches!(kind, DimensionType::Json | DimensionType::Auto) {
                self.json_slots.insert(s);
            }
            self.dims.push(DimPlan {
                name: name.to_string(),
                kind,
                // Discovered arrays keep their order, as Druid's auto columns do.
                multi_value_handling: if kind == DimensionType::Auto {
                    MultiValueHandling::Array
                } else {
                    MultiValueHandling::SortedArray
                },
                discovered: true,
                bitmap_index: true,
                slot: s,
            });
        }
        s
    }

    /// Whether the spec's `kafka` format reads a record's timestamp, topic, key or headers:
    /// then records go through [`RecordParser::parse_kafka_record`].
    pub fn reads_kafka_columns(&self) -> bool {
        self.kafka.is_some()
    }

    /// Whether the `kafka` format reads headers (`headerFormat`): otherwise a record's headers
    /// need not be collected for [`RecordParser::parse_kafka_record`].
    pub fn reads_kafka_headers(&self) -> bool {
        self.kafka.as_ref().is_some_and(|k| k.columns.headers.is_some())
    }

    /// Parses one record (which may hold several rows) and appends an outcome per row.
    pub fn parse_record(&mut self, bytes: &[u8], out: &mut Vec<Result<Parsed, ParseError>>) {
        self.meta.clear();
        self.parse_value(bytes, out);
    }

    /// Parses one record's value as [`RecordParser::parse_record`] does, each row with the
    /// `kafka` format's columns from `meta` (Druid's `kafka` input format). A key that does
    /// not parse makes the record unparseable.
    pub fn parse_kafka_record(
        &mut self,
        value: &[u8],
        meta: &KafkaMeta<'_>,
        out: &mut Vec<Result<Parsed, ParseError>>,
    ) {
        self.meta.clear();
        if let Some(mut kafka) = self.kafka.take() {
            let columns = self.kafka_columns(&mut kafka, meta);
            self.kafka = Some(kafka);
            if let Err(e) = columns {
                out.push(Err(e));
                return;
            }
        }
        self.parse_value(value, out);
        self.meta.clear();
    }

    /// Fills `meta` for one record: headers (the last of a name wins, as in Druid's map), then
    /// the timestamp, topic and key unless a header took their name.
    fn kafka_columns(&mut self, kafka: &mut KafkaInput, meta: &KafkaMeta<'_>) -> Result<(), ParseError> {
        // `kafka` is out of `self` for the call: its settings are borrowed, not copied, per record.
        if let Some((prefix, encoding)) = &kafka.columns.headers {
            for (name, value) in meta.headers.iter().rev() {
                if let Some(bytes) = value {
                    let slot = self.input_slot(&format!("{prefix}{name}"));
                    self.meta.push((slot, Value::String(encoding.decode(bytes))));
                }
            }
        }
        if let Some(ts) = meta.timestamp {
            let slot = self.input_slot(&kafka.columns.timestamp);
            self.meta.push((slot, Value::Long(ts)));
        }
        // Kafka names no topic "": a record read from a file has none.
        if !meta.topic.is_empty() {
            let slot = self.input_slot(&kafka.columns.topic);
            self.meta.push((slot, Value::String(meta.topic.to_string())));
        }
        if let Some(key) = meta.key {
            if let (Some(v), Some((name, _))) = (kafka.key_value(key)?, &kafka.columns.key) {
                let slot = self.input_slot(name);
                self.meta.push((slot, v));
            }
        }
        Ok(())
    }

    fn parse_value(&mut self, bytes: &[u8], out: &mut Vec<Result<Parsed, ParseError>>) {
        if bytes.len() > MAX_RECORD_BYTES {
            out.push(Err(ParseError::new(format!(
                "record of {} bytes exceeds the {} byte limit",
                bytes.len(),
                MAX_RECORD_BYTES
            ))));
            return;
        }
        if let Decoder::Binary(decoder, _) = &mut self.decoder {
            let decoded = decoder.decode_fields(bytes);
            let row = match decoded {
                Ok(fields) => self.binary_row(fields),
                Err(DecodeError::Unparseable(reason)) => Err(ParseError::new(reason)),
                Err(DecodeError::Unavailable(reason)) => Err(ParseError { reason, retry: true }),
            };
            out.push(row);
            return;
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            out.push(Err(ParseError::new("empty record")));
            return;
        }
        // Records are mostly ASCII: the SIMD check is several times faster than the standard
        // one, which then names the first bad byte.
        let text = match simdutf8::basic::from_utf8(bytes).or_else(|_| std::str::from_utf8(bytes)) {
            Ok(t) => t,
            Err(e) => {
                out.push(Err(ParseError::new(format!("record is not valid UTF-8 (byte {})", e.valid_up_to()))));
                return;
            }
        };
        if matches!(self.decoder, Decoder::Json(None)) && self.json_fields(text, out) {
            return;
        }
        match &mut self.decoder {
            Decoder::Json(_) => {
                let mut stream = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
                loop {
                    match stream.next() {
                        None => break,
                        Some(Ok(serde_json::Value::Object(obj))) => {
                            let r = self.json_row(obj);
                            out.push(r);
                        }
                        Some(Ok(other)) => out
                            .push(Err(ParseError::new(format!("expected a JSON object, found {}", json_kind(&other))))),
                        Some(Err(e)) => {
                            out.push(Err(ParseError::new(format!("malformed JSON: {e}"))));
                            break;
                        }
                    }
                }
            }
            Decoder::Delimited(_) => {
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    let r = self.delimited_row(line);
                    out.push(r);
                }
            }
            // Decoded above, before any text check.
            Decoder::Binary(..) => {}
        }
    }

    /// The fast path for one JSON object without a flattenSpec; returns false, having pushed
    /// nothing, when the record holds more than one value (the whole-tree path reads those).
    fn json_fields(&mut self, text: &str, out: &mut Vec<Result<Parsed, ParseError>>) -> bool {
        use serde::de::DeserializeSeed;
        self.reset_scratch();
        let mut de = serde_json::Deserializer::from_str(text);
        match (json_fields::ObjectSeed { parser: self }).deserialize(&mut de) {
            Ok(()) => {
                if de.end().is_err() {
                    return false;
                }
                let row = self.finish_row();
                out.push(row);
            }
            Err(e) if e.is_data() => out.push(Err(ParseError::new(e.to_string()))),
            Err(e) => out.push(Err(ParseError::new(format!("malformed JSON: {e}")))),
        }
        true
    }

    fn reset_scratch(&mut self) {
        self.scratch.clear();
        self.scratch.resize(self.names.len(), Value::Null);
    }

    fn set(&mut self, slot: usize, v: Value) {
        if self.scratch.len() <= slot {
            self.scratch.resize(slot + 1, Value::Null);
        }
        self.scratch[slot] = v;
    }

    fn json_row(&mut self, obj: serde_json::Map<String, serde_json::Value>) -> Result<Parsed, ParseError> {
        let fields = match &self.decoder {
            Decoder::Json(Some(f)) | Decoder::Binary(_, Some(f)) => f.flatten(&obj),
            _ => obj.into_iter().collect(),
        };
        self.fields_row(fields)
    }

    /// A binary value's row: its fields as they are, or through the flattenSpec as an object.
    fn binary_row(&mut self, fields: Vec<(String, serde_json::Value)>) -> Result<Parsed, ParseError> {
        match &self.decoder {
            Decoder::Binary(_, Some(_)) => self.json_row(fields.into_iter().collect()),
            _ => self.fields_row(fields),
        }
    }

    fn fields_row(&mut self, fields: Vec<(String, serde_json::Value)>) -> Result<Parsed, ParseError> {
        self.reset_scratch();
        for (k, v) in fields {
            let slot = match self.slots.get(&k) {
                Some(&s) => s,
                None if self.schema_discovery => self.discovered_slot(&k, DimensionType::Auto),
                None => self.input_slot(&k),
            };
            let v = if self.json_slots.contains(&slot) { Value::json(v) } else { Value::from_json(v) };
            self.set(slot, v);
        }
        self.finish_row()
    }

    fn delimited_row(&mut self, line: &str) -> Result<Parsed, ParseError> {
        let Decoder::Delimited(d) = &mut self.decoder else {
            return Err(ParseError::new("not a delimited format"));
        };
        let Some(values) = d.decode(line)? else {
            return Ok(Parsed::Skipped);
        };
        let columns = d.columns().to_vec();
        self.reset_scratch();
        for (name, v) in columns.iter().zip(values) {
            let slot = self.input_slot(name);
            self.set(slot, v);
        }
        self.finish_row()
    }

    fn finish_row(&mut self) -> Result<Parsed, ParseError> {
        for i in 0..self.meta.len() {
            let slot = self.meta[i].0;
            if self.scratch.get(slot).is_none_or(Value::is_null) {
                let v = self.meta[i].1.clone();
                self.set(slot, v);
            }
        }
        let mut time = match self.scratch.get(self.ts_slot).filter(|v| !v.is_null()) {
            Some(ts) => self.ts_format.read(ts).map_err(|e| ParseError::new(e.to_string()))?,
            None => match self.missing_ts {
                Some(t) => t,
                None => return Err(ParseError::new(format!("missing timestamp field {:?}", self.names[self.ts_slot]))),
            },
        };
        if !self.transforms.is_empty() {
            let results: Vec<(Target, Value)> =
                self.transforms.iter().map(|(t, e)| (*t, expr::eval(e, &self.scratch, time))).collect();
            for (target, v) in results {
                match target {
                    Target::Slot(s) => self.set(s, v),
                    Target::Time => {
                        time = v
                            .as_long()
                            .ok_or_else(|| ParseError::new(format!("transform of __time gave {v}, not a timestamp")))?
                    }
                }
            }
        }
        if !(MIN_TIME..=MAX_TIME).contains(&time) {
            return Err(ParseError::new(format!(
                "timestamp {time} ms is outside every time chunk Sluice can hold (years 0000 to 9999)"
            )));
        }
        if let Some(f) = &self.filter {
            if !f.matches(&self.scratch, time) {
                return Ok(Parsed::Filtered);
            }
        }
        let mut errors = Vec::new();
        // Metrics first: they read the slots; dimensions then take their values out of them.
        let (mut dims, mut metrics) = self.row_pool.pop().unwrap_or_default();
        metrics.reserve(self.metrics.len());
        for (input, kind, name) in &self.metrics {
            let raw = match input {
                MetricInput::None => Value::Null,
                MetricInput::Slot(s) => self.scratch.get(*s).cloned().unwrap_or(Value::Null),
                MetricInput::Expr(e) => expr::eval(e, &self.scratch, time),
            };
            metrics.push(metric_value(name, *kind, raw, &mut errors)?);
        }
        dims.reserve(self.dims.len());
        for d in &self.dims {
            let v = self.scratch.get_mut(d.slot).map(std::mem::take).unwrap_or(Value::Null);
            // Most values are strings of string dimensions: moved straight into the row.
            match v {
                Value::String(s) if d.kind == DimensionType::String && s.len() <= MAX_VALUE_BYTES => {
                    dims.push(DimValue::Str(s))
                }
                Value::Null => dims.push(DimValue::Null),
                v => dims.push(dim_value(d, v, &mut errors)?),
            }
        }
        Ok(Parsed::Row { row: Row { time, dims, metrics }, errors })
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod avro_tests;
#[cfg(test)]
mod kafka_tests;
#[cfg(test)]
mod protobuf_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
