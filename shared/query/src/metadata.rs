//! The metadata queries: timeBoundary, segmentMetadata and dataSourceMetadata.

use super::columns::SegmentColumns;
use super::engine::{overlapping, select};
use super::model::Intervals;
use super::model::{DataSourceMetadataQuery, SegmentMetadataQuery, TimeBoundaryQuery, ToInclude};
use super::{QueryError, QuerySegment};
use serde_json::{json, Map, Value};
use sluice_format::segment::{ColumnEntry, ColumnType, Segment};
use sluice_format::time::format_iso;

/// Runs a timeBoundary query.
pub fn time_boundary(q: &TimeBoundaryQuery, segments: &[QuerySegment]) -> Result<Value, QueryError> {
    let intervals = Intervals::or_eternity(q.intervals.as_ref());
    let (mut min, mut max) = (i64::MAX, i64::MIN);
    for seg in overlapping(segments, &intervals) {
        let mut cols = SegmentColumns::open(&seg.segment, &[])?;
        let rows = select(&mut cols, &intervals, q.filter.as_ref(), None)?;
        if let Some((first, last)) = rows.first_last() {
            let times = cols.times()?;
            min = min.min(times[first as usize]);
            max = max.max(times[last as usize]);
        }
    }
    if min > max {
        return Ok(json!([]));
    }
    Ok(match q.bound.as_deref() {
        Some("minTime") => json!([{"timestamp": format_iso(min), "result": {"minTime": format_iso(min)}}]),
        Some("maxTime") => json!([{"timestamp": format_iso(max), "result": {"maxTime": format_iso(max)}}]),
        None => {
            json!([{"timestamp": format_iso(min), "result": {"minTime": format_iso(min), "maxTime": format_iso(max)}}])
        }
        Some(other) => {
            return Err(QueryError::invalid("bound", format!("{other:?}: expected \"minTime\" or \"maxTime\"")));
        }
    })
}

/// Runs a dataSourceMetadata query: the latest event time over the visible segments.
pub fn datasource_metadata(_q: &DataSourceMetadataQuery, segments: &[QuerySegment]) -> Result<Value, QueryError> {
    let mut max: Option<i64> = None;
    for seg in segments {
        let cols = SegmentColumns::open(&seg.segment, &[])?;
        if let Some((_, t)) = cols.time_range()? {
            max = Some(max.map_or(t, |m| m.max(t)));
        }
    }
    Ok(match max {
        None => json!([]),
        Some(t) => json!([{"timestamp": format_iso(t), "result": {"maxIngestedEventTime": format_iso(t)}}]),
    })
}

/// Runs a segmentMetadata query: column types, sizes, cardinalities and string min/max per
/// segment, or merged into one answer.
pub fn segment_metadata(q: &SegmentMetadataQuery, segments: &[QuerySegment]) -> Result<Value, QueryError> {
    let intervals = Intervals::or_eternity(q.intervals.as_ref());
    let include = |name: &str| match &q.to_include {
        None | Some(ToInclude::All) => true,
        Some(ToInclude::None) => false,
        Some(ToInclude::List { columns }) => columns.iter().any(|c| c == name),
    };
    let mut answers = Vec::new();
    for seg in overlapping(segments, &intervals) {
        crate::scope::check_deadline()?;
        let mut columns = Map::new();
        for entry in &seg.segment.directory().columns {
            if include(&entry.name) && !entry.is_path() {
                columns.insert(entry.name.clone(), analyze(&seg.segment, entry)?);
            }
        }
        let size: u64 = seg.segment.size() as u64;
        answers.push(json!({
            "id": seg.id,
            "intervals": [seg.interval.to_string()],
            "columns": columns,
            "size": size,
            "numRows": seg.segment.num_rows(),
            "aggregators": null,
            "timestampSpec": null,
            "queryGranularity": null,
            "rollup": null,
        }));
    }
    if !q.merge || answers.len() < 2 {
        return Ok(Value::Array(answers));
    }
    Ok(json!([merge(answers)]))
}

