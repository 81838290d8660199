//! The conformance suites against the stores that need no service (local files, embedded
//! SQLite), bare and behind each wrapper, and what each wrapper adds. The suites against S3
//! and DynamoDB run in `tests/tests/services/backends.rs`.

use crate::faults::{FaultCounts, Faults};
use crate::metadata::{
    open_metadata, Condition, FaultyMeta, Intercepted, Item, MetaError, MetadataStore, MeteredMeta, TxOp,
};
use crate::meter::{Call, Meter};
use crate::storage::{open_store, FaultyStore, MeteredStore, ObjectStore, StorageError};
use bytes::Bytes;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tempfile::TempDir;

/// Every call a metered store reported, in order.
#[derive(Debug, Default)]
struct Calls(Mutex<Vec<Call>>);

impl Meter for Calls {
    fn record(&self, call: Call, _took: Duration) {
        self.0.lock().expect("calls").push(call);
    }
}

impl Calls {
    fn taken(&self) -> Vec<Call> {
        std::mem::take(&mut *self.0.lock().expect("calls"))
    }
}

async fn local() -> (Arc<dyn ObjectStore>, TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    (open_store(&format!("file://{}", dir.path().display())).await.expect("local store"), dir)
}

async fn embedded() -> (Arc<dyn MetadataStore>, TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    (open_metadata(&format!("file://{}", dir.path().display())).await.expect("embedded store"), dir)
}

fn no_faults() -> Arc<Faults> {
    Faults::new(7, 0.0, None, FaultCounts::default())
}

async fn metered_local() -> (Arc<dyn ObjectStore>, TempDir) {
    let (inner, dir) = local().await;
    (Arc::new(MeteredStore::new(inner, Arc::new(Calls::default()))), dir)
}

async fn faulty_local() -> (Arc<dyn ObjectStore>, TempDir) {
    let (inner, dir) = local().await;
    (Arc::new(FaultyStore { inner, faults: no_faults() }), dir)
}

async fn metered_embedded() -> (Arc<dyn MetadataStore>, TempDir) {
    let (inner, dir) = embedded().await;
    (Arc::new(MeteredMeta::new(inner, Arc::new(Calls::default()))), dir)
}

async fn faulty_embedded() -> (Arc<dyn MetadataStore>, TempDir) {
    let (inner, dir) = embedded().await;
    (Arc::new(FaultyMeta { inner, faults: no_faults() }), dir)
}

async fn intercepted_embedded() -> (Arc<dyn MetadataStore>, TempDir) {
    let (inner, dir) = embedded().await;
    (Arc::new(Intercepted::before_each(inner, || async { tokio::task::yield_now().await })), dir)
}

async fn limited_embedded() -> (Arc<dyn MetadataStore>, TempDir) {
    let (inner, dir) = embedded().await;
    (Arc::new(Intercepted::small_transactions(inner, crate::metadata::MAX_TRANSACTION_ACTIONS)), dir)
}

crate::object_store_suite!(storage_local, local);
crate::object_store_suite!(storage_metered, metered_local);
crate::object_store_suite!(storage_faulty, faulty_local);
crate::metadata_store_suite!(metadata_embedded, embedded);
crate::metadata_store_suite!(metadata_metered, metered_embedded);
crate::metadata_store_suite!(metadata_faulty, faulty_embedded);
crate::metadata_store_suite!(metadata_intercepted, intercepted_embedded);
crate::metadata_store_suite!(metadata_limited, limited_embedded);

#[tokio::test]
async fn the_metered_store_reports_each_call_with_what_it_moved() {
    let ((inner, _dir), calls) = (local().await, Arc::new(Calls::default()));
    let store = MeteredStore::new(inner, calls.clone());
    store.put("a", Bytes::from_static(b"12345")).await.expect("put");
    assert!(store.put_if_absent("a", Bytes::from_static(b"xyz")).await.is_err());
    assert_eq!(store.get("a").await.expect("get").len(), 5);
    assert_eq!(store.get_range("a", 1..3).await.expect("range").len(), 2);
    assert!(matches!(store.get("missing").await, Err(StorageError::NotFound { .. })));
    store.head("a").await.expect("head");
    store.list("").await.expect("list");
    store.delete("a").await.expect("delete");
    assert_eq!(
        calls.taken(),
        [
            Call::ObjectPut { bytes: 5 },
            Call::ObjectPut { bytes: 3 },
            Call::ObjectGet { bytes: 5 },
            Call::ObjectGet { bytes: 2 },
            Call::ObjectGet { bytes: 0 },
            Call::ObjectHead,
            Call::ObjectList,
            Call::ObjectDelete,
        ]
    );
}

