//! The broker's fan-out against workers in this process: for random segments and random
//! timeseries, topN and groupBy queries, the answer gathered from k batches (1..8) through
//! the worker's request and answer (the partials in the answers, or left in the store and
//! deleted once read; segments downloaded whole, or read by their columns) is the
//! single-function answer; a worker that fails is
//! invoked once more, and one that keeps failing, hangs or answers garbage fails the query
//! naming it, never with a partial answer; hostile requests are refused.

#[path = "../../format/tests/common/mod.rs"]
mod common;
#[path = "../../query/tests/query/generated.rs"]
mod generated;

use async_trait::async_trait;
use generated::{query, records, row, spec, Row};
use proptest::prelude::*;
use serde_json::{json, Value};
use sluice_broker::batches::split;
use sluice_broker::hedge::DEFAULT_HEDGE;
use sluice_broker::protocol::{BatchSegment, WorkerAnswer, WorkerRequest, VERSION};
use sluice_broker::scatter::{gather, Scatter};
use sluice_broker::worker::{OPEN_BYTES, WHOLE_SEGMENT_BYTES};
use sluice_broker::{InProcess, InvokeError, Worker, WorkerInvoker};
use sluice_format::segment::Segment;
use sluice_query::{execute, finish, parse_query, QueryError, QuerySegment, SegmentCache};
use sluice_store::storage::{LocalStore, ObjectStore};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Segments of `rows` written to a store: (store, the batch segments, the same opened here).
struct Stored {
    _dir: tempfile::TempDir,
    store: Arc<dyn ObjectStore>,
    segments: Vec<BatchSegment>,
    opened: Vec<QuerySegment>,
}

async fn stored(rows: &[Row]) -> Stored {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("store").display().to_string();
    let store: Arc<dyn ObjectStore> = Arc::new(LocalStore::open(&format!("file://{path}"), &path).expect("store"));
    let spec = sluice_format::spec::load_spec(&spec().to_string()).expect("spec").spec;
    let lines = records(rows);
    let (indexes, _) = common::index_records(&spec, lines.iter().map(|l| l.as_bytes()));
    let (mut segments, mut opened) = (Vec::new(), Vec::new());
    for index in indexes.values() {
        let interval = index.interval();
        let bytes = index.persist(Default::default()).expect("persist");
        let key = format!("sluice/segments/t/{}-{}.seg", interval.start, interval.end);
        let id = format!("t_{interval}");
        store.put(&key, bytes.clone().into()).await.expect("put");
        segments.push(BatchSegment { id: id.clone(), key: key.clone(), num_bytes: bytes.len() as u64, interval });
        opened.push(QuerySegment { id, interval, segment: Segment::from_bytes(&key, bytes).expect("opens") });
    }
    Stored { _dir: dir, store, segments, opened }
}

fn worker(stored: &Stored, cache: &std::path::Path) -> Worker {
    Worker::new(stored.store.clone(), SegmentCache::new(cache))
}

