//! Compaction and retention on each backend, through the replace protocol: small segments
//! replaced by one per chunk in one transaction, rows appended while a compaction runs kept
//! visible beside it, a compaction that loses to another leaving nothing, retention rules
//! dropping segments, and cleanup deleting what was replaced (records and objects) only after
//! the grace period, and what an abandoned compaction wrote.

use sluice_format::time::now_ms;
use sluice_integration::indexing::{visible_values, Backends};
use sluice_integration::protocol::Setup;
use sluice_pipeline::coordinator;
use sluice_pipeline::coordinator::config::submit;
use sluice_pipeline::coordinator::replace::{self, ReplaceKind};
use sluice_pipeline::coordinator::{compact, CompactOptions, CompactReport};
use sluice_pipeline::keys::{datasource_pk, REPLACE_PREFIX, SEGMENT_PREFIX, SUMMARY_PREFIX};
use sluice_pipeline::runner::run_until_caught_up;
use sluice_pipeline::timeline::{describe, read_records, visible_segments};
use sluice_store::metadata::{Condition, Intercepted, Item, MetadataStore};
use sluice_store::storage::{ObjectStore, StorageError};
use std::time::Duration;

const HOUR: i64 = 3_600_000;

/// 60 records over three hourly chunks, published by six tasks of 10: six segments per chunk.
async fn published(b: Backends) -> Setup {
    let s = Setup::new(b, 1, 60, 1, 10, serde_json::json!({})).await;
    s.catch_up().await;
    s
}

async fn configure(meta: &dyn MetadataStore, name: &str) {
    let config = serde_json::json!({"dataSource": name, "skipOffsetFromLatest": "PT0S", "maxRowsPerSegment": 1000});
    submit(meta, config).await.expect("submit");
}

async fn pass(meta: &dyn MetadataStore, store: &dyn ObjectStore, name: &str, grace_ms: i64) -> CompactReport {
    compact(meta, store, name, &CompactOptions { grace_ms, ..CompactOptions::at(now_ms()) })
        .await
        .expect("compaction pass")
}

/// Segments per hour of 2015-09-12, as the timeline has them.
async fn per_chunk(meta: &dyn MetadataStore, name: &str) -> Vec<usize> {
    let mut counts = vec![0; 3];
    for s in visible_segments(meta, name).await.expect("timeline") {
        counts[((s.interval.start / HOUR) % 24) as usize] += 1;
    }
    counts
}

async fn small_segments_are_replaced_and_cleaned_up_after_the_grace(b: Backends) {
    let s = published(b).await;
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    configure(meta, &s.name).await;
    let before = visible_segments(meta, &s.name).await.expect("timeline");
    assert_eq!(per_chunk(meta, &s.name).await, [6, 6, 6]);

    let r = pass(meta, store, &s.name, HOUR).await;
    assert_eq!(
        (r.chunks_compacted, r.segments_compacted, r.segments_written, r.rows_compacted),
        (3, 18, 3, 60),
        "{r:?}"
    );
    assert_eq!((r.conflicts, r.replaces_cleaned, r.skipped.len()), (0, 0, 0), "{r:?}");
    assert_eq!(per_chunk(meta, &s.name).await, [1, 1, 1]);
    assert_eq!(visible_values(meta, store, &s.name, "id").await, s.expected(), "each row once");
    let after = visible_segments(meta, &s.name).await.expect("timeline");
    assert!(after.iter().all(|c| before.iter().all(|o| c.version > o.version)), "a newer version");
    // Within the grace the replaced segments stay, for queries that read them before.
    for old in &before {
        assert!(store.get(&old.key).await.is_ok(), "{} kept during the grace", old.key);
    }
    let again = pass(meta, store, &s.name, HOUR).await;
    assert_eq!((again.chunks_compacted, again.replaces_cleaned), (0, 0), "nothing left: {again:?}");

    let cleaned = pass(meta, store, &s.name, 0).await;
    assert_eq!(cleaned.replaces_cleaned, 3, "{cleaned:?}");
    for old in &before {
        assert!(matches!(store.get(&old.key).await, Err(StorageError::NotFound { .. })), "{} deleted", old.key);
    }
    let pk = datasource_pk(&s.name);
    assert_eq!(meta.query(&pk, SEGMENT_PREFIX).await.expect("records").len(), 3, "only the compacted records");
    // Each record without its summary, which is an item of its own, deleted with its record.
    let records = read_records(meta, &s.name).await.expect("records");
    assert!(records.iter().all(|r| r.summary.is_none()), "records are written without their summaries");
    let summaries: Vec<String> =
        meta.query(&pk, SUMMARY_PREFIX).await.expect("summaries").into_iter().map(|i| i.sk).collect();
    assert_eq!(summaries, records.iter().map(|r| r.summary_sk()).collect::<Vec<_>>(), "one per record left");
    assert!(meta.query(&pk, REPLACE_PREFIX).await.expect("replaces").is_empty());
    assert!(read_records(meta, &s.name).await.expect("records").iter().all(|r| r.visible), "marked visible");
    assert_eq!(visible_values(meta, store, &s.name, "id").await, s.expected());
    s.b.discard(&s.name).await;
}

