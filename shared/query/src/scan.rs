//! scan: raw rows, per segment, with the requested columns (all by default), optionally
//! ordered by `__time`, after `offset` and up to `limit`.

use super::columns::SegmentColumns;
use super::engine::{overlapping, select};
use super::json::value_json;
use super::model::{ScanFormat, ScanOrder, ScanQuery};
use super::{QueryError, QuerySegment};
use serde_json::{json, Map, Value};
use sluice_format::segment::ColumnType;

/// Most rows a scan returns.
pub const MAX_SCAN_ROWS: usize = 1_000_000;
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
    let intervals = &q.intervals.0;
    let limit = q.limit.unwrap_or(usize::MAX);
    // (segment, row, time) of every selected row, in the order rows are returned.
    let mut picked: Vec<(usize, u32, i64)> = Vec::new();
    let mut opened = Vec::new();
    let unordered = q.order == ScanOrder::None;
    let queued = max_rows_queued(q)?;
    for (i, seg) in overlapping(segments, intervals).enumerate() {
        if unordered && picked.len() >= q.offset.saturating_add(limit) {
            break;
        }
        let mut cols = SegmentColumns::open(&seg.segment, &q.virtual_columns)?;
        let rows = select(&mut cols, intervals, q.filter.as_ref(), None)?;
        let times = cols.times()?;
        picked.extend(rows.rows().map(|r| (i, r, times[r as usize])));
        if !unordered && q.offset.saturating_add(limit) > queued && picked.len() > queued {
            return Err(QueryError::invalid(
                "order",
                format!(
                    "time ordering of more than {queued} rows (context.maxRowsQueuedForOrdering) needs a limit of at most that many"
                ),
            ));
        }
        opened.push((seg, cols));
    }
    match q.order {
        ScanOrder::None => {}
        ScanOrder::Ascending => picked.sort_by_key(|p| p.2),
        ScanOrder::Descending => picked.sort_by_key(|p| std::cmp::Reverse(p.2)),
    }
    let picked: Vec<_> = picked.into_iter().skip(q.offset).take(limit).collect();
    if picked.len() > MAX_SCAN_ROWS {
        return Err(QueryError::invalid(
            "limit",
            format!(
                "{} rows: a scan returns at most {MAX_SCAN_ROWS}; give a limit (and an offset to page)",
                picked.len()
            ),
        ));
    }
    let mut out = Vec::new();
    let mut start = 0;
    while start < picked.len() {
        let seg_index = picked[start].0;
        let end = picked[start..].iter().position(|p| p.0 != seg_index).map_or(picked.len(), |n| start + n);
        let (seg, cols) = &mut opened[seg_index];
        let names = if q.columns.is_empty() { all_columns(cols, q) } else { q.columns.clone() };
        let columns = names.iter().map(|n| cols.column(n)).collect::<Result<Vec<_>, _>>()?;
        let times = cols.times()?;
        let events: Vec<Value> = picked[start..end]
            .iter()
            .map(|&(_, r, _)| {
                let values = columns.iter().map(|c| value_json(&c.value(r as usize, &times)));
                match q.result_format {
                    ScanFormat::List => Value::Object(names.iter().cloned().zip(values).collect::<Map<_, _>>()),
                    ScanFormat::CompactedList => Value::Array(values.collect()),
                }
            })
            .collect();
        out.push(json!({"segmentId": seg.id, "columns": names, "events": events}));
        start = end;
    }
    Ok(Value::Array(out))
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
