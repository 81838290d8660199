//! Druid's datasource information (`GET /druid/v2/datasources/{ds}`, `?interval=`, `?full`,
//! and the deprecated `/dimensions` and `/metrics`): the dimensions and metrics of the
//! visible segments overlapping an interval (the last week to now when none is given, as
//! Druid's default `segmentMetadata` history), read from the segments' directories.

use super::{sql, ApiError, ApiState};
use axum::extract::{Path, Query as UrlQuery, State};
use axum::http::StatusCode;
use serde_json::{json, Map, Value};
use sluice_format::time::{now_ms, Interval};
use sluice_sql::catalog::SegmentInfo;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// Druid's `druid.query.segmentMetadata.defaultHistory`: one week.
const DEFAULT_HISTORY_MS: i64 = 7 * 24 * 3_600_000;

fn interval(params: &HashMap<String, String>) -> Result<Interval, ApiError> {
    match params.get("interval").filter(|t| !t.is_empty()) {
        None => {
            let now = now_ms();
            Ok(Interval::new(now - DEFAULT_HISTORY_MS, now))
        }
        // Druid's URL form of an interval may separate its ends with `_`.
        Some(text) => Interval::parse(&text.replacen('_', "/", usize::from(!text.contains('/')))).map_err(|e| {
            ApiError::new(StatusCode::BAD_REQUEST, "Invalid request", "IllegalArgumentException", e.to_string())
        }),
    }
}

/// The visible segments of `datasource` overlapping `within`: only theirs are read.
async fn segments(s: &ApiState, datasource: &str, within: Interval) -> Result<Vec<SegmentInfo>, ApiError> {
    Ok(sql::table_in(s, datasource, within).await?.map(|t| t.segments).unwrap_or_default())
}

/// Dimension names and metric names, sorted.
type Columns = (BTreeSet<String>, BTreeSet<String>);

/// Dimension and metric names of `segments`.
fn columns<'a>(segments: impl Iterator<Item = &'a SegmentInfo>) -> Columns {
    let (mut dimensions, mut metrics) = (BTreeSet::new(), BTreeSet::new());
    for seg in segments {
        dimensions.extend(seg.dimensions.iter().cloned());
        metrics.extend(seg.metrics.iter().cloned());
    }
    (dimensions, metrics)
}

/// `GET /druid/v2/datasources/{datasource}`: `{"dimensions": [...], "metrics": [...]}`; with
/// `?full`, the same per interval (clipped to the one asked, abutting intervals with the same
/// columns joined), keyed by `start/end`.
pub async fn describe(
    State(s): State<Arc<ApiState>>,
    Path(datasource): Path<String>,
    UrlQuery(params): UrlQuery<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    let within = interval(&params)?;
    let segments = segments(&s, &datasource, within).await?;
    if !params.contains_key("full") {
        let (dimensions, metrics) = columns(segments.iter());
        return Ok(axum::Json(json!({"dimensions": dimensions, "metrics": metrics})));
    }
    let mut by_interval: BTreeMap<Interval, Vec<&SegmentInfo>> = BTreeMap::new();
    for seg in &segments {
        let clipped = Interval::new(seg.interval.start.max(within.start), seg.interval.end.min(within.end));
        by_interval.entry(clipped).or_default().push(seg);
    }
    let mut joined: Vec<(Interval, Columns)> = Vec::new();
    for (i, segs) in by_interval {
        let cols = columns(segs.into_iter());
        match joined.last_mut() {
            Some((last, last_cols)) if last.end == i.start && *last_cols == cols => last.end = i.end,
            _ => joined.push((i, cols)),
        }
    }
    let out: Map<String, Value> = joined
        .into_iter()
        .map(|(i, (dimensions, metrics))| (i.to_string(), json!({"dimensions": dimensions, "metrics": metrics})))
        .collect();
    Ok(axum::Json(Value::Object(out)))
}

/// `GET /druid/v2/datasources/{datasource}/dimensions` (deprecated in Druid).
pub async fn dimensions(
    State(s): State<Arc<ApiState>>,
    Path(datasource): Path<String>,
    UrlQuery(params): UrlQuery<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    let segments = segments(&s, &datasource, interval(&params)?).await?;
    Ok(axum::Json(json!(columns(segments.iter()).0)))
}

/// `GET /druid/v2/datasources/{datasource}/metrics` (deprecated in Druid).
pub async fn metrics(
    State(s): State<Arc<ApiState>>,
    Path(datasource): Path<String>,
    UrlQuery(params): UrlQuery<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    let segments = segments(&s, &datasource, interval(&params)?).await?;
    Ok(axum::Json(json!(columns(segments.iter()).1)))
}