async fn rows_appended_while_a_compaction_runs_stay_visible(b: Backends) {
    let mut s = published(b).await;
    let (meta, store) = (s.b.meta.clone(), s.b.store.clone());
    configure(meta.as_ref(), &s.name).await;
    // Tasks publish 30 more rows into the same chunks between the compaction's reads and its
    // publish.
    s.produce_more(30).await;
    let (m, st, name) = (meta.clone(), store.clone(), s.name.clone());
    let appending = Intercepted::before_first(meta.clone(), "guard#", move || async move {
        let passes = run_until_caught_up(m.as_ref(), st.as_ref(), Some(&name), 40, Duration::from_secs(60), |_, _| {})
            .await
            .expect("pipeline");
        assert!(passes.last().is_some_and(|p| p.caught_up));
    });
    let r = pass(&appending, store.as_ref(), &s.name, HOUR).await;
    // The pass replaced the 18 segments it read; the appended ones stayed visible beside its
    // 3 (a pass does not read the timeline again for them), and the next pass compacts both.
    assert_eq!((r.chunks_compacted, r.segments_compacted, r.rows_compacted, r.conflicts), (3, 18, 60, 0), "{r:?}");
    assert_eq!(visible_values(meta.as_ref(), store.as_ref(), &s.name, "id").await, s.expected(), "90 rows, each once");
    let appended = per_chunk(meta.as_ref(), &s.name).await;
    assert!(appended.iter().all(|&n| n > 1), "{appended:?}");
    let r = pass(meta.as_ref(), store.as_ref(), &s.name, HOUR).await;
    assert_eq!((r.chunks_compacted, r.rows_compacted, r.conflicts), (3, 90, 0), "{r:?}");
    assert_eq!(per_chunk(meta.as_ref(), &s.name).await, [1, 1, 1]);
    assert_eq!(visible_values(meta.as_ref(), store.as_ref(), &s.name, "id").await, s.expected(), "90 rows, each once");
    s.b.discard(&s.name).await;
}

async fn a_compaction_that_loses_to_another_leaves_nothing(b: Backends) {
    let s = published(b).await;
    let (meta, store) = (s.b.meta.clone(), s.b.store.clone());
    configure(meta.as_ref(), &s.name).await;
    let (m, st, name) = (meta.clone(), store.clone(), s.name.clone());
    let racing = Intercepted::before_first(meta.clone(), "guard#", move || async move {
        let won = pass(m.as_ref(), st.as_ref(), &name, HOUR).await;
        assert_eq!(won.chunks_compacted, 3, "{won:?}");
    });
    let lost = pass(&racing, store.as_ref(), &s.name, HOUR).await;
    assert_eq!((lost.chunks_compacted, lost.conflicts), (0, 3), "{lost:?}");
    assert_eq!(per_chunk(meta.as_ref(), &s.name).await, [1, 1, 1]);
    assert_eq!(visible_values(meta.as_ref(), store.as_ref(), &s.name, "id").await, s.expected(), "each row once");
    let records = read_records(meta.as_ref(), &s.name).await.expect("records");
    assert_eq!(records.iter().filter(|r| r.replace.is_some()).count(), 3, "the loser's segments are gone");
    s.b.discard(&s.name).await;
}

