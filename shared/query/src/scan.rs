//! scan: raw rows, per segment, with the requested columns (all by default), optionally
//! ordered by `__time`, after `offset` and up to `limit`.
//!
//! The answer is bounded while it is built, never after: rows are read out of a segment only
//! as far as `offset` and `limit` reach and added one at a time, each counted against
//! [`MAX_SCAN_ROWS`] and its JSON against [`MAX_RESULT_BYTES`]. A time-ordered scan keeps only
//! the `offset + limit` first rows in its order, or, with no limit that small, refuses as soon
//! as it holds more than `maxRowsQueuedForOrdering` rows to sort. A scan past a bound fails
//! naming it, having held at most one row more than the bound.

use super::columns::{Column, SegmentColumns};
use super::engine::{overlapping, select};
use super::json::{encoded_len, string_len, value_json};
use super::model::{context_bound, ScanFormat, ScanOrder, ScanQuery};
use super::{QueryError, QuerySegment};
use serde_json::{json, Map, Value};
use sluice_format::aggregate::MetricCell;
use sluice_format::segment::ColumnType;
use std::collections::{BinaryHeap, HashMap};
use std::rc::Rc;

/// Most rows a scan returns: a larger answer is refused, naming `limit` and `offset` to page.
pub const MAX_SCAN_ROWS: usize = 1_000_000;
/// Most bytes of a scan's answer, its JSON counted as rows are added: Druid's
/// `maxScatterGatherBytes`, which `context.maxScatterGatherBytes` may lower.
pub const MAX_RESULT_BYTES: usize = 64 << 20;
/// Most names a scan's `columns` may list, and most virtual columns it may define. A name no
/// segment holds reads as nulls, as in Druid; a name listed twice is refused.
pub const MAX_SCAN_COLUMNS: usize = 10_000;
/// Druid's `druid.query.scan.maxRowsQueuedForOrdering`: most rows a time-ordered scan without
/// a small enough limit may sort.
pub const MAX_ROWS_QUEUED_FOR_ORDERING: usize = 100_000;

/// `context.maxRowsQueuedForOrdering`, bounded by [`MAX_SCAN_ROWS`].
fn max_rows_queued(q: &ScanQuery) -> Result<usize, QueryError> {
    match q.context.get("maxRowsQueuedForOrdering") {
        None => Ok(MAX_ROWS_QUEUED_FOR_ORDERING),
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .map(|n| (n as usize).min(MAX_SCAN_ROWS))
            .ok_or_else(|| QueryError::invalid("context.maxRowsQueuedForOrdering", "expected a count")),
    }
}

/// Runs a scan query.
pub fn run(q: &ScanQuery, segments: &[QuerySegment]) -> Result<Value, QueryError> {
    let bytes = context_bound(&q.context, "maxScatterGatherBytes", MAX_RESULT_BYTES)?;
    let mut answer = Answer::new(Bounds { rows: MAX_SCAN_ROWS, bytes }, q.result_format);
    scan_into(q, segments, &mut answer)?;
    Ok(answer.finish())
}

/// Adds the rows of `q` to `answer`, stopping at the first bound passed.
fn scan_into(q: &ScanQuery, segments: &[QuerySegment], answer: &mut Answer) -> Result<(), QueryError> {
    check_columns(q)?;
    let queued = max_rows_queued(q)?;
    match q.order {
        ScanOrder::None => in_segment_order(q, segments, answer),
        ScanOrder::Ascending | ScanOrder::Descending => in_time_order(q, segments, queued, answer),
    }
}

/// Refuses more than [`MAX_SCAN_COLUMNS`] columns or virtual columns, and a column listed twice.
fn check_columns(q: &ScanQuery) -> Result<(), QueryError> {
    for (field, n) in [("columns", q.columns.len()), ("virtualColumns", q.virtual_columns.len())] {
        if n > MAX_SCAN_COLUMNS {
            return Err(QueryError::invalid(
                field,
                format!("{n} columns: a scan reads at most {MAX_SCAN_COLUMNS}; name fewer"),
            ));
        }
    }
    let mut first = HashMap::with_capacity(q.columns.len());
    for (i, name) in q.columns.iter().enumerate() {
        if let Some(j) = first.insert(name.as_str(), i) {
            return Err(QueryError::invalid(
                format!("columns[{i}]"),
                format!("{:?} is listed twice (also columns[{j}])", sluice_format::text::excerpt(name, 120)),
            ));
        }
    }
    Ok(())
}

