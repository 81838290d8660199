//! `avro_stream` values: inline schemas, the schema registry's wire format, schema evolution,
//! logical types, and what makes a record unparseable or the read retried.

use super::test_support::{dims, parse, retried, row, s, spec_with, unparseable, MemoryRegistry};
use super::*;
use crate::row::DimValue;
use crate::spec::load_spec_value;
use apache_avro::types::Value as Avro;
use apache_avro::{to_avro_datum, Schema};
use serde_json::json;

const V1: &str = r#"{"type": "record", "name": "Edit", "namespace": "wiki", "fields": [
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "page", "type": "string"},
    {"name": "user", "type": ["null", "string"], "default": null},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["EDIT", "NEW"]}},
    {"name": "geo", "type": {"type": "record", "name": "Geo", "fields": [{"name": "country", "type": "string"}]}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "added", "type": "int"},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "raw", "type": "bytes"}]}"#;

/// Version 2 adds a field (with a default, as a compatible evolution does).
const V2: &str = r##"{"type": "record", "name": "Edit", "namespace": "wiki", "fields": [
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "page", "type": "string"},
    {"name": "channel", "type": "string", "default": "#en"}]}"##;

fn v1_datum(page: &str, user: Option<&str>) -> Vec<u8> {
    let schema = Schema::parse_str(V1).expect("schema");
    let record = Avro::Record(vec![
        ("ts".into(), Avro::TimestampMillis(1_442_016_000_000)),
        ("page".into(), Avro::String(page.into())),
        (
            "user".into(),
            Avro::Union(u32::from(user.is_some()), Box::new(user.map_or(Avro::Null, |u| Avro::String(u.into())))),
        ),
        ("kind".into(), Avro::Enum(1, "NEW".into())),
        ("geo".into(), Avro::Record(vec![("country".into(), Avro::String("FR".into()))])),
        ("tags".into(), Avro::Array(vec![Avro::String("b".into()), Avro::String("a".into())])),
        ("added".into(), Avro::Int(36)),
        ("price".into(), Avro::Decimal(apache_avro::Decimal::from(vec![0x30, 0x39]))),
        ("day".into(), Avro::Date(16_690)),
        ("raw".into(), Avro::Bytes(vec![1, 2, 255])),
    ]);
    to_avro_datum(&schema, record).expect("encode")
}

fn v2_datum(page: &str, channel: &str) -> Vec<u8> {
    let schema = Schema::parse_str(V2).expect("schema");
    let record = Avro::Record(vec![
        ("ts".into(), Avro::TimestampMillis(1_442_019_600_000)),
        ("page".into(), Avro::String(page.into())),
        ("channel".into(), Avro::String(channel.into())),
    ]);
    to_avro_datum(&schema, record).expect("encode")
}

/// The Confluent wire format: magic byte 0, the schema id, the datum.
fn framed(id: u32, datum: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(datum);
    out
}

fn spec(decoder: serde_json::Value, dims: serde_json::Value) -> DatasourceSpec {
    let format = json!({"type": "avro_stream", "avroBytesDecoder": decoder, "flattenSpec": {"fields": [
        {"type": "path", "name": "country", "expr": "$.geo.country"}]}});
    spec_with(format, json!({"column": "ts", "format": "millis"}), dims)
}

#[test]
fn inline_schemas_decode_nested_records_unions_enums_and_logical_types() {
    let schema: serde_json::Value = serde_json::from_str(V1).expect("schema json");
    let dims_wanted = json!(["page", "user", "kind", "country", "tags", "price", "day", "raw"]);
    let mut p =
        RecordParser::new(&spec(json!({"type": "schema_inline", "schema": schema}), dims_wanted)).expect("parser");
    let parsed = parse(&mut p, &v1_datum("Main", Some("ann")));
    let (time, got) = dims(&p, &parsed);
    assert_eq!(time, 1_442_016_000_000);
    let values: Vec<DimValue> = got.into_iter().map(|(_, v)| v).collect();
    assert_eq!(
        values,
        vec![
            s("Main"),
            s("ann"),
            s("NEW"),
            s("FR"),
            DimValue::Multi(vec!["a".into(), "b".into()]),
            s("123.45"),
            s("16690"),
            s("AQL/"),
        ]
    );
    let Ok(Parsed::Row { row, .. }) = &parsed else { unreachable!() };
    assert_eq!(row.metrics[0], crate::value::Value::Long(36));
    // A null union branch is a null value.
    let parsed = parse(&mut p, &v1_datum("Talk", None));
    let (_, got) = dims(&p, &parsed);
    assert_eq!(got[1], ("user".into(), DimValue::Null));
}

