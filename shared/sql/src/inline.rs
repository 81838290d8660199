//! Rows held in memory (a subquery's answer, a metadata table) as one segment, so the outer
//! query runs on the native engine like any other: Druid's inline datasource.
//!
//! A subquery's rows are bounded while they are read, never after: its native query is cut to
//! one row past the bound, and its rows are refused as soon as they pass a bound of rows or
//! bytes ([`SubqueryRows`]), so they never hold more than the bound.

use crate::types::{Column, SqlType};
use crate::SqlError;
use serde_json::{json, Map, Value};
use sluice_format::index::{IncrementalIndex, IndexConfig};
use sluice_format::input::{Parsed, RecordParser};
use sluice_format::segment::Segment;
use sluice_query::model::context_bound;
use sluice_query::{QueryError, QuerySegment};

/// Most rows a subquery may hand its outer query: Druid's `maxSubqueryRows`, which
/// `context.maxSubqueryRows` may lower.
pub const MAX_INLINE_ROWS: usize = 100_000;
/// Most bytes of a subquery's rows (their values as JSON, counted as they are read): Druid's
/// `maxSubqueryBytes`, which `context.maxSubqueryBytes` may lower.
pub const MAX_INLINE_BYTES: usize = 64 << 20;

/// The bounds of a subquery's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubqueryBounds {
    /// Most rows.
    pub rows: usize,
    /// Most bytes of their values as JSON.
    pub bytes: usize,
}

impl Default for SubqueryBounds {
    fn default() -> Self {
        Self { rows: MAX_INLINE_ROWS, bytes: MAX_INLINE_BYTES }
    }
}

impl SubqueryBounds {
    /// The bounds a SQL request's context sets (`maxSubqueryRows`, `maxSubqueryBytes`), each
    /// at most the server's.
    pub fn from_context(context: &Map<String, Value>) -> Result<Self, SqlError> {
        Ok(Self {
            rows: context_bound(context, "maxSubqueryRows", MAX_INLINE_ROWS)?,
            bytes: context_bound(context, "maxSubqueryBytes", MAX_INLINE_BYTES)?,
        })
    }
}

/// What a request's whole answer may hold, and what it holds so far: every row it returns,
/// the branches of a top-level `UNION ALL` together, within Druid's `maxScatterGatherBytes`
/// (the bytes of its values as JSON, which the context may lower) and the most rows a native
/// answer may hold (a groupBy's groups).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerBounds {
    /// Most rows.
    pub rows: usize,
    /// Most bytes of their values as JSON.
    pub bytes: usize,
    /// Rows returned so far.
    pub num_rows: usize,
    /// Bytes returned so far.
    pub num_bytes: usize,
}

impl AnswerBounds {
    /// The bounds a SQL request's context sets (`maxScatterGatherBytes`), at most the server's.
    pub fn from_context(context: &Map<String, Value>) -> Result<Self, SqlError> {
        let bytes = context_bound(context, "maxScatterGatherBytes", sluice_query::MAX_RESULT_BYTES)?;
        let rows = sluice_query::MAX_SCAN_ROWS.max(sluice_query::engine::MAX_GROUPS);
        Ok(Self { rows, bytes, num_rows: 0, num_bytes: 0 })
    }

    /// Counts `rows`, taken within these bounds, as returned.
    pub fn count(&mut self, rows: &SubqueryRows) {
        self.num_rows += rows.len();
        self.num_bytes += rows.num_bytes();
    }
}

/// The error of an answer past `bound` at its row `n`.
fn answer_too_large(bound: String, n: usize) -> SqlError {
    SqlError::Query(QueryError::invalid(
        "context.maxScatterGatherBytes",
        format!(
            "the answer passes {bound} at row {n} (every row the request returns, the branches of a UNION ALL \
             together): give a LIMIT, fewer columns, a narrower WHERE or fewer UNION ALL branches"
        ),
    ))
}

/// Rows read out of a native answer, refused as soon as they pass their bounds: a subquery's
/// rows by its [`SubqueryBounds`], a request's answer by its [`AnswerBounds`] (every row it
/// returns, across the branches of a `UNION ALL` too), the rows an answer is sorted and cut
/// from not at all (the engine bounds those).
#[derive(Debug, Default)]
pub struct SubqueryRows {
    bounds: Option<SubqueryBounds>,
    /// The bounds of the request's answer, when the rows are one (not a subquery's).
    answer: Option<AnswerBounds>,
    rows: Vec<Vec<Value>>,
    num_bytes: usize,
}

impl SubqueryRows {
    /// A subquery's rows, bounded by `bounds`.
    pub fn bounded(bounds: SubqueryBounds) -> Self {
        Self { bounds: Some(bounds), ..Self::default() }
    }

    /// The rows of a request's answer, bounded by what is left of `bounds`.
    pub fn answer(bounds: &AnswerBounds) -> Self {
        let left = SubqueryBounds {
            rows: bounds.rows.saturating_sub(bounds.num_rows),
            bytes: bounds.bytes.saturating_sub(bounds.num_bytes),
        };
        Self { bounds: Some(left), answer: Some(*bounds), ..Self::default() }
    }

