//! Druid's automatic compaction configuration (`DataSourceCompactionConfig`), as
//! `POST /druid/coordinator/v1/config/compaction` takes it: parsed, checked, and filled with
//! Druid's defaults the way its `GET` returns it.
//!
//! Read: `dataSource`, `skipOffsetFromLatest`, `tuningConfig.partitionsSpec` (`dynamic`:
//! `maxRowsPerSegment`, `maxTotalRows`) or the older top-level `maxRowsPerSegment`,
//! `granularitySpec` (`segmentGranularity`, `queryGranularity`, `rollup`; each absent one keeps
//! what the segments have), `dimensionsSpec.dimensions` and `metricsSpec`. Kept and ignored with
//! a warning: `taskPriority`, `taskContext`, `inputSegmentSizeBytes`, `engine`, `ioConfig`
//! and the other tuning options. Refused: other partitioning and a `transformSpec` (a filter
//! that would silently keep rows it is meant to drop).

use serde::Deserialize;
use serde_json::{Map, Value};
use sluice_format::granularity::Granularity;
use sluice_format::spec::data_schema::DimensionJson;
use sluice_format::spec::{datasource_name_problem, AggregatorSpec, DimensionSchema, SpecError, SpecWarning};
use sluice_format::spec::{DEFAULT_MAX_ROWS_PER_SEGMENT, DEFAULT_MAX_TOTAL_ROWS};
use sluice_format::time::Period;
use std::collections::BTreeMap;

/// `skipOffsetFromLatest`'s default.
pub const DEFAULT_SKIP_OFFSET: &str = "P1D";
/// `taskPriority`'s default.
pub const DEFAULT_TASK_PRIORITY: i64 = 25;
/// `inputSegmentSizeBytes`'s default.
pub const DEFAULT_INPUT_SEGMENT_SIZE_BYTES: u64 = 100_000_000_000_000;

/// A datasource's compaction configuration, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionConfig {
    /// The datasource.
    pub data_source: String,
    /// Chunks ending after the latest segment's end minus this are left alone.
    pub skip_offset_from_latest: Period,
    /// Rows per compacted segment at most.
    pub max_rows_per_segment: u64,
    /// Rows a compaction holds before it writes segments out.
    pub max_total_rows: u64,
    /// Time chunks of the compacted segments (`None`: the chunks they have).
    pub segment_granularity: Option<Granularity>,
    /// Timestamp truncation of the compacted rows (`None`: as they are).
    pub query_granularity: Option<Granularity>,
    /// Whether equal rows are combined (`None`: as the datasource's spec says).
    pub rollup: Option<bool>,
    /// Dimensions of the compacted segments (`None`: the segments' own).
    pub dimensions: Option<Vec<DimensionSchema>>,
    /// Metrics of the compacted segments (`None`: the segments' own).
    pub metrics: Option<Vec<AggregatorSpec>>,
    /// The configuration as Druid's `GET` returns it: as submitted, defaults filled.
    pub json: Value,
}

impl CompactionConfig {
    /// What the configuration asks compaction to change in the rows (`queryGranularity`,
    /// `rollup`, `dimensionsSpec`, `metricsSpec`) as canonical JSON text, recorded on the
    /// segments a compaction writes (Druid's `lastCompactionState`): a segment without it, or
    /// with another, is not compacted yet. `None` when it asks for none of them.
    pub fn row_changes(&self) -> Option<String> {
        let g = &self.json["granularitySpec"];
        let changes = serde_json::json!({
            "queryGranularity": g.get("queryGranularity"),
            "rollup": g.get("rollup"),
            "dimensions": self.json["dimensionsSpec"].get("dimensions"),
            "metricsSpec": self.json.get("metricsSpec"),
        });
        let asked = changes.as_object().is_some_and(|o| o.values().any(|v| !v.is_null()));
        asked.then(|| changes.to_string())
    }
}

