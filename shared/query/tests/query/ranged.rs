//! A segment read by the parts a query uses (`sluice_query::ranged`, from a local store)
//! answers as the whole segment does, for random segments and random timeseries, topN and
//! groupBy queries (filters and filtered aggregators on string, multi-value and long
//! columns); a string column's bitmap indexes are read only when a filter names it; the
//! Wikipedia sample's day segment is answered from a fraction of its bytes, as counted.

use proptest::prelude::*;
use serde_json::json;
use sluice_query::ranged::{part_runs, read_cost, read_parts};
use sluice_query::{execute, parse_query, QuerySegment, ReadPlan};
use sluice_store::meter::{Call, Meter};
use sluice_store::storage::{LocalStore, MeteredStore, ObjectStore};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::generated::{query, records, row, spec, Row};

/// The rows' segments, stored in a local store under their ids.
fn stored(rows: &[Row]) -> (tempfile::TempDir, LocalStore, Vec<QuerySegment>) {
    let records = records(rows);
    let segments = crate::query_segments(&spec(), records.iter().map(|r| r.as_bytes()));
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().to_str().expect("utf-8 path");
    let store = LocalStore::open(&format!("file://{path}"), path).expect("local store");
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    for s in &segments {
        runtime.block_on(store.put(&s.id, s.segment.as_bytes().to_vec().into())).expect("put");
    }
    (dir, store, segments)
}