/// The answer, and whether any invocation was a second one (a late batch's, here or in a tree
/// node: more invocations than batches; a node computes one of its batches itself).
async fn fanned_out(text: &Value, stored: &Stored, k: usize, invoker: Arc<dyn WorkerInvoker>) -> (Value, bool) {
    let query = Arc::new(parse_query(&text.to_string()).expect("parses"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let batches = split(stored.segments.clone(), k);
    let n = batches.len() as u64;
    let planned = n;
    let how = Scatter {
        invoker: &invoker,
        store: stored.store.as_ref(),
        deadline,
        timeout_ms: 60_000,
        width: 3,
        hedge: Some(DEFAULT_HEDGE),
    };
    let g = gather(&query, &text.to_string(), &[], batches, how).await.expect("gathered");
    assert_eq!(g.segments as usize, stored.segments.len(), "every segment computed once");
    (finish(&query, g.partial).expect("finishes"), g.invocations > planned)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn fan_out_over_k_batches_gives_the_single_function_answer(
        rows in prop::collection::vec(row(), 1..300),
        text in query(),
        k in 1usize..=8,
    ) {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(async {
            let stored = stored(&rows).await;
            let query = parse_query(&text.to_string()).expect("parses");
            let want = execute(&query, &stored.opened).expect("runs");
            let cache = tempfile::tempdir().expect("cache");
            // With an odd k, every partial goes through the store, as one past 6 MB would; with
            // k a multiple of 3, every segment is read by its columns, as a large one is; with
            // k of 4 or more, each segment is opened alone and its partial merged with the
            // batch's, as the chunks of a batch past what a worker opens at once.
            let limit = if k % 2 == 1 { 0 } else { usize::MAX };
            let whole = if k % 3 == 0 { 0 } else { WHOLE_SEGMENT_BYTES };
            let open = if k >= 4 { 1 } else { OPEN_BYTES };
            let leaf = worker(&stored, cache.path())
                .with_inline_limit(limit)
                .with_whole_segment_bytes(whole)
                .with_open_bytes(open);
            let invoker: Arc<dyn WorkerInvoker> = Arc::new(InProcess { worker: leaf });
            // Width 3: past 3 batches, tree nodes invoke the leaves.
            let tree_worker = worker(&stored, cache.path()).with_inline_limit(limit).with_subtree(invoker.clone());
            let tree: Arc<dyn WorkerInvoker> = Arc::new(InProcess { worker: tree_worker });
            let (got, hedged) = fanned_out(&text, &stored, k, tree).await;
            prop_assert_eq!(&got, &want, "{} batches: {}", k, text);
            // A late batch's losing invocation may leave its partial (the bucket rule expires it).
            let left = stored.store.list("query-partials/").await.expect("list");
            prop_assert!(hedged || left.is_empty(), "stored partials are deleted once read: {:?}", left);
            Ok(())
        })?;
    }
}

/// Fails its first `failures` invocations in the given way, then passes them on.
#[derive(Debug)]
struct Faulty {
    inner: InProcess,
    failures: usize,
    calls: AtomicUsize,
    fault: Fault,
}

#[derive(Debug, Clone, Copy)]
enum Fault {
    Crash,
    Garbage,
    Forged,
    /// A well-formed answer naming a stored partial outside its request's folder.
    StrayKey,
    Hang,
}

#[async_trait]
impl WorkerInvoker for Faulty {
    fn name(&self) -> &str {
        "faulty-worker"
    }

    async fn invoke(&self, request: Vec<u8>, within: Duration) -> Result<Vec<u8>, InvokeError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) >= self.failures {
            return self.inner.invoke(request, within).await;
        }
        match self.fault {
            Fault::Crash => Err(InvokeError::Failed("Unhandled: Runtime.ExitError".into())),
            Fault::Garbage => Ok(b"<html>502 Bad Gateway</html>".to_vec()),
            Fault::Forged => {
                // A well-formed answer whose partial is another query's.
                let mut other: Value = serde_json::from_slice(&request).expect("request");
                other["query"] = json!({"queryType": "timeseries", "dataSource": "t", "granularity": "all",
                    "intervals": ["2020-01-01/2020-01-03"], "aggregations": [{"type": "longMax", "name": "rows", "fieldName": "n"}]})
                    .to_string().into();
                self.inner.invoke(serde_json::to_vec(&other).expect("json"), within).await
            }
            Fault::StrayKey => {
                let request_json: Value = serde_json::from_slice(&request).expect("request");
                let segment = request_json["batches"][0][0]["key"].clone();
                let answer = self.inner.invoke(request, within).await?;
                let mut answer: Value = serde_json::from_slice(&answer).expect("answer");
                let fields = answer.as_object_mut().expect("object");
                fields.remove("partial");
                fields.insert("partialKey".into(), segment);
                Ok(serde_json::to_vec(&answer).expect("json"))
            }
            Fault::Hang => {
                tokio::time::sleep(within).await;
                Err(InvokeError::TimedOut(within.as_millis() as u64))
            }
        }
    }
}

fn rows() -> Vec<Row> {
    (0..600u32)
        .map(|i| (i * 4, Some((i % 5) as u8), vec![(i % 3) as u8], i64::from(i % 50), 0.25, (i % 40) as u8))
        .collect()
}