/// Rows in segment order: each segment's rows are read only as far as `offset` and `limit`
/// reach, and a segment whose rows all fall in the offset is not read at all.
fn in_segment_order(q: &ScanQuery, segments: &[QuerySegment], answer: &mut Answer) -> Result<(), QueryError> {
    let intervals = &q.intervals.0;
    let mut skip = q.offset;
    let mut left = q.limit.unwrap_or(usize::MAX);
    for (i, seg) in overlapping(segments, intervals).enumerate() {
        if left == 0 {
            break;
        }
        let mut cols = SegmentColumns::open(&seg.segment, &q.virtual_columns)?;
        let rows = select(&mut cols, intervals, q.filter.as_ref(), None)?;
        let n = usize::try_from(rows.len()).unwrap_or(usize::MAX);
        if n <= skip {
            skip -= n;
            continue;
        }
        let reader = Reader::new(&mut cols, q)?;
        for r in rows.rows().skip(skip).take(left) {
            answer.push(i, &seg.id, &reader, r)?;
        }
        left -= (n - skip).min(left);
        skip = 0;
    }
    Ok(())
}

/// Rows ordered by `__time`: the `offset + limit` first in that order are kept while the rows
/// are read (a heap holding at most that many), or, when that is more than `queued`, every row
/// is kept until there are more than `queued`. Equal times keep segment and row order.
fn in_time_order(
    q: &ScanQuery,
    segments: &[QuerySegment],
    queued: usize,
    answer: &mut Answer,
) -> Result<(), QueryError> {
    let intervals = &q.intervals.0;
    let limit = q.limit.unwrap_or(usize::MAX);
    let want = q.offset.saturating_add(limit);
    let keep_first = want <= queued;
    let descending = q.order == ScanOrder::Descending;
    // (time in the query's order, segment, row): the greatest kept is on top.
    let mut heap: BinaryHeap<(i64, usize, u32)> = BinaryHeap::new();
    let chosen: Vec<&QuerySegment> = overlapping(segments, intervals).collect();
    for (i, seg) in chosen.iter().enumerate() {
        let mut cols = SegmentColumns::open(&seg.segment, &q.virtual_columns)?;
        let rows = select(&mut cols, intervals, q.filter.as_ref(), None)?;
        if rows.is_empty() {
            continue;
        }
        let times = cols.times()?;
        for r in rows.rows() {
            let t = times[r as usize];
            // `!t` orders times backwards without overflow.
            let key = (if descending { !t } else { t }, i, r);
            if keep_first {
                if heap.len() < want {
                    heap.push(key);
                } else if let Some(mut top) = heap.peek_mut() {
                    if key < *top {
                        *top = key;
                    }
                }
            } else {
                heap.push(key);
                if heap.len() > queued {
                    answer.num_queued = answer.num_queued.max(heap.len());
                    return Err(QueryError::invalid(
                        "order",
                        format!(
                            "time ordering of more than {queued} rows (context.maxRowsQueuedForOrdering) needs a \
                             limit of at most that many"
                        ),
                    ));
                }
            }
        }
        answer.num_queued = answer.num_queued.max(heap.len());
    }
    let picked = heap.into_sorted_vec();
    let mut readers: HashMap<usize, Reader<'_>> = HashMap::new();
    for &(_, i, r) in picked.iter().skip(q.offset).take(limit) {
        let reader = match readers.entry(i) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let mut cols = SegmentColumns::open(&chosen[i].segment, &q.virtual_columns)?;
                v.insert(Reader::new(&mut cols, q)?)
            }
        };
        answer.push(i, &chosen[i].id, reader, r)?;
    }
    Ok(())
}

/// The columns a scan returns from one segment, decoded.
struct Reader<'s> {
    names: Vec<String>,
    columns: Vec<Rc<Column<'s>>>,
    times: Rc<Vec<i64>>,
}

impl<'s> Reader<'s> {
    fn new(cols: &mut SegmentColumns<'s>, q: &'s ScanQuery) -> Result<Self, QueryError> {
        let names = if q.columns.is_empty() { all_columns(cols, q) } else { q.columns.clone() };
        let columns = names.iter().map(|n| cols.column(n)).collect::<Result<Vec<_>, _>>()?;
        Ok(Self { names, columns, times: cols.times()? })
    }

