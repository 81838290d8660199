//! The `kafka` input format's columns: timestamp, topic, key and headers beside the value.

use super::*;
use crate::row::DimValue;
use crate::spec::load_spec_value;
use serde_json::json;

fn spec(input_format: serde_json::Value, timestamp: &str, dims: serde_json::Value) -> serde_json::Value {
    json!({"type": "kafka", "spec": {
        "dataSchema": {"dataSource": "t", "timestampSpec": {"column": timestamp, "format": "auto"},
            "dimensionsSpec": {"dimensions": dims}, "metricsSpec": [],
            "granularitySpec": {"segmentGranularity": "day", "queryGranularity": "none", "rollup": false}},
        "ioConfig": {"topic": "t", "inputFormat": input_format, "consumerProperties": {"bootstrap.servers": "x:9092"}}}})
}

fn parser(input_format: serde_json::Value, timestamp: &str, dims: serde_json::Value) -> RecordParser {
    RecordParser::new(&load_spec_value(spec(input_format, timestamp, dims)).expect("spec").spec).expect("parser")
}

fn parse(p: &mut RecordParser, value: &str, meta: &KafkaMeta<'_>) -> Vec<Result<Parsed, ParseError>> {
    let mut out = Vec::new();
    p.parse_kafka_record(value.as_bytes(), meta, &mut out);
    out
}

/// Each row's dimensions by name.
fn dims(p: &RecordParser, out: &[Result<Parsed, ParseError>]) -> Vec<(i64, Vec<(String, DimValue)>)> {
    out.iter()
        .map(|r| match r {
            Ok(Parsed::Row { row, .. }) => {
                let named = p.dimensions().iter().enumerate().map(|(i, d)| (d.name.clone(), row.dim(i).clone()));
                (row.time, named.collect())
            }
            other => panic!("expected a row, got {other:?}"),
        })
        .collect()
}

fn s(v: &str) -> DimValue {
    DimValue::Str(v.into())
}

const WITH_ALL: &str = r#"{"type": "kafka", "valueFormat": {"type": "json"},
    "keyFormat": {"type": "tsv", "columns": ["k"], "delimiter": "\u0001"},
    "headerFormat": {"type": "string"}}"#;