#[tokio::test]
async fn the_metered_metadata_store_reports_each_call_with_what_it_moved() {
    let ((inner, _dir), calls) = (embedded().await, Arc::new(Calls::default()));
    let store = MeteredMeta::new(inner, calls.clone());
    let (one, two) = (Item::new("ds", "a", json!({"x": 1})), Item::new("ds", "b", json!({"y": "two"})));
    store.put(one.clone(), Condition::Absent).await.expect("put");
    store.get("ds", "a").await.expect("get");
    store.get("ds", "missing").await.expect("get");
    store.query("ds", "").await.expect("query");
    let ops = vec![
        TxOp::Put { item: two.clone(), condition: Condition::Absent },
        TxOp::Check { pk: "ds".into(), sk: "a".into(), condition: Condition::Exists },
        TxOp::Delete { pk: "ds".into(), sk: "c".into(), condition: Condition::None },
    ];
    store.transact(ops).await.expect("transact");
    store.delete("ds", "a", Condition::None).await.expect("delete");
    assert_eq!(
        calls.taken(),
        [
            Call::MetaPut { bytes: one.size() },
            Call::MetaRead { bytes: one.size(), items: 1 },
            Call::MetaRead { bytes: 0, items: 0 },
            Call::MetaRead { bytes: one.size(), items: 1 },
            Call::MetaTransact { puts: vec![two.size()], others: 2 },
            Call::MetaDelete,
        ]
    );
}

#[tokio::test]
async fn a_killed_step_fails_every_call_from_the_kill_on() {
    let ((inner, _dir), counts) = (local().await, FaultCounts::default());
    let store = FaultyStore { inner: inner.clone(), faults: Faults::new(3, 0.0, Some(2), counts.clone()) };
    store.put("one", Bytes::from_static(b"1")).await.expect("before the kill");
    store.put("two", Bytes::from_static(b"2")).await.expect("before the kill");
    let killed = store.put("three", Bytes::from_static(b"3")).await;
    assert!(
        matches!(&killed, Err(StorageError::Unavailable { reason, .. }) if reason == "injected fault"),
        "{killed:?}"
    );
    assert!(store.faults.is_dead());
    for key in ["four", "five"] {
        assert!(store.put(key, Bytes::from_static(b"x")).await.is_err(), "a dead step's call succeeded");
        assert!(inner.head(key).await.expect("head").is_none(), "a dead step's call reached the store");
    }
    assert!(store.get("one").await.is_err());
    assert_eq!(counts.lock().expect("counts").get("kill"), Some(&1));
}

#[tokio::test]
async fn transient_faults_fail_calls_before_or_after_they_apply() {
    let ((inner, _dir), counts) = (embedded().await, FaultCounts::default());
    let store = FaultyMeta { inner: inner.clone(), faults: Faults::new(11, 1.0, None, counts.clone()) };
    let mut applied = 0;
    for i in 0..64 {
        let put = store.put(Item::new("ds", format!("k{i}"), json!({})), Condition::Absent).await;
        assert!(matches!(&put, Err(MetaError::Unavailable { reason, .. }) if reason == "injected fault"), "{put:?}");
        applied += usize::from(inner.get("ds", &format!("k{i}")).await.expect("get").is_some());
    }
    assert!(0 < applied && applied < 64, "{applied} of 64 failed calls applied: expected some, not all");
    assert_eq!(counts.lock().expect("counts").get("transient metadata error"), Some(&64));
    assert!(!store.faults.is_dead());
}

#[tokio::test]
async fn the_hook_runs_once_before_the_first_transaction_on_its_trigger() {
    let (inner, _dir) = embedded().await;
    let (runs, writer) = (Arc::new(AtomicUsize::new(0)), inner.clone());
    let counted = runs.clone();
    let store = Intercepted::before_first(inner.clone(), "ckpt#", move || async move {
        counted.fetch_add(1, Ordering::SeqCst);
        writer.put(Item::new("ds", "rival", json!({})), Condition::Absent).await.expect("rival");
    });
    let claim = |sk: &str| {
        vec![
            TxOp::Check { pk: "ds".into(), sk: "rival".into(), condition: Condition::Absent },
            TxOp::Put { item: Item::new("ds", sk, json!({})), condition: Condition::Absent },
        ]
    };
    store.transact(claim("other#1")).await.expect("no trigger, no hook");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let raced = store.transact(claim("ckpt#1")).await;
    assert!(matches!(raced, Err(MetaError::TransactionFailed { index: 0, .. })), "{raced:?}");
    store.delete("ds", "rival", Condition::Exists).await.expect("delete");
    store.transact(claim("ckpt#2")).await.expect("the hook ran once");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn transactions_over_the_limit_are_refused_by_name() {
    let (inner, _dir) = embedded().await;
    let store = Intercepted::small_transactions(inner.clone(), 2);
    let ops = |n: usize| -> Vec<TxOp> {
        (0..n)
            .map(|i| TxOp::Put { item: Item::new("ds", format!("s{n}-{i}"), json!({})), condition: Condition::Absent })
            .collect()
    };
    let refused = store.transact(ops(3)).await;
    assert!(
        matches!(&refused, Err(MetaError::Invalid(m)) if m.contains("over this store's limit of 2")),
        "{refused:?}"
    );
    assert!(inner.query("ds", "s3-").await.expect("query").is_empty());
    store.transact(ops(2)).await.expect("at the limit");
    assert_eq!(inner.query("ds", "s2-").await.expect("query").len(), 2);
}
