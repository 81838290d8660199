//! The timeline a query cache keeps (`sluice_metastore::timeline::kept`) on each backend: read
//! again after every change of what is visible (tasks publishing, a compaction, a retention
//! drop, a regroup's publishes, the spec's mode changed), kept while nothing visible changed
//! (cleanup, the spec resubmitted in the same mode), with the same records as a read without
//! a cache; and read by interval, the same records as the whole timeline's of those intervals.

use sluice_format::time::{now_ms, Interval};
use sluice_integration::indexing::Backends;
use sluice_integration::protocol::Setup;
use sluice_metastore::timeline::interval::visible_in;
use sluice_metastore::timeline::kept::TimelineStats;
use sluice_metastore::timeline::visible_segments;
use sluice_pipeline::coordinator;
use sluice_pipeline::coordinator::{compact, CompactOptions, CompactReport};
use sluice_query::{visible_records, SegmentCache};
use sluice_store::metadata::MetadataStore;
use sluice_store::storage::ObjectStore;

const HOUR: i64 = 3_600_000;

/// The sort keys a query of `name` reads through `cache`, checked equal to a read without one.
async fn read(meta: &dyn MetadataStore, cache: &SegmentCache, name: &str) -> Vec<String> {
    let all = [Interval { start: i64::MIN / 2, end: i64::MAX / 2 }];
    let keys = |(records, _): (Vec<sluice_metastore::timeline::SegmentRecord>, _)| {
        records.iter().map(|r| r.sk()).collect::<Vec<_>>()
    };
    let kept = keys(visible_records(meta, Some(cache), name, &all, None).await.expect("kept timeline"));
    let fresh = keys(visible_records(meta, None, name, &all, None).await.expect("timeline"));
    assert_eq!(kept, fresh, "the kept timeline is the timeline");
    kept
}

/// Reads `name` after a change: the records are read again, once, and kept for the next query.
async fn changed(meta: &dyn MetadataStore, cache: &SegmentCache, name: &str, what: &str) -> Vec<String> {
    let before = cache.timelines().stats();
    let keys = read(meta, cache, name).await;
    let after = cache.timelines().stats();
    assert_eq!(after, TimelineStats { hits: before.hits, reads: before.reads + 1 }, "{what}: read again");
    assert_eq!(read(meta, cache, name).await, keys, "{what}: then kept");
    assert_eq!(cache.timelines().stats().hits, after.hits + 1, "{what}: kept");
    keys
}

/// Reads `name` after something that changed no visible record: answered from the kept timeline.
async fn unchanged(meta: &dyn MetadataStore, cache: &SegmentCache, name: &str, kept: &[String], what: &str) {
    let before = cache.timelines().stats();
    assert_eq!(read(meta, cache, name).await, kept, "{what}");
    assert_eq!(cache.timelines().stats(), TimelineStats { hits: before.hits + 1, reads: before.reads }, "{what}: kept");
}

/// The visible records of `name` read by interval, for every hour around the data, two hours
/// together, parts of hours and a span reaching past both ends: each the whole timeline's
/// records overlapping it, read at a version of the head.
async fn by_interval(meta: &dyn MetadataStore, name: &str, what: &str) {
    let whole = visible_segments(meta, name).await.expect("timeline");
    let first = Interval::new(1_442_016_000_000, 1_442_016_000_000 + HOUR);
    let hour = |k: i64| Interval::new(first.start + k * HOUR, first.end + k * HOUR);
    let mut asked: Vec<Vec<Interval>> = (-1..5).map(|k| vec![hour(k)]).collect();
    asked.push(vec![hour(0), hour(2)]);
    asked.push(vec![Interval::new(first.start + HOUR / 2, first.start + HOUR / 2 + 1)]);
    asked.push(vec![Interval::new(first.start - 100 * HOUR, first.start + 100 * HOUR)]);
    for intervals in asked {
        let read = visible_in(meta, name, &intervals).await.expect("read by interval");
        let expected: Vec<String> = whole
            .iter()
            .filter(|r| intervals.iter().any(|i| i.start < r.interval.end && r.interval.start < i.end))
            .map(|r| r.sk())
            .collect();
        let got: Vec<String> = read.records.iter().map(|r| r.sk()).collect();
        assert_eq!(got, expected, "{what}: {intervals:?}");
        assert!(read.version.is_some(), "{what}: a ready head anchors the read");
    }
}

/// A compaction and retention pass with a grace of `grace_ms` before cleanup.
async fn pass(meta: &dyn MetadataStore, store: &dyn ObjectStore, name: &str, grace_ms: i64) -> CompactReport {
    let options = CompactOptions { grace_ms, ..CompactOptions::at(now_ms()) };
    compact(meta, store, name, &options).await.expect("compaction pass")
}