/// A checked configuration and what in it is ignored.
#[derive(Debug, Clone)]
pub struct LoadedCompaction {
    /// The configuration.
    pub config: CompactionConfig,
    /// Options ignored or unknown, by name.
    pub warnings: Vec<SpecWarning>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigJson {
    data_source: Option<String>,
    task_priority: Option<i64>,
    input_segment_size_bytes: Option<u64>,
    max_rows_per_segment: Option<u64>,
    skip_offset_from_latest: Option<String>,
    tuning_config: Option<TuningJson>,
    task_context: Option<Value>,
    granularity_spec: Option<GranularityJson>,
    dimensions_spec: Option<DimensionsJson>,
    transform_spec: Option<Value>,
    metrics_spec: Option<Vec<AggregatorSpec>>,
    io_config: Option<Value>,
    engine: Option<Value>,
    #[serde(flatten)]
    other: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TuningJson {
    partitions_spec: Option<PartitionsJson>,
    #[serde(flatten)]
    other: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartitionsJson {
    #[serde(rename = "type")]
    kind: Option<String>,
    max_rows_per_segment: Option<u64>,
    max_total_rows: Option<u64>,
    #[serde(flatten)]
    other: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GranularityJson {
    segment_granularity: Option<Granularity>,
    query_granularity: Option<Granularity>,
    rollup: Option<bool>,
    #[serde(flatten)]
    other: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DimensionsJson {
    dimensions: Option<Vec<DimensionJson>>,
    #[serde(flatten)]
    other: BTreeMap<String, Value>,
}

/// The fields of Druid's configuration, in the order its `GET` returns them.
const FIELDS: [&str; 13] = [
    "dataSource",
    "taskPriority",
    "inputSegmentSizeBytes",
    "maxRowsPerSegment",
    "skipOffsetFromLatest",
    "tuningConfig",
    "taskContext",
    "granularitySpec",
    "dimensionsSpec",
    "metricsSpec",
    "transformSpec",
    "ioConfig",
    "engine",
];

/// Loads a compaction configuration from its JSON text.
pub fn load_compaction_config(text: &str) -> Result<LoadedCompaction, SpecError> {
    let raw: Value = serde_json::from_str(text).map_err(|e| SpecError::Json(e.to_string()))?;
    load_compaction_value(raw)
}

/// Loads a compaction configuration from a parsed JSON value.
pub fn load_compaction_value(raw: Value) -> Result<LoadedCompaction, SpecError> {
    let Value::Object(object) = &raw else {
        return Err(SpecError::field("compaction config", "expected a JSON object"));
    };
    let parsed: ConfigJson =
        serde_json::from_value(raw.clone()).map_err(|e| SpecError::field("compaction config", e.to_string()))?;
    let mut warnings = Vec::new();
    let mut warn =
        |field: &str, message: &str| warnings.push(SpecWarning { field: field.into(), message: message.into() });
    let data_source =
        parsed.data_source.ok_or_else(|| SpecError::field("dataSource", "missing: name the datasource"))?;
    if let Some(problem) = datasource_name_problem(&data_source) {
        return Err(SpecError::field("dataSource", format!("datasource name {problem}")));
    }
    let skip_text = parsed.skip_offset_from_latest.as_deref().unwrap_or(DEFAULT_SKIP_OFFSET);
    let skip_offset_from_latest =
        Period::parse(skip_text).map_err(|e| SpecError::field("skipOffsetFromLatest", e.to_string()))?;
    if skip_offset_from_latest.months < 0 || skip_offset_from_latest.millis < 0 {
        return Err(SpecError::field("skipOffsetFromLatest", format!("{skip_text:?} is negative")));
    }
    let (max_rows_per_segment, max_total_rows) =
        partitions(parsed.max_rows_per_segment, parsed.tuning_config, &mut warn)?;
    let granularity = parsed.granularity_spec.map_or(Ok((None, None, None)), |g| {
        for key in g.other.keys() {
            warn(&format!("granularitySpec.{key}"), "unknown option, ignored");
        }
        if g.segment_granularity == Some(Granularity::None) {
            return Err(SpecError::field("granularitySpec.segmentGranularity", "NONE is not a segment granularity"));
        }
        Ok((g.segment_granularity, g.query_granularity, g.rollup))
    })?;
    let dimensions = match parsed.dimensions_spec {
        None => None,
        Some(d) => {
            for key in d.other.keys() {
                warn(&format!("dimensionsSpec.{key}"), "not applied by compaction, ignored");
            }
            d.dimensions.map(|dims| dims.iter().map(DimensionJson::schema).collect::<Vec<_>>())
        }
    };
    if let Some(dims) = &dimensions {
        let mut names: Vec<&str> = dims.iter().map(|d| d.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(SpecError::field("dimensionsSpec.dimensions", format!("{:?} is listed twice", w[0])));
        }
    }
    if parsed.transform_spec.as_ref().is_some_and(|t| !t.is_null()) {
        return Err(SpecError::field(
            "transformSpec",
            "compaction does not apply transforms or filters: remove it, or filter at ingestion",
        ));
    }
    for (field, value, message) in [
        ("taskPriority", parsed.task_priority.map(Value::from), "compaction runs are not prioritized; ignored"),
        ("taskContext", parsed.task_context, "ignored"),
        (
            "inputSegmentSizeBytes",
            parsed.input_segment_size_bytes.map(Value::from),
            "ignored: a chunk is compacted whatever its size",
        ),
        ("engine", parsed.engine, "ignored: Sluice's own merge compacts"),
        ("ioConfig", parsed.io_config, "ignored: compaction replaces exactly the segments it read"),
    ] {
        if value.is_some_and(|v| !v.is_null()) {
            warn(field, message);
        }
    }
    for key in parsed.other.keys() {
        warn(key, "unknown option, ignored");
    }
    let (segment_granularity, query_granularity, rollup) = granularity;
    let config = CompactionConfig {
        json: druid_json(object, &data_source, skip_text),
        data_source,
        skip_offset_from_latest,
        max_rows_per_segment,
        max_total_rows,
        segment_granularity,
        query_granularity,
        rollup,
        dimensions,
        metrics: parsed.metrics_spec,
    };
    Ok(LoadedCompaction { config, warnings })
}

/// `maxRowsPerSegment` and `maxTotalRows` from the dynamic partitions spec or the older
/// top-level field.
fn partitions(
    top_level: Option<u64>,
    tuning: Option<TuningJson>,
    warn: &mut impl FnMut(&str, &str),
) -> Result<(u64, u64), SpecError> {
    let mut max_rows = top_level;
    let mut max_total = None;
    if let Some(t) = tuning {
        for key in t.other.keys().filter(|k| k.as_str() != "type") {
            warn(&format!("tuningConfig.{key}"), "not applied by compaction, ignored");
        }
        if let Some(p) = t.partitions_spec {
            match p.kind.as_deref().unwrap_or("dynamic") {
                "dynamic" => {}
                other => {
                    return Err(SpecError::field(
                        "tuningConfig.partitionsSpec.type",
                        format!("{other:?}: only dynamic partitioning is supported"),
                    ))
                }
            }
            for key in p.other.keys() {
                warn(&format!("tuningConfig.partitionsSpec.{key}"), "unknown option, ignored");
            }
            if let (Some(a), Some(b)) = (top_level, p.max_rows_per_segment) {
                if a != b {
                    return Err(SpecError::field(
                        "maxRowsPerSegment",
                        format!("{a} differs from tuningConfig.partitionsSpec.maxRowsPerSegment {b}: set one"),
                    ));
                }
            }
            max_rows = max_rows.or(p.max_rows_per_segment);
            max_total = p.max_total_rows;
        }
    }
    let max_rows = max_rows.unwrap_or(DEFAULT_MAX_ROWS_PER_SEGMENT);
    let max_total = max_total.unwrap_or(DEFAULT_MAX_TOTAL_ROWS);
    if max_rows == 0 || max_total == 0 {
        return Err(SpecError::field(
            "tuningConfig.partitionsSpec",
            "maxRowsPerSegment and maxTotalRows must be positive",
        ));
    }
    Ok((max_rows, max_total))
}

/// The submitted object with Druid's defaults filled and unknown fields dropped, fields in
/// Druid's order.
fn druid_json(object: &Map<String, Value>, data_source: &str, skip: &str) -> Value {
    let mut out = Map::new();
    for field in FIELDS {
        let value = match field {
            "dataSource" => Value::from(data_source),
            "skipOffsetFromLatest" => Value::from(skip),
            "taskPriority" => {
                object.get(field).filter(|v| !v.is_null()).cloned().unwrap_or(DEFAULT_TASK_PRIORITY.into())
            }
            "inputSegmentSizeBytes" => {
                object.get(field).filter(|v| !v.is_null()).cloned().unwrap_or(DEFAULT_INPUT_SEGMENT_SIZE_BYTES.into())
            }
            _ => object.get(field).cloned().unwrap_or(Value::Null),
        };
        out.insert(field.to_string(), value);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(json: Value) -> Result<LoadedCompaction, SpecError> {
        load_compaction_value(json)
    }

    #[test]
    fn druids_documented_example_loads_with_defaults_filled() {
        // The example of Druid's automatic compaction API documentation.
        let loaded = load(serde_json::json!({
            "dataSource": "wikipedia_hour",
            "skipOffsetFromLatest": "PT0S",
            "tuningConfig": {"partitionsSpec": {"type": "dynamic"}},
            "granularitySpec": {"segmentGranularity": "DAY"}
        }))
        .expect("documented config");
        let c = &loaded.config;
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert_eq!(c.data_source, "wikipedia_hour");
        assert_eq!(c.skip_offset_from_latest, Period { months: 0, millis: 0 });
        assert_eq!((c.max_rows_per_segment, c.max_total_rows), (DEFAULT_MAX_ROWS_PER_SEGMENT, DEFAULT_MAX_TOTAL_ROWS));
        assert_eq!(c.segment_granularity, Granularity::from_name("day"));
        assert_eq!((c.query_granularity, c.rollup, &c.dimensions, &c.metrics), (None, None, &None, &None));
        assert_eq!(c.json["taskPriority"], 25);
        assert_eq!(c.json["inputSegmentSizeBytes"], 100_000_000_000_000_u64);
        assert_eq!(c.json["metricsSpec"], Value::Null);
        let keys: Vec<&String> = c.json.as_object().expect("object").keys().collect();
        assert_eq!(keys.len(), FIELDS.len(), "{keys:?}");
    }

    #[test]
    fn only_the_datasource_is_required() {
        let c = load(serde_json::json!({"dataSource": "wiki"})).expect("minimal").config;
        assert_eq!(c.skip_offset_from_latest, Period::parse("P1D").expect("period"));
        assert_eq!(c.json["skipOffsetFromLatest"], "P1D");
        let err = load(serde_json::json!({"skipOffsetFromLatest": "P1D"})).expect_err("no datasource");
        assert_eq!(err.to_string(), "dataSource: missing: name the datasource");
    }

    #[test]
    fn rows_per_segment_come_from_either_place_once() {
        let top = load(serde_json::json!({"dataSource": "w", "maxRowsPerSegment": 1000})).expect("top level").config;
        assert_eq!(top.max_rows_per_segment, 1000);
        let dynamic =
            serde_json::json!({"partitionsSpec": {"type": "dynamic", "maxRowsPerSegment": 10, "maxTotalRows": 50}});
        let nested = load(serde_json::json!({"dataSource": "w", "tuningConfig": dynamic})).expect("nested").config;
        assert_eq!((nested.max_rows_per_segment, nested.max_total_rows), (10, 50));
        let both = serde_json::json!({"dataSource": "w", "maxRowsPerSegment": 11, "tuningConfig": dynamic});
        assert!(load(both).expect_err("conflict").to_string().starts_with("maxRowsPerSegment: 11 differs"));
    }

    #[test]
    fn what_would_change_the_rows_silently_is_refused() {
        let cases = [
            (
                serde_json::json!({"dataSource": "w", "transformSpec": {"filter": {"type": "selector", "dimension": "a", "value": "b"}}}),
                "transformSpec",
            ),
            (
                serde_json::json!({"dataSource": "w", "tuningConfig": {"partitionsSpec": {"type": "hashed"}}}),
                "tuningConfig.partitionsSpec.type",
            ),
            (
                serde_json::json!({"dataSource": "w", "granularitySpec": {"segmentGranularity": "NONE"}}),
                "granularitySpec.segmentGranularity",
            ),
            (serde_json::json!({"dataSource": "w", "skipOffsetFromLatest": "yesterday"}), "skipOffsetFromLatest"),
            (serde_json::json!({"dataSource": "a/b"}), "dataSource"),
            (
                serde_json::json!({"dataSource": "w", "dimensionsSpec": {"dimensions": ["a", "a"]}}),
                "dimensionsSpec.dimensions",
            ),
            (
                serde_json::json!({"dataSource": "w", "tuningConfig": {"partitionsSpec": {"maxRowsPerSegment": 0}}}),
                "tuningConfig.partitionsSpec",
            ),
        ];
        for (json, field) in cases {
            match load(json.clone()) {
                Err(SpecError::Field { field: f, .. }) => assert_eq!(f, field, "{json}"),
                other => panic!("{json}: {other:?}"),
            }
        }
        assert!(matches!(load(serde_json::json!([1])), Err(SpecError::Field { .. })));
        assert!(matches!(load(serde_json::json!({"dataSource": 7})), Err(SpecError::Field { .. })));
    }

    #[test]
    fn options_not_applied_are_named_warnings_and_kept() {
        let loaded = load(serde_json::json!({
            "dataSource": "w",
            "taskPriority": 50,
            "taskContext": {"priority": 1},
            "tuningConfig": {"type": "index_parallel", "maxNumConcurrentSubTasks": 4},
            "dimensionsSpec": {"dimensions": ["page", {"type": "long", "name": "added"}], "dimensionExclusions": ["x"]},
            "metricsSpec": [{"type": "count", "name": "count"}],
            "granularitySpec": {"queryGranularity": "HOUR", "rollup": true},
            "somethingNew": 1
        }))
        .expect("config");
        let fields: Vec<&str> = loaded.warnings.iter().map(|w| w.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "tuningConfig.maxNumConcurrentSubTasks",
                "dimensionsSpec.dimensionExclusions",
                "taskPriority",
                "taskContext",
                "somethingNew"
            ]
        );
        let c = &loaded.config;
        assert_eq!(c.json["taskPriority"], 50);
        assert!(c.json.get("somethingNew").is_none(), "unknown fields are not echoed");
        let dims: Vec<&str> = c.dimensions.as_ref().expect("dimensions").iter().map(|d| d.name.as_str()).collect();
        assert_eq!(dims, ["page", "added"]);
        assert_eq!(c.metrics.as_ref().map(Vec::len), Some(1));
        assert_eq!((c.query_granularity, c.rollup), (Granularity::from_name("hour"), Some(true)));
    }
}