    /// Rows without bounds.
    pub fn unbounded() -> Self {
        Self::default()
    }

    /// Adds `row`, refusing it when it passes the bounds (the rows held stay within them).
    pub fn push(&mut self, row: Vec<Value>) -> Result<(), SqlError> {
        let Some(bounds) = self.bounds else {
            self.rows.push(row);
            return Ok(());
        };
        if self.rows.len() >= bounds.rows {
            return Err(match &self.answer {
                Some(a) => answer_too_large(format!("{} rows", a.rows), a.num_rows + self.rows.len()),
                None => too_many_rows(bounds.rows),
            });
        }
        let bytes = 1 + row.iter().map(|v| sluice_query::json::encoded_len(v) + 1).sum::<usize>();
        if self.num_bytes.saturating_add(bytes) > bounds.bytes {
            if let Some(a) = &self.answer {
                let max = format!("{} bytes (context.maxScatterGatherBytes)", a.bytes);
                return Err(answer_too_large(max, a.num_rows + self.rows.len()));
            }
            return Err(SqlError::Query(QueryError::invalid(
                "context.maxSubqueryBytes",
                format!(
                    "a subquery's rows pass {} bytes at row {}: give the subquery a LIMIT, a narrower WHERE or \
                     fewer columns",
                    bounds.bytes,
                    self.rows.len()
                ),
            )));
        }
        self.num_bytes += bytes;
        self.rows.push(row);
        Ok(())
    }

    /// The most rows held, when bounded as a subquery's (its native query is cut one row past).
    pub fn bound_rows(&self) -> Option<usize> {
        self.bounds.filter(|_| self.answer.is_none()).map(|b| b.rows)
    }

    /// Bytes of the rows held, their values as JSON.
    pub fn num_bytes(&self) -> usize {
        self.num_bytes
    }

    /// Number of rows held.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Returns true when no row is held.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The rows.
    pub fn into_rows(self) -> Vec<Vec<Value>> {
        self.rows
    }
}

/// The error of a subquery of more than `max` rows.
pub fn too_many_rows(max: usize) -> SqlError {
    SqlError::Query(QueryError::invalid(
        "context.maxSubqueryRows",
        format!(
            "a subquery returns more than {max} rows (Druid's maxSubqueryRows): give the subquery a LIMIT, a \
             narrower WHERE or fewer GROUP BY columns"
        ),
    ))
}

/// `native` with its answer cut to `rows` rows (a scan's or timeseries' `limit`, a groupBy's
/// `limitSpec.limit`, each lowered to `rows`), so that a subquery past its bound stops one row
/// past it instead of reading on. A topN's answer is cut by its threshold already.
pub fn capped(native: &Value, rows: usize) -> Value {
    let mut q = native.clone();
    let cut = |limit: &mut Value| {
        let n = limit.as_u64().map_or(rows, |l| usize::try_from(l).unwrap_or(usize::MAX).min(rows));
        *limit = json!(n);
    };
    let kind = q["queryType"].as_str().unwrap_or_default().to_string();
    match kind.as_str() {
        "scan" | "timeseries" => cut(&mut q["limit"]),
        "groupBy" => {
            if !q["limitSpec"].is_object() {
                q["limitSpec"] = json!({"type": "default", "columns": []});
            }
            cut(&mut q["limitSpec"]["limit"]);
        }
        _ => {}
    }
    q
}

