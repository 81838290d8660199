//! Queries read the published timeline from the real stores (S3 + DynamoDB, and local files +
//! SQLite): whole segments through the cache, or only the parts a query needs with ranged
//! reads; both give the same answers, the ranged path reads a fraction of the bytes, a filter
//! the segment records' summaries rule out reads no segment, fanned out to workers that read
//! segments by their columns and leave every partial in deep storage (as for a large segment
//! and a partial too large for a Lambda response) they answer the same and leave nothing
//! behind, and a damaged segment fails the query naming its key.

use serde_json::{json, Value};
use sluice_broker::{FanOut, InProcess, InvokeError, Worker, WorkerInvoker};
use sluice_http::sql_broker::{BrokerSegments, TableCache};
use sluice_integration::indexing::{spec, Backends};
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::{required_env, unique};
use sluice_pipeline::datasource::submit;
use sluice_pipeline::runner::run_until_caught_up;
use sluice_pipeline::timeline::visible_segments;
use sluice_query::{run_query, run_query_pruned, SegmentCache};
use sluice_sql::{run_sql, SqlRequest, StoreSegments};
use sluice_store::meter::{Call, Meter};
use sluice_store::storage::MeteredStore;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Counts the bytes read through a metered store.
#[derive(Debug, Default)]
struct BytesRead(AtomicU64);

impl Meter for BytesRead {
    fn record(&self, call: Call, _took: Duration) {
        if let Call::ObjectGet { bytes } = call {
            self.0.fetch_add(bytes, Ordering::Relaxed);
        }
    }
}

const QUERIES: &[&str] = &[
    r#"{"queryType":"timeseries","granularity":"hour","aggregations":[{"type":"count","name":"n"},{"type":"longSum","name":"added","fieldName":"added"}]}"#,
    r#"{"queryType":"topN","granularity":"all","dimension":"page","metric":"added","threshold":3,"aggregations":[{"type":"longSum","name":"added","fieldName":"added"}]}"#,
    r#"{"queryType":"groupBy","granularity":"all","dimensions":["page"],"filter":{"type":"in","dimension":"page","values":["p1","p3"]},"aggregations":[{"type":"count","name":"n"}]}"#,
    r#"{"queryType":"scan","columns":["page","added"],"order":"ascending","limit":4}"#,
];

async fn pipeline(b: &Backends) -> String {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "query", 2).await;
    // Long random ids make the `id` column, which most queries below do not read, most of
    // each segment.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let records: Vec<(i32, Vec<u8>)> = (0..1500)
        .map(|n| {
            let id: String = (0..50)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    format!("{x:016x}")
                })
                .collect();
            let r = format!(
                r#"{{"ts":"2015-09-12T0{}:{:02}:00Z","id":"{id}","page":"p{}","added":{n}}}"#,
                n % 3,
                n % 60,
                n % 7
            );
            (n % 2, r.into_bytes())
        })
        .collect();
    produce(&bootstrap, &topic, &records).await;
    let name = unique("query");
    let mut s = spec(&name, &topic, &bootstrap, json!({"type": "json"}), json!({}));
    s["spec"]["ioConfig"]["useEarliestOffset"] = true.into();
    submit(b.meta.as_ref(), s, 0).await.expect("submit");
    let passes =
        run_until_caught_up(b.meta.as_ref(), b.store.as_ref(), Some(&name), 30, Duration::from_secs(60), |_, _| {})
            .await
            .expect("pipeline");
    assert!(passes.iter().all(|p| p.caught_up));
    name
}

fn with_datasource(q: &str, name: &str) -> String {
    let mut v: Value = serde_json::from_str(q).expect("query json");
    v["dataSource"] = json!(name);
    v["intervals"] = json!(["2015-09-12/2015-09-13"]);
    v.to_string()
}

