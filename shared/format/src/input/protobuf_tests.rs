//! `protobuf` values: descriptor sets inline, the schema registry's wire format with message
//! indexes and references, schema evolution, Druid's conversion of fields and well-known types,
//! and what makes a record unparseable or the read retried.

use super::test_support::{dims, parse, retried, row, s, spec_with, unparseable, MemoryRegistry};
use super::*;
use crate::row::DimValue;
use base64::Engine;
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MapKey, Value as Proto};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, EnumDescriptorProto, EnumValueDescriptorProto, FieldDescriptorProto};
use prost_types::{FileDescriptorProto, FileDescriptorSet, MessageOptions};
use serde_json::json;

fn field(name: &str, number: i32, ty: Type, type_name: Option<&str>) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(number),
        label: Some(Label::Optional as i32),
        r#type: Some(ty as i32),
        type_name: type_name.map(String::from),
        ..Default::default()
    }
}

fn repeated(mut f: FieldDescriptorProto) -> FieldDescriptorProto {
    f.label = Some(Label::Repeated as i32);
    f
}

fn message(name: &str, fields: Vec<FieldDescriptorProto>) -> DescriptorProto {
    DescriptorProto { name: Some(name.into()), field: fields, ..Default::default() }
}

/// `geo.proto`: `message Geo { string country = 1; }` in package `wiki`.
fn geo_file() -> FileDescriptorProto {
    FileDescriptorProto {
        name: Some("geo.proto".into()),
        package: Some("wiki".into()),
        syntax: Some("proto3".into()),
        message_type: vec![message("Geo", vec![field("country", 1, Type::String, None)])],
        ..Default::default()
    }
}

/// `edit.proto`, importing `geo.proto` and well-known types. Version 2 adds `channel`; both
/// keep a second top-level message, `Other`, and a nested `Edit.Note`.
fn edit_file(version: u8) -> FileDescriptorProto {
    let mut fields = vec![
        field("time", 1, Type::Message, Some(".google.protobuf.Timestamp")),
        field("page", 2, Type::String, None),
        field("user_name", 3, Type::String, None),
        field("kind", 4, Type::Enum, Some(".wiki.Edit.Kind")),
        field("geo", 5, Type::Message, Some(".wiki.Geo")),
        repeated(field("tags", 6, Type::String, None)),
        field("added", 7, Type::Int64, None),
        repeated(field("counts", 8, Type::Message, Some(".wiki.Edit.CountsEntry"))),
        field("delta", 9, Type::Message, Some(".google.protobuf.Int32Value")),
        field("raw", 10, Type::Bytes, None),
        field("extra", 11, Type::Message, Some(".google.protobuf.Struct")),
        field("took", 12, Type::Message, Some(".google.protobuf.Duration")),
    ];
    if version == 2 {
        fields.push(field("channel", 13, Type::String, None));
    }
    let mut edit = message("Edit", fields);
    let mut counts =
        message("CountsEntry", vec![field("key", 1, Type::String, None), field("value", 2, Type::Int32, None)]);
    counts.options = Some(MessageOptions { map_entry: Some(true), ..Default::default() });
    edit.nested_type = vec![counts, message("Note", vec![field("text", 1, Type::String, None)])];
    edit.enum_type = vec![EnumDescriptorProto {
        name: Some("Kind".into()),
        value: ["EDIT", "NEW"]
            .iter()
            .zip(0..)
            .map(|(n, i)| EnumValueDescriptorProto { name: Some(n.to_string()), number: Some(i), ..Default::default() })
            .collect(),
        ..Default::default()
    }];
    FileDescriptorProto {
        name: Some("edit.proto".into()),
        package: Some("wiki".into()),
        syntax: Some("proto3".into()),
        dependency: vec![
            "geo.proto".into(),
            "google/protobuf/timestamp.proto".into(),
            "google/protobuf/wrappers.proto".into(),
            "google/protobuf/struct.proto".into(),
            "google/protobuf/duration.proto".into(),
        ],
        message_type: vec![edit, message("Other", vec![field("page", 1, Type::String, None)])],
        ..Default::default()
    }
}

fn pool(version: u8) -> DescriptorPool {
    let mut pool = DescriptorPool::global();
    pool.add_file_descriptor_protos([geo_file(), edit_file(version)]).expect("descriptors");
    pool
}