#[test]
fn registry_schemas_are_fetched_once_per_id_and_two_versions_mix_in_one_range() {
    let registry = Arc::new(MemoryRegistry::default());
    registry.add_text(1, V1);
    registry.add_text(2, V2);
    let decoder = json!({"type": "schema_registry", "url": "http://registry"});
    let mut p =
        RecordParser::with_registry(&spec(decoder, json!(["page", "channel", "country"])), Some(registry.clone()))
            .expect("parser");
    let mut seen = Vec::new();
    for n in 0..10 {
        let record = if n % 2 == 0 {
            framed(1, &v1_datum(&format!("p{n}"), None))
        } else {
            framed(2, &v2_datum(&format!("p{n}"), "#fr"))
        };
        let parsed = parse(&mut p, &record);
        seen.push(dims(&p, &parsed).1);
    }
    assert_eq!(registry.requests(), 2, "one request per schema id");
    assert_eq!(
        seen[0],
        vec![("page".into(), s("p0")), ("channel".into(), DimValue::Null), ("country".into(), s("FR"))]
    );
    assert_eq!(
        seen[1],
        vec![("page".into(), s("p1")), ("channel".into(), s("#fr")), ("country".into(), DimValue::Null)]
    );
}

#[test]
fn an_unreachable_registry_retries_and_an_unknown_id_or_bad_bytes_are_unparseable() {
    let registry = Arc::new(MemoryRegistry::default());
    registry.add_text(1, V1);
    registry.add_text(3, "{not a schema");
    let decoder = json!({"type": "schema_registry", "url": "http://registry"});
    let mut p = RecordParser::with_registry(&spec(decoder, json!(["page"])), Some(registry.clone())).expect("parser");
    assert!(unparseable(parse(&mut p, &framed(9, &v2_datum("x", "y")))).contains("schema 9 is not in the registry"));
    // The verdict is kept: the id is not asked for again for every record naming it.
    let asked = registry.requests();
    assert!(unparseable(parse(&mut p, &framed(9, &v2_datum("x", "y")))).contains("schema 9 is not in the registry"));
    assert_eq!(registry.requests(), asked);
    registry.set_down(true);
    assert!(retried(parse(&mut p, &framed(1, &v1_datum("x", None)))).contains("connection refused"));
    registry.set_down(false);
    let good = v1_datum("x", None);
    assert!(matches!(parse(&mut p, &framed(1, &good)), Ok(Parsed::Row { .. })));
    assert!(unparseable(parse(&mut p, &good[..3])).contains("magic byte"));
    assert!(unparseable(parse(&mut p, &[0, 0, 0])).contains("too short"));
    assert!(unparseable(parse(&mut p, &framed(1, &good[..good.len() - 4]))).contains("does not decode"));
    let mut longer = framed(1, &good);
    longer.push(7);
    assert!(unparseable(parse(&mut p, &longer)).contains("1 bytes follow the Avro datum"));
    // An invalid schema is unparseable, and not asked for again.
    let before = registry.requests();
    for _ in 0..3 {
        assert!(unparseable(parse(&mut p, &framed(3, &good))).contains("schema 3: invalid Avro schema"));
    }
    assert_eq!(registry.requests(), before + 1);
}

