//! The defaults a supervisor spec is shown with, Druid's way (Druid serializes a spec back
//! with every default filled in), and their removal when such a spec is submitted again: a
//! field at its default is no choice, so it is neither warned about nor allowed to change a
//! setting. Where Sluice's default differs from Druid's (`maxSavedParseExceptions`,
//! `maxTotalRows`), the value shown is Sluice's, so that a shown spec reads as what runs; the
//! intermediate persists' index spec is shown as the one they use (the final segments' when
//! none is given), and kept when submitted.
//! Druid's `Integer.MAX_VALUE` for `maxParseExceptions` means no limit, as in Druid.

use super::resolve::DEFAULT_MAX_ROWS_IN_MEMORY;
use super::tuning::{DEFAULT_MAX_ROWS_PER_SEGMENT, DEFAULT_MAX_TOTAL_ROWS};
use serde_json::{json, Map, Value};

/// Druid's `indexSpec` defaults.
pub fn index_spec() -> Value {
    json!({"bitmap": {"type": "roaring"}, "dimensionCompression": "lz4", "stringDictionaryEncoding": {"type": "utf8"},
           "metricCompression": "lz4", "longEncoding": "longs"})
}

/// A Kafka `tuningConfig`'s defaults.
pub fn tuning() -> Value {
    json!({
        "type": "kafka",
        "appendableIndexSpec": {"type": "onheap", "preserveExistingMetrics": false},
        "maxRowsInMemory": DEFAULT_MAX_ROWS_IN_MEMORY,
        "maxBytesInMemory": 0,
        "skipBytesInMemoryOverheadCheck": false,
        "maxRowsPerSegment": DEFAULT_MAX_ROWS_PER_SEGMENT,
        "maxTotalRows": DEFAULT_MAX_TOTAL_ROWS,
        "intermediatePersistPeriod": "PT10M",
        "maxPendingPersists": 0,
        "indexSpec": index_spec(),
        "reportParseExceptions": false,
        "handoffConditionTimeout": 0,
        "resetOffsetAutomatically": false,
        "segmentWriteOutMediumFactory": null,
        "workerThreads": null,
        "chatRetries": 8,
        "httpTimeout": "PT10S",
        "shutdownTimeout": "PT80S",
        "offsetFetchPeriod": "PT30S",
        "intermediateHandoffPeriod": "P2147483647D",
        "logParseExceptions": false,
        "maxParseExceptions": i32::MAX,
        "maxSavedParseExceptions": 10,
        "skipSequenceNumberAvailabilityCheck": false,
        "repartitionTransitionDuration": "PT120S",
    })
}

/// A Kafka supervisor `ioConfig`'s defaults (besides `stream` and
/// `useEarliestSequenceNumber`, Druid's stream-neutral copies of `topic` and
/// `useEarliestOffset`).
pub fn io() -> Value {
    json!({
        "inputFormat": null,
        "replicas": 1,
        "taskCount": 1,
        "taskDuration": "PT3600S",
        "consumerProperties": {},
        "autoScalerConfig": null,
        "pollTimeout": 100,
        "startDelay": "PT5S",
        "period": "PT30S",
        "useEarliestOffset": false,
        "completionTimeout": "PT1800S",
        "lateMessageRejectionPeriod": null,
        "earlyMessageRejectionPeriod": null,
        "lateMessageRejectionStartDateTime": null,
        "configOverrides": null,
        "idleConfig": null,
    })
}

/// A `granularitySpec`'s defaults (`queryGranularity` as Druid serializes `none`).
pub fn granularity() -> Value {
    json!({"type": "uniform", "segmentGranularity": "DAY", "queryGranularity": {"type": "none"}, "rollup": true,
           "intervals": []})
}

/// A `dimensionsSpec`'s defaults.
pub fn dimensions() -> Value {
    json!({"dimensions": [], "dimensionExclusions": [], "includeAllDimensions": false, "useSchemaDiscovery": false})
}

/// A `timestampSpec`'s defaults.
pub fn timestamp() -> Value {
    json!({"column": "timestamp", "format": "auto", "missingValue": null})
}

/// A `transformSpec`'s defaults.
pub fn transform() -> Value {
    json!({"filter": null, "transforms": []})
}

/// A dimension's defaults by its type.
pub fn dimension(kind: &str) -> Value {
    json!({"type": kind, "multiValueHandling": "SORTED_ARRAY", "createBitmapIndex": kind == "string"})
}

