//! A supervisor pass over many groups keeps up to `concurrency` plans and invocations in
//! flight, and plans and invokes exactly what a one-at-a-time pass does (librdkafka's mock
//! cluster as Kafka, the embedded metadata store behind `Intercepted`, whose hook makes
//! transactions slow and counts how many overlap).

use async_trait::async_trait;
use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{FutureProducer, FutureRecord};
use sluice_pipeline::datasource::submit;
use sluice_pipeline::invoker::{InvokeError, Job, TaskInvoker};
use sluice_pipeline::supervisor::{run_pass, SupervisorOptions};
use sluice_store::metadata::open_metadata;
use sluice_store::metadata::Intercepted;
use sluice_store::storage::open_store;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PARTITIONS: i32 = 48;

/// Counts requests in flight and the most seen at once.
#[derive(Debug, Default)]
struct InFlight {
    now: AtomicUsize,
    most: AtomicUsize,
}

impl InFlight {
    async fn during<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(n, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(5)).await;
        let out = f.await;
        self.now.fetch_sub(1, Ordering::SeqCst);
        out
    }
}

#[derive(Debug, Default)]
struct SlowInvoker {
    calls: InFlight,
    jobs: Mutex<Vec<Job>>,
}

#[async_trait]
impl TaskInvoker for SlowInvoker {
    async fn invoke(&self, job: Job) -> Result<(), InvokeError> {
        self.calls.during(async { self.jobs.lock().expect("jobs").push(job) }).await;
        Ok(())
    }
}

/// One pass with `concurrency` over a fresh store: (planned, invoked, most transactions and
/// most invocations at once).
async fn pass(bootstrap: &str, concurrency: usize) -> (Vec<String>, Vec<Job>, usize, usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let transacts = Arc::new(InFlight::default());
    let counted = transacts.clone();
    let meta = Intercepted::before_each(
        open_metadata(&format!("file://{}/meta", dir.path().display())).await.expect("metadata"),
        move || {
            let counted = counted.clone();
            async move { counted.during(async {}).await }
        },
    );
    let store = open_store(&format!("file://{}/store", dir.path().display())).await.expect("store");
    let spec = serde_json::json!({
        "type": "kafka",
        "spec": {
            "dataSchema": {
                "dataSource": "fanout",
                "timestampSpec": {"column": "t", "format": "millis"},
                "dimensionsSpec": {"dimensions": ["k"]},
                "granularitySpec": {"segmentGranularity": "hour", "queryGranularity": "none", "rollup": false}
            },
            "ioConfig": {
                "topic": "fanout", "inputFormat": {"type": "json"}, "taskCount": PARTITIONS,
                "useEarliestOffset": true, "consumerProperties": {"bootstrap.servers": bootstrap}
            }
        }
    });
    submit(&meta, spec, 0).await.expect("submit");
    let invoker = SlowInvoker::default();
    let options = SupervisorOptions { concurrency, ..SupervisorOptions::at(chrono::Utc::now().timestamp_millis()) };
    let passes = run_pass(&meta, store.as_ref(), &invoker, &options, Some("fanout")).await.expect("pass");
    let done = passes.into_iter().next().expect("the datasource").1.expect("its pass");
    let planned = done.planned.iter().map(|t| t.to_string()).collect();
    let invoked = invoker.jobs.lock().expect("jobs").clone();
    assert_eq!(invoked, done.invoked, "the pass reports the jobs it handed over");
    (planned, invoked, transacts.most.load(Ordering::SeqCst), invoker.calls.most.load(Ordering::SeqCst))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pass_plans_and_invokes_groups_concurrently_with_the_same_outcome() {
    let cluster = MockCluster::new(1).expect("mock cluster");
    cluster.create_topic("fanout", PARTITIONS, 1).expect("topic");
    let producer: FutureProducer =
        ClientConfig::new().set("bootstrap.servers", cluster.bootstrap_servers()).create().expect("producer");
    for p in 0..PARTITIONS {
        let payload = format!(r#"{{"t": 1600000000000, "k": "p{p}"}}"#);
        producer
            .send(FutureRecord::<(), _>::to("fanout").partition(p).payload(&payload), Duration::from_secs(10))
            .await
            .expect("produce");
    }
    let bootstrap = cluster.bootstrap_servers();
    let (planned_one, invoked_one, most_tx_one, most_calls_one) = pass(&bootstrap, 1).await;
    let (planned, invoked, most_tx, most_calls) = pass(&bootstrap, 8).await;
    assert_eq!(planned_one.len(), PARTITIONS as usize, "one task per group");
    assert_eq!((most_tx_one, most_calls_one), (1, 1), "concurrency 1 is one request at a time");
    assert_eq!(planned, planned_one, "the same tasks, in group order");
    assert_eq!(invoked, invoked_one, "the same jobs, in task order");
    assert!((2..=8).contains(&most_tx), "transactions in flight: {most_tx}");
    assert!((2..=8).contains(&most_calls), "invocations in flight: {most_calls}");
}
