//! Nested (`json`) columns through the native engine: each literal path is stored as a column
//! of its own and a `nested-field` virtual column reads it (with its bitmaps); every path
//! answers the same whether read from its column or from the documents, through hydrant
//! merges, compaction and columns with more paths than are stored.

use super::common::*;
use serde_json::{json, Value};
use sluice_format::merge::{reindex, Reindex};
use sluice_format::segment::{ColumnType, NestedPath, Segment};
use sluice_query::columns::{Column, SegmentColumns};
use sluice_query::QuerySegment;

fn spec() -> sluice_format::spec::DatasourceSpec {
    let spec = json!({"type": "kafka", "spec": {
        "dataSchema": {
            "dataSource": "orders",
            "timestampSpec": {"column": "t", "format": "millis"},
            "dimensionsSpec": {"dimensions": ["kind", {"type": "json", "name": "doc"}]},
            "metricsSpec": [{"type": "count", "name": "count"}],
            "granularitySpec": {"segmentGranularity": "day", "queryGranularity": "none", "rollup": false}
        },
        "ioConfig": {"topic": "t", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "x:9092"}}
    }});
    sluice_format::spec::load_spec(&spec.to_string()).expect("spec").spec
}

/// One hydrant per group of records, merged as the merger merges them.
fn segment(groups: &[Vec<Value>]) -> Segment {
    let spec = spec();
    let hydrants: Vec<Segment> = groups
        .iter()
        .enumerate()
        .map(|(i, records)| {
            let lines: Vec<String> = records.iter().map(Value::to_string).collect();
            let (indexes, counts) = index_records(&spec, lines.iter().map(|l| l.as_bytes()));
            assert_eq!(counts.rows as usize, records.len(), "every record parses");
            persist(indexes.values().next().expect("one day"), &format!("hydrant-{i}"))
        })
        .collect();
    merge_all(&hydrants, 5_000_000).remove(0)
}

fn run(query: Value, seg: &Segment) -> Value {
    let segments = [QuerySegment { id: "s".into(), interval: seg.directory().interval, segment: seg.clone() }];
    let q = sluice_query::parse_query(&query.to_string()).expect("query parses");
    sluice_query::execute(&q, &segments).expect("query runs")
}

/// The values of each path for each row, read through a `nested-field` column and through
/// `json_value` over the documents' text (which never reads a path column).
fn both_ways(seg: &Segment, paths: &[&str]) -> (Vec<Value>, Vec<Value>) {
    let mut virtuals = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        virtuals.push(json!({"type": "nested-field", "columnName": "doc", "outputName": format!("f{i}"), "path": p}));
        virtuals.push(json!({"type": "expression", "name": format!("e{i}"),
            "expression": format!("json_value(concat(doc), '{p}')"), "outputType": "STRING"}));
    }
    let columns: Vec<String> = (0..paths.len()).flat_map(|i| [format!("f{i}"), format!("e{i}")]).collect();
    let answer = run(
        json!({"queryType": "scan", "dataSource": "orders", "intervals": ["2020-01-01/2020-01-02"],
            "virtualColumns": virtuals, "columns": columns, "resultFormat": "compactedList"}),
        seg,
    );
    let rows: Vec<Value> = answer
        .as_array()
        .expect("batches")
        .iter()
        .flat_map(|b| b["events"].as_array().cloned().unwrap_or_default())
        .collect();
    let (mut stored, mut parsed) = (Vec::new(), Vec::new());
    for row in rows {
        for i in 0..paths.len() {
            stored.push(row[2 * i].clone());
            parsed.push(row[2 * i + 1].clone());
        }
    }
    (stored, parsed)
}

fn record(t: i64, kind: &str, doc: Value) -> Value {
    json!({"t": 1_577_836_800_000i64 + t, "kind": kind, "doc": doc})
}

