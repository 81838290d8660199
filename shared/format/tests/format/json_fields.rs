//! The JSON fast path (fields read straight into slots, unread fields skipped) gives the same
//! rows and errors as the whole-tree path, on random objects: known and unknown fields, every
//! JSON value kind, escapes, nesting; with explicit and with discovered dimensions.

use proptest::prelude::*;
use sluice_format::input::{Parsed, RecordParser};
use sluice_format::spec::load_spec_value;

fn parser(discover: bool) -> RecordParser {
    let dimensions = if discover {
        serde_json::json!([])
    } else {
        serde_json::json!(["page", "user", {"type": "long", "name": "n"}])
    };
    let spec = serde_json::json!({"type": "kafka", "spec": {
        "dataSchema": {"dataSource": "d", "timestampSpec": {"column": "ts", "format": "auto"},
            "dimensionsSpec": {"dimensions": dimensions, "dimensionExclusions": ["added"]},
            "metricsSpec": [{"type": "count", "name": "count"}, {"type": "doubleSum", "name": "added", "fieldName": "added"}],
            "granularitySpec": {"segmentGranularity": "hour", "rollup": false}},
        "ioConfig": {"topic": "t", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "b"}}}});
    RecordParser::new(&load_spec_value(spec).expect("spec").spec).expect("parser")
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<u64>().prop_map(serde_json::Value::from),
        (-1e12f64..1e12).prop_map(serde_json::Value::from),
        "[a-z\"\\\\\n\u{e9}\u{1F600} ]{0,8}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(serde_json::Value::from),
            prop::collection::btree_map("[a-z]{1,3}", inner, 0..3)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn record() -> impl Strategy<Value = String> {
    let names =
        prop_oneof![Just("page"), Just("user"), Just("n"), Just("added"), Just("other"), Just("x\\\"y"), Just("ts")];
    (prop::collection::vec((names, json_value()), 0..7), 0i64..4_000_000_000_000, any::<bool>()).prop_map(
        |(fields, ts, ts_first)| {
            let mut parts: Vec<String> =
                fields.iter().filter(|(k, _)| *k != "ts").map(|(k, v)| format!("\"{k}\": {v}")).collect();
            let ts = format!("\"ts\": {ts}");
            if ts_first {
                parts.insert(0, ts)
            } else {
                parts.push(ts)
            }
            format!("{{{}}}", parts.join(", "))
        },
    )
}

fn parse(p: &mut RecordParser, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    p.parse_record(text.as_bytes(), &mut out);
    out.iter()
        .map(|o| match o {
            Ok(Parsed::Row { row, errors }) => format!("{row:?} {errors:?}"),
            Ok(other) => format!("{other:?}"),
            // Error positions differ between a lone object and a stream of two.
            Err(e) => e.reason.split(" at line").next().unwrap_or_default().to_string(),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_fast_path_agrees_with_the_whole_tree(text in record(), discover in any::<bool>()) {
        // One object takes the fast path; two in one record take the whole-tree path.
        let fast = parse(&mut parser(discover), &text);
        let mut slow_parser = parser(discover);
        let slow = parse(&mut slow_parser, &format!("{text}\n{text}"));
        prop_assert_eq!(fast.len(), 1);
        prop_assert_eq!(&slow[0], &fast[0], "record {}", text);
        let mut fast_parser = parser(discover);
        parse(&mut fast_parser, &text);
        let names = |p: &RecordParser| p.dimensions().iter().map(|d| d.name.clone()).collect::<Vec<_>>();
        prop_assert_eq!(names(&fast_parser), names(&slow_parser), "discovered dimensions");
    }
}

#[test]
fn values_that_are_not_objects_and_broken_json_are_named() {
    let mut p = parser(false);
    assert_eq!(parse(&mut p, "[1, 2]"), vec!["expected a JSON object, found array"]);
    assert_eq!(parse(&mut p, "\"text\""), vec!["expected a JSON object, found string"]);
    assert!(parse(&mut p, r#"{"page": "a""#)[0].starts_with("malformed JSON"));
}
