//! A supervisor spec as Druid answers it: Druid holds a submitted spec as a
//! `KafkaSupervisorSpec` and serializes it back with every default filled in, its
//! `dataSchema`, `tuningConfig` and `ioConfig` both under `spec` and at the top, with
//! `context` and `suspended`. Tools (the web console, Airflow's and Superset's spec editors)
//! read those fields; a spec shown here has them, secrets redacted, with Sluice's own
//! (`sluiceConfig`) beside, and submits again unchanged (the defaults are
//! `sluice_format::spec::druid_defaults`, removed again when a spec is read).

use serde_json::{json, Map, Value};
use sluice_format::spec::druid_defaults::{self as defaults, filled};
use sluice_format::spec::redacted_spec;

/// `stored` (a spec as submitted, either form) redacted and in Druid's serialized shape.
pub fn shown(stored: &Value, suspended: bool) -> Value {
    let redacted = redacted_spec(stored);
    let body = redacted.get("spec").filter(|b| b.is_object()).unwrap_or(&redacted);
    let data_schema = data_schema(body.get("dataSchema").unwrap_or(&Value::Null));
    let tuning = tuning_config(body.get("tuningConfig").unwrap_or(&Value::Null));
    let io = io_config(body.get("ioConfig").unwrap_or(&Value::Null));
    let mut out = Map::new();
    out.insert("type".into(), redacted.get("type").cloned().unwrap_or_else(|| json!("kafka")));
    out.insert("spec".into(), json!({"dataSchema": data_schema, "ioConfig": io, "tuningConfig": tuning}));
    out.insert("dataSchema".into(), data_schema);
    out.insert("tuningConfig".into(), tuning);
    out.insert("ioConfig".into(), io);
    let context = redacted.get("context").or_else(|| body.get("context")).cloned().unwrap_or(Value::Null);
    out.insert("context".into(), context);
    out.insert("suspended".into(), json!(suspended));
    // Sluice's own sections (and anything else submitted) beside Druid's.
    for source in [&redacted, body] {
        if let Some(fields) = source.as_object() {
            for (k, v) in fields {
                if !out.contains_key(k) {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
    }
    Value::Object(out)
}

/// A `dataSchema` as Druid serializes it: `timestampSpec` and `dimensionsSpec` filled in
/// (none beside a legacy `parser`, which holds its own, as in Druid), each dimension an
/// object with its type and indexing, and the granularity and transform specs whole.
pub fn data_schema(given: &Value) -> Value {
    let mut out = given.as_object().cloned().unwrap_or_default();
    if !out.contains_key("parser") {
        let timestamp = filled(out.get("timestampSpec").unwrap_or(&Value::Null), defaults::timestamp());
        let mut dimensions = dimensions_spec(out.get("dimensionsSpec").unwrap_or(&Value::Null));
        let excluded = defaults::exclusions(&timestamp, &dimensions, out.get("metricsSpec").unwrap_or(&Value::Null));
        dimensions["dimensionExclusions"] = json!(excluded);
        out.insert("timestampSpec".into(), timestamp);
        out.insert("dimensionsSpec".into(), dimensions);
    }
    out.entry("metricsSpec").or_insert(json!([]));
    let granularity = out.get("granularitySpec").cloned().unwrap_or(Value::Null);
    out.insert("granularitySpec".into(), granularity_spec(&granularity));
    let transform = out.get("transformSpec").cloned().unwrap_or(Value::Null);
    out.insert("transformSpec".into(), filled(&transform, defaults::transform()));
    Value::Object(out)
}

fn dimensions_spec(given: &Value) -> Value {
    let mut out = filled(given, defaults::dimensions());
    if let Some(Value::Array(dims)) = out.get_mut("dimensions") {
        for d in dims.iter_mut() {
            let named = match &*d {
                Value::String(name) => json!({"type": "string", "name": name}),
                other => other.clone(),
            };
            let kind = named.get("type").and_then(Value::as_str).unwrap_or("string").to_string();
            *d = filled(&named, defaults::dimension(&kind));
        }
    }
    out
}

/// Druid serializes a standard query granularity by its name (`"HOUR"`), and `none` and
/// `all` as objects.
fn granularity_spec(given: &Value) -> Value {
    let mut out = filled(given, defaults::granularity());
    if let Some(Value::String(name)) = out.get_mut("segmentGranularity") {
        *name = name.to_ascii_uppercase();
    }
    if let Some(q) = out.get_mut("queryGranularity") {
        if let Some(name) = q.as_str().map(str::to_ascii_lowercase) {
            *q = match name.as_str() {
                "none" | "all" => json!({"type": name}),
                _ => json!(name.to_ascii_uppercase()),
            };
        }
    }
    out
}

/// A Kafka `tuningConfig` with its defaults filled in; the intermediate persists' index spec
/// is the final segments' unless given, as Sluice runs them.
pub fn tuning_config(given: &Value) -> Value {
    let mut out = filled(given, defaults::tuning());
    let index = filled(out.get("indexSpec").unwrap_or(&Value::Null), defaults::index_spec());
    let intermediate = out.get("indexSpecForIntermediatePersists").cloned().unwrap_or_else(|| index.clone());
    out["indexSpec"] = index;
    out["indexSpecForIntermediatePersists"] = filled(&intermediate, defaults::index_spec());
    out
}

/// A Kafka supervisor's `ioConfig` with its defaults filled in, and `stream` and
/// `useEarliestSequenceNumber` (Druid's stream-neutral names) beside `topic` and
/// `useEarliestOffset`; its `type` is not serialized, as in Druid.
fn io_config(given: &Value) -> Value {
    let mut out = filled(given, defaults::io());
    if let Value::Object(fields) = &mut out {
        fields.remove("type");
    }
    let stream = out.get("topic").or_else(|| out.get("topicPattern")).cloned().unwrap_or(Value::Null);
    let earliest = out.get("useEarliestOffset").cloned().unwrap_or(json!(false));
    if let Value::Object(fields) = &mut out {
        fields.entry("stream").or_insert(stream);
        fields.entry("useEarliestSequenceNumber").or_insert(earliest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn legacy() -> Value {
        json!({"type": "kafka", "dataSchema": {"dataSource": "wiki", "parser": {"type": "string", "parseSpec": {
            "format": "json", "timestampSpec": {"column": "time"},
            "dimensionsSpec": {"dimensions": ["page", {"name": "added", "type": "long"}]}}},
            "granularitySpec": {"segmentGranularity": "HOUR", "queryGranularity": "NONE", "rollup": false}},
            "ioConfig": {"topic": "edits", "consumerProperties": {"bootstrap.servers": "b:9092",
                "sasl.jaas.config": "password=hunter2"}, "useEarliestOffset": true},
            "sluiceConfig": {"maxRecordsPerTask": 10}})
    }

    #[test]
    fn a_legacy_spec_is_shown_in_druids_serialized_shape_with_sluices_fields_beside() {
        let shown = shown(&legacy(), true);
        assert_eq!(shown["spec"]["dataSchema"], shown["dataSchema"]);
        assert_eq!(shown["suspended"], json!(true));
        assert_eq!(shown["context"], Value::Null);
        let ds = &shown["dataSchema"];
        assert_eq!(ds["timestampSpec"], Value::Null, "a parser holds its own, as in Druid");
        let modern = data_schema(&json!({"timestampSpec": {"column": "time"},
            "dimensionsSpec": {"dimensions": ["page", {"name": "added", "type": "long"}]}}));
        assert_eq!(modern["timestampSpec"], json!({"column": "time", "format": "auto", "missingValue": null}));
        assert_eq!(modern["dimensionsSpec"]["dimensionExclusions"], json!(["__time", "time"]));
        let dims = &modern["dimensionsSpec"]["dimensions"];
        assert_eq!(
            dims[0],
            json!({"type": "string", "name": "page", "multiValueHandling": "SORTED_ARRAY",
            "createBitmapIndex": true})
        );
        assert_eq!(dims[1]["createBitmapIndex"], json!(false));
        assert_eq!(ds["granularitySpec"]["queryGranularity"], json!({"type": "none"}));
        assert_eq!(ds["granularitySpec"]["segmentGranularity"], json!("HOUR"));
        assert_eq!(ds["granularitySpec"]["rollup"], json!(false), "a submitted field is kept");
        assert_eq!(ds["transformSpec"], json!({"filter": null, "transforms": []}));
        assert_eq!(shown["ioConfig"]["stream"], json!("edits"));
        assert_eq!(shown["ioConfig"]["useEarliestSequenceNumber"], json!(true));
        assert_eq!(shown["ioConfig"]["taskCount"], json!(1));
        assert_eq!(shown["tuningConfig"]["maxRowsInMemory"], json!(150_000));
        assert_eq!(shown["tuningConfig"]["maxSavedParseExceptions"], json!(10), "Sluice's default, which runs");
        assert_eq!(shown["sluiceConfig"], json!({"maxRecordsPerTask": 10}));
        assert!(!shown.to_string().contains("hunter2"), "secrets are redacted: {shown}");
    }

    #[test]
    fn the_wrapped_form_gives_the_same_answer_as_the_flat_one() {
        let flat = legacy();
        let mut body = flat.clone();
        body.as_object_mut().expect("object").remove("type");
        let wrapped = json!({"type": "kafka", "spec": body});
        assert_eq!(shown(&wrapped, false), shown(&flat, false));
    }

    fn modern() -> Value {
        json!({"type": "kafka", "spec": {"dataSchema": {"dataSource": "social", "timestampSpec": {"column": "ts",
            "format": "iso"}, "dimensionsSpec": {"dimensions": ["user", {"type": "long", "name": "views"}]},
            "metricsSpec": [{"type": "count", "name": "count"}],
            "granularitySpec": {"segmentGranularity": "HOUR", "queryGranularity": "minute"}},
            "ioConfig": {"topic": "social", "inputFormat": {"type": "json"}, "taskCount": 2,
                "consumerProperties": {"bootstrap.servers": "b:9092"}},
            "tuningConfig": {"type": "kafka", "maxRowsPerSegment": 1000, "maxParseExceptions": 5,
                "indexSpec": {"dimensionCompression": "zstd", "metricCompression": "zstd"}}}})
    }

    #[test]
    fn a_shown_spec_submitted_again_resolves_as_the_original_without_new_warnings() {
        let mut lz4_intermediates = modern();
        lz4_intermediates["spec"]["tuningConfig"]["indexSpecForIntermediatePersists"] =
            json!({"dimensionCompression": "lz4"});
        for spec in [legacy(), modern(), lz4_intermediates] {
            let original = sluice_format::spec::load_spec_value(spec.clone()).expect("loads");
            let mut again = shown(&spec, false);
            for at in ["/ioConfig/consumerProperties", "/spec/ioConfig/consumerProperties"] {
                let secret = spec.pointer("/ioConfig/consumerProperties/sasl.jaas.config").cloned();
                if let (Some(secret), Some(Value::Object(props))) = (secret, again.pointer_mut(at)) {
                    props.insert("sasl.jaas.config".into(), secret);
                }
            }
            let reloaded = sluice_format::spec::load_spec_value(again).expect("loads");
            assert_eq!(format!("{:?}", reloaded.spec), format!("{:?}", original.spec));
            let fields = |w: &[sluice_format::spec::SpecWarning]| w.iter().map(|w| w.field.clone()).collect::<Vec<_>>();
            assert_eq!(fields(&reloaded.warnings), fields(&original.warnings), "{spec}");
        }
    }

    #[test]
    fn a_standard_query_granularity_keeps_its_name() {
        let g = granularity_spec(&json!({"queryGranularity": "minute"}));
        assert_eq!(g["queryGranularity"], json!("MINUTE"));
        assert_eq!(granularity_spec(&json!({"queryGranularity": "all"}))["queryGranularity"], json!({"type": "all"}));
        assert_eq!(g["rollup"], json!(true), "Druid's default");
    }
}
