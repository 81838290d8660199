//! Records to rows to incremental indexes: the synchronous heart of the indexing task. Each
//! record is parsed with the spec, each row checked against the message-time window and added
//! to the incremental index of its time chunk, and every outcome counted in the row meters.
//! The ingester says when the indexes must be persisted (`maxRowsInMemory`,
//! `maxBytesInMemory`, `intermediatePersistPeriod`, and [`MAX_CHUNKS_IN_MEMORY`] time chunks)
//! and hands them over to be persisted.

use super::{MessageWindow, RowMeters, TooManyParseExceptions};
use crate::schemas::DescriptorDir;
use sluice_format::index::{IncrementalIndex, IndexConfig};
use sluice_format::input::{KafkaMeta, ParseError, Parsed, RecordParser, SchemaSources};
use sluice_format::row::Spare;
use sluice_format::spec::{DatasourceSpec, TuningSettings};
use sluice_kafka::{Flow, Record};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How often (in rows) the memory estimate and the persist period are checked.
const CHECK_EVERY: u64 = 64;

/// Time chunks held in memory at most: a persist makes one hydrant per chunk, and one
/// checkpoint lists them, so records spread over many chunks (a poison batch of far-apart
/// timestamps) are persisted every this many chunks and every checkpoint stays a few items.
pub const MAX_CHUNKS_IN_MEMORY: usize = 1_000;

/// Why a record stopped ingestion.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Stopped {
    /// Past `maxParseExceptions`: the task fails.
    #[error(transparent)]
    Fatal(TooManyParseExceptions),
    /// It cannot be parsed now (its schema unavailable): the read is retried.
    #[error(transparent)]
    Retry(ParseError),
}

impl From<TooManyParseExceptions> for Stopped {
    fn from(e: TooManyParseExceptions) -> Self {
        Stopped::Fatal(e)
    }
}

/// The indexes of one task between persists, and its meters.
#[derive(Debug)]
pub struct Ingester {
    parser: RecordParser,
    config: IndexConfig,
    window: MessageWindow,
    max_rows: u64,
    max_bytes: Option<u64>,
    persist_period: Option<Duration>,
    indexes: BTreeMap<i64, IncrementalIndex>,
    num_rows: u64,
    since_check: u64,
    last_persist: Instant,
    out: Vec<Result<Parsed, ParseError>>,
    /// Strings and vectors of rows indexed, handed back to the parser.
    spare: Spare,
    /// The task's row meters.
    pub meters: RowMeters,
    /// The error that stopped ingestion, if any.
    pub fatal: Option<TooManyParseExceptions>,
}

