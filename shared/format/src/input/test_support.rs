//! What the binary formats' tests share: a schema registry in memory (it counts its requests,
//! and `down` makes it unreachable), and a record's one row read back.

use super::confluent::{RegisteredSchema, RegistryError, SchemaAt, SchemaRegistry};
use super::{ParseError, Parsed, RecordParser};
use crate::row::DimValue;
use crate::spec::{load_spec_value, DatasourceSpec};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

#[derive(Debug, Default)]
pub(super) struct MemoryRegistry {
    /// Schemas by id.
    by_id: Mutex<Vec<(u32, RegisteredSchema)>>,
    /// Schemas by subject and version.
    versions: Mutex<Vec<(String, i64, RegisteredSchema)>>,
    pub requests: AtomicUsize,
    pub down: AtomicBool,
}

impl MemoryRegistry {
    /// Registers `schema` as `id`.
    pub fn add(&self, id: u32, schema: RegisteredSchema) {
        self.by_id.lock().expect("schemas").push((id, schema));
    }

    /// Registers `schema` as `subject`'s `version`.
    pub fn add_version(&self, subject: &str, version: i64, schema: RegisteredSchema) {
        self.versions.lock().expect("schemas").push((subject.into(), version, schema));
    }

    /// Registers the schema text `text` as `id`, without references.
    pub fn add_text(&self, id: u32, text: &str) {
        self.add(id, RegisteredSchema { schema: text.into(), references: Vec::new() });
    }

    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }
}

impl SchemaRegistry for MemoryRegistry {
    fn schema(&self, at: SchemaAt<'_>, _serialized: bool) -> Result<RegisteredSchema, RegistryError> {
        self.requests.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) {
            return Err(RegistryError::Unavailable("connection refused".into()));
        }
        let found = match at {
            SchemaAt::Id(id) => {
                self.by_id.lock().expect("schemas").iter().find(|(i, _)| *i == id).map(|(_, s)| s.clone())
            }
            SchemaAt::Version(subject, version) => self
                .versions
                .lock()
                .expect("schemas")
                .iter()
                .find(|(s, v, _)| s == subject && *v == version)
                .map(|(_, _, s)| s.clone()),
        };
        found.ok_or_else(|| RegistryError::Missing(format!("no {at} (404)")))
    }
}

/// Parses a record that holds one row.
pub(super) fn parse(p: &mut RecordParser, bytes: &[u8]) -> Result<Parsed, ParseError> {
    let mut out = Vec::new();
    p.parse_record(bytes, &mut out);
    assert_eq!(out.len(), 1, "one row per record: {out:?}");
    out.remove(0)
}

/// A parsed row's time and dimensions, by name.
pub(super) fn dims(p: &RecordParser, parsed: &Result<Parsed, ParseError>) -> (i64, Vec<(String, DimValue)>) {
    let Ok(Parsed::Row { row, errors }) = parsed else { panic!("expected a row, got {parsed:?}") };
    assert!(errors.is_empty(), "{errors:?}");
    (row.time, p.dimensions().iter().enumerate().map(|(i, d)| (d.name.clone(), row.dim(i).clone())).collect())
}

/// The time and dimensions of `bytes`' one row.
pub(super) fn row(p: &mut RecordParser, bytes: &[u8]) -> (i64, Vec<(String, DimValue)>) {
    let parsed = parse(p, bytes);
    dims(p, &parsed)
}

pub(super) fn s(v: &str) -> DimValue {
    DimValue::Str(v.into())
}

/// The reason of a read to be retried.
pub(super) fn retried(r: Result<Parsed, ParseError>) -> String {
    match r {
        Err(e) if e.retry => e.reason,
        other => panic!("expected a retry, got {other:?}"),
    }
}

/// The reason of an unparseable record.
pub(super) fn unparseable(r: Result<Parsed, ParseError>) -> String {
    match r {
        Err(e) if !e.retry => e.reason,
        other => panic!("expected an unparseable record, got {other:?}"),
    }
}

/// A rollup-free spec reading `format` (its input format), the time from `timestamp` (column
/// and format), the dimensions `dims`, and `added` summed.
pub(super) fn spec_with(
    format: serde_json::Value,
    timestamp: serde_json::Value,
    dims: serde_json::Value,
) -> DatasourceSpec {
    let spec = serde_json::json!({"type": "kafka", "spec": {
        "dataSchema": {"dataSource": "t", "timestampSpec": timestamp,
            "dimensionsSpec": {"dimensions": dims}, "metricsSpec": [{"type": "longSum", "name": "added", "fieldName": "added"}],
            "granularitySpec": {"segmentGranularity": "day", "queryGranularity": "none", "rollup": false}},
        "ioConfig": {"topic": "t", "inputFormat": format, "consumerProperties": {"bootstrap.servers": "x:9092"}}}});
    load_spec_value(spec).expect("spec").spec
}