/// An `Edit` with every field set but `user_name`.
fn edit(version: u8, page: &str) -> Vec<u8> {
    let pool = pool(version);
    let mut m = DynamicMessage::new(pool.get_message_by_name("wiki.Edit").expect("Edit"));
    let mut time = DynamicMessage::new(pool.get_message_by_name("google.protobuf.Timestamp").expect("Timestamp"));
    time.set_field_by_name("seconds", Proto::I64(1_442_016_000));
    time.set_field_by_name("nanos", Proto::I32(250_000_000));
    m.set_field_by_name("time", Proto::Message(time));
    m.set_field_by_name("page", Proto::String(page.into()));
    m.set_field_by_name("kind", Proto::EnumNumber(1));
    let mut geo = DynamicMessage::new(pool.get_message_by_name("wiki.Geo").expect("Geo"));
    geo.set_field_by_name("country", Proto::String("FR".into()));
    m.set_field_by_name("geo", Proto::Message(geo));
    m.set_field_by_name("tags", Proto::List(vec![Proto::String("b".into()), Proto::String("a".into())]));
    m.set_field_by_name("added", Proto::I64(5_000_000_000));
    m.set_field_by_name("counts", Proto::Map([(MapKey::String("x".into()), Proto::I32(3))].into_iter().collect()));
    let mut delta = DynamicMessage::new(pool.get_message_by_name("google.protobuf.Int32Value").expect("wrapper"));
    delta.set_field_by_name("value", Proto::I32(-7));
    m.set_field_by_name("delta", Proto::Message(delta));
    m.set_field_by_name("raw", Proto::Bytes(vec![1, 2, 255].into()));
    let extra = DynamicMessage::decode(
        pool.get_message_by_name("google.protobuf.Struct").expect("Struct"),
        // {"n": 1.5, "s": "x", "l": [true, null]} as protoc writes it.
        &prost_struct()[..],
    )
    .expect("struct");
    m.set_field_by_name("extra", Proto::Message(extra));
    let mut took = DynamicMessage::new(pool.get_message_by_name("google.protobuf.Duration").expect("Duration"));
    took.set_field_by_name("seconds", Proto::I64(-1));
    took.set_field_by_name("nanos", Proto::I32(-500_000_000));
    m.set_field_by_name("took", Proto::Message(took));
    if version == 2 {
        m.set_field_by_name("channel", Proto::String("#fr".into()));
    }
    m.encode_to_vec()
}

/// A `google.protobuf.Struct` of `{"n": 1.5, "s": "x", "l": [true, null]}`.
fn prost_struct() -> Vec<u8> {
    use prost_types::value::Kind as K;
    let value = |kind| prost_types::Value { kind: Some(kind) };
    let list = prost_types::ListValue { values: vec![value(K::BoolValue(true)), value(K::NullValue(0))] };
    prost_types::Struct {
        fields: [
            ("n".to_string(), value(K::NumberValue(1.5))),
            ("s".to_string(), value(K::StringValue("x".into()))),
            ("l".to_string(), value(K::ListValue(list))),
        ]
        .into_iter()
        .collect(),
    }
    .encode_to_vec()
}

fn descriptor_set() -> String {
    // As protoc --include_imports writes it: the well-known types' files are in the set too.
    let timestamp = DescriptorPool::global().get_file_by_name("google/protobuf/timestamp.proto").expect("wkt");
    let set = FileDescriptorSet { file: vec![timestamp.file_descriptor_proto().clone(), geo_file(), edit_file(2)] };
    base64::engine::general_purpose::STANDARD.encode(set.encode_to_vec())
}

fn spec(decoder: serde_json::Value, dims: serde_json::Value) -> DatasourceSpec {
    let format = json!({"type": "protobuf", "protoBytesDecoder": decoder, "flattenSpec": {"fields": [
        {"type": "path", "name": "country", "expr": "$.geo.country"},
        {"type": "path", "name": "count_x", "expr": "$.counts.x"},
        {"type": "path", "name": "extra_s", "expr": "$.extra.s"},
        {"type": "path", "name": "extra_l", "expr": "$.extra.l"}]}});
    spec_with(format, json!({"column": "time", "format": "iso"}), dims)
}

fn framed(id: u32, indexes: &[u8], message: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(indexes);
    out.extend_from_slice(message);
    out
}