/// The rows as a segment (none for no rows); a `__time` column (TIMESTAMP, ISO 8601 or
/// milliseconds) gives each row its time, otherwise every row is at the epoch.
pub fn segment(columns: &[Column], rows: &[Vec<Value>]) -> Result<Option<QuerySegment>, SqlError> {
    if rows.len() > MAX_INLINE_ROWS {
        return Err(too_many_rows(MAX_INLINE_ROWS));
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
    let mut parser = RecordParser::new(&spec).map_err(|e| internal(e.to_string()))?;
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
pub(crate) fn stored(ty: &SqlType, v: &Value) -> Value {
    match (ty, v) {
        (SqlType::Timestamp, Value::String(s)) => {
            sluice_format::time::parse_iso_instant(s).map(|t| json!(t)).unwrap_or(Value::Null)
        }
        (_, Value::Bool(b)) => json!(i64::from(*b)),
        _ => v.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execute::read_rows_into;
    use crate::plan::{Input, Output, Plan, Source};
    use crate::{run_sql, MemorySegments, SqlRequest};
    use std::sync::Arc;

    /// A plan reading field `x` of a scan's events as VARCHAR.
    fn plan_of_x() -> Plan {
        Plan {
            input: Input::Nothing,
            native: None,
            outputs: vec![Output { column: Column::new("x", SqlType::Varchar), source: Source::Field("x".into()) }],
            one_row: None,
            visible: 1,
            after: Default::default(),
            joins: Vec::new(),
        }
    }

    /// A native scan answer of `n` events `{"x": value(i)}`.
    fn scan_answer(n: usize, value: impl Fn(usize) -> String) -> Value {
        let events: Vec<Value> = (0..n).map(|i| json!({"x": value(i)})).collect();
        json!([{"segmentId": "s", "columns": ["x"], "events": events}])
    }

    #[test]
    fn a_subquery_past_its_rows_stops_where_its_rows_are_read() {
        let answer = scan_answer(MAX_INLINE_ROWS + 50, |i| format!("v{i}"));
        let mut rows = SubqueryRows::bounded(SubqueryBounds::default());
        let e = read_rows_into(&plan_of_x(), "scan", &answer, &mut rows, &Default::default())
            .expect_err("refused")
            .to_string();
        assert!(e.contains("context.maxSubqueryRows: a subquery returns more than 100000 rows"), "{e}");
        assert_eq!(rows.len(), MAX_INLINE_ROWS, "the rows read stop at the bound");
        let mut all = SubqueryRows::unbounded();
        read_rows_into(&plan_of_x(), "scan", &answer, &mut all, &Default::default())
            .expect("an outer query's rows are not bounded here");
        assert_eq!(all.len(), MAX_INLINE_ROWS + 50);
    }

    #[test]
    fn a_subquery_past_its_bytes_stops_within_a_row() {
        let answer = scan_answer(100, |i| format!("{i}{}", "x".repeat(10_000)));
        let mut rows = SubqueryRows::bounded(SubqueryBounds { rows: MAX_INLINE_ROWS, bytes: 25_000 });
        let e = read_rows_into(&plan_of_x(), "scan", &answer, &mut rows, &Default::default())
            .expect_err("refused")
            .to_string();
        assert!(e.contains("context.maxSubqueryBytes: a subquery's rows pass 25000 bytes at row 2"), "{e}");
        assert_eq!(rows.len(), 2);
    }

    #[test]
    fn a_subquery_is_cut_one_row_past_its_bound() {
        let scan = json!({"queryType": "scan", "columns": ["x"]});
        assert_eq!(capped(&scan, 11)["limit"], 11);
        assert_eq!(capped(&json!({"queryType": "scan", "limit": 5}), 11)["limit"], 5);
        assert_eq!(capped(&json!({"queryType": "scan", "limit": 50}), 11)["limit"], 11);
        assert_eq!(capped(&json!({"queryType": "timeseries"}), 11)["limit"], 11);
        let grouped = capped(&json!({"queryType": "groupBy"}), 11);
        assert_eq!(grouped["limitSpec"], json!({"type": "default", "columns": [], "limit": 11}));
        let ordered = json!({"queryType": "groupBy", "limitSpec": {"type": "default", "columns": ["n"], "limit": 3}});
        assert_eq!(capped(&ordered, 11)["limitSpec"]["limit"], 3);
        let top = json!({"queryType": "topN", "threshold": 50});
        assert_eq!(capped(&top, 11), top);
    }

    /// Table `t` of `n` rows with a string `x`.
    fn table(n: usize) -> MemorySegments {
        let rows: Vec<Vec<Value>> = (0..n).map(|i| vec![json!(format!("x{i:04}"))]).collect();
        let segment = segment(&[Column::new("x", SqlType::Varchar)], &rows).expect("segment").expect("rows");
        let mut source = MemorySegments::default();
        source.tables.insert("t".into(), Arc::new(vec![segment]));
        source
    }

    fn request(sql: &str, context: Value) -> SqlRequest {
        let mut r = SqlRequest::new(sql);
        r.context = context.as_object().cloned().unwrap_or_default();
        r
    }

    #[tokio::test]
    async fn max_subquery_rows_lowers_the_bound_and_counts_rows_after_their_cut() {
        let source = table(300);
        let count = "SELECT COUNT(*) AS n FROM (SELECT x FROM t)";
        let rows = run_sql(&source, &request(count, json!({}))).await.expect("answered").rows;
        assert_eq!(rows, [[json!(300)]]);
        let e = run_sql(&source, &request(count, json!({"maxSubqueryRows": 100}))).await.expect_err("refused");
        assert!(e.to_string().contains("more than 100 rows"), "{e}");
        assert!(e.druid_kind().2, "the client's to narrow");
        let within = run_sql(&source, &request(count, json!({"maxSubqueryRows": "300"}))).await.expect("answered");
        assert_eq!(within.rows, [[json!(300)]]);
        // The middle subquery sorts 300 rows and keeps 5: its 5 rows are what is counted.
        let sorted = "SELECT COUNT(*) AS n FROM (SELECT x FROM (SELECT x FROM t) ORDER BY x DESC LIMIT 5)";
        let rows = run_sql(&source, &request(sorted, json!({"maxSubqueryRows": 300}))).await.expect("answered").rows;
        assert_eq!(rows, [[json!(5)]]);
        let over = run_sql(&source, &request(count, json!({"maxSubqueryRows": MAX_INLINE_ROWS + 1}))).await;
        let e = over.expect_err("refused").to_string();
        assert!(e.contains("context.maxSubqueryRows: over this server's maximum of 100000"), "{e}");
    }
}