/// Why an ingester cannot be built for a spec.
#[derive(Debug, thiserror::Error)]
pub enum IngesterError {
    /// The schemas its formats read from cannot be had.
    #[error(transparent)]
    Schemas(#[from] crate::schemas::SchemaError),
    /// Its records cannot be parsed as the spec says.
    #[error(transparent)]
    Parser(#[from] sluice_format::input::RecordParserError),
}

impl Ingester {
    /// An ingester for `spec`, throwing away rows outside `window`, going on from `meters`; its
    /// Protobuf `file` decoders read their descriptor sets from `descriptors` (blocking: on the
    /// async threads, read them with [`crate::schemas::schema_sources`] and call
    /// [`Ingester::with_sources`]).
    pub fn new(
        spec: &DatasourceSpec,
        descriptors: &DescriptorDir,
        window: MessageWindow,
        meters: RowMeters,
    ) -> Result<Self, IngesterError> {
        let sources = crate::schemas::read_schema_sources(spec, descriptors)?;
        Self::with_sources(spec, sources, window, meters)
    }

    /// An ingester for `spec` whose formats read their schemas from `sources` (see
    /// [`crate::schemas::schema_sources`]), throwing away rows outside `window`, going on from `meters`.
    pub fn with_sources(
        spec: &DatasourceSpec,
        sources: SchemaSources,
        window: MessageWindow,
        meters: RowMeters,
    ) -> Result<Self, IngesterError> {
        let t: &TuningSettings = &spec.tuning;
        Ok(Self {
            parser: RecordParser::with_sources(spec, sources)?,
            config: IndexConfig::from_spec(spec),
            window,
            max_rows: t.max_rows_in_memory.max(1),
            max_bytes: t.max_bytes_in_memory,
            persist_period: t.intermediate_persist_period.fixed_millis().map(|ms| Duration::from_millis(ms as u64)),
            indexes: BTreeMap::new(),
            num_rows: 0,
            since_check: 0,
            last_persist: Instant::now(),
            out: Vec::new(),
            spare: Spare::default(),
            meters,
            fatal: None,
        })
    }

    /// Rows held in memory (after rollup).
    pub fn num_rows(&self) -> u64 {
        self.num_rows
    }

    /// Estimated bytes held by the indexes.
    pub fn estimated_bytes(&self) -> u64 {
        self.indexes.values().map(|i| i.estimated_bytes() as u64).sum()
    }

    /// Ingests one record; pauses when the indexes must be persisted, and fails (recording
    /// the error in `fatal`) past `maxParseExceptions`.
    /// A record that cannot be parsed now (its Avro schema unavailable) fails the read
    /// without `fatal`: the attempt is retried from its last checkpoint, the record uncounted.
    pub fn ingest(&mut self, record: Record<'_>) -> Result<Flow, Stopped> {
        match self.ingest_record(record) {
            Ok(()) => Ok(if self.must_persist() { Flow::Pause } else { Flow::Continue }),
            Err(Stopped::Fatal(e)) => {
                self.fatal = Some(e.clone());
                Err(Stopped::Fatal(e))
            }
            Err(retry) => Err(retry),
        }
    }

    fn ingest_record(&mut self, record: Record<'_>) -> Result<(), Stopped> {
        let (p, o) = (record.partition, record.offset);
        let Some(payload) = record.payload else {
            return Ok(self.meters.unparseable(p, o, "record has no value (tombstone)".into())?);
        };
        let mut bytes = payload.len();
        // The buffer is lent out for the loop and put back, so records reuse its allocation.
        let mut out = std::mem::take(&mut self.out);
        if self.parser.reads_kafka_columns() {
            let headers = if self.parser.reads_kafka_headers() { record.header_pairs() } else { Vec::new() };
            let meta =
                KafkaMeta { topic: record.topic(), timestamp: record.timestamp, key: record.key, headers: &headers };
            self.parser.parse_kafka_record(payload, &meta, &mut out);
        } else {
            self.parser.parse_record(payload, &mut out);
        }
        for outcome in out.drain(..) {
            match outcome {
                Ok(Parsed::Row { row, errors }) => {
                    if !self.window.accepts(row.time) {
                        self.meters.thrown_away();
                        continue;
                    }
                    let chunk = self.config.segment_granularity.bucket(row.time);
                    let config = &self.config;
                    let index =
                        self.indexes.entry(chunk.start).or_insert_with(|| IncrementalIndex::new(config.clone(), chunk));
                    let before = index.num_rows();
                    index.add_recycling(row, self.parser.dimensions(), &mut self.spare);
                    self.num_rows += (index.num_rows() - before) as u64;
                    self.meters.processed(bytes, p, o, &errors)?;
                    bytes = 0;
                }
                Ok(Parsed::Filtered) => self.meters.thrown_away(),
                Ok(Parsed::Skipped) => {}
                // The buffer goes with the failed read: the next record allocates another.
                Err(e) if e.retry => return Err(Stopped::Retry(e)),
                Err(e) => self.meters.unparseable(p, o, e.reason)?,
            }
        }
        self.out = out;
        self.parser.recycle(&mut self.spare);
        Ok(())
    }

    /// Whether the indexes must be persisted now.
    pub fn must_persist(&mut self) -> bool {
        if self.num_rows == 0 {
            return false;
        }
        if self.num_rows >= self.max_rows || self.indexes.len() >= MAX_CHUNKS_IN_MEMORY {
            return true;
        }
        self.since_check += 1;
        if self.since_check < CHECK_EVERY {
            return false;
        }
        self.since_check = 0;
        self.persist_period.is_some_and(|p| self.last_persist.elapsed() >= p)
            || self.max_bytes.is_some_and(|max| self.estimated_bytes() >= max)
    }

    /// Hands over the indexes holding rows, oldest time chunk first, and starts anew.
    pub fn take_indexes(&mut self) -> Vec<IncrementalIndex> {
        self.num_rows = 0;
        self.since_check = 0;
        self.last_persist = Instant::now();
        std::mem::take(&mut self.indexes).into_values().filter(|i| !i.is_empty()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_format::spec::load_spec_value;

    fn spec(tuning: serde_json::Value) -> DatasourceSpec {
        let spec = serde_json::json!({"type": "kafka", "spec": {
            "dataSchema": {"dataSource": "d", "timestampSpec": {"column": "ts", "format": "millis"},
                "dimensionsSpec": {"dimensions": ["page"]},
                "metricsSpec": [{"type": "count", "name": "count"}, {"type": "longSum", "name": "added", "fieldName": "added"}],
                "granularitySpec": {"segmentGranularity": "hour", "queryGranularity": "none", "rollup": false}},
            "ioConfig": {"topic": "t", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "b"}},
            "tuningConfig": tuning}});
        load_spec_value(spec).expect("spec").spec
    }

    fn record(offset: i64, payload: &[u8]) -> Record<'_> {
        Record::value(1, offset, Some(payload), None)
    }

    #[test]
    fn counts_every_outcome_and_indexes_rows_per_chunk() {
        let window = MessageWindow { min: Some(1_000), max: None };
        let mut ing =
            Ingester::new(&spec(serde_json::json!({})), &DescriptorDir::none(), window, RowMeters::new(10, 100))
                .expect("ingester");
        let hour = 3_600_000;
        ing.ingest(record(0, br#"{"ts": 5000, "page": "a", "added": 1}"#)).expect("row");
        ing.ingest(record(1, br#"{"ts": 5000, "page": "b", "added": "x"}"#)).expect("row with error");
        ing.ingest(record(2, format!(r#"{{"ts": {}, "page": "c"}}"#, hour + 1).as_bytes())).expect("next hour");
        ing.ingest(record(3, br#"{"ts": 500, "page": "late"}"#)).expect("thrown away");
        ing.ingest(record(4, b"not json")).expect("unparseable");
        ing.ingest(record(5, br#"{"ts": 99999999999999999, "page": "far"}"#)).expect("out of range");
        ing.ingest(Record::value(1, 6, None, None)).expect("tombstone");
        let m = &ing.meters;
        assert_eq!((m.processed, m.processed_with_error, m.thrown_away, m.unparseable), (3, 1, 1, 3));
        let offsets: Vec<i64> = m.saved_exceptions.iter().map(|e| e.offset).collect();
        assert_eq!(offsets, vec![1, 4, 5, 6]);
        assert!(m.saved_exceptions[2].reason.contains("outside every time chunk"), "{:?}", m.saved_exceptions[2]);
        let indexes = ing.take_indexes();
        assert_eq!(
            indexes.iter().map(|i| (i.interval().start, i.num_rows())).collect::<Vec<_>>(),
            vec![(0, 2), (hour, 1)]
        );
        assert_eq!(ing.num_rows(), 0);
    }

    #[test]
    fn pauses_at_max_rows_in_memory_and_fails_past_max_parse_exceptions() {
        let tuning = serde_json::json!({"maxRowsInMemory": 2, "maxParseExceptions": 1});
        let mut ing =
            Ingester::new(&spec(tuning), &DescriptorDir::none(), MessageWindow::default(), RowMeters::new(10, 1))
                .expect("ingester");
        assert_eq!(ing.ingest(record(0, br#"{"ts": 1, "page": "a"}"#)), Ok(Flow::Continue));
        assert_eq!(ing.ingest(record(1, br#"{"ts": 2, "page": "a"}"#)), Ok(Flow::Pause));
        ing.take_indexes();
        assert_eq!(ing.ingest(record(2, b"{")), Ok(Flow::Continue), "one exception is allowed");
        assert!(ing.ingest(record(3, b"}")).is_err());
        assert_eq!(ing.fatal.as_ref().map(|e| e.last.offset), Some(3));
    }
}