async fn a_kept_timeline_is_read_again_after_every_visibility_change(b: Backends) {
    let mut s = Setup::new(b, 1, 60, 1, 10, serde_json::json!({})).await;
    s.catch_up().await;
    let b = s.b.clone();
    let (meta, store) = (b.meta.as_ref(), b.store.as_ref());
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = SegmentCache::new(dir.path());
    let first = changed(meta, &cache, &s.name, "first query").await;
    assert_eq!(first.len(), 18, "six tasks' segments in three hours");
    by_interval(meta, &s.name, "published").await;

    s.produce_more(30).await;
    s.catch_up().await;
    let appended = changed(meta, &cache, &s.name, "tasks published").await;
    assert!(appended.len() > first.len(), "{appended:?}");
    by_interval(meta, &s.name, "more published").await;

    let config = serde_json::json!({"dataSource": s.name, "skipOffsetFromLatest": "PT0S"});
    coordinator::config::submit(meta, config).await.expect("compaction config");
    let r = pass(meta, store, &s.name, HOUR).await;
    assert_eq!(r.chunks_compacted, 3, "{r:?}");
    let compacted = changed(meta, &cache, &s.name, "a compaction published").await;
    assert_eq!(compacted.len(), 3, "{compacted:?}");
    by_interval(meta, &s.name, "compacted").await;

    let cleaned = pass(meta, store, &s.name, 0).await;
    assert_eq!(cleaned.replaces_cleaned, 3, "{cleaned:?}");
    unchanged(meta, &cache, &s.name, &compacted, "replaces cleaned up").await;
    by_interval(meta, &s.name, "cleaned up").await;

    let first_hour = "2015-09-12T00:00:00Z/2015-09-12T01:00:00Z";
    let rules = serde_json::json!([{"type": "dropByInterval", "interval": first_hour}, {"type": "loadForever"}]);
    coordinator::rules::set(meta, &s.name, rules).await.expect("rules");
    let dropped = pass(meta, store, &s.name, HOUR).await;
    assert_eq!(dropped.segments_dropped, 1, "{dropped:?}");
    let kept = changed(meta, &cache, &s.name, "an hour dropped").await;
    assert_eq!(kept.len(), 2);
    by_interval(meta, &s.name, "dropped").await;

    // The spec resubmitted with another taskCount: the groups move to a new epoch.
    let (spec, _) = sluice_pipeline::datasource::load(meta, &s.name).await.expect("spec");
    let mut spec = spec.spec;
    spec["spec"]["ioConfig"]["taskCount"] = 2.into();
    sluice_pipeline::datasource::submit(meta, spec.clone(), now_ms()).await.expect("resubmit");
    unchanged(meta, &cache, &s.name, &kept, "the spec resubmitted in the same mode").await;
    s.produce_more(20).await;
    s.catch_up().await;
    let regrouped = changed(meta, &cache, &s.name, "regrouped and published").await;
    assert!(regrouped.len() > 2, "{regrouped:?}");
    by_interval(meta, &s.name, "regrouped").await;

    // A real-time datasource's view changes with every checkpoint: never kept.
    spec["spec"]["sluiceConfig"] = serde_json::json!({"realtime": {"checkpointPeriod": "PT1S"}});
    sluice_pipeline::datasource::submit(meta, spec, now_ms()).await.expect("real time");
    let before = cache.timelines().stats();
    read(meta, &cache, &s.name).await;
    read(meta, &cache, &s.name).await;
    assert_eq!(cache.timelines().stats(), before, "a real-time view is read, never kept");
    s.b.discard(&s.name).await;
}

/// A query's row count through `cache` (by one function, or fanned out to two in-process
/// workers), checked equal to one without a cache; and the count.
async fn count(s: &Setup, cache: &SegmentCache, fanned: bool) -> i64 {
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    let text = serde_json::json!({"queryType": "timeseries", "dataSource": s.name, "granularity": "all",
        "intervals": ["2000-01-01/2030-01-01"], "aggregations": [{"type": "count", "name": "n"}]})
    .to_string();
    let dir = tempfile::tempdir().expect("worker cache");
    let worker = sluice_broker::Worker::new(s.b.store.clone(), SegmentCache::new(dir.path()));
    let mut fanout = sluice_broker::FanOut::new(std::sync::Arc::new(sluice_broker::InProcess { worker }), 2);
    fanout.min_bytes = 0;
    let kept = sluice_broker::run_query(meta, store, Some(cache), fanned.then_some(&fanout), &text)
        .await
        .expect("query through the cache");
    assert_eq!(kept.fanned_out.is_some(), fanned);
    let fresh = sluice_query::run_query(meta, store, None, &text).await.expect("query");
    assert_eq!(kept.result, fresh, "a query through the cache answers from the current timeline");
    fresh[0]["result"]["n"].as_i64().expect("a count")
}

/// A query through a kept timeline starts on it before the check that it is current: when the
/// check finds it stale, that work is dropped and the query answers from the current one.
async fn a_query_started_on_a_stale_timeline_answers_from_the_current_one(b: Backends) {
    let mut s = Setup::new(b, 1, 60, 1, 10, serde_json::json!({})).await;
    s.catch_up().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = SegmentCache::new(dir.path());
    for fanned in [false, true] {
        let before = count(&s, &cache, fanned).await;
        let kept = cache.timelines().stats();
        assert_eq!(count(&s, &cache, fanned).await, before);
        assert_eq!(cache.timelines().stats().hits, kept.hits + 1, "answered from the kept timeline");
        s.produce_more(30).await;
        s.catch_up().await;
        let stale = cache.timelines().stats();
        assert_eq!(count(&s, &cache, fanned).await, before + 30, "every new row, none twice");
        assert_eq!(cache.timelines().stats().reads, stale.reads + 1, "the timeline read again");
    }
    s.b.discard(&s.name).await;
}

sluice_integration::on_backends!(
    a_kept_timeline_is_read_again_after_every_visibility_change,
    a_query_started_on_a_stale_timeline_answers_from_the_current_one,
);