#[test]
fn registry_schemas_may_name_types_their_references_define() {
    // wiki.Geo is registered on its own; schema 7 names it and references it, and 8 references
    // a schema that references Geo in turn.
    let registry = Arc::new(MemoryRegistry::default());
    let geo =
        r#"{"type": "record", "name": "Geo", "namespace": "wiki", "fields": [{"name": "country", "type": "string"}]}"#;
    let place =
        r#"{"type": "record", "name": "Place", "namespace": "wiki", "fields": [{"name": "geo", "type": "wiki.Geo"}]}"#;
    let reference =
        |name: &str, subject: &str| SchemaReference { name: name.into(), subject: subject.into(), version: 1 };
    registry.add_version("wiki.Geo", 1, RegisteredSchema { schema: geo.into(), references: vec![] });
    registry.add_version(
        "wiki.Place",
        1,
        RegisteredSchema { schema: place.into(), references: vec![reference("wiki.Geo", "wiki.Geo")] },
    );
    // Edit also names a type it defines itself (Kind, used twice).
    let edit = r#"{"type": "record", "name": "Edit", "namespace": "wiki", "fields": [
        {"name": "ts", "type": "long"}, {"name": "page", "type": "string"}, {"name": "geo", "type": "wiki.Geo"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["EDIT", "NEW"]}},
        {"name": "was", "type": "Kind"}]}"#;
    let at = r#"{"type": "record", "name": "At", "namespace": "wiki", "fields": [
        {"name": "ts", "type": "long"}, {"name": "page", "type": "string"}, {"name": "place", "type": "wiki.Place"}]}"#;
    registry.add(7, RegisteredSchema { schema: edit.into(), references: vec![reference("wiki.Geo", "wiki.Geo")] });
    registry.add(8, RegisteredSchema { schema: at.into(), references: vec![reference("wiki.Place", "wiki.Place")] });
    let decoder = json!({"type": "schema_registry", "url": "http://registry"});
    let mut spec = spec(decoder, json!(["page", "country", "kind", "was"]));
    spec.timestamp.format = "millis".into();
    let mut p = RecordParser::with_registry(&spec, Some(registry.clone())).expect("parser");
    // ts 1442016000000 (zigzag varint), page "Main", country "FR".
    let mut datum = vec![0x80, 0xe0, 0xe5, 0x99, 0xfb, 0x53];
    datum.extend_from_slice(&[8, b'M', b'a', b'i', b'n', 4, b'F', b'R']);
    let mut edit_datum = datum.clone();
    edit_datum.extend_from_slice(&[2, 0]);
    let named = |page: &str, country: DimValue, kind: DimValue, was: DimValue| {
        vec![("page".into(), s(page)), ("country".into(), country), ("kind".into(), kind), ("was".into(), was)]
    };
    assert_eq!(row(&mut p, &framed(7, &edit_datum)).1, named("Main", s("FR"), s("NEW"), s("EDIT")));
    // Through two levels of references the country is at $.place.geo.country: not flattened
    // by the spec's $.geo.country, the row is still read.
    assert_eq!(row(&mut p, &framed(8, &datum)).1, named("Main", DimValue::Null, DimValue::Null, DimValue::Null));
    // A referenced schema the registry does not have makes the record unparseable; one it
    // cannot give now retries the read.
    registry.add(9, RegisteredSchema { schema: edit.into(), references: vec![reference("wiki.Geo", "gone")] });
    assert!(unparseable(parse(&mut p, &framed(9, &edit_datum)))
        .contains("schema 9: subject \"gone\" version 1 is not in the registry"));
    registry.add(10, RegisteredSchema { schema: edit.into(), references: vec![reference("wiki.Geo", "later")] });
    registry.set_down(true);
    assert!(retried(parse(&mut p, &framed(10, &edit_datum))).contains("schema 10 from the registry"));
}

#[test]
fn hostile_lengths_are_unparseable_not_allocated() {
    let schema = json!({"type": "record", "name": "R", "fields": [{"name": "ts", "type": "long"},
        {"name": "s", "type": "string"}, {"name": "nulls", "type": {"type": "array", "items": "null"}}]});
    let mut p =
        RecordParser::new(&spec(json!({"type": "schema_inline", "schema": schema}), json!([]))).expect("parser");
    // Avro longs are zigzag varints: n is written as 2n.
    let varint = |n: u64| {
        let (mut v, mut out) = (n << 1, Vec::new());
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
        out
    };
    // A string of 100 MB, then an array of 100 million nulls (each zero bytes long): both under
    // apache-avro's own default limit (512 MB), both past a record's 8 MiB.
    let huge_string = [varint(1), varint(100_000_000)].concat();
    let huge_array = [varint(1), varint(0), varint(100_000_000)].concat();
    for datum in [huge_string, huge_array] {
        match parse(&mut p, &datum) {
            Err(e) if !e.retry => {
                assert!(e.reason.contains("Unable to allocate 100000000 bytes (maximum allowed: 8388608)"), "{e:?}")
            }
            other => panic!("expected an unparseable record, got {other:?}"),
        }
    }
}