#[test]
fn a_nested_field_reads_its_stored_column_and_filters_through_its_bitmaps() {
    let records: Vec<Value> = (0..60)
        .map(|i| {
            let country = ["FR", "DE", "US"][i as usize % 3];
            let doc = json!({"user": {"country": country, "age": 20 + i % 7}, "tags": ["x", format!("t{}", i % 4)]});
            record(i, if i % 2 == 0 { "a" } else { "b" }, doc)
        })
        .collect();
    let seg = segment(&[records]);
    let column = |path: &str| seg.column(&NestedPath::column_name("doc", path)).cloned();
    let country = column("$.user.country").expect("a column for the path");
    assert_eq!(country.kind, ColumnType::String);
    assert!(country.parts.contains_key("bitmaps"), "the path column is indexed");
    assert_eq!(country.cardinality, Some(3));
    assert!(column("$.tags[1]").is_some() && column("$.user").is_none(), "literals only");
    assert_eq!(seg.column("doc").expect("documents").kind, ColumnType::Json);

    let virtuals: Vec<sluice_query::model::VirtualColumn> = serde_json::from_value(json!([
        {"type": "nested-field", "columnName": "doc", "outputName": "v0", "path": "$.user.country"},
        {"type": "nested-field", "columnName": "doc", "outputName": "v1",
            "pathParts": [{"type": "field", "field": "user"}, {"type": "field", "field": "age"}], "expectedType": "LONG"}
    ]))
    .expect("virtual columns");
    let mut columns = SegmentColumns::open(&seg, &virtuals).expect("open");
    assert!(matches!(&*columns.column("v0").expect("v0"), Column::String(d) if d.dictionary.len() == 3));
    assert!(matches!(&*columns.column("v1").expect("v1"), Column::Long(v, nulls) if v[0] == 20 && nulls.is_empty()));

    let answer = run(
        json!({"queryType": "groupBy", "dataSource": "orders", "intervals": ["2020-01-01/2020-01-02"], "granularity": "all",
            "virtualColumns": [{"type": "nested-field", "columnName": "doc", "outputName": "v0", "path": "$.user.country"}],
            "filter": {"type": "equals", "column": "v0", "matchValueType": "STRING", "matchValue": "DE"},
            "dimensions": ["kind"], "aggregations": [{"type": "count", "name": "n"}]}),
        &seg,
    );
    let counts: Vec<(Value, Value)> = answer
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| (r["event"]["kind"].clone(), r["event"]["n"].clone()))
        .collect();
    assert_eq!(counts, vec![(json!("a"), json!(10)), (json!("b"), json!(10))]);
}