/// `segments` as `plan` reads them back from `store`.
fn read_back(store: &LocalStore, segments: &[QuerySegment], plan: Option<&ReadPlan>) -> Vec<QuerySegment> {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    segments
        .iter()
        .map(|s| {
            let segment =
                runtime.block_on(read_parts(store, &s.id, s.segment.size() as u64, plan)).expect("read by parts");
            QuerySegment { id: s.id.clone(), interval: s.interval, segment }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn a_segment_read_by_its_parts_answers_as_the_whole(
        rows in prop::collection::vec(row(), 1..300),
        text in query(),
    ) {
        let (_dir, store, segments) = stored(&rows);
        let query = parse_query(&text.to_string()).expect("query parses");
        let plan = ReadPlan::of(&query);
        prop_assert!(plan.is_some(), "{text} names its columns");
        let read = read_back(&store, &segments, plan.as_ref());
        let whole = execute(&query, &segments).expect("whole");
        prop_assert_eq!(execute(&query, &read).expect("by parts"), whole, "{}", text);
    }
}

#[test]
fn bitmaps_are_read_only_for_the_columns_a_filter_names() {
    let rows: Vec<Row> = (0..2000u32)
        .map(|i| (i % 120, Some((i % 7) as u8), vec![(i % 4) as u8], i64::from(i % 50), f64::from(i), (i % 40) as u8))
        .collect();
    let (_dir, store, segments) = stored(&rows);
    let grouped = json!({"queryType": "groupBy", "dataSource": "t", "granularity": "all",
        "intervals": ["2020-01-01/2020-01-03"], "dimensions": ["city"],
        "aggregations": [{"type": "count", "name": "rows"}]});
    let mut filtered = grouped.clone();
    filtered["filter"] = json!({"type": "selector", "dimension": "city", "value": "Oslo"});
    let grouped = parse_query(&grouped.to_string()).expect("groupBy");
    let filtered = parse_query(&filtered.to_string()).expect("filtered groupBy");
    let (plain, indexed) = (ReadPlan::of(&grouped).expect("plan"), ReadPlan::of(&filtered).expect("plan"));
    assert!(plain.indexed.is_empty() && indexed.indexed.contains("city"), "{plain:?} {indexed:?}");
    let has_bitmaps = |s: &QuerySegment| s.segment.column("city").is_some_and(|c| c.parts.contains_key("bitmaps"));
    assert!(segments.iter().all(has_bitmaps), "written with bitmap indexes");
    let read = read_back(&store, &segments, Some(&plain));
    assert!(!read.iter().any(has_bitmaps), "grouped only: read without them");
    assert_eq!(execute(&grouped, &read).expect("by parts"), execute(&grouped, &segments).expect("whole"));
    // Filtered: read with them where they take fewer bytes than the ids, else filtered by the ids.
    let smaller = |s: &QuerySegment| {
        let c = s.segment.column("city").expect("city");
        let len = |part: &str| c.parts.get(part).map_or(0, |p| p.length);
        len("bitmaps") <= len("ids") + len("offsets")
    };
    let read = read_back(&store, &segments, Some(&indexed));
    for (whole, by_parts) in segments.iter().zip(&read) {
        assert_eq!(has_bitmaps(by_parts), smaller(whole), "{}", whole.id);
    }
    assert_eq!(execute(&filtered, &read).expect("by parts"), execute(&filtered, &segments).expect("whole"));
}

/// Counts GETs and the bytes they return.
#[derive(Debug, Default)]
struct Reads {
    gets: AtomicU64,
    bytes: AtomicU64,
}

impl Meter for Reads {
    fn record(&self, call: Call, _took: std::time::Duration) {
        if let Call::ObjectGet { bytes } = call {
            self.gets.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }
}

#[test]
fn the_wikipedia_day_is_answered_from_a_fraction_of_its_bytes() {
    let segments = crate::query_tutorials::wikipedia();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().to_str().expect("utf-8 path");
    let local: Arc<dyn ObjectStore> = Arc::new(LocalStore::open(&format!("file://{path}"), path).expect("store"));
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    for s in segments {
        runtime.block_on(local.put(&s.id, s.segment.as_bytes().to_vec().into())).expect("put");
    }
    let size: u64 = segments.iter().map(|s| s.segment.size() as u64).sum();
    // With the runs of adjacent parts each reads: __time beside channel, then page's
    // dictionary and ids (not its bitmaps); namespace and delta apart; added apart.
    let queries = [
        json!({"queryType": "topN", "dimension": "page", "metric": "count", "threshold": 10,
               "filter": {"type": "selector", "dimension": "channel", "value": "#en.wikipedia"},
               "aggregations": [{"type": "count", "name": "count"}]}),
        json!({"queryType": "groupBy", "dimensions": ["channel", "namespace"],
               "aggregations": [{"type": "count", "name": "count"}, {"type": "longSum", "name": "delta", "fieldName": "delta"}]}),
        json!({"queryType": "timeseries", "granularity": "hour",
               "aggregations": [{"type": "longSum", "name": "added", "fieldName": "added"}]}),
    ];
    for (mut q, runs) in queries.into_iter().zip([2, 3, 2]) {
        q["dataSource"] = json!("wikipedia");
        q["intervals"] = json!(["2015-09-12/2015-09-13"]);
        q.as_object_mut().expect("object").entry("granularity").or_insert(json!("all"));
        let query = parse_query(&q.to_string()).expect("query");
        let reads = Arc::new(Reads::default());
        let store = MeteredStore::new(local.clone(), reads.clone());
        let plan = ReadPlan::of(&query).expect("plan");
        let read: Vec<QuerySegment> = segments
            .iter()
            .map(|s| {
                let segment = runtime
                    .block_on(read_parts(&store, &s.id, s.segment.size() as u64, Some(&plan)))
                    .expect("read by parts");
                QuerySegment { id: s.id.clone(), interval: s.interval, segment }
            })
            .collect();
        assert_eq!(execute(&query, &read).expect("by parts"), execute(&query, segments).expect("whole"), "{q}");
        let (gets, bytes) = (reads.gets.load(Ordering::Relaxed), reads.bytes.load(Ordering::Relaxed));
        assert!(bytes * 2 < size, "{q}: {bytes} of {size} bytes read");
        assert!(gets > segments.len() as u64, "{q}: {gets} GETs, a gap skipped in each segment");
        let counted: (u64, u64) =
            segments.iter().map(|s| read_cost(&s.segment, &plan)).fold((0, 0), |a, c| (a.0 + c.0, a.1 + c.1));
        assert_eq!(counted, (bytes, gets), "{q}: read_cost counts what read_parts reads");
        assert!(segments.iter().all(|s| part_runs(&s.segment, &plan) == runs), "{q}: {runs} runs of parts");
    }
}