#[test]
fn the_record_timestamp_topic_key_and_headers_are_columns() {
    let format: serde_json::Value = serde_json::from_str(WITH_ALL).expect("format");
    let wanted = json!(["page", "kafka.key", "kafka.topic", "kafka.header.env", "kafka.header.none"]);
    let mut p = parser(format, "kafka.timestamp", wanted);
    assert!(p.reads_kafka_columns());
    let headers = [("env", Some(b"blue".as_slice())), ("none", None), ("env", Some(b"prod".as_slice()))];
    let meta =
        KafkaMeta { topic: "edits", timestamp: Some(1_442_016_000_000), key: Some(b"user-7"), headers: &headers };
    // Two rows in one record: each gets the record's columns.
    let out = parse(&mut p, r#"{"page": "A"} {"page": "B"}"#, &meta);
    let got = dims(&p, &out);
    assert_eq!(got.len(), 2);
    for (row, page) in got.iter().zip(["A", "B"]) {
        assert_eq!(row.0, 1_442_016_000_000, "the Kafka timestamp is the row's time");
        // The last header of a name wins (Druid keeps them in a map); a null value is no column.
        let expected = vec![s(page), s("user-7"), s("edits"), s("prod"), DimValue::Null];
        assert_eq!(row.1.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>(), expected);
    }
}

#[test]
fn a_field_of_the_value_wins_over_a_column_of_its_name() {
    let format = json!({"type": "kafka", "valueFormat": {"type": "json"}, "topicColumnName": "source",
        "timestampColumnName": "kts", "headerFormat": {"type": "string", "encoding": "ISO-8859-1"},
        "headerColumnPrefix": "h_"});
    let mut p = parser(format, "ts", json!(["source", "kts", "h_x"]));
    let headers = [("x", Some(b"caf\xe9".as_slice()))];
    let meta = KafkaMeta { topic: "edits", timestamp: Some(5), key: None, headers: &headers };
    let out = parse(&mut p, r#"{"ts": 1000, "source": "from the value"}"#, &meta);
    assert_eq!(
        dims(&p, &out),
        vec![(
            1000,
            vec![
                ("source".into(), s("from the value")),
                ("kts".into(), DimValue::Str("5".into())),
                ("h_x".into(), s("café"))
            ]
        )]
    );
    // Without a value field of that name, the column fills it.
    let out = parse(&mut p, r#"{"ts": 1000}"#, &meta);
    assert_eq!(dims(&p, &out)[0].1[0], ("source".into(), s("edits")));
    // Without keyFormat the key is not read, whatever its bytes.
    let out = parse(&mut p, r#"{"ts": 1000}"#, &KafkaMeta { key: Some(b"\xff"), ..meta });
    assert_eq!(dims(&p, &out)[0].1[0], ("source".into(), s("edits")));
}

#[test]
fn keys_take_their_first_column_and_a_bad_key_makes_the_record_unparseable() {
    let format = json!({"type": "kafka", "valueFormat": {"type": "json"}, "keyFormat": {"type": "json"},
        "keyColumnName": "id"});
    let mut p = parser(format, "ts", json!(["id"]));
    let meta = |key: &'static [u8]| KafkaMeta { topic: "t", timestamp: None, key: Some(key), headers: &[] };
    let out = parse(&mut p, r#"{"ts": 1}"#, &meta(br#"{"user": "u1", "other": "x"}"#));
    assert_eq!(dims(&p, &out)[0].1, vec![("id".into(), s("u1"))]);
    for (key, reason) in [
        (b"[1]".as_slice(), "key: expected a JSON object"),
        (b"{", "key: malformed JSON"),
        (b"\xff", "key is not valid UTF-8"),
    ] {
        let out = parse(&mut p, r#"{"ts": 1}"#, &meta(key));
        match &out[..] {
            [Err(e)] => assert!(e.reason.starts_with(reason), "{e:?}"),
            other => panic!("expected one error, got {other:?}"),
        }
    }
    // No key: no key column, the row is kept.
    let out = parse(&mut p, r#"{"ts": 1}"#, &KafkaMeta { topic: "t", ..Default::default() });
    assert_eq!(dims(&p, &out)[0].1, vec![("id".into(), DimValue::Null)]);
}

#[test]
fn schemaless_dimensions_discover_the_columns() {
    let format: serde_json::Value = serde_json::from_str(WITH_ALL).expect("format");
    let mut p = parser(format, "ts", json!([]));
    let headers = [("trace", Some(b"t1".as_slice()))];
    let meta = KafkaMeta { topic: "edits", timestamp: Some(7), key: Some(b"k"), headers: &headers };
    let out = parse(&mut p, r#"{"ts": 1, "page": "A"}"#, &meta);
    let names: Vec<String> = dims(&p, &out)[0].1.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(names, ["kafka.header.trace", "kafka.timestamp", "kafka.topic", "kafka.key", "page"]);
    // A record parsed without the columns (another format's path) keeps none of the last ones.
    let mut out = Vec::new();
    p.parse_record(br#"{"ts": 1, "page": "B"}"#, &mut out);
    assert_eq!(dims(&p, &out)[0].1.iter().filter(|(_, v)| *v != DimValue::Null).count(), 1);
}

#[test]
fn unsupported_header_formats_and_nested_kafka_formats_are_refused() {
    for (format, field) in [
        (
            json!({"type": "kafka", "valueFormat": {"type": "json"}, "headerFormat": {"type": "avro"}}),
            "headerFormat.type",
        ),
        (
            json!({"type": "kafka", "valueFormat": {"type": "json"}, "headerFormat": {"type": "string", "encoding": "EBCDIC"}}),
            "headerFormat.encoding",
        ),
        (json!({"type": "kafka", "valueFormat": {"type": "kafka", "valueFormat": {"type": "json"}}}), "valueFormat"),
        (
            json!({"type": "kafka", "valueFormat": {"type": "json"}, "keyFormat": {"type": "kafka", "valueFormat": {"type": "json"}}}),
            "keyFormat",
        ),
    ] {
        let e = load_spec_value(spec(format, "ts", json!([]))).expect_err("refused").to_string();
        assert!(e.contains(&format!("ioConfig.inputFormat.{field}")), "{e}");
    }
}

#[test]
fn avro_and_protobuf_keys_take_their_first_field_or_their_value() {
    use super::test_support::MemoryRegistry;
    use base64::Engine;
    // An Avro string key, its schema inline: the key is the value.
    let format = json!({"type": "kafka", "valueFormat": {"type": "json"}, "keyColumnName": "id",
        "keyFormat": {"type": "avro_stream", "avroBytesDecoder": {"type": "schema_inline", "schema": "string"}}});
    let mut p = parser(format, "ts", json!(["id"]));
    let key = apache_avro::to_avro_datum(&apache_avro::Schema::String, "user-7").expect("datum");
    let meta = KafkaMeta { topic: "t", timestamp: None, key: Some(&key), headers: &[] };
    let out = parse(&mut p, r#"{"ts": 1}"#, &meta);
    assert_eq!(dims(&p, &out)[0].1, vec![("id".into(), s("user-7"))]);
    let meta = KafkaMeta { topic: "t", timestamp: None, key: Some(b"\x07"), headers: &[] };
    match &parse(&mut p, r#"{"ts": 1}"#, &meta)[..] {
        [Err(e)] => assert!(!e.retry && e.reason.starts_with("key: Avro datum does not decode"), "{e:?}"),
        other => panic!("expected one error, got {other:?}"),
    }
    // A Protobuf key through the registry: its first set field; the registry down retries.
    let file = prost_types::FileDescriptorProto {
        name: Some("key.proto".into()),
        syntax: Some("proto3".into()),
        message_type: vec![prost_types::DescriptorProto {
            name: Some("Key".into()),
            field: vec![prost_types::FieldDescriptorProto {
                name: Some("user_id".into()),
                number: Some(1),
                r#type: Some(prost_types::field_descriptor_proto::Type::String as i32),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let registry = std::sync::Arc::new(MemoryRegistry::default());
    let serialized = base64::engine::general_purpose::STANDARD.encode(prost::Message::encode_to_vec(&file));
    registry.add(3, RegisteredSchema { schema: serialized, references: vec![] });
    let format = json!({"type": "kafka", "valueFormat": {"type": "json"},
        "keyFormat": {"type": "protobuf", "protoBytesDecoder": {"type": "schema_registry", "url": "http://r"}}});
    let resolved = load_spec_value(spec(format, "ts", json!(["kafka.key"]))).expect("spec").spec;
    let mut p = RecordParser::with_registry(&resolved, Some(registry.clone())).expect("parser");
    // Field 1 (user_id), length 2, "u9", framed as schema 3, message [0].
    let key = [0, 0, 0, 0, 3, 0, 0x0a, 2, b'u', b'9'];
    let meta = KafkaMeta { topic: "t", timestamp: None, key: Some(&key), headers: &[] };
    registry.set_down(true);
    match &parse(&mut p, r#"{"ts": 1}"#, &meta)[..] {
        [Err(e)] => assert!(e.retry && e.reason.starts_with("key: schema 3 from the registry"), "{e:?}"),
        other => panic!("expected a retry, got {other:?}"),
    }
    registry.set_down(false);
    // A key framed with an id the registry never issued is unparseable, as a value's is.
    let unknown = [0, 0, 0, 0, 4, 0, 0x0a, 2, b'u', b'9'];
    let unknown_meta = KafkaMeta { topic: "t", timestamp: None, key: Some(&unknown), headers: &[] };
    match &parse(&mut p, r#"{"ts": 1}"#, &unknown_meta)[..] {
        [Err(e)] => assert!(!e.retry && e.reason.starts_with("key: schema 4 is not in the registry"), "{e:?}"),
        other => panic!("expected an unparseable key, got {other:?}"),
    }
    let out = parse(&mut p, r#"{"ts": 1}"#, &meta);
    assert_eq!(dims(&p, &out)[0].1, vec![("kafka.key".into(), s("u9"))]);
    // A key format whose registry has no URL is refused by name.
    let format = json!({"type": "kafka", "valueFormat": {"type": "json"},
        "keyFormat": {"type": "avro_stream", "avroBytesDecoder": {"type": "schema_registry"}}});
    let e = load_spec_value(spec(format, "ts", json!([]))).expect_err("no url").to_string();
    assert!(e.contains("ioConfig.inputFormat.keyFormat.avroBytesDecoder.url"), "{e}");
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(512))]
    /// Fuzzed keys framed with a registered Avro schema's id, and fuzzed key datums of an
    /// inline schema, make rows or unparseable records: never a retry, never a panic.
    #[test]
    fn fuzzed_binary_keys_are_rows_or_unparseable(key in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..120)) {
        let registry = std::sync::Arc::new(super::test_support::MemoryRegistry::default());
        registry.add_text(5, r#"{"type": "record", "name": "K", "fields": [{"name": "id", "type": "string"},
            {"name": "n", "type": ["null", "long"]}]}"#);
        let framed = [vec![0, 0, 0, 0, 5], key.clone()].concat();
        for (decoder, bytes) in [
            (json!({"type": "schema_registry", "url": "http://r"}), framed),
            (json!({"type": "schema_inline", "schema": {"type": "array", "items": "string"}}), key),
        ] {
            let format = json!({"type": "kafka", "valueFormat": {"type": "json"},
                "keyFormat": {"type": "avro_stream", "avroBytesDecoder": decoder}});
            let resolved = load_spec_value(spec(format, "ts", json!(["kafka.key"]))).expect("spec").spec;
            let mut p = RecordParser::with_registry(&resolved, Some(registry.clone())).expect("parser");
            let meta = KafkaMeta { topic: "t", timestamp: None, key: Some(&bytes), headers: &[] };
            for parsed in parse(&mut p, r#"{"ts": 1}"#, &meta) {
                if let Err(e) = parsed {
                    proptest::prop_assert!(!e.retry, "{e:?}");
                }
            }
        }
    }
}