fn count_query() -> Value {
    json!({"queryType": "timeseries", "dataSource": "t", "granularity": "all",
           "intervals": ["2020-01-01/2020-01-03"], "aggregations": [{"type": "count", "name": "rows"}]})
}

async fn run_with(fault: Fault, failures: usize, timeout: Duration) -> (Result<Value, QueryError>, usize, u64) {
    let stored = stored(&rows()).await;
    let cache = tempfile::tempdir().expect("cache");
    let faulty = Arc::new(Faulty {
        inner: InProcess { worker: worker(&stored, cache.path()) },
        failures,
        calls: AtomicUsize::new(0),
        fault,
    });
    let invoker: Arc<dyn WorkerInvoker> = faulty.clone();
    let text = count_query();
    let query = Arc::new(parse_query(&text.to_string()).expect("parses"));
    let batches = split(stored.segments.clone(), 1);
    let deadline = Instant::now() + timeout;
    let how =
        Scatter { invoker: &invoker, store: stored.store.as_ref(), deadline, timeout_ms: 1234, width: 8, hedge: None };
    let out = gather(&query, &text.to_string(), &[], batches, how).await;
    let retries = out.as_ref().map(|g| g.retries).unwrap_or(0);
    let result = out.and_then(|g| finish(&query, g.partial));
    (result, faulty.calls.load(Ordering::SeqCst), retries)
}

#[tokio::test]
async fn a_worker_that_fails_once_is_invoked_again_and_the_answer_is_whole() {
    for fault in [Fault::Crash, Fault::Garbage, Fault::Forged, Fault::StrayKey] {
        let (result, calls, retries) = run_with(fault, 1, Duration::from_secs(30)).await;
        let result = result.unwrap_or_else(|e| panic!("{fault:?}: {e}"));
        assert_eq!(result[0]["result"]["rows"], 600, "{fault:?}: {result}");
        assert_eq!((calls, retries), (2, 1), "{fault:?}");
    }
}

#[tokio::test]
async fn a_worker_that_keeps_failing_fails_the_query_naming_it() {
    for (fault, says) in [
        (Fault::Crash, "Runtime.ExitError"),
        (Fault::Garbage, "unreadable answer"),
        (Fault::Forged, "it answers request"),
        (Fault::StrayKey, "not an object of this request's partials"),
    ] {
        let (result, calls, _) = run_with(fault, 2, Duration::from_secs(30)).await;
        let err = result.expect_err("no partial answer").to_string();
        assert_eq!(calls, 2, "{fault:?}: invoked twice");
        assert!(err.contains("query worker faulty-worker, batch 1 of 1"), "{fault:?}: {err}");
        assert!(err.contains(says) && err.contains("first attempt"), "{fault:?}: {err}");
    }
}

/// Its first invocation answers only after a long while; every other at once.
#[derive(Debug)]
struct OneSlow {
    inner: InProcess,
    calls: AtomicUsize,
    slow_answered: AtomicBool,
}

#[async_trait]
impl WorkerInvoker for OneSlow {
    fn name(&self) -> &str {
        "one-slow-worker"
    }

    async fn invoke(&self, request: Vec<u8>, within: Duration) -> Result<Vec<u8>, InvokeError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_secs(20).min(within)).await;
            self.slow_answered.store(true, Ordering::SeqCst);
        }
        self.inner.invoke(request, within).await
    }
}

#[tokio::test]
async fn a_late_batch_is_invoked_again_and_the_first_answer_taken() {
    let stored = stored(&rows()).await;
    let cache = tempfile::tempdir().expect("cache");
    let slow = Arc::new(OneSlow {
        inner: InProcess { worker: worker(&stored, cache.path()) },
        calls: 0.into(),
        slow_answered: false.into(),
    });
    let invoker: Arc<dyn WorkerInvoker> = slow.clone();
    let text = count_query();
    let query = Arc::new(parse_query(&text.to_string()).expect("parses"));
    let batches = split(stored.segments.clone(), 4);
    let deadline = Instant::now() + Duration::from_secs(60);
    let how = Scatter {
        invoker: &invoker,
        store: stored.store.as_ref(),
        deadline,
        timeout_ms: 60_000,
        width: 8,
        hedge: Some(1.5),
    };
    let g = gather(&query, &text.to_string(), &[], batches, how).await.expect("gathered");
    assert!(!slow.slow_answered.load(Ordering::SeqCst), "answered without waiting for the slow invocation");
    assert_eq!((g.hedges, g.retries, slow.calls.load(Ordering::SeqCst)), (1, 0, 5), "one batch invoked twice");
    let result = finish(&query, g.partial).expect("finishes");
    assert_eq!(result[0]["result"]["rows"], 600, "{result}");
}