#[test]
fn types_referred_to_many_times_are_checked_once() {
    // Ten levels of records, each with ten fields of the next: 10^10 paths, eleven types.
    let mut level = json!({"type": "record", "name": "L10", "fields": [{"name": "v", "type": "long"}]});
    let mut defined = vec![level.clone()];
    for depth in (0..10).rev() {
        let inner = format!("L{}", depth + 1);
        let mut fields = vec![json!({"name": "f0", "type": defined.last().expect("level").clone()})];
        fields.extend((1..10).map(|i| json!({"name": format!("f{i}"), "type": inner})));
        level = json!({"type": "record", "name": format!("L{depth}"), "fields": fields});
        defined.push(level.clone());
    }
    let mut fields = level["fields"].as_array().expect("fields").clone();
    fields.push(json!({"name": "ts", "type": "long"}));
    level["fields"] = fields.into();
    let started = std::time::Instant::now();
    RecordParser::new(&spec(json!({"type": "schema_inline", "schema": level}), json!([]))).expect("parser");
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "the check walks each type once");
}

#[test]
fn recursive_schemas_and_registries_without_a_client_are_refused() {
    let recursive = json!({"type": "record", "name": "Node", "fields": [
        {"name": "ts", "type": "long"}, {"name": "next", "type": ["null", "Node"]}]});
    let e = RecordParser::new(&spec(json!({"type": "schema_inline", "schema": recursive}), json!([])))
        .expect_err("refused")
        .to_string();
    assert!(e.contains("refers to itself"), "{e}");
    let e = RecordParser::new(&spec(json!({"type": "schema_registry", "url": "http://r"}), json!([])))
        .expect_err("no client")
        .to_string();
    assert!(e.contains("needs a registry client"), "{e}");
    let format = json!({"type": "avro_stream", "avroBytesDecoder": {"type": "schema_registry"}});
    let spec = json!({"type": "kafka", "spec": {"dataSchema": {"dataSource": "t", "timestampSpec": {"column": "ts"},
        "dimensionsSpec": {"dimensions": []}}, "ioConfig": {"topic": "t", "inputFormat": format,
        "consumerProperties": {"bootstrap.servers": "x:9092"}}}});
    let e = load_spec_value(spec).expect_err("no url").to_string();
    assert!(e.contains("ioConfig.inputFormat.avroBytesDecoder.url"), "{e}");
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(512))]
    /// Fuzzed values framed with a registered id (random bytes, and good datums with bytes
    /// flipped or cut) are rows or unparseable records: never a retry, never a panic.
    #[test]
    fn fuzzed_registry_values_are_rows_or_unparseable(
        random in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
        flips in proptest::collection::vec((0usize..200, 1u8..=255), 1..4),
        cut in 0usize..200,
    ) {
        let registry = Arc::new(MemoryRegistry::default());
        registry.add_text(1, V1);
        let decoder = json!({"type": "schema_registry", "url": "http://registry"});
        let mut p = RecordParser::with_registry(&spec(decoder, json!(["page", "user", "country"])), Some(registry))
            .expect("parser");
        let mut flipped = v1_datum("Main", Some("u"));
        for (at, bits) in &flips {
            let len = flipped.len();
            flipped[at % len] ^= bits;
        }
        let mut short = v1_datum("Main", None);
        short.truncate(cut.min(short.len()));
        for datum in [random, flipped, short] {
            let mut out = Vec::new();
            p.parse_record(&framed(1, &datum), &mut out);
            for parsed in out {
                if let Err(e) = parsed {
                    proptest::prop_assert!(!e.retry, "{e:?}");
                }
            }
        }
    }
}
