//! Unit tests of record parsing: every input format, flattening, timestamps and the
//! per-record errors.

use super::*;
use crate::row::DimValue;
use crate::spec::load_spec_value;
use serde_json::json;

fn spec(
    input_format: serde_json::Value,
    dims: serde_json::Value,
    metrics: serde_json::Value,
    transform: serde_json::Value,
) -> DatasourceSpec {
    let json = json!({
        "type": "kafka",
        "spec": {
            "dataSchema": {
                "dataSource": "t",
                "timestampSpec": {"column": "ts", "format": "auto"},
                "dimensionsSpec": {"dimensions": dims},
                "metricsSpec": metrics,
                "granularitySpec": {"segmentGranularity": "day", "queryGranularity": "none", "rollup": false},
                "transformSpec": transform
            },
            "ioConfig": {"topic": "t", "inputFormat": input_format, "consumerProperties": {"bootstrap.servers": "x:9092"}}
        }
    });
    load_spec_value(json).expect("spec").spec
}

fn parse(p: &mut RecordParser, record: &str) -> Vec<Result<Parsed, ParseError>> {
    let mut out = Vec::new();
    p.parse_record(record.as_bytes(), &mut out);
    out
}

fn row(r: &Result<Parsed, ParseError>) -> &Row {
    match r {
        Ok(Parsed::Row { row, .. }) => row,
        other => panic!("expected a row, got {other:?}"),
    }
}