#[test]
fn paths_answer_alike_from_their_columns_and_from_the_documents_across_merged_hydrants() {
    // Two hydrants with different paths (and one path holding numbers in one and text in the
    // other), merged into one segment.
    let first: Vec<Value> = (0..40)
        .map(|i| record(i, "a", json!({"a": i, "b": {"c": format!("x{}", i % 5)}, "list": [i, {"d": true}]})))
        .collect();
    let second: Vec<Value> = (40..80)
        .map(|i| match i % 4 {
            0 => record(i, "b", json!({"a": format!("s{i}"), "e": 1.5})),
            1 => record(i, "b", json!("just text")),
            2 => record(i, "b", json!([1, 2, 3])),
            _ => record(i, "b", Value::Null),
        })
        .collect();
    let seg = segment(&[first, second]);
    let paths = ["$.a", "$.b.c", "$.list[0]", "$.list[1].d", "$.e", "$", "$[2]", "$.missing"];
    let (stored, parsed) = both_ways(&seg, &paths);
    assert_eq!(stored.len(), 80 * paths.len());
    assert_eq!(stored, parsed);
    assert!(
        stored.iter().any(|v| v == "s40") && stored.iter().any(|v| v == "x3") && stored.iter().any(|v| v == "true")
    );

    // Compaction builds the path columns again from the documents.
    let how = Reindex {
        interval: seg.directory().interval,
        split: None,
        query_granularity: None,
        rollup: None,
        dimensions: None,
        metrics: None,
        max_rows_per_segment: 5_000_000,
        compression: Default::default(),
    };
    let compacted = reindex(std::slice::from_ref(&seg), &how).expect("reindex");
    let compacted = Segment::from_bytes("compacted", compacted[0].1.clone()).expect("open");
    let path_columns = |s: &Segment| {
        s.directory()
            .columns
            .iter()
            .filter(|c| c.is_path())
            .map(|c| c.name.clone())
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(path_columns(&compacted), path_columns(&seg));
    assert_eq!(both_ways(&compacted, &paths), (stored, parsed));
}

#[test]
fn a_column_with_more_paths_than_are_stored_reads_every_path_from_its_documents() {
    let width = sluice_format::json_path::MAX_PATHS + 50;
    let wide: serde_json::Map<String, Value> = (0..width).map(|k| (format!("k{k}"), json!(k))).collect();
    let seg = segment(&[vec![record(0, "a", Value::Object(wide)), record(1, "a", json!({"k3": "three"}))]]);
    let doc = seg.column("doc").expect("documents");
    assert!(doc.incomplete, "past the limit the column says some paths have no column");
    assert!(seg.column(&NestedPath::column_name("doc", &format!("$.k{}", width - 1))).is_none());
    let (stored, parsed) = both_ways(&seg, &["$.k3", &format!("$.k{}", width - 1)]);
    assert_eq!(stored, parsed);
    assert_eq!(stored, vec![json!("3"), json!((width - 1).to_string()), json!("three"), Value::Null]);
}

#[test]
fn a_segment_read_by_its_parts_answers_nested_fields_as_the_whole() {
    use sluice_query::ranged::read_parts;
    use sluice_store::storage::{LocalStore, ObjectStore};
    let records: Vec<Value> =
        (0..50).map(|i| record(i, "a", json!({"p": {"q": format!("v{}", i % 3)}, "n": i}))).collect();
    let seg = segment(&[records]);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().to_str().expect("utf-8 path");
    let store = LocalStore::open(&format!("file://{path}"), path).expect("local store");
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    runtime.block_on(store.put("s", seg.as_bytes().to_vec().into())).expect("put");
    let text = json!({"queryType": "timeseries", "dataSource": "orders", "intervals": ["2020-01-01/2020-01-02"],
        "granularity": "all",
        "virtualColumns": [{"type": "nested-field", "columnName": "doc", "outputName": "v", "path": "$.p.q"},
            {"type": "expression", "name": "n", "expression": "json_value(doc, '$.n', 'LONG')", "outputType": "LONG"}],
        "filter": {"type": "selector", "dimension": "v", "value": "v1"},
        "aggregations": [{"type": "longSum", "name": "sum", "fieldName": "n"}]});
    let query = sluice_query::parse_query(&text.to_string()).expect("query");
    let plan = sluice_query::ReadPlan::of(&query).expect("a plan naming its columns");
    let read = runtime.block_on(read_parts(&store, "s", seg.size() as u64, Some(&plan))).expect("read by parts");
    let answer = |s: &Segment| {
        sluice_query::execute(
            &query,
            &[QuerySegment { id: "s".into(), interval: s.directory().interval, segment: s.clone() }],
        )
        .expect("runs")
    };
    let want: i64 = (0..50).filter(|i| i % 3 == 1).sum();
    assert_eq!(answer(&read)[0]["result"]["sum"], json!(want));
    assert_eq!(answer(&read), answer(&seg));
}

#[test]
fn auto_columns_typed_apart_by_their_hydrants_merge_into_the_type_holding_both() {
    let spec = json!({"type": "kafka", "spec": {
        "dataSchema": {"dataSource": "t", "timestampSpec": {"column": "t", "format": "millis"},
            "dimensionsSpec": {"dimensions": ["kind"], "useSchemaDiscovery": true},
            "granularitySpec": {"segmentGranularity": "day", "queryGranularity": "none", "rollup": false}},
        "ioConfig": {"topic": "t", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "x:9092"}}}});
    let spec = sluice_format::spec::load_spec(&spec.to_string()).expect("spec").spec;
    let hydrant = |i: usize, values: &[Value]| {
        let lines: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(k, v)| json!({"t": 1_577_836_800_000i64 + k as i64, "kind": "k", "n": v}).to_string())
            .collect();
        let (indexes, _) = index_records(&spec, lines.iter().map(|l| l.as_bytes()));
        persist(indexes.values().next().expect("a day"), &format!("h{i}"))
    };
    let longs = hydrant(0, &[json!(1), json!(2)]);
    let doubles = hydrant(1, &[json!(2.5)]);
    let strings = hydrant(2, &[json!("x"), json!(["b", "a"])]);
    let documents = hydrant(3, &[json!({"a": 1})]);
    let kind = |s: &Segment| s.column("n").map(|c| (c.kind, c.auto));
    assert_eq!(kind(&longs), Some((ColumnType::Long, true)));
    assert_eq!(kind(&doubles), Some((ColumnType::Double, true)));
    assert_eq!(kind(&strings), Some((ColumnType::String, true)));
    assert_eq!(kind(&documents), Some((ColumnType::Json, true)));
    let values = |s: &Segment| {
        let mut v: Vec<String> =
            s.read_rows().expect("rows").into_iter().map(|(_, dims, _)| format!("{:?}", dims[1])).collect();
        v.sort();
        v
    };
    let merged = merge_all(&[longs.clone(), doubles.clone()], 100).remove(0);
    assert_eq!(kind(&merged), Some((ColumnType::Double, true)));
    assert_eq!(values(&merged), ["Double(1.0)", "Double(2.0)", "Double(2.5)"]);
    let merged = merge_all(&[longs.clone(), doubles.clone(), strings.clone()], 100).remove(0);
    assert_eq!(kind(&merged), Some((ColumnType::String, true)));
    assert_eq!(values(&merged), ["Multi([\"b\", \"a\"])", "Str(\"1\")", "Str(\"2\")", "Str(\"2.5\")", "Str(\"x\")"]);
    let merged = merge_all(&[longs, strings, documents], 100).remove(0);
    assert_eq!(kind(&merged), Some((ColumnType::Json, true)));
    assert_eq!(
        values(&merged),
        ["Str(\"1\")", "Str(\"2\")", "Str(\"[\\\"b\\\",\\\"a\\\"]\")", "Str(\"\\\"x\\\"\")", "Str(\"{\\\"a\\\":1}\")"]
    );
    assert!(merged.column(&NestedPath::column_name("n", "$.a")).is_some(), "the merged documents' paths");
}

#[test]
fn segments_holding_paths_in_different_orders_merge_and_compact() {
    // One merge of hydrants that saw `$.b` first, then `$.a` and `$.c`; another segment with
    // `$.a` and `$.b`: their path columns merge in one order whatever each holds.
    let first = segment(&[vec![record(0, "a", json!({"b": 1}))], vec![record(1, "a", json!({"a": 2, "c": 3}))]]);
    let second = segment(&[vec![record(2, "a", json!({"a": 4, "b": 5}))]]);
    let merged = merge_all(&[first, second], 100).remove(0);
    let (stored, parsed) = both_ways(&merged, &["$.a", "$.b", "$.c"]);
    assert_eq!(stored, parsed);
    assert_eq!(stored.iter().filter(|v| !v.is_null()).count(), 5);
}