#[test]
fn inline_descriptor_sets_convert_fields_as_druid_does() {
    let dims_wanted = json!([
        "page", "userName", "kind", "country", "tags", "count_x", "delta", "raw", "extra_s", "extra_l", "took",
        "channel"
    ]);
    let decoder = json!({"type": "inline", "descriptorString": descriptor_set(), "protoMessageType": "wiki.Edit"});
    let mut p = RecordParser::new(&spec(decoder, dims_wanted)).expect("parser");
    let parsed = parse(&mut p, &edit(2, "Main"));
    let (time, got) = dims(&p, &parsed);
    // The Timestamp is its RFC 3339 text, read by the timestampSpec.
    assert_eq!(time, 1_442_016_000_250);
    let values: Vec<DimValue> = got.into_iter().map(|(_, v)| v).collect();
    assert_eq!(
        values,
        vec![
            s("Main"),
            // user_name is not set: absent, as proto3 leaves it.
            DimValue::Null,
            s("NEW"),
            s("FR"),
            DimValue::Multi(vec!["a".into(), "b".into()]),
            s("3"),
            s("-7"),
            s("AQL/"),
            s("x"),
            s("true"),
            s("-1.500s"),
            s("#fr"),
        ]
    );
    let Ok(Parsed::Row { row, .. }) = &parsed else { unreachable!() };
    assert_eq!(row.metrics[0], crate::value::Value::Long(5_000_000_000), "int64 stays a number");
}