    /// Row `row` as an event of `format`.
    fn event(&self, row: u32, format: ScanFormat) -> Value {
        // A theta or quantiles sketch is shown as Druid shows it, its serialization in base64.
        let values = self.columns.iter().map(|c| match &**c {
            Column::Cells(cells, _)
                if matches!(cells.get(row as usize), Some(MetricCell::Theta(_) | MetricCell::Quantiles(_))) =>
            {
                crate::aggregator::sketch_json(&cells[row as usize])
            }
            c => value_json(&c.value(row as usize, &self.times)),
        });
        match format {
            ScanFormat::List => Value::Object(self.names.iter().cloned().zip(values).collect::<Map<_, _>>()),
            ScanFormat::CompactedList => Value::Array(values.collect()),
        }
    }
}

/// The bounds of one answer.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    /// Most rows.
    rows: usize,
    /// Most bytes of JSON.
    bytes: usize,
}

/// One segment's run of consecutive rows in the answer.
struct Entry {
    segment: usize,
    id: String,
    names: Vec<String>,
    events: Vec<Value>,
}

/// A scan's answer as it is built, with what it holds counted.
struct Answer {
    bounds: Bounds,
    format: ScanFormat,
    done: Vec<Value>,
    open: Option<Entry>,
    /// Rows added.
    num_rows: usize,
    /// Length of the answer's JSON so far (each element counted with a separator).
    num_bytes: usize,
    /// Most rows held at once to be sorted by time.
    num_queued: usize,
}

impl Answer {
    fn new(bounds: Bounds, format: ScanFormat) -> Self {
        Self { bounds, format, done: Vec::new(), open: None, num_rows: 0, num_bytes: 2, num_queued: 0 }
    }

    /// Adds row `row` of segment `segment` (its id `id`), refusing it past a bound.
    fn push(&mut self, segment: usize, id: &str, reader: &Reader<'_>, row: u32) -> Result<(), QueryError> {
        if self.num_rows >= self.bounds.rows {
            let max = self.bounds.rows;
            return Err(QueryError::invalid(
                "limit",
                format!(
                    "more than {max} rows: a scan returns at most {max}; give a limit (and an offset to page), a \
                     narrower filter or shorter intervals"
                ),
            ));
        }
        let event = reader.event(row, self.format);
        let mut bytes = encoded_len(&event) + 1;
        if self.open.as_ref().is_none_or(|e| e.segment != segment) {
            // {"segmentId":…,"columns":[…],"events":[…]},
            bytes += 40 + string_len(id) + reader.names.iter().map(|n| string_len(n) + 1).sum::<usize>();
        }
        if self.num_bytes.saturating_add(bytes) > self.bounds.bytes {
            let (max, n) = (self.bounds.bytes, self.num_rows);
            return Err(QueryError::invalid(
                "limit",
                format!(
                    "the answer passes {max} bytes (context.maxScatterGatherBytes) at row {n}: give a smaller \
                     limit (and an offset to page), fewer columns or a narrower filter"
                ),
            ));
        }
        if self.open.as_ref().is_none_or(|e| e.segment != segment) {
            self.close();
            self.open = Some(Entry { segment, id: id.to_string(), names: reader.names.clone(), events: Vec::new() });
        }
        if let Some(entry) = &mut self.open {
            entry.events.push(event);
        }
        self.num_rows += 1;
        self.num_bytes += bytes;
        Ok(())
    }

    fn close(&mut self) {
        if let Some(e) = self.open.take() {
            self.done.push(json!({"segmentId": e.id, "columns": e.names, "events": e.events}));
        }
    }

    fn finish(mut self) -> Value {
        self.close();
        Value::Array(self.done)
    }
}

fn all_columns(cols: &SegmentColumns<'_>, q: &ScanQuery) -> Vec<String> {
    let dir = cols.segment.directory();
    let mut names = vec!["__time".to_string()];
    names.extend(
        dir.columns.iter().filter(|c| !matches!(c.kind, ColumnType::Time | ColumnType::Metric)).map(|c| c.name.clone()),
    );
    names.extend(dir.columns.iter().filter(|c| c.kind == ColumnType::Metric).map(|c| c.name.clone()));
    names.extend(q.virtual_columns.iter().map(|v| v.name().to_string()));
    names
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