#[tokio::test]
async fn a_worker_that_hangs_fails_the_query_at_its_timeout() {
    let started = Instant::now();
    let (result, _, _) = run_with(Fault::Hang, 2, Duration::from_millis(300)).await;
    assert!(matches!(result, Err(QueryError::Timeout(1234))), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "stopped at the deadline");
}

#[tokio::test]
async fn hostile_requests_are_answered_with_the_query_error() {
    let stored = stored(&rows()).await;
    let cache = tempfile::tempdir().expect("cache");
    let worker = worker(&stored, cache.path());
    let good = WorkerRequest {
        version: VERSION,
        query: count_query().to_string(),
        deadline_ms: sluice_format::time::now_ms() + 30_000,
        batches: vec![stored.segments.clone()],
        lookups: Vec::new(),
    };
    let ask = |request: &WorkerRequest| serde_json::to_vec(request).expect("json");
    let answer = |bytes: Vec<u8>| {
        let w = worker.clone();
        async move {
            let answer: WorkerAnswer = serde_json::from_slice(&w.handle(&bytes, None).await).expect("an answer");
            answer
        }
    };
    let fine = answer(ask(&good)).await;
    assert!(fine.partial.is_some() && fine.error.is_none(), "{fine:?}");
    assert_eq!(fine.segments as usize, stored.segments.len());
    let mut escape = good.clone();
    escape.batches[0][0].key = "../../etc/passwd".into();
    let mut version = good.clone();
    version.version = 2;
    let mut empty = good.clone();
    empty.batches = vec![vec![]];
    let mut tree = good.clone();
    tree.batches = vec![stored.segments.clone(), stored.segments.clone()];
    let mut scan = good.clone();
    scan.query = json!({"queryType": "scan", "dataSource": "t", "intervals": ["2020-01-01/2020-01-03"]}).to_string();
    let mut missing = good.clone();
    missing.batches[0][0].key = "sluice/segments/t/missing.seg".into();
    for (bytes, says) in [
        (ask(&escape), "not a relative object key"),
        (ask(&version), "version 2"),
        (ask(&empty), "batch 0 is empty"),
        (ask(&tree), "invokes no workers"),
        (ask(&scan), "scan query in a query worker"),
        (ask(&missing), "missing.seg"),
        (b"{\"version\": 1".to_vec(), "worker request"),
        (vec![b' '; 7 << 20], "more than"),
    ] {
        let a = answer(bytes).await;
        let err = serde_json::to_string(&a.error).expect("json");
        assert!(a.partial.is_none() && err.contains(says), "{says}: {err}");
    }
}