#[test]
fn message_types_are_found_by_short_full_and_nested_names() {
    let other = {
        let mut m = DynamicMessage::new(pool(2).get_message_by_name("wiki.Other").expect("Other"));
        m.set_field_by_name("page", Proto::String("o".into()));
        m.encode_to_vec()
    };
    for name in ["Other", "wiki.Other"] {
        let decoder = json!({"type": "inline", "descriptorString": descriptor_set(), "protoMessageType": name});
        let mut spec = spec(decoder, json!(["page"]));
        spec.timestamp.missing_value = Some(json!("2015-09-12T00:00:00Z"));
        let mut p = RecordParser::new(&spec).expect("parser");
        assert_eq!(row(&mut p, &other).1, vec![("page".into(), s("o"))], "{name}");
    }
    for name in ["Note", "Edit.Note", "wiki.Edit.Note"] {
        let decoder = json!({"type": "inline", "descriptorString": descriptor_set(), "protoMessageType": name});
        RecordParser::new(&spec(decoder, json!([]))).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // Without a type, the first message of the first file that has one: the timestamp file's.
    let decoder = json!({"type": "inline", "descriptorString": descriptor_set()});
    let mut p = RecordParser::new(&spec(decoder, json!([]))).expect("parser");
    assert!(parse(&mut p, &edit(2, "x")).is_err(), "an Edit is not a Timestamp");
    for (decoder, wanted) in [
        (
            json!({"type": "inline", "descriptorString": descriptor_set(), "protoMessageType": "Nope"}),
            "no message type \"Nope\"",
        ),
        (json!({"type": "inline", "descriptorString": "@@"}), "descriptorString: not base64"),
        (json!({"type": "inline", "descriptorString": "AAEC"}), "not a Protobuf descriptor set"),
        (json!({"type": "file", "descriptor": "/x.desc"}), "\"/x.desc\" was not read here"),
        (json!({"type": "schema_registry", "url": "http://r"}), "needs a registry client"),
    ] {
        let e = RecordParser::new(&spec(decoder, json!([]))).expect_err("refused").to_string();
        assert!(e.contains(wanted), "{e}");
    }
}

fn registry() -> Arc<MemoryRegistry> {
    let serialized = |f: FileDescriptorProto| base64::engine::general_purpose::STANDARD.encode(f.encode_to_vec());
    let registry = Arc::new(MemoryRegistry::default());
    let reference = SchemaReference { name: "geo.proto".into(), subject: "geo.proto".into(), version: 1 };
    registry.add_version("geo.proto", 1, RegisteredSchema { schema: serialized(geo_file()), references: vec![] });
    for version in [1, 2] {
        let schema = RegisteredSchema { schema: serialized(edit_file(version)), references: vec![reference.clone()] };
        registry.add(u32::from(version) + 10, schema);
    }
    registry.add_text(20, "syntax = \"proto3\"; message NotSerialized {}");
    registry
}

#[test]
fn registry_schemas_with_references_and_message_indexes_mix_two_versions() {
    let registry = registry();
    let decoder = json!({"type": "schema_registry", "url": "http://registry"});
    let mut p =
        RecordParser::with_registry(&spec(decoder, json!(["page", "country", "channel"])), Some(registry.clone()))
            .expect("parser");
    let mut seen = Vec::new();
    for n in 0..6 {
        let version = 1 + n % 2;
        let parsed = parse(&mut p, &framed(u32::from(version) + 10, &[0], &edit(version, &format!("p{n}"))));
        seen.push(dims(&p, &parsed).1);
    }
    // Each id once, and the referenced file once per id.
    assert_eq!(registry.requests(), 4);
    assert_eq!(
        seen[0],
        vec![("page".into(), s("p0")), ("country".into(), s("FR")), ("channel".into(), DimValue::Null)]
    );
    assert_eq!(seen[1], vec![("page".into(), s("p1")), ("country".into(), s("FR")), ("channel".into(), s("#fr"))]);
    // Message indexes [1] name the second top-level message; [0, 1] the nested Note.
    let other = {
        let mut m = DynamicMessage::new(pool(2).get_message_by_name("wiki.Other").expect("Other"));
        m.set_field_by_name("page", Proto::String("o".into()));
        m.encode_to_vec()
    };
    let mut spec = spec(json!({"type": "schema_registry", "url": "http://registry"}), json!(["page", "text"]));
    spec.timestamp.missing_value = Some(json!("2015-09-12T00:00:00Z"));
    let mut p = RecordParser::with_registry(&spec, Some(registry.clone())).expect("parser");
    assert_eq!(row(&mut p, &framed(12, &[2, 2], &other)).1[0], ("page".into(), s("o")));
    // Field 1 of Other (page) is field 1 of Note (text).
    assert_eq!(row(&mut p, &framed(12, &[4, 0, 2], &other)).1[1], ("text".into(), s("o")));
}

#[test]
fn an_unreachable_registry_retries_and_an_unknown_id_or_bad_bytes_are_unparseable() {
    let registry = registry();
    let decoder = json!({"type": "schema_registry", "url": "http://registry"});
    let mut p = RecordParser::with_registry(&spec(decoder, json!(["page"])), Some(registry.clone())).expect("parser");
    let good = edit(1, "x");
    assert!(
        unparseable(parse(&mut p, &framed(9, &[0], &good))).contains("schema 9 is not in the registry: no schema 9")
    );
    registry.set_down(true);
    assert!(retried(parse(&mut p, &framed(11, &[0], &good))).contains("connection refused"));
    registry.set_down(false);
    assert!(matches!(parse(&mut p, &framed(11, &[0], &good)), Ok(Parsed::Row { .. })));
    assert!(unparseable(parse(&mut p, &good)).contains("magic byte"));
    assert!(
        unparseable(parse(&mut p, &framed(11, &[6, 0, 0, 0], &good))).contains("no message type at indexes [0, 0, 0]")
    );
    assert!(
        unparseable(parse(&mut p, &framed(11, &[0], &good[..good.len() - 3]))).contains("wiki.Edit does not decode")
    );
    // A schema that is not a serialized descriptor is unparseable, and not asked for again.
    let before = registry.requests();
    for _ in 0..3 {
        assert!(unparseable(parse(&mut p, &framed(20, &[0], &good))).contains("is not a serialized file descriptor"));
    }
    assert_eq!(registry.requests(), before + 1);
}

#[test]
fn well_known_types_and_deep_values_convert_or_fail_clearly() {
    // Value, ListValue and Any through a Struct field of their own message.
    let mut pool = DescriptorPool::global();
    let file = FileDescriptorProto {
        name: Some("w.proto".into()),
        package: Some("w".into()),
        syntax: Some("proto3".into()),
        dependency: vec!["google/protobuf/any.proto".into(), "google/protobuf/struct.proto".into()],
        message_type: vec![
            message(
                "W",
                vec![
                    field("ts", 1, Type::String, None),
                    field("any", 2, Type::Message, Some(".google.protobuf.Any")),
                    field("v", 3, Type::Message, Some(".google.protobuf.Value")),
                    field("self", 4, Type::Message, Some(".w.W")),
                ],
            ),
            message("Inner", vec![field("n", 1, Type::Int32, None)]),
        ],
        ..Default::default()
    };
    pool.add_file_descriptor_proto(file.clone()).expect("descriptor");
    let w = pool.get_message_by_name("w.W").expect("W");
    let mut inner = DynamicMessage::new(pool.get_message_by_name("w.Inner").expect("Inner"));
    inner.set_field_by_name("n", Proto::I32(4));
    let mut any = DynamicMessage::new(pool.get_message_by_name("google.protobuf.Any").expect("Any"));
    any.set_field_by_name("type_url", Proto::String("type.googleapis.com/w.Inner".into()));
    any.set_field_by_name("value", Proto::Bytes(inner.encode_to_vec().into()));
    let mut m = DynamicMessage::new(w.clone());
    m.set_field_by_name("ts", Proto::String("2015-09-12T00:00:00Z".into()));
    m.set_field_by_name("any", Proto::Message(any));
    let value = prost_types::Value { kind: Some(prost_types::value::Kind::NumberValue(2.5)) };
    let value = DynamicMessage::decode(
        pool.get_message_by_name("google.protobuf.Value").expect("Value"),
        &value.encode_to_vec()[..],
    );
    m.set_field_by_name("v", Proto::Message(value.expect("value")));
    let set = FileDescriptorSet { file: vec![file] };
    let decoder = json!({"type": "inline", "descriptorString":
        base64::engine::general_purpose::STANDARD.encode(set.encode_to_vec()), "protoMessageType": "W"});
    let mut spec = spec(decoder, json!(["any", "v"]));
    spec.timestamp.column = "ts".into();
    let mut p = RecordParser::new(&spec).expect("parser");
    let (_, got) = row(&mut p, &m.encode_to_vec());
    assert_eq!(
        got,
        vec![("any".into(), s(r#"{"@type":"type.googleapis.com/w.Inner","n":4}"#)), ("v".into(), s("2.5"))]
    );
    // An Any of a type the schema lacks is unparseable, naming it.
    let mut any = DynamicMessage::new(pool.get_message_by_name("google.protobuf.Any").expect("Any"));
    any.set_field_by_name("type_url", Proto::String("type.googleapis.com/w.Missing".into()));
    let mut m2 = m.clone();
    m2.set_field_by_name("any", Proto::Message(any));
    let e = parse(&mut p, &m2.encode_to_vec()).expect_err("unparseable");
    assert!(e.reason.contains("\"type.googleapis.com/w.Missing\", a type the schema does not define"), "{e:?}");
    // A message nested 80 deep (under prost's limit of 100) is past the converter's 64.
    let mut deep = m.clone();
    for _ in 0..80 {
        let mut outer = DynamicMessage::new(w.clone());
        outer.set_field_by_name("self", Proto::Message(deep));
        outer.set_field_by_name("ts", Proto::String("2015-09-12T00:00:00Z".into()));
        deep = outer;
    }
    let e = parse(&mut p, &deep.encode_to_vec()).expect_err("too deep");
    assert!(e.reason.contains("nests deeper than 64 levels"), "{e:?}");
}

#[test]
fn durations_and_field_masks_read_as_protobufs_json_writes_them() {
    use super::protobuf::{duration_text, lower_camel};
    assert_eq!(duration_text(3, 0), "3s");
    assert_eq!(duration_text(1, 500_000_000), "1.500s");
    assert_eq!(duration_text(0, -1_000), "-0.000001s");
    assert_eq!(duration_text(-2, -5), "-2.000000005s");
    assert_eq!(lower_camel("user_name.first_seen"), "userName.firstSeen");
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(512))]
    /// Fuzzed values framed with a registered id (random message indexes and bytes, and good
    /// messages with bytes flipped or cut) are rows or unparseable records: never a retry, never
    /// a panic.
    #[test]
    fn fuzzed_registry_values_are_rows_or_unparseable(
        indexes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..6),
        random in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
        flips in proptest::collection::vec((0usize..200, 1u8..=255), 1..4),
        cut in 0usize..200,
    ) {
        let decoder = json!({"type": "schema_registry", "url": "http://registry"});
        let mut p = RecordParser::with_registry(&spec(decoder, json!(["page", "country"])), Some(registry()))
            .expect("parser");
        let mut flipped = edit(2, "Main");
        for (at, bits) in &flips {
            let len = flipped.len();
            flipped[at % len] ^= bits;
        }
        let mut short = edit(2, "Main");
        short.truncate(cut.min(short.len()));
        for record in [framed(12, &indexes, &random), framed(12, &[0], &flipped), framed(12, &[0], &short)] {
            let mut out = Vec::new();
            p.parse_record(&record, &mut out);
            for parsed in out {
                if let Err(e) = parsed {
                    proptest::prop_assert!(!e.retry, "{e:?}");
                }
            }
        }
    }
}