async fn retention_drops_segments_at_once_and_deletes_them_after_the_grace(b: Backends) {
    let s = published(b).await;
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    let first_hour = "2015-09-12T00:00:00Z/2015-09-12T01:00:00Z";
    let rules = serde_json::json!([{"type": "dropByInterval", "interval": first_hour}, {"type": "loadForever"}]);
    coordinator::rules::set(meta, &s.name, rules).await.expect("rules");
    let doomed: Vec<String> = visible_segments(meta, &s.name)
        .await
        .expect("timeline")
        .into_iter()
        .filter(|r| (r.interval.start / HOUR) % 24 == 0)
        .map(|r| r.key)
        .collect();
    let r = pass(meta, store, &s.name, HOUR).await;
    assert_eq!((r.segments_dropped, r.chunks_compacted), (6, 0), "no compaction config: {r:?}");
    assert_eq!(per_chunk(meta, &s.name).await, [0, 6, 6]);
    let kept: Vec<String> =
        s.expected().into_iter().filter(|id| id[1..].parse::<usize>().is_ok_and(|n| n % 3 != 0)).collect();
    assert_eq!(visible_values(meta, store, &s.name, "id").await, kept, "the first hour's rows are gone");
    assert!(store.get(&doomed[0]).await.is_ok(), "kept in deep storage during the grace");
    let cleaned = pass(meta, store, &s.name, 0).await;
    assert_eq!((cleaned.replaces_cleaned, cleaned.segments_dropped), (1, 0), "{cleaned:?}");
    for key in &doomed {
        assert!(matches!(store.get(key).await, Err(StorageError::NotFound { .. })), "{key} deleted");
    }
    s.b.discard(&s.name).await;
}

async fn what_an_abandoned_compaction_wrote_is_never_visible_and_cleaned_up(b: Backends) {
    let s = published(b).await;
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    let segments = visible_segments(meta, &s.name).await.expect("timeline");
    let chunk: Vec<_> = segments.iter().filter(|r| r.interval == segments[0].interval).cloned().collect();
    // A compactor that began, wrote one segment and died: its segment is a copy of one it
    // replaces, which would count those rows twice if it were visible.
    let begun = replace::begin(meta, &s.name, ReplaceKind::Compact, &chunk, vec![chunk[0].interval], now_ms())
        .await
        .expect("begin");
    let bytes = store.get(&chunk[0].key).await.expect("segment");
    let orphan =
        describe(&s.name, chunk[0].interval, "9999", 0, &bytes, (None, Some(begun.item.id)), "dead").expect("describe");
    store.put_if_absent(&orphan.key, bytes).await.expect("object");
    let item = Item::new(datasource_pk(&s.name), orphan.sk(), serde_json::to_value(&orphan).expect("json"));
    meta.put(item, Condition::Absent).await.expect("record");
    assert_eq!(visible_values(meta, store, &s.name, "id").await, s.expected(), "not visible while running");
    // Cleaned up once it has run past the limit, plus the grace.
    let later = now_ms() + replace::MAX_REPLACE_RUN_MS + 1;
    let cleaned = replace::clean_up(meta, store, &s.name, later, 0).await.expect("cleanup");
    assert_eq!(cleaned, 1);
    assert!(matches!(store.get(&orphan.key).await, Err(StorageError::NotFound { .. })));
    assert!(meta.get(&datasource_pk(&s.name), &orphan.sk()).await.expect("get").is_none());
    let late = replace::publish(meta, &s.name, &begun, (&chunk, &[]), &Default::default(), now_ms(), Vec::new())
        .await
        .expect("publish");
    assert!(matches!(late, replace::Published::Conflict(_)), "an abandoned replace cannot publish: {late:?}");
    assert_eq!(visible_values(meta, store, &s.name, "id").await, s.expected());
    s.b.discard(&s.name).await;
}