fn analyze(seg: &Segment, entry: &ColumnEntry) -> Result<Value, QueryError> {
    let size: u64 = entry.parts.values().map(|p| p.length).sum();
    let type_name = match entry.kind {
        ColumnType::Time | ColumnType::Long => "LONG".to_string(),
        ColumnType::String => "STRING".to_string(),
        ColumnType::Json => "COMPLEX<json>".to_string(),
        ColumnType::Double => "DOUBLE".to_string(),
        ColumnType::Float => "FLOAT".to_string(),
        ColumnType::Metric => match entry.aggregator.as_ref().map(|a| a.metric_kind()) {
            Some(sluice_format::spec::MetricKind::Long) => "LONG".to_string(),
            Some(sluice_format::spec::MetricKind::Double) => "DOUBLE".to_string(),
            Some(sluice_format::spec::MetricKind::Float) => "FLOAT".to_string(),
            _ => format!("COMPLEX<{}>", entry.aggregator.as_ref().map(|a| a.type_name()).unwrap_or("unknown")),
        },
    };
    let (cardinality, min, max, has_nulls) = if entry.kind == ColumnType::String {
        let dict = seg.dictionary(&entry.name).map_err(QueryError::Segment)?;
        let nulls = seg.string_column(entry).map_err(QueryError::Segment)?;
        let null_rows = match nulls.bitmaps {
            Some(bitmaps) => {
                !bitmaps.is_empty() && {
                    let mut block = sluice_format::segment::parts::BytesBlock::default();
                    bitmaps.block(0, &mut block).map_err(QueryError::Segment)?;
                    !seg.bitmap(block.get(0), &entry.name).map_err(QueryError::Segment)?.is_empty()
                }
            }
            // Without bitmaps: a null row is id 0 (or a multi-value row without values).
            None => {
                let ids = nulls.ids.all_longs().map_err(QueryError::Segment)?;
                match nulls.offsets {
                    None => ids.contains(&0),
                    Some(o) => {
                        let offsets = o.all_longs().map_err(QueryError::Segment)?;
                        offsets.windows(2).any(|w| w[0] == w[1]) || ids.contains(&0)
                    }
                }
            }
        };
        (json!(dict.len()), json!(dict.first()), json!(dict.last()), null_rows)
    } else {
        let has_nulls =
            matches!(entry.kind, ColumnType::Long | ColumnType::Double | ColumnType::Float | ColumnType::Metric)
                && !seg.nulls(entry).map_err(QueryError::Segment)?.is_empty();
        (Value::Null, Value::Null, Value::Null, has_nulls)
    };
    Ok(json!({
        "typeSignature": type_name,
        "type": type_name,
        "hasMultipleValues": entry.multi_value,
        "hasNulls": has_nulls,
        "size": size,
        "cardinality": cardinality,
        "minValue": min,
        "maxValue": max,
        "errorMessage": null,
    }))
}

fn merge(answers: Vec<Value>) -> Value {
    let mut columns: Map<String, Value> = Map::new();
    let (mut size, mut rows) = (0u64, 0u64);
    let mut intervals = Vec::new();
    for a in answers {
        size += a["size"].as_u64().unwrap_or(0);
        rows += a["numRows"].as_u64().unwrap_or(0);
        intervals.extend(a["intervals"].as_array().cloned().unwrap_or_default());
        for (name, col) in a["columns"].as_object().cloned().unwrap_or_default() {
            match columns.get_mut(&name) {
                None => {
                    columns.insert(name, col);
                }
                Some(have) => {
                    have["size"] = json!(have["size"].as_u64().unwrap_or(0) + col["size"].as_u64().unwrap_or(0));
                    have["hasMultipleValues"] =
                        json!(have["hasMultipleValues"] == true || col["hasMultipleValues"] == true);
                    have["hasNulls"] = json!(have["hasNulls"] == true || col["hasNulls"] == true);
                    if let (Some(x), Some(y)) = (have["cardinality"].as_u64(), col["cardinality"].as_u64()) {
                        have["cardinality"] = json!(x.max(y));
                    }
                    if col["minValue"].is_string()
                        && (have["minValue"].is_null() || col["minValue"].as_str() < have["minValue"].as_str())
                    {
                        have["minValue"] = col["minValue"].clone();
                    }
                    if col["maxValue"].as_str() > have["maxValue"].as_str() {
                        have["maxValue"] = col["maxValue"].clone();
                    }
                }
            }
        }
    }
    intervals.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    intervals.dedup();
    json!({"id": "merged", "intervals": intervals, "columns": columns, "size": size, "numRows": rows,
           "aggregators": null, "timestampSpec": null, "queryGranularity": null, "rollup": null})
}
