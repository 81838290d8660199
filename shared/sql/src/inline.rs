//! Rows held in memory (a subquery's answer, a metadata table) as one segment, so the outer
//! query runs on the native engine like any other: Druid's inline datasource.

use crate::types::{Column, SqlType};
use crate::SqlError;
use serde_json::{json, Map, Value};
use sluice_format::index::{IncrementalIndex, IndexConfig};
use sluice_format::input::{Parsed, RecordParser};
use sluice_format::segment::Segment;
use sluice_query::QuerySegment;

/// Most rows a subquery may hand its outer query (Druid's `maxSubqueryRows`).
pub const MAX_INLINE_ROWS: usize = 100_000;

/// The rows as a segment (none for no rows); a `__time` column (TIMESTAMP, ISO 8601 or
/// milliseconds) gives each row its time, otherwise every row is at the epoch.
pub fn segment(columns: &[Column], rows: &[Vec<Value>]) -> Result<Option<QuerySegment>, SqlError> {
    if rows.len() > MAX_INLINE_ROWS {
        return Err(SqlError::unsupported(format!(
            "a subquery of {} rows (at most {MAX_INLINE_ROWS}, Druid's maxSubqueryRows)",
            rows.len()
        )));
    }
    if rows.is_empty() {
        return Ok(None);
    }
    let mut dimensions = Vec::new();
    for c in columns.iter().filter(|c| c.name != "__time") {
        let kind = match &c.ty {
            SqlType::Varchar => "string",
            SqlType::Bigint | SqlType::Boolean | SqlType::Timestamp => "long",
            SqlType::Double | SqlType::Float => "double",
            SqlType::Complex(k) => {
                return Err(SqlError::unsupported(format!("a subquery column of type COMPLEX<{k}>")))
            }
        };
        dimensions.push(json!({"name": c.name, "type": kind}));
    }
    let spec = json!({"type": "kafka", "spec": {
        "dataSchema": {
            "dataSource": "inline",
            "timestampSpec": {"column": "__time", "format": "millis", "missingValue": 0},
            "dimensionsSpec": {"dimensions": dimensions},
            "metricsSpec": [],
            "granularitySpec": {"segmentGranularity": "all", "queryGranularity": "none", "rollup": false}
        },
        "ioConfig": {"topic": "inline", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "inline:9092"}}
    }});
    let internal = |e: String| SqlError::Query(sluice_query::QueryError::Source(format!("inline rows: {e}")));
    let spec = sluice_format::spec::load_spec(&spec.to_string()).map_err(|e| internal(e.to_string()))?.spec;
    let mut parser = RecordParser::new(&spec).map_err(internal)?;
    let config = IndexConfig::from_spec(&spec);
    let mut index: Option<IncrementalIndex> = None;
    let mut out = Vec::new();
    for row in rows {
        let mut record = Map::new();
        for (c, v) in columns.iter().zip(row) {
            record.insert(c.name.clone(), stored(&c.ty, v));
        }
        out.clear();
        parser.parse_record(Value::Object(record).to_string().as_bytes(), &mut out);
        for parsed in out.drain(..) {
            if let Ok(Parsed::Row { row, .. }) = parsed {
                let chunk = config.segment_granularity.bucket(row.time);
                index.get_or_insert_with(|| IncrementalIndex::new(config.clone(), chunk)).add(row, parser.dimensions());
            }
        }
    }
    let Some(index) = index else { return Ok(None) };
    let interval = index.interval();
    let bytes = index.persist(Default::default()).map_err(|e| internal(e.to_string()))?;
    let segment = Segment::from_bytes("inline", bytes).map_err(|e| internal(e.to_string()))?;
    Ok(Some(QuerySegment { id: "inline".into(), interval, segment }))
}

/// A result value as the inline record holds it: TIMESTAMPs in milliseconds, booleans 0/1.
fn stored(ty: &SqlType, v: &Value) -> Value {
    match (ty, v) {
        (SqlType::Timestamp, Value::String(s)) => {
            sluice_format::time::parse_iso_instant(s).map(|t| json!(t)).unwrap_or(Value::Null)
        }
        (_, Value::Bool(b)) => json!(i64::from(*b)),
        _ => v.clone(),
    }
}
