//! The scan's bounds: columns refused before any segment is read, rows and bytes refused as
//! they are added (the answer never holding more than one row past a bound), and the answers
//! within them unchanged.

use super::*;
use crate::parse_query;
use crate::Query;
use sluice_format::index::{IncrementalIndex, IndexConfig};
use sluice_format::input::{Parsed, RecordParser};
use sluice_format::segment::Segment;

/// A segment of `rows` rows, one a second from 2015-09-12, each with a `page` of `page(i)`
/// and a long `n` of `i`.
fn segment(id: &str, rows: usize, page: impl Fn(usize) -> String) -> QuerySegment {
    let spec = json!({"type": "kafka", "spec": {
        "dataSchema": {
            "dataSource": "scan",
            "timestampSpec": {"column": "t", "format": "millis"},
            "dimensionsSpec": {"dimensions": ["page", {"name": "n", "type": "long"}]},
            "granularitySpec": {"segmentGranularity": "all", "queryGranularity": "none", "rollup": false}
        },
        "ioConfig": {"topic": "scan", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "k:9092"}}
    }});
    let spec = sluice_format::spec::load_spec(&spec.to_string()).expect("spec").spec;
    let mut parser = RecordParser::new(&spec).expect("parser");
    let config = IndexConfig::from_spec(&spec);
    let mut index: Option<IncrementalIndex> = None;
    let mut out = Vec::new();
    for i in 0..rows {
        let record = json!({"t": 1_442_016_000_000_i64 + 1_000 * i as i64, "page": page(i), "n": i});
        parser.parse_record(record.to_string().as_bytes(), &mut out);
        for parsed in out.drain(..) {
            let Ok(Parsed::Row { row, .. }) = parsed else { panic!("row {i} does not parse") };
            let chunk = config.segment_granularity.bucket(row.time);
            index.get_or_insert_with(|| IncrementalIndex::new(config.clone(), chunk)).add(row, parser.dimensions());
        }
    }
    let index = index.expect("rows");
    let bytes = index.persist(Default::default()).expect("persist");
    QuerySegment {
        id: id.into(),
        interval: index.interval(),
        segment: Segment::from_bytes(id, bytes).expect("segment"),
    }
}

fn scan_query(extra: Value) -> ScanQuery {
    let mut q = json!({"queryType": "scan", "dataSource": "scan", "intervals": ["2015-09-12/2015-09-14"]});
    for (k, v) in extra.as_object().expect("object") {
        q[k] = v.clone();
    }
    match parse_query(&q.to_string()).expect("query") {
        Query::Scan(s) => s,
        other => panic!("not a scan: {other:?}"),
    }
}

/// Scans `q` into an answer of `bounds`, returning the outcome and the answer.
fn scan_within(q: &ScanQuery, segments: &[QuerySegment], bounds: Bounds) -> (Result<(), QueryError>, Answer) {
    let mut answer = Answer::new(bounds, q.result_format);
    let outcome = scan_into(q, segments, &mut answer);
    (outcome, answer)
}

const WIDE: Bounds = Bounds { rows: MAX_SCAN_ROWS, bytes: MAX_RESULT_BYTES };

#[test]
fn a_hundred_thousand_columns_are_refused_before_any_row_is_read() {
    let columns: Vec<String> = (0..100_000).map(|i| format!("c{i}")).collect();
    let q = scan_query(json!({"columns": columns}));
    let (outcome, answer) = scan_within(&q, &[segment("s", 10, |i| format!("p{i}"))], WIDE);
    let e = outcome.expect_err("refused").to_string();
    assert!(e.contains("columns: 100000 columns") && e.contains(&MAX_SCAN_COLUMNS.to_string()), "{e}");
    assert_eq!(answer.num_rows, 0);
}

#[test]
fn a_column_listed_twice_is_refused_and_unknown_columns_read_as_nulls() {
    let segments = [segment("s", 3, |i| format!("p{i}"))];
    let e = run(&scan_query(json!({"columns": ["page", "n", "page"]})), &segments).expect_err("refused").to_string();
    assert!(e.contains("columns[2]") && e.contains("\"page\" is listed twice (also columns[0])"), "{e}");
    let answer = run(&scan_query(json!({"columns": ["page", "nowhere"], "limit": 1})), &segments).expect("answer");
    assert_eq!(answer[0]["events"], json!([{"page": "p0", "nowhere": null}]));
}

