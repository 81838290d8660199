//! Unit tests of the supervisor spec: loading, defaults and what is refused.

use super::*;
use crate::granularity::Granularity;

fn data(name: &str) -> String {
    let path = format!("{}/../../data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn druid_tutorial_kafka_spec_loads_unchanged() {
    let loaded = load_spec(&data("specs/wikipedia-kafka-supervisor.json")).expect("tutorial spec");
    let spec = &loaded.spec;
    assert_eq!(spec.data_source, "wikipedia");
    assert_eq!(spec.io.source, crate::spec::TopicSource::Topic("wikipedia".into()));
    assert_eq!(spec.timestamp.column, "time");
    assert_eq!(spec.dimensions.len(), 19);
    assert_eq!(spec.dimensions[16].name, "added");
    assert_eq!(spec.dimensions[16].kind, DimensionType::Long);
    assert!(!spec.granularity.rollup);
    assert_eq!(spec.granularity.segment_granularity, Granularity::from_name("day").expect("day"));
    assert_eq!(spec.io.consumer_properties["bootstrap.servers"], "localhost:9092");
    assert!(matches!(spec.input_format, InputFormat::Json { .. }));
    let fields: Vec<&str> = loaded.warnings.iter().map(|w| w.field.as_str()).collect();
    assert!(fields.contains(&"ioConfig.replicas"), "{fields:?}");
    assert!(fields.contains(&"ioConfig.completionTimeout"), "{fields:?}");
    assert!(!fields.contains(&"tuningConfig.reportParseExceptions"), "false is the default: no choice to warn of");
}

#[test]
fn current_form_spec_loads_with_metrics() {
    let loaded = load_spec(&data("specs/rollup-kafka-supervisor.json")).expect("rollup spec");
    let spec = &loaded.spec;
    assert_eq!(spec.data_source, "rollup-tutorial");
    assert_eq!(spec.metrics.len(), 3);
    assert_eq!(spec.metrics[1].name(), "packets");
    assert_eq!(spec.tuning.max_rows_in_memory, 25_000);
    assert!(spec.io.use_earliest_offset);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

fn with(path: &[&str], value: serde_json::Value) -> Result<LoadedSpec, SpecError> {
    let mut json: serde_json::Value = serde_json::from_str(&data("specs/rollup-kafka-supervisor.json")).expect("json");
    let mut at = &mut json["spec"];
    for key in &path[..path.len() - 1] {
        at = if let Ok(i) = key.parse::<usize>() { &mut at[i] } else { &mut at[*key] };
    }
    at[path[path.len() - 1]] = value;
    load_spec_value(json)
}

fn field_of(err: SpecError) -> String {
    match err {
        SpecError::Field { field, .. } => field,
        other => panic!("expected a field error, got {other}"),
    }
}

#[test]
fn invalid_values_name_the_field() {
    use serde_json::json;
    let cases: Vec<(&[&str], serde_json::Value, &str)> = vec![
        (&["tuningConfig", "maxRowsInMemory"], json!(-5), "spec.tuningConfig.maxRowsInMemory"),
        (&["tuningConfig", "maxRowsInMemory"], json!(0), "spec.tuningConfig.maxRowsInMemory"),
        (&["tuningConfig", "maxBytesInMemory"], json!(-7), "spec.tuningConfig.maxBytesInMemory"),
        (&["ioConfig", "taskCount"], json!(0), "spec.ioConfig.taskCount"),
        (&["ioConfig", "taskDuration"], json!("ten minutes"), "spec.ioConfig.taskDuration"),
        (
            &["dataSchema", "granularitySpec", "segmentGranularity"],
            json!("fortnight"),
            "spec.dataSchema.granularitySpec.segmentGranularity",
        ),
        (&["dataSchema", "metricsSpec", "1", "type"], json!("longSummm"), "spec.dataSchema.metricsSpec[1]"),
        (&["dataSchema", "timestampSpec", "format"], json!("yyyy-MM-dd'T"), "spec.dataSchema.timestampSpec.format"),
        (
            &["tuningConfig", "indexSpec"],
            json!({"dimensionCompression": "snappy"}),
            "spec.tuningConfig.indexSpec.dimensionCompression",
        ),
        (&["ioConfig", "consumerProperties"], json!({}), "spec.ioConfig.consumerProperties"),
        (&["dataSchema", "dataSource"], json!(""), "spec.dataSchema.dataSource"),
        (
            &["sluiceConfig"],
            json!({"realtime": {"checkpointPeriod": "P1M"}}),
            "spec.sluiceConfig.realtime.checkpointPeriod",
        ),
        (
            &["sluiceConfig"],
            json!({"realtime": {"checkpointPeriod": "PT0.01S"}}),
            "spec.sluiceConfig.realtime.checkpointPeriod",
        ),
        (&["sluiceConfig"], json!({"realtime": {"idleAfter": "P2D"}}), "spec.sluiceConfig.realtime.idleAfter"),
        (
            &["ioConfig", "autoScalerConfig"],
            json!({"enableTaskAutoScaler": true, "taskCountMax": 2, "taskCountMin": 4}),
            "spec.ioConfig.autoScalerConfig.taskCountMax",
        ),
        (
            &["ioConfig", "autoScalerConfig"],
            json!({"enableTaskAutoScaler": true, "taskCountMax": 6, "taskCountMin": 2, "scaleOutStep": -1}),
            "spec.ioConfig.autoScalerConfig",
        ),
        (
            &["ioConfig", "idleConfig"],
            json!({"enabled": true, "inactiveAfterMillis": 0}),
            "spec.ioConfig.idleConfig.inactiveAfterMillis",
        ),
    ];
    for (path, value, expected) in cases {
        let err = with(path, value.clone()).expect_err(&format!("{path:?} = {value}"));
        let field = field_of(err);
        assert!(field.starts_with(expected), "{path:?} = {value}: got field {field}, expected {expected}");
    }
}

#[test]
fn unknown_and_unimplemented_options_are_named_warnings() {
    let loaded = with(&["tuningConfig", "maxPendingPersists"], serde_json::json!(2)).expect("loads");
    assert!(loaded.warnings.iter().any(|w| w.field == "spec.tuningConfig.maxPendingPersists"), "{:?}", loaded.warnings);
    let loaded = with(&["ioConfig", "someFutureOption"], serde_json::json!(true)).expect("loads");
    assert!(loaded.warnings.iter().any(|w| w.field == "spec.ioConfig.someFutureOption"), "{:?}", loaded.warnings);
    let loaded = with(&["dataSchema", "dimensionsSpec", "spatialDimensions"], serde_json::json!([{"dimName": "c"}]))
        .expect("loads");
    assert!(loaded.warnings.iter().any(|w| w.field.ends_with("spatialDimensions")), "{:?}", loaded.warnings);
}

#[test]
fn report_parse_exceptions_means_zero_tolerance() {
    let loaded = with(&["tuningConfig", "reportParseExceptions"], serde_json::json!(true)).expect("loads");
    assert_eq!(loaded.spec.tuning.max_parse_exceptions, 0);
}

#[test]
fn rejects_non_kafka_specs() {
    let err = load_spec(r#"{"type": "index_parallel", "spec": {}}"#).expect_err("batch spec");
    assert_eq!(field_of(err), "type");
    assert!(matches!(load_spec("{not json"), Err(SpecError::Json(_))));
}

#[test]
fn datasource_and_topic_names_are_checked_at_submit() {
    let tutorial: serde_json::Value =
        serde_json::from_str(&data("specs/wikipedia-kafka-supervisor.json")).expect("tutorial spec");
    let with = |pointer: &str, value: &str| {
        let mut spec = tutorial.clone();
        *spec.pointer_mut(pointer).expect("field") = value.into();
        load_spec_value(spec).err().map(|e| e.to_string()).unwrap_or_default()
    };
    let long = "x".repeat(1_000);
    for name in ["a/0000/000000000001", ".hidden", "tab\tname", long.as_str()] {
        let e = with("/dataSchema/dataSource", name);
        assert!(e.starts_with("dataSchema.dataSource: "), "{name:?}: {e}");
    }
    for topic in ["a/b", "..", "white space"] {
        let e = with("/ioConfig/topic", topic);
        assert!(e.starts_with("ioConfig.topic: "), "{topic:?}: {e}");
    }
    let pattern = |value: serde_json::Value| {
        let mut spec = tutorial.clone();
        let io = spec.pointer_mut("/ioConfig").and_then(|v| v.as_object_mut()).expect("ioConfig");
        io.remove("topic");
        io.insert("topicPattern".into(), value);
        load_spec_value(spec)
    };
    let loaded = pattern("wiki-.*".into()).expect("a pattern instead of a topic");
    assert!(loaded.spec.io.source.is_pattern() && loaded.spec.io.source.reads("wiki-en"));
    assert!(!loaded.spec.io.source.reads("wiki"));
    for bad in ["(", ""] {
        let e = pattern(bad.into()).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.starts_with("ioConfig.topicPattern: "), "{bad:?}: {e}");
    }
    let mut both = tutorial.clone();
    both["ioConfig"]["topicPattern"] = "x".into();
    let e = load_spec_value(both).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("not both"), "{e}");
}

#[test]
fn legacy_avro_stream_and_protobuf_parsers_give_their_input_formats() {
    use serde_json::json;
    // The tutorial's legacy parser, its type and decoder replaced.
    let legacy = |mut parser: serde_json::Value| {
        let mut json: serde_json::Value =
            serde_json::from_str(&data("specs/wikipedia-kafka-supervisor.json")).expect("json");
        let mut parse_spec = json["dataSchema"]["parser"]["parseSpec"].take();
        parse_spec["format"] = json!("avro");
        parse_spec["flattenSpec"] = json!({"fields": [{"type": "path", "name": "country", "expr": "$.geo.country"}]});
        parser["parseSpec"] = parse_spec;
        json["dataSchema"]["parser"] = parser;
        load_spec_value(json)
    };
    let registry = json!({"type": "schema_registry", "url": "http://registry:8081"});
    let spec = legacy(json!({"type": "avro_stream", "avroBytesDecoder": registry})).expect("avro").spec;
    let InputFormat::AvroStream { avro_bytes_decoder, flatten_spec, .. } = &spec.input_format else {
        panic!("{:?}", spec.input_format)
    };
    assert!(
        matches!(avro_bytes_decoder, AvroBytesDecoder::SchemaRegistry(r) if r.url.as_deref() == Some("http://registry:8081"))
    );
    assert_eq!(flatten_spec.as_ref().map(|f| f.fields.len()), Some(1));
    assert_eq!(spec.timestamp.column, "time");
    // The older protobuf parser names its descriptor file and message type itself.
    let spec = legacy(json!({"type": "protobuf", "descriptor": "file:///etc/wiki.desc", "protoMessageType": "Edit"}))
        .expect("protobuf")
        .spec;
    let InputFormat::Protobuf {
        proto_bytes_decoder: ProtoBytesDecoder::File { descriptor, proto_message_type }, ..
    } = &spec.input_format
    else {
        panic!("{:?}", spec.input_format)
    };
    assert_eq!((descriptor.as_str(), proto_message_type.as_deref()), ("file:///etc/wiki.desc", Some("Edit")));
    for (parser, field) in [
        (json!({"type": "avro_stream"}), "dataSchema.parser.avroBytesDecoder"),
        (json!({"type": "protobuf"}), "dataSchema.parser.protoBytesDecoder"),
        (json!({"type": "thrift"}), "dataSchema.parser.type"),
    ] {
        assert_eq!(field_of(legacy(parser).expect_err("refused")), field);
    }
}

#[test]
fn druids_autoscaler_example_is_read_and_a_disabled_one_accepted() {
    use serde_json::json;
    let example = json!({"enableTaskAutoScaler": true, "taskCountMax": 6, "taskCountMin": 2,
        "minTriggerScaleActionFrequencyMillis": 600000, "autoScalerStrategy": "lagBased",
        "lagCollectionIntervalMillis": 30000, "lagCollectionRangeMillis": 600000, "scaleOutThreshold": 6000000,
        "triggerScaleOutFractionThreshold": 0.3, "scaleInThreshold": 1000000, "triggerScaleInFractionThreshold": 0.9,
        "scaleActionStartDelayMillis": 300000, "scaleActionPeriodMillis": 60000, "scaleInStep": 1, "scaleOutStep": 2});
    let loaded = with(&["ioConfig", "autoScalerConfig"], example).expect("Druid's example loads");
    let scaler = loaded.spec.io.auto_scaler.expect("enabled");
    assert_eq!((scaler.task_count_min, scaler.task_count_max, scaler.scale_out_step), (Some(2), Some(6), 2));
    assert!(!loaded.warnings.iter().any(|w| w.field.ends_with("ioConfig.autoScalerConfig")), "{:?}", loaded.warnings);
    let disabled = with(&["ioConfig", "autoScalerConfig"], json!({"taskCountMax": 1})).expect("loads");
    assert!(disabled.spec.io.auto_scaler.is_none(), "not enabled: not checked, not used");
    // Without taskCount (1 is Druid's default, as good as none), the groups start at
    // taskCountStart, else taskCountMin; a taskCount given (where the autoscaler writes) wins.
    let start = |task_count: u32, extra: serde_json::Value| {
        let mut c = json!({"enableTaskAutoScaler": true, "taskCountMax": 6, "taskCountMin": 2});
        c.as_object_mut().expect("object").extend(extra.as_object().cloned().unwrap_or_default());
        let mut spec: serde_json::Value =
            serde_json::from_str(&data("specs/rollup-kafka-supervisor.json")).expect("json");
        spec["spec"]["ioConfig"]["autoScalerConfig"] = c;
        spec["spec"]["ioConfig"]["taskCount"] = task_count.into();
        load_spec_value(spec).expect("loads").spec.io.task_count
    };
    assert_eq!(start(1, json!({"taskCountStart": 5})), 5);
    assert_eq!(start(1, json!({})), 2);
    assert_eq!(start(3, json!({"taskCountStart": 5})), 3);
}

#[test]
fn idle_config_is_read_with_druids_default() {
    use serde_json::json;
    let on = with(&["ioConfig", "idleConfig"], json!({"enabled": true})).expect("loads");
    assert_eq!(on.spec.io.idle.map(|i| i.inactive_after_millis), Some(600_000));
    assert!(!on.warnings.iter().any(|w| w.field.contains("idleConfig")), "{:?}", on.warnings);
    let off = with(&["ioConfig", "idleConfig"], json!({"enabled": false, "inactiveAfterMillis": 5})).expect("loads");
    assert_eq!(off.spec.io.idle, None);
    let unknown = with(&["ioConfig", "idleConfig"], json!({"enabled": true, "inactiveAfter": 5}));
    assert!(unknown.is_err(), "a misspelt field is refused, not ignored");
}