async fn sources_agree(b: Backends) {
    let name = pipeline(&b).await;
    let segments = visible_segments(b.meta.as_ref(), &name).await.expect("timeline");
    assert_eq!(segments.iter().map(|s| s.num_rows).sum::<u64>(), 1500);
    let total: u64 = segments.iter().map(|s| s.num_bytes).sum();
    let dir = tempfile::tempdir().expect("cache dir");
    let cache = SegmentCache::new(dir.path());
    for q in QUERIES {
        let text = with_datasource(q, &name);
        let read = Arc::new(BytesRead::default());
        let counting = MeteredStore::new(b.store.clone(), read.clone());
        let cached = run_query(b.meta.as_ref(), b.store.as_ref(), Some(&cache), &text).await.expect("cached query");
        let ranged = run_query(b.meta.as_ref(), &counting, None, &text).await.expect("ranged query");
        assert_eq!(cached, ranged, "{text}");
        assert!(cached.as_array().is_some_and(|a| !a.is_empty()), "{text}: {cached}");
        let read = read.0.load(Ordering::Relaxed);
        assert!(read * 2 < total, "{text}: ranged reads took {read} of {total} bytes");
    }
    fanned_out_through_stored_partials(&b, &name, &cache).await;
    let top = run_query(b.meta.as_ref(), b.store.as_ref(), Some(&cache), &with_datasource(QUERIES[1], &name))
        .await
        .expect("topN");
    // Worked out from the records: page p{n % 7} adds n.
    let mut sums: Vec<(i64, String)> =
        (0..7).map(|p| ((0..1500).filter(|n| n % 7 == p).sum::<i64>(), format!("p{p}"))).collect();
    sums.sort_by_key(|s| std::cmp::Reverse(s.0));
    assert_eq!(top[0]["result"][0]["page"], sums[0].1.as_str(), "{top}");
    assert_eq!(top[0]["result"][0]["added"], sums[0].0, "{top}");

    // Segment records carry summaries: a filter no segment's values match reads no byte of
    // any segment, one that every segment may match skips none.
    let absent = with_datasource(
        r#"{"queryType":"groupBy","granularity":"all","dimensions":["page"],"filter":{"type":"selector","dimension":"page","value":"p9"},"aggregations":[{"type":"count","name":"n"}]}"#,
        &name,
    );
    let read = Arc::new(BytesRead::default());
    let counting = MeteredStore::new(b.store.clone(), read.clone());
    let (answer, pruning) = run_query_pruned(b.meta.as_ref(), &counting, None, &absent).await.expect("pruned query");
    assert_eq!(answer, json!([]));
    assert_eq!((pruning.skipped, pruning.considered), (segments.len(), segments.len()), "{pruning:?}");
    assert_eq!(read.0.load(Ordering::Relaxed), 0, "no segment byte read");
    let (_, pruning) = run_query_pruned(b.meta.as_ref(), b.store.as_ref(), None, &with_datasource(QUERIES[2], &name))
        .await
        .expect("query");
    assert_eq!(pruning.skipped, 0, "every hour holds p1 and p3");

    // Damage the segment of hour 1 in deep storage: both paths fail naming its key.
    let victim = segments.iter().find(|s| s.interval.start % 86_400_000 == 3_600_000).expect("hour 1");
    let mut bytes = b.store.get(&victim.key).await.expect("segment").to_vec();
    let n = bytes.len();
    for byte in &mut bytes[n / 2..] {
        *byte ^= 0xa5;
    }
    b.store.put(&victim.key, bytes.into()).await.expect("overwrite");
    let empty_cache = tempfile::tempdir().expect("cache dir");
    let fresh = SegmentCache::new(empty_cache.path());
    let text = with_datasource(QUERIES[0], &name);
    for cache in [Some(&fresh), None] {
        let err = run_query(b.meta.as_ref(), b.store.as_ref(), cache, &text).await.expect_err("damaged segment");
        assert!(err.to_string().contains(&victim.key), "{err}");
    }
}

/// The queries with partials fanned out to up to 3 in-process workers that read every segment
/// by its columns (as a large one) and leave every partial in deep storage: the same answers,
/// and every stored partial deleted once read.
async fn fanned_out_through_stored_partials(b: &Backends, name: &str, cache: &SegmentCache) {
    let dir = tempfile::tempdir().expect("worker cache");
    let worker =
        Worker::new(b.store.clone(), SegmentCache::new(dir.path())).with_inline_limit(0).with_whole_segment_bytes(0);
    let mut fanout = FanOut::new(Arc::new(InProcess { worker }), 3);
    fanout.hedge = None;
    (fanout.min_bytes, fanout.batch_bytes) = (0, 1);
    for q in &QUERIES[..3] {
        let text = with_datasource(q, name);
        let want = run_query(b.meta.as_ref(), b.store.as_ref(), Some(cache), &text).await.expect("one function");
        let got = sluice_broker::run_query(b.meta.as_ref(), b.store.as_ref(), None, Some(&fanout), &text)
            .await
            .expect("fanned out");
        let fanned = got.fanned_out.expect("fanned out");
        assert!(fanned.batches >= 1 && fanned.segments > 0, "{text}: {fanned:?}");
        assert_eq!(got.result, want, "{text}");
    }
    let left = b.store.list(sluice_pipeline::keys::QUERY_PARTIALS_PREFIX).await.expect("list");
    assert!(left.is_empty(), "stored partials are deleted once read: {left:?}");

    // Druid SQL through the broker: the same rows, its timeseries, topN and groupBy computed
    // by the workers, and the schema read from the segments' directories.
    let counted = Arc::new(Counted { inner: fanout.invoker.clone(), calls: AtomicU64::new(0) });
    fanout.invoker = counted.clone();
    let tables = TableCache::default();
    for sql in [
        format!(r#"SELECT page, SUM(added) AS added FROM "{name}" GROUP BY page ORDER BY added DESC LIMIT 3"#),
        format!(r#"SELECT TIME_FLOOR(__time, 'PT1H') AS h, COUNT(*) AS n FROM "{name}" GROUP BY 1"#),
        format!(r#"SELECT page, COUNT(*) AS n FROM "{name}" WHERE page IN ('p1', 'p3') GROUP BY page"#),
    ] {
        let request = SqlRequest::parse(&json!({"query": sql, "resultFormat": "array"}).to_string()).expect("request");
        let want = run_sql(&StoreSegments::new(b.meta.as_ref(), b.store.as_ref(), Some(cache)), &request)
            .await
            .expect("one function");
        let before = counted.calls.load(Ordering::Relaxed);
        let source = BrokerSegments::new(b.meta.as_ref(), b.store.as_ref(), None, &fanout, &tables);
        let got = run_sql(&source, &request).await.expect("through the broker");
        assert_eq!(got.rows, want.rows, "{sql}");
        assert!(!got.rows.is_empty(), "{sql}");
        assert!(counted.calls.load(Ordering::Relaxed) > before, "{sql}: answered by the workers");
    }
}

/// Counts the invocations it passes on.
#[derive(Debug)]
struct Counted {
    inner: Arc<dyn WorkerInvoker>,
    calls: AtomicU64,
}

#[async_trait::async_trait]
impl WorkerInvoker for Counted {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn invoke(&self, request: Vec<u8>, within: Duration) -> Result<Vec<u8>, InvokeError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.invoke(request, within).await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sources_agree_on_local_backends() {
    sources_agree(Backends::local().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sources_agree_on_s3_and_dynamodb() {
    sources_agree(Backends::aws().await).await;
}