/// The columns Druid adds to a `dimensionsSpec`'s exclusions (its `computeDimensionsSpec`):
/// the timestamp column, `__time`, every metric's name and input field, less the dimensions
/// named; the given exclusions first.
pub fn exclusions(timestamp: &Value, dimensions_spec: &Value, metrics: &Value) -> Vec<String> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let named: Vec<String> = match dimensions_spec.get("dimensions") {
        Some(Value::Array(dims)) => dims.iter().filter_map(|d| text(d.get("name")).or_else(|| text(Some(d)))).collect(),
        _ => Vec::new(),
    };
    let mut out: Vec<String> = match dimensions_spec.get("dimensionExclusions") {
        Some(Value::Array(given)) => given.iter().filter_map(|v| text(Some(v))).collect(),
        _ => Vec::new(),
    };
    let mut added: Vec<String> = implied_exclusions(timestamp, metrics);
    added.sort();
    for name in added {
        if !named.contains(&name) && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// The timestamp column, `__time`, and every metric's name and input field.
fn implied_exclusions(timestamp: &Value, metrics: &Value) -> Vec<String> {
    let column = timestamp.get("column").and_then(Value::as_str).unwrap_or("timestamp");
    let mut out = vec![column.to_string(), "__time".to_string()];
    if let Value::Array(metrics) = metrics {
        for m in metrics {
            for key in ["name", "fieldName"] {
                if let Some(name) = m.get(key).and_then(Value::as_str) {
                    out.push(name.to_string());
                }
            }
        }
    }
    out
}

/// `given` with its missing fields taken from `defaults`.
pub fn filled(given: &Value, defaults: Value) -> Value {
    let mut out = given.as_object().cloned().unwrap_or_default();
    if let Value::Object(defaults) = defaults {
        for (k, v) in defaults {
            out.entry(k).or_insert(v);
        }
    }
    Value::Object(out)
}

/// Removes from `section` every field equal to its value in `defaults`.
fn strip(section: Option<&mut Value>, defaults: &Value) {
    let (Some(Value::Object(fields)), Value::Object(defaults)) = (section, defaults) else { return };
    fields.retain(|k, v| defaults.get(k) != Some(v));
}

/// Removes every field at its shown default from a spec body (the `spec` object, or the
/// older flat form), before it is read; and the exclusions Druid adds (`exclusions`), which
/// discovery makes anyway.
pub fn strip_defaults(body: &mut Map<String, Value>) {
    if let Some(Value::Object(io)) = body.get_mut("ioConfig") {
        let stream = io.get("topic").or_else(|| io.get("topicPattern")).cloned();
        if io.get("stream").is_some_and(|s| Some(s) == stream.as_ref()) {
            io.remove("stream");
        }
        let earliest = io.get("useEarliestOffset").cloned().unwrap_or(json!(false));
        if io.get("useEarliestSequenceNumber") == Some(&earliest) {
            io.remove("useEarliestSequenceNumber");
        }
    }
    strip(body.get_mut("ioConfig"), &io());
    if let Some(Value::Object(tuning)) = body.get_mut("tuningConfig") {
        // Inside an index spec that is not all defaults, its default fields.
        for name in ["indexSpec", "indexSpecForIntermediatePersists"] {
            strip(tuning.get_mut(name), &index_spec());
        }
    }
    strip(body.get_mut("tuningConfig"), &tuning());
    let Some(Value::Object(schema)) = body.get_mut("dataSchema") else { return };
    strip(schema.get_mut("granularitySpec"), &granularity());
    strip(schema.get_mut("timestampSpec"), &json!({"missingValue": null}));
    strip(schema.get_mut("transformSpec"), &json!({"filter": null}));
    let implied = implied_exclusions(
        schema.get("timestampSpec").unwrap_or(&Value::Null),
        &schema.get("metricsSpec").cloned().unwrap_or(Value::Null),
    );
    let dimensions_spec = schema.get_mut("dimensionsSpec");
    if let Some(Value::Object(spec)) = dimensions_spec {
        if let Some(Value::Array(excluded)) = spec.get_mut("dimensionExclusions") {
            excluded.retain(|e| !e.as_str().is_some_and(|e| implied.iter().any(|i| i == e)));
        }
        if let Some(Value::Array(dims)) = spec.get_mut("dimensions") {
            for d in dims.iter_mut() {
                let kind = d.get("type").and_then(Value::as_str).unwrap_or("string").to_string();
                let mut defaults = dimension(&kind);
                if let Value::Object(fields) = &mut defaults {
                    fields.remove("type");
                }
                strip(Some(d), &defaults);
            }
        }
        spec.retain(|k, v| {
            !(matches!(k.as_str(), "includeAllDimensions" | "useSchemaDiscovery") && v == &json!(false))
        });
    }
}