fn reason(r: &Result<Parsed, ParseError>) -> String {
    match r {
        Err(e) => e.reason.clone(),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn json_rows_follow_the_dimension_list() {
    let s = spec(
        json!({"type": "json"}),
        json!(["a", {"name": "n", "type": "long"}, "m"]),
        json!([{"type": "longSum", "name": "s", "fieldName": "x"}]),
        json!({}),
    );
    let mut p = RecordParser::new(&s).expect("parser");
    let out =
        parse(&mut p, r#"{"ts": "2020-01-01T00:00:00Z", "a": "A", "n": "12", "m": ["z", "b"], "x": 3, "other": 1}"#);
    let r = row(&out[0]);
    assert_eq!(r.time, 1_577_836_800_000);
    assert_eq!(
        r.dims,
        vec![DimValue::Str("A".into()), DimValue::Long(12), DimValue::Multi(vec!["b".into(), "z".into()])]
    );
    assert_eq!(r.metrics, vec![Value::Long(3)]);
}

#[test]
fn bad_records_give_reasons() {
    let s = spec(json!({"type": "json"}), json!(["a"]), json!([]), json!({}));
    let mut p = RecordParser::new(&s).expect("parser");
    assert!(reason(&parse(&mut p, "{not json")[0]).contains("malformed JSON"));
    assert!(reason(&parse(&mut p, "[1,2]")[0]).contains("expected a JSON object"));
    assert!(reason(&parse(&mut p, "  ")[0]).contains("empty"));
    assert!(reason(&parse(&mut p, r#"{"a": "x"}"#)[0]).contains("missing timestamp"));
    assert!(reason(&parse(&mut p, r#"{"ts": "tomorrow"}"#)[0]).contains("could not parse timestamp"));
    let mut out = Vec::new();
    p.parse_record(b"{\"ts\": 1, \"a\": \"\xff\xfe\"}", &mut out);
    assert!(reason(&out[0]).contains("UTF-8"));
    let deep = format!("{{\"ts\": 1, \"a\": {}{}}}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(reason(&parse(&mut p, &deep)[0]).contains("malformed JSON"));
    let huge = format!("{{\"ts\": 1, \"a\": \"{}\"}}", "x".repeat(MAX_VALUE_BYTES + 1));
    assert!(reason(&parse(&mut p, &huge)[0]).contains("byte limit"));
    let mut out = Vec::new();
    p.parse_record(&vec![b' '; MAX_RECORD_BYTES + 1], &mut out);
    assert!(reason(&out[0]).contains("exceeds"));
}

#[test]
fn wrong_typed_fields_are_row_errors_not_record_errors() {
    let s = spec(
        json!({"type": "json"}),
        json!([{"name": "n", "type": "long"}]),
        json!([{"type": "doubleSum", "name": "s", "fieldName": "x"}]),
        json!({}),
    );
    let mut p = RecordParser::new(&s).expect("parser");
    let out = parse(&mut p, r#"{"ts": 5, "n": "abc", "x": "def"}"#);
    match &out[0] {
        Ok(Parsed::Row { row, errors }) => {
            assert_eq!(row.dims, vec![DimValue::Null]);
            assert_eq!(row.metrics, vec![Value::Null]);
            assert_eq!(errors.len(), 2, "{errors:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn schemaless_discovery_excludes_time_metrics_and_exclusions() {
    let mut s = spec(
        json!({"type": "json"}),
        json!([]),
        json!([{"type": "longSum", "name": "s", "fieldName": "x"}]),
        json!({}),
    );
    s.dimension_exclusions = vec!["secret".into()];
    let mut p = RecordParser::new(&s).expect("parser");
    let out = parse(&mut p, r#"{"ts": 5, "b": "1", "x": 3, "secret": "s", "a": true}"#);
    let names: Vec<&str> = p.dimensions().iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, vec!["b", "a"]);
    assert_eq!(row(&out[0]).dims, vec![DimValue::Str("1".into()), DimValue::Str("true".into())]);
    let out = parse(&mut p, r#"{"ts": 6, "c": "new"}"#);
    assert_eq!(row(&out[0]).dims.len(), 3);
}

#[test]
fn transforms_and_filter_apply_before_indexing() {
    let s = spec(
        json!({"type": "json"}),
        json!(["animal", "loud"]),
        json!([]),
        json!({"transforms": [{"type": "expression", "name": "loud", "expression": "upper(animal)"}, {"type": "expression", "name": "__time", "expression": "__time + 1000"}],
               "filter": {"type": "not", "field": {"type": "selector", "dimension": "animal", "value": "lion"}}}),
    );
    let mut p = RecordParser::new(&s).expect("parser");
    let out = parse(&mut p, r#"{"ts": 5, "animal": "octopus"}{"ts": 6, "animal": "lion"}"#);
    assert_eq!(out.len(), 2, "two JSON objects in one record");
    let r = row(&out[0]);
    assert_eq!(r.dims[1], DimValue::Str("OCTOPUS".into()));
    assert_eq!(r.time, 1005);
    assert_eq!(out[1], Ok(Parsed::Filtered));
}

#[test]
fn csv_with_header_and_list_delimiter() {
    let s = spec(
        json!({"type": "csv", "findColumnsFromHeader": true, "listDelimiter": "|"}),
        json!(["a", "tags"]),
        json!([{"type": "longSum", "name": "s", "fieldName": "x"}]),
        json!({}),
    );
    let mut p = RecordParser::new(&s).expect("parser");
    assert_eq!(parse(&mut p, "ts,a,tags,x")[0], Ok(Parsed::Skipped));
    let out = parse(&mut p, "2020-01-01,\"A, quoted\",q|p,7\n2020-01-02,,,");
    let r = row(&out[0]);
    assert_eq!(r.dims, vec![DimValue::Str("A, quoted".into()), DimValue::Multi(vec!["p".into(), "q".into()])]);
    assert_eq!(r.metrics, vec![Value::Long(7)]);
    assert_eq!(row(&out[1]).dims, vec![DimValue::Null, DimValue::Null]);
    assert!(reason(&parse(&mut p, "2020-01-01,a,b,c,d,e")[0]).contains("fields"));
}

#[test]
fn flatten_spec_reads_nested_fields() {
    let s = spec(
        json!({"type": "json", "flattenSpec": {"useFieldDiscovery": false, "fields": [{"type": "path", "name": "city", "expr": "$.geo.city"}, {"type": "root", "name": "ts"}]}}),
        json!(["city"]),
        json!([]),
        json!({}),
    );
    let mut p = RecordParser::new(&s).expect("parser");
    let out = parse(&mut p, r#"{"ts": 5, "geo": {"city": "Lyon"}}"#);
    assert_eq!(row(&out[0]).dims, vec![DimValue::Str("Lyon".into())]);
}

#[test]
fn json_dimensions_keep_documents_and_schema_discovery_finds_nested_fields() {
    let mut declared = spec(
        json!({"type": "json"}),
        json!(["kind", {"type": "json", "name": "doc"}]),
        json!([]),
        json!({"transforms": [{"type": "expression", "name": "kind", "expression": "json_value(doc, '$.k')"}]}),
    );
    let mut p = RecordParser::new(&declared).expect("parser");
    // A string holding JSON text stays a string; an object keeps its key order.
    let out = parse(&mut p, r#"{"ts": 1, "doc": {"z": 1, "a": [true, null], "k": "K"}}"#);
    assert_eq!(
        row(&out[0]).dims,
        vec![DimValue::Str("K".into()), DimValue::Str(r#"{"z":1,"a":[true,null],"k":"K"}"#.into())]
    );
    let out = parse(&mut p, r#"{"ts": 1, "doc": "{\"not\": \"a document\"}"}"#);
    assert_eq!(row(&out[0]).dims[1], DimValue::Str(r#""{\"not\": \"a document\"}""#.into()));

    // With useSchemaDiscovery, fields beside the declared ones are discovered as `auto`
    // dimensions, read as documents (typed when a hydrant is persisted).
    let json = json!({"type": "kafka", "spec": {
        "dataSchema": {"dataSource": "t", "timestampSpec": {"column": "ts", "format": "auto"},
            "dimensionsSpec": {"dimensions": ["kind"], "useSchemaDiscovery": true},
            "granularitySpec": {"rollup": false}},
        "ioConfig": {"topic": "t", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "x:9092"}}}});
    declared = crate::spec::load_spec_value(json).expect("spec").spec;
    for flattened in [false, true] {
        let mut p = RecordParser::new(&declared).expect("parser");
        let record = r#"{"ts": 1, "kind": "k", "user": {"id": 7}, "list": [{"a": 1}], "tags": ["x", "y"], "n": 3}"#;
        // Two records in one value take the whole-tree path.
        let text = if flattened { format!("{record}\n{record}") } else { record.to_string() };
        let out = parse(&mut p, &text);
        let kinds: Vec<(&str, DimensionType)> = p.dimensions().iter().map(|d| (d.name.as_str(), d.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("kind", DimensionType::String),
                ("user", DimensionType::Auto),
                ("list", DimensionType::Auto),
                ("tags", DimensionType::Auto),
                ("n", DimensionType::Auto)
            ]
        );
        let dims = &row(&out[0]).dims;
        assert_eq!(dims[1], DimValue::Str(r#"{"id":7}"#.into()));
        assert_eq!(dims[2], DimValue::Str(r#"[{"a":1}]"#.into()));
        assert_eq!(dims[3], DimValue::Str(r#"["x","y"]"#.into()));
        assert_eq!(dims[4], DimValue::Str("3".into()));
    }
}