/// The hostile-query campaign's aggregations, through workers: each fails as it fails in one
/// function, with the same error, the worker's limits the engine's own.
#[tokio::test(flavor = "multi_thread")]
async fn hostile_queries_fail_through_workers_as_in_one_function() {
    let stored = stored(&rows()).await;
    let cache = tempfile::tempdir().expect("cache");
    let invoker: Arc<dyn WorkerInvoker> = Arc::new(InProcess { worker: worker(&stored, cache.path()) });
    let with = |extra: Value| {
        let mut q = count_query();
        for (k, v) in extra.as_object().expect("object") {
            q[k] = v.clone();
        }
        q
    };
    let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
    let aggregations: Vec<Value> = (0..100).map(|i| json!({"type": "count", "name": format!("n{i}")})).collect();
    for (query, says) in [
        (
            with(json!({"virtualColumns": [{"type": "expression", "name": "v", "expression": deep}],
                        "filter": {"type": "selector", "dimension": "v", "value": "1"}})),
            "nested deeper than 200 levels",
        ),
        (with(json!({"granularity": {"type": "period", "period": "P300000Y"}})), "longer than 10,000 years"),
        (
            with(json!({"granularity": {"type": "period", "period": "PT1S"}, "aggregations": aggregations})),
            "buckets times aggregators",
        ),
        (with(json!({"queryType": "groupBy", "dimensions": ["city", "city"]})), "duplicate output name"),
    ] {
        let local = parse_query(&query.to_string()).and_then(|q| execute(&q, &stored.opened));
        let fanned = async {
            let parsed = Arc::new(parse_query(&query.to_string())?);
            let batches = split(stored.segments.clone(), 4);
            let deadline = Instant::now() + Duration::from_secs(30);
            let store = stored.store.as_ref();
            let how = Scatter { invoker: &invoker, store, deadline, timeout_ms: 30_000, width: 8, hedge: None };
            let g = gather(&parsed, &query.to_string(), &[], batches, how).await?;
            finish(&parsed, g.partial)
        }
        .await;
        match (local, fanned) {
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string(), "the same error");
                assert!(a.to_string().contains(says), "{a}");
            }
            (a, b) => panic!("{query}: one function {a:?}, through workers {b:?}"),
        }
    }
}

#[tokio::test]
async fn workers_read_the_lookups_at_the_versions_the_broker_bound() {
    use sluice_metastore::lookups::{self, LookupCache, LookupSpec, DEFAULT_TIER};
    let stored = stored(&rows()).await;
    let meta_dir = tempfile::tempdir().expect("metadata dir");
    let meta = sluice_store::metadata::open_metadata(&format!("file://{}", meta_dir.path().display()))
        .await
        .expect("metadata");
    let put = |version: &str, paris: &str| {
        let spec = json!({"version": version, "lookupExtractorFactory": {"type": "map",
                          "map": {"Paris": paris, "Oslo": "Norway"}}});
        LookupSpec::parse(DEFAULT_TIER, "countries", &spec).expect("a map lookup")
    };
    lookups::put(meta.as_ref(), stored.store.as_ref(), DEFAULT_TIER, "countries", &put("v1", "France"))
        .await
        .expect("created");
    let cache = LookupCache::default();
    let (bound, refs) =
        lookups::load(meta.as_ref(), stored.store.as_ref(), &cache, DEFAULT_TIER, &["countries".to_string()].into())
            .await
            .expect("loads");
    // Replaced after the broker bound its versions: the workers still read v1.
    lookups::put(meta.as_ref(), stored.store.as_ref(), DEFAULT_TIER, "countries", &put("v2", "Francia"))
        .await
        .expect("replaced");
    let text = json!({"queryType": "groupBy", "dataSource": "t", "granularity": "all",
        "intervals": ["2020-01-01/2020-01-03"], "dimensions": ["country"],
        "virtualColumns": [{"type": "expression", "name": "country", "expression": "lookup(city, 'countries', 'elsewhere')"}],
        "aggregations": [{"type": "count", "name": "rows"}]});
    let mut query = parse_query(&text.to_string()).expect("parses");
    query.bind_lookups(bound);
    let want = execute(&query, &stored.opened).expect("runs");
    assert!(want.to_string().contains("France") && !want.to_string().contains("Francia"), "{want}");
    let query = Arc::new(query);
    let cache = tempfile::tempdir().expect("cache");
    let leaf: Arc<dyn WorkerInvoker> = Arc::new(InProcess { worker: worker(&stored, cache.path()) });
    let node = worker(&stored, cache.path()).with_subtree(leaf);
    let invoker: Arc<dyn WorkerInvoker> = Arc::new(InProcess { worker: node });
    let how = Scatter {
        invoker: &invoker,
        store: stored.store.as_ref(),
        deadline: Instant::now() + Duration::from_secs(60),
        timeout_ms: 60_000,
        width: 2,
        hedge: None,
    };
    let batches = split(stored.segments.clone(), 6);
    let g = gather(&query, &text.to_string(), &refs, batches, how).await.expect("gathered");
    assert_eq!(finish(&query, g.partial).expect("finishes"), want);
}
