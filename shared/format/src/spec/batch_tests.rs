//! Unit tests of the batch ingestion spec: input sources, partitioning and what is refused.

use super::*;
use crate::spec::InputFormat;

fn tutorial() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/specs/wikipedia-index-parallel.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("the tutorial spec")).expect("JSON")
}

fn refused(spec: Value) -> String {
    load_batch_value(spec).expect_err("refused").to_string()
}

#[test]
fn druids_batch_tutorial_spec_loads() {
    let loaded = load_batch_value(tutorial()).expect("the tutorial spec loads");
    let b = &loaded.batch;
    assert_eq!(b.spec.data_source, "wikipedia");
    assert_eq!(b.spec.dimensions.len(), 19);
    assert!(matches!(b.spec.input_format, InputFormat::Json { .. }), "{:?}", b.spec.input_format);
    assert_eq!(b.spec.tuning.max_rows_in_memory, 25_000);
    assert!(!b.append && !b.drop_existing);
    assert_eq!(b.intervals, vec![Interval::parse("2015-09-12/2015-09-13").expect("interval")]);
    assert_eq!(
        b.input,
        InputSource::Local {
            base_dir: Some("data/".into()),
            filter: Some("wikiticker-2015-09-12-sampled.json.gz".into()),
            files: vec![]
        }
    );
    assert_eq!((b.max_concurrent, b.split.max_bytes), (DEFAULT_CONCURRENT_SPLITS, DEFAULT_SPLIT_BYTES));
    let fields: Vec<&str> = loaded.warnings.iter().map(|w| w.field.as_str()).collect();
    assert!(!fields.iter().any(|f| f.contains("intervals") || f.contains("partitionsSpec")), "{fields:?}");
}

#[test]
fn batch_tuning_maps_onto_the_tasks_settings() {
    let mut spec = tutorial();
    spec["id"] = "backfill-2015".into();
    spec["spec"]["tuningConfig"] = json!({"type": "index_parallel", "maxNumConcurrentSubTasks": 8,
        "partitionsSpec": {"type": "dynamic", "maxRowsPerSegment": 1234},
        "splitHintSpec": {"type": "maxSize", "maxSplitSize": 1000, "maxNumFiles": 3}, "maxRetry": 3});
    let loaded = load_batch_value(spec).expect("loads");
    let b = loaded.batch;
    assert_eq!(b.id.as_deref(), Some("backfill-2015"));
    assert_eq!(b.spec.tuning.max_rows_per_segment, 1234);
    assert_eq!((b.max_concurrent, b.split), (8, SplitHint { max_bytes: 1000, max_files: 3 }));
    assert!(loaded.warnings.iter().any(|w| w.field == "spec.tuningConfig.maxRetry"));
}

#[test]
fn what_batch_cannot_do_is_refused_by_name() {
    let with = |path: &[&str], value: Value| {
        let mut spec = tutorial();
        let mut at = &mut spec;
        for p in &path[..path.len() - 1] {
            at = &mut at[*p];
        }
        at[path[path.len() - 1]] = value;
        refused(spec)
    };
    let hashed = with(&["spec", "tuningConfig", "partitionsSpec"], json!({"type": "hashed"}));
    assert!(hashed.contains("partitionsSpec.type") && hashed.contains("dynamic"), "{hashed}");
    let perfect = with(&["spec", "tuningConfig", "forceGuaranteedRollup"], json!(true));
    assert!(perfect.contains("forceGuaranteedRollup"), "{perfect}");
    let http = with(&["spec", "ioConfig", "inputSource"], json!({"type": "http", "uris": ["http://169.254.169.254/"]}));
    assert!(http.contains("inputSource.type") && http.contains("inline, local or s3"), "{http}");
    let keys = with(
        &["spec", "ioConfig", "inputSource"],
        json!({"type": "s3", "uris": ["s3://b/k"], "properties": {"accessKeyId": "AKIA", "secretAccessKey": "s3cr3t"}}),
    );
    assert!(keys.contains("inputSource.properties") && !keys.contains("s3cr3t"), "{keys}");
    let endpoint = with(
        &["spec", "ioConfig", "inputSource"],
        json!({"type": "s3", "uris": ["s3://b/k"], "endpointConfig": {"url": "http://evil"}}),
    );
    assert!(endpoint.contains("endpointConfig"), "{endpoint}");
    let two = with(
        &["spec", "ioConfig", "inputSource"],
        json!({"type": "s3", "uris": ["s3://b/k"], "prefixes": ["s3://b/"]}),
    );
    assert!(two.contains("exactly one"), "{two}");
    let mut spec = tutorial();
    spec["spec"]["ioConfig"]["dropExisting"] = json!(true);
    spec["spec"]["ioConfig"]["appendToExisting"] = json!(true);
    assert!(refused(spec).contains("dropExisting"));
    let kafka = with(&["spec", "ioConfig", "inputFormat"], json!({"type": "kafka", "valueFormat": {"type": "json"}}));
    assert!(kafka.contains("inputFormat.type"), "{kafka}");
    let big =
        with(&["spec", "ioConfig", "inputSource"], json!({"type": "inline", "data": "x".repeat(MAX_INLINE_BYTES + 1)}));
    assert!(big.contains("inline data"), "{big}");
    assert!(with(&["type"], json!("compact")).contains("not supported"));
    assert!(with(&["id"], json!("../../etc")).contains("task id"));
    assert!(with(&["id"], json!("..")).contains("task id"), "no id names a folder above");
    assert!(with(&["spec", "dataSchema", "granularitySpec", "intervals"], json!(["2015-09-13/2015-09-12"]))
        .contains("intervals[0]"));
}