/// The spec resubmitted with daily chunks while hourly ones exist: tasks append day segments
/// that overlap the hours and hide nothing (each row once); compaction to `DAY` then replaces
/// hours and day segments alike with one segment of the day, and compaction to `HOUR` cuts it
/// back into hours.
async fn a_coarser_granularity_overlaps_and_compacts_into_the_day(b: Backends) {
    let mut s = published(b).await;
    let b = s.b.clone();
    let (meta, store) = (b.meta.as_ref(), b.store.as_ref());
    let (spec, _) = sluice_pipeline::datasource::load(meta, &s.name).await.expect("spec");
    let mut spec = spec.spec;
    spec["spec"]["dataSchema"]["granularitySpec"]["segmentGranularity"] = "day".into();
    sluice_pipeline::datasource::submit(meta, spec, now_ms()).await.expect("resubmit");
    s.produce_more(30).await;
    s.catch_up().await;
    let segments = visible_segments(meta, &s.name).await.expect("timeline");
    let days = segments.iter().filter(|r| r.interval.end - r.interval.start == 24 * HOUR).count();
    assert!(days > 0 && days < segments.len(), "day segments beside hour segments: {segments:?}");
    assert_eq!(visible_values(meta, store, &s.name, "id").await, s.expected(), "90 rows, each once");

    let config = serde_json::json!({"dataSource": s.name, "skipOffsetFromLatest": "PT0S",
        "granularitySpec": {"segmentGranularity": "DAY"}});
    submit(meta, config).await.expect("submit");
    let r = pass(meta, store, &s.name, HOUR).await;
    assert_eq!((r.chunks_compacted, r.segments_compacted, r.rows_compacted), (1, segments.len() as u64, 90), "{r:?}");
    let compacted = visible_segments(meta, &s.name).await.expect("timeline");
    assert_eq!(compacted.len(), 1, "{compacted:?}");
    assert_eq!(compacted[0].interval.end - compacted[0].interval.start, 24 * HOUR);
    assert_eq!(visible_values(meta, store, &s.name, "id").await, s.expected());

    // And back: the day cut into hourly chunks, each row in its hour.
    let config = serde_json::json!({"dataSource": s.name, "skipOffsetFromLatest": "PT0S",
        "granularitySpec": {"segmentGranularity": "HOUR"}});
    submit(meta, config).await.expect("submit");
    let r = pass(meta, store, &s.name, HOUR).await;
    assert_eq!((r.chunks_compacted, r.segments_compacted, r.segments_written), (1, 1, 3), "{r:?}");
    assert_eq!(per_chunk(meta, &s.name).await, [1, 1, 1]);
    let hours = visible_segments(meta, &s.name).await.expect("timeline");
    assert!(hours.iter().all(|r| r.interval.end - r.interval.start == HOUR), "{hours:?}");
    assert_eq!(visible_values(meta, store, &s.name, "id").await, s.expected());
    s.b.discard(&s.name).await;
}

/// Druid's compaction re-indexing: rolled up by hour on one dimension, 60 rows become 7 pages
/// an hour, with every total kept; a second pass finds every segment written under the
/// configuration and does nothing.
async fn a_compaction_rolls_rows_up_by_hour_keeping_every_total(b: Backends) {
    let s = published(b).await;
    let (meta, store) = (s.b.meta.as_ref(), s.b.store.as_ref());
    let config = serde_json::json!({"dataSource": s.name, "skipOffsetFromLatest": "PT0S",
        "granularitySpec": {"queryGranularity": "HOUR", "rollup": true},
        "dimensionsSpec": {"dimensions": ["page"]}});
    submit(meta, config).await.expect("submit");
    let r = pass(meta, store, &s.name, HOUR).await;
    assert_eq!((r.chunks_compacted, r.segments_compacted, r.rows_compacted), (3, 18, 60), "{r:?}");
    let segments = visible_segments(meta, &s.name).await.expect("timeline");
    let rows: u64 = segments.iter().map(|r| r.num_rows).sum();
    assert_eq!((segments.len(), rows), (3, 21), "7 pages an hour: {segments:?}");
    assert!(segments.iter().all(|r| r.dimensions == ["page"]), "only page is kept: {segments:?}");
    let totals = serde_json::json!({"queryType": "timeseries", "dataSource": s.name, "granularity": "all",
        "intervals": ["2015-09-12/2015-09-13"], "aggregations": [
            {"type": "longSum", "name": "records", "fieldName": "count"},
            {"type": "longSum", "name": "added", "fieldName": "added"}]});
    let answer = sluice_query::run_query(meta, store, None, &totals.to_string()).await.expect("query");
    assert_eq!(answer[0]["result"], serde_json::json!({"records": 60, "added": 1770}), "{answer}");
    let again = pass(meta, store, &s.name, HOUR).await;
    assert_eq!(again.chunks_compacted, 0, "every segment has the configuration's rows: {again:?}");
    s.b.discard(&s.name).await;
}

sluice_integration::on_backends!(
    a_compaction_rolls_rows_up_by_hour_keeping_every_total,
    a_coarser_granularity_overlaps_and_compacts_into_the_day,
    small_segments_are_replaced_and_cleaned_up_after_the_grace,
    rows_appended_while_a_compaction_runs_stay_visible,
    a_compaction_that_loses_to_another_leaves_nothing,
    retention_drops_segments_at_once_and_deletes_them_after_the_grace,
    what_an_abandoned_compaction_wrote_is_never_visible_and_cleaned_up,
);