#[test]
fn rows_past_the_bound_stop_the_scan_as_they_are_added() {
    let segments = [segment("a", 300, |i| format!("p{i}")), segment("b", 300, |i| format!("q{i}"))];
    let bounds = Bounds { rows: 100, bytes: MAX_RESULT_BYTES };
    for order in ["none", "ascending", "descending"] {
        let (outcome, answer) = scan_within(&scan_query(json!({"order": order})), &segments, bounds);
        let e = outcome.expect_err("refused").to_string();
        assert!(e.contains("limit: more than 100 rows") && e.contains("offset to page"), "{order}: {e}");
        assert_eq!(answer.num_rows, 100, "{order}: the answer stopped at the bound");
    }
    let (outcome, answer) = scan_within(&scan_query(json!({"limit": 100, "offset": 450})), &segments, bounds);
    outcome.expect("a limit within the bound is answered");
    let events = &answer.finish()[0]["events"];
    assert_eq!((events[0]["page"].clone(), events.as_array().map(Vec::len)), (json!("q150"), Some(100)));
}

#[test]
fn bytes_past_the_bound_stop_the_scan_within_a_row() {
    // Ten rows of 100 KiB pages against 250 KiB: refused at the third row, never holding it.
    let segments = [segment("a", 10, |i| format!("{i}{}", "x".repeat(100 << 10)))];
    let bounds = Bounds { rows: MAX_SCAN_ROWS, bytes: 250 << 10 };
    for order in ["none", "ascending"] {
        let (outcome, answer) = scan_within(&scan_query(json!({"order": order})), &segments, bounds);
        let e = outcome.expect_err("refused").to_string();
        assert!(e.contains("passes 256000 bytes (context.maxScatterGatherBytes) at row 2"), "{order}: {e}");
        assert_eq!(answer.num_rows, 2, "{order}");
        assert!(answer.num_bytes <= 250 << 10, "{order}: {}", answer.num_bytes);
    }
    let q = scan_query(json!({"context": {"maxScatterGatherBytes": 250 << 10}}));
    assert!(run(&q, &segments).expect_err("refused").to_string().contains("at row 2"));
    let over = scan_query(json!({"context": {"maxScatterGatherBytes": MAX_RESULT_BYTES + 1}}));
    let e = run(&over, &segments).expect_err("refused").to_string();
    assert!(e.contains("context.maxScatterGatherBytes: over this server's maximum of 67108864"), "{e}");
}

#[test]
fn time_ordering_without_a_small_limit_holds_at_most_one_row_past_the_queue() {
    let segments = [segment("a", 500, |i| format!("p{i}"))];
    let q = scan_query(json!({"order": "descending", "context": {"maxRowsQueuedForOrdering": 10}}));
    let (outcome, answer) = scan_within(&q, &segments, WIDE);
    assert!(outcome.expect_err("refused").to_string().contains("more than 10 rows (context.maxRowsQueuedForOrdering)"));
    assert_eq!(answer.num_queued, 11);
    // A limit within the queue keeps only that many rows while it reads all of them.
    let q = scan_query(
        json!({"order": "descending", "limit": 3, "offset": 2, "context": {"maxRowsQueuedForOrdering": 10}}),
    );
    let (outcome, answer) = scan_within(&q, &segments, WIDE);
    outcome.expect("answered");
    assert_eq!(answer.num_queued, 5);
    let pages: Vec<Value> =
        answer.finish()[0]["events"].as_array().expect("events").iter().map(|e| e["n"].clone()).collect();
    assert_eq!(pages, [json!(497), json!(496), json!(495)]);
}

#[test]
fn time_order_across_segments_keeps_equal_times_in_segment_order() {
    // Both segments hold the same times: rows alternate a, b per second, ascending or not.
    let segments = [segment("a", 4, |i| format!("a{i}")), segment("b", 4, |i| format!("b{i}"))];
    for (order, want) in [("ascending", ["a0", "b0", "a1", "b1"]), ("descending", ["a3", "b3", "a2", "b2"])] {
        let answer =
            run(&scan_query(json!({"order": order, "limit": 4, "columns": ["page"]})), &segments).expect("answer");
        let entries = answer.as_array().expect("entries");
        let pages: Vec<&Value> =
            entries.iter().flat_map(|e| e["events"].as_array().expect("events")).map(|e| &e["page"]).collect();
        assert_eq!(pages, want.map(|p| json!(p)).iter().collect::<Vec<_>>(), "{order}");
        let ids: Vec<&Value> = entries.iter().map(|e| &e["segmentId"]).collect();
        assert_eq!(ids, [&json!("a"), &json!("b"), &json!("a"), &json!("b")], "{order}: one entry per run");
    }
}

#[test]
fn the_counted_bytes_cover_the_answer_written() {
    let segments = [segment("a", 50, |i| format!("p\"{i}\n")), segment("b", 50, |i| format!("q{i}"))];
    for format in ["list", "compactedList"] {
        for order in ["none", "ascending"] {
            let q = scan_query(json!({"order": order, "resultFormat": format, "limit": 70, "offset": 10}));
            let (outcome, answer) = scan_within(&q, &segments, WIDE);
            outcome.expect("answered");
            let counted = answer.num_bytes;
            let written = answer.finish().to_string().len();
            assert!(
                written <= counted && counted <= written + written / 10,
                "{format} {order}: {counted} for {written}"
            );
        }
    }
}
