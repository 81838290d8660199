//! The real function binaries run as Lambda runs them, without Docker: each `bootstrap`
//! process polls a Runtime API on 127.0.0.1, and the supervisor invokes indexers and mergers
//! through the Invoke API with the AWS SDK. The spec is submitted through the operations
//! function (the api binary serving writes; the one serving reads refuses it) and the data
//! queried through the api function, with Function URL events; the supervisor gets the template's EventBridge
//! Scheduler input. Data flows from the broker through indexer and merger processes into
//! segments on the S3 endpoint and metadata on the DynamoDB endpoint.
//!
//! The binaries are cargo's (`CARGO_BIN_EXE_*`), or the `bootstrap` files under
//! `SLUICE_LAMBDA_BUILD_DIR` (`.aws-sam/build` after `sam build`, one folder per function).
//! Cold-start initialisation and binary sizes are printed (`--nocapture`).

use serde_json::{json, Value};
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::lambda_service::{Answer, FunctionConfig, LambdaService};
use sluice_integration::wikipedia::{documented_answer, records, sample_lines, tutorial_query, tutorial_spec};
use sluice_integration::{fresh_table, required_env, unique};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const PARTITIONS: i32 = 4;

/// The `bootstrap` of `binary`: from the SAM build folder when given (where the built template
/// says function `resource`'s code is: functions of one binary share a build), else cargo's.
fn bootstrap(binary: &str, resource: &str) -> PathBuf {
    match std::env::var("SLUICE_LAMBDA_BUILD_DIR") {
        Ok(dir) if !dir.is_empty() => {
            let built = std::fs::read_to_string(format!("{dir}/template.yaml")).expect("the built template");
            let built: serde_yaml::Value = serde_yaml::from_str(&built).expect("the built template is YAML");
            let code = built["Resources"][resource]["Properties"]["CodeUri"].as_str().unwrap_or(resource).to_string();
            PathBuf::from(dir).join(code).join("bootstrap")
        }
        // The query worker is another package's binary, built beside these by a workspace build.
        _ if binary == "query-worker" => PathBuf::from(env!("CARGO_BIN_EXE_api")).with_file_name("query-worker"),
        _ => PathBuf::from(match binary {
            "supervisor" => env!("CARGO_BIN_EXE_supervisor"),
            "indexer" => env!("CARGO_BIN_EXE_indexer"),
            "merger" => env!("CARGO_BIN_EXE_merger"),
            "compactor" => env!("CARGO_BIN_EXE_compactor"),
            _ => env!("CARGO_BIN_EXE_api"),
        }),
    }
}

/// The template's scheduler input with its context attributes filled in, as Scheduler sends it.
fn scheduler_event(attempt: u32) -> Value {
    let template = std::fs::read_to_string(format!("{ROOT}/template.yaml")).expect("template.yaml");
    let line = template.lines().find(|l| l.trim_start().starts_with("Input: '{")).expect("the schedule's Input");
    let input = line.trim_start().trim_start_matches("Input: '").trim_end_matches('\'');
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let filled = input
        .replace(
            "<aws.scheduler.schedule-arn>",
            "arn:aws:scheduler:us-east-1:123456789012:schedule/default/sluice-tick",
        )
        .replace("<aws.scheduler.scheduled-time>", &now)
        .replace("<aws.scheduler.execution-id>", &format!("local-{attempt}"))
        .replace("<aws.scheduler.attempt-number>", "1");
    serde_json::from_str(&filled).expect("the schedule's Input is JSON")
}

/// A Function URL request event (payload format 2.0) for the api function.
fn url_event(method: &str, path: &str, body: &str) -> Value {
    json!({
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
        "headers": {"content-type": "application/json", "host": "local.lambda-url.us-east-1.on.aws"},
        "requestContext": {
            "accountId": "123456789012", "apiId": "local", "domainName": "local.lambda-url.us-east-1.on.aws",
            "domainPrefix": "local", "requestId": unique("request"), "routeKey": "$default", "stage": "$default",
            "time": "29/Nov/2026:15:00:00 +0000", "timeEpoch": 1_795_960_800_000i64,
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "test"}
        },
        "body": body, "isBase64Encoded": false
    })
}

struct Pipeline {
    service: LambdaService,
    client: aws_sdk_lambda::Client,
    _logs: tempfile::TempDir,
}

/// The api function's settings that fan queries out to `worker`: any query, batches of about
/// 300 kB of segments, at most 4.
fn fan_out_to(worker: &str) -> Vec<(String, String)> {
    [
        ("SLUICE_QUERY_WORKER_FUNCTION", worker),
        ("SLUICE_QUERY_FANOUT_MIN_BYTES", "0"),
        ("SLUICE_QUERY_BATCH_BYTES", "300000"),
        ("SLUICE_QUERY_MAX_WORKERS", "4"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

impl Pipeline {
    /// An api function `api` (reads, on `storages[0]`) fanning out to its own query worker
    /// `worker` (on `storages[1]`, with `timeout`): a worker that cannot read the segments, or
    /// runs out of time.
    async fn start_broken_workers(
        &mut self,
        api: &str,
        worker: &str,
        storages: [&str; 2],
        timeout: Duration,
        metadata: &str,
    ) {
        let cache = self._logs.path().join(unique("cache")).display().to_string();
        for (name, binary, resource, timeout) in [
            (api, "api", "ApiFunction", Duration::from_secs(60)),
            (worker, "query-worker", "QueryWorkerFunction", timeout),
        ] {
            let mut env: Vec<(String, String)> = [
                ("SLUICE_METADATA", metadata),
                ("SLUICE_STORAGE", if binary == "api" { storages[0] } else { storages[1] }),
                ("SLUICE_CACHE", &cache),
                ("SLUICE_API_ROUTES", "reads"),
                ("SLUICE_LOG", "info"),
                ("AWS_ENDPOINT_URL_LAMBDA", &self.service.invoke_url()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
            env.extend(fan_out_to(worker));
            self.service
                .start(FunctionConfig {
                    name: name.into(),
                    binary: bootstrap(binary, resource),
                    env,
                    max_retries: 0,
                    timeout,
                    memory_mb: 1024,
                    args: Vec::new(),
                })
                .await
                .expect("a function process");
        }
    }

    /// The functions of `template.yaml` on `metadata` and `storage`.
    async fn start(metadata: &str, storage: &str, kafka_secret: Option<&str>) -> Self {
        let logs = tempfile::tempdir().expect("temp dir");
        let mut service = LambdaService::new(logs.path()).await.expect("the Lambda service");
        let base: Vec<(String, String)> = [
            ("SLUICE_METADATA", metadata.to_string()),
            ("SLUICE_STORAGE", storage.to_string()),
            ("SLUICE_INDEXER_FUNCTION", "sluice-indexer".into()),
            ("SLUICE_MERGER_FUNCTION", "sluice-merger".into()),
            ("SLUICE_KAFKA_SECRET_ARN", kafka_secret.unwrap_or("").into()),
            ("AWS_ENDPOINT_URL_LAMBDA", service.invoke_url()),
            ("SLUICE_LOG", "info".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        // Two processes of the query worker: the api function fans every timeseries, topN and
        // groupBy query out to them, in batches of about 300 kB of segments, at most 4.
        for (name, binary, resource, retries, timeout, routes) in [
            ("supervisor", "supervisor", "SupervisorFunction", 0, 120, ""),
            ("indexer", "indexer", "IndexerFunction", 2, 900, ""),
            ("merger", "merger", "MergerFunction", 2, 900, ""),
            ("compactor", "compactor", "CompactorFunction", 0, 900, ""),
            ("api", "api", "ApiFunction", 0, 60, "reads"),
            ("operations", "api", "OperationsFunction", 0, 60, "writes"),
            ("query-worker", "query-worker", "QueryWorkerFunction", 0, 60, ""),
            ("query-worker", "query-worker", "QueryWorkerFunction", 0, 60, ""),
        ] {
            let mut env = base.clone();
            env.push(("SLUICE_CACHE".into(), logs.path().join(unique("cache")).display().to_string()));
            env.push(("SLUICE_API_ROUTES".into(), routes.into()));
            env.extend(fan_out_to("sluice-query-worker"));
            service
                .start(FunctionConfig {
                    name: format!("sluice-{name}"),
                    binary: bootstrap(binary, resource),
                    env,
                    max_retries: retries,
                    timeout: Duration::from_secs(timeout),
                    memory_mb: 1024,
                    args: Vec::new(),
                })
                .await
                .expect("a function process");
        }
        let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let client = aws_sdk_lambda::Client::from_conf(
            aws_sdk_lambda::config::Builder::from(&config).endpoint_url(service.invoke_url()).build(),
        );
        Self { service, client, _logs: logs }
    }

    /// A synchronous invoke: the function's answer, and whether it reported an error.
    async fn call(&self, function: &str, event: &Value) -> (Value, bool) {
        let out = self
            .client
            .invoke()
            .function_name(function)
            .payload(aws_sdk_lambda::primitives::Blob::new(event.to_string()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("invoke {function}: {}", aws_sdk_lambda::error::DisplayErrorContext(&e)));
        let payload = out.payload().map(|b| b.as_ref().to_vec()).unwrap_or_default();
        (serde_json::from_slice(&payload).expect("JSON answer"), out.function_error().is_some())
    }

    /// An asynchronous invoke, as EventBridge Scheduler makes.
    async fn tick(&self, event: &Value) {
        let out = self
            .client
            .invoke()
            .function_name("arn:aws:lambda:us-east-1:123456789012:function:sluice-supervisor")
            .invocation_type(aws_sdk_lambda::types::InvocationType::Event)
            .payload(aws_sdk_lambda::primitives::Blob::new(event.to_string()))
            .send()
            .await
            .expect("invoke the supervisor");
        assert_eq!(out.status_code(), 202);
    }

    /// A Function URL request to the function the template routes it to (supervisor changes to
    /// the operations function, everything else to the api function): (status, JSON body).
    async fn http(&self, method: &str, path: &str, body: &str) -> (i64, Value) {
        let changes = method == "POST" && path.starts_with("/druid/indexer/");
        self.http_to(if changes { "sluice-operations" } else { "sluice-api" }, method, path, body).await
    }

    async fn http_to(&self, function: &str, method: &str, path: &str, body: &str) -> (i64, Value) {
        let (answer, failed) = self.call(function, &url_event(method, path, body)).await;
        assert!(!failed, "the api function failed: {answer}");
        let status = answer["statusCode"].as_i64().expect("statusCode");
        let body = answer["body"].as_str().map(|b| serde_json::from_str(b).expect("JSON body")).unwrap_or(Value::Null);
        (status, body)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_pipeline_runs_through_the_function_binaries() {
    let bootstrap_servers = required_env("SLUICE_KAFKA");
    let storage = format!("{}/{}", required_env("SLUICE_STORAGE").trim_end_matches('/'), unique("lambda"));
    let topic = create_topic(&bootstrap_servers, "lambda-wikipedia", PARTITIONS).await;
    let records = records(sample_lines(), PARTITIONS);
    produce(&bootstrap_servers, &topic, &records).await;
    let metadata = fresh_table("lambda").await;
    let mut pipeline = Pipeline::start(&metadata, &storage, None).await;

    // Druid's tutorial spec, submitted through the api function.
    let name = unique("wikipedia");
    let mut spec = tutorial_spec(&name, &topic, &bootstrap_servers);
    // Segments of at most 5,000 rows: several for the sample's day, for compaction below.
    spec["tuningConfig"]["maxRowsPerSegment"] = 5_000.into();
    let (status, body) =
        pipeline.http_to("sluice-api", "POST", "/druid/indexer/v1/supervisor", &spec.to_string()).await;
    assert_eq!(status, 403, "the query function changes nothing: {body}");
    let (status, body) = pipeline.http("POST", "/druid/indexer/v1/supervisor", &spec.to_string()).await;
    assert_eq!((status, &body["id"]), (200, &json!(name)), "{body}");

    // Scheduler ticks until a pass finds the datasource caught up.
    let started = Instant::now();
    let mut caught_up = false;
    for tick in 1..=30 {
        pipeline.tick(&scheduler_event(tick)).await;
        assert!(pipeline.service.wait_idle(Duration::from_secs(300)).await, "the functions went idle");
        let answers = pipeline.service.answers("sluice-supervisor");
        let (_, last) = answers.last().expect("the supervisor answered");
        let Answer::Response(summary) = last else { panic!("supervisor pass failed: {last:?}") };
        let pass = summary["datasources"].as_array().and_then(|d| d.iter().find(|p| p["datasource"] == json!(name)));
        if pass.is_some_and(|p| p["caughtUp"] == true && p["lag"] == 0) {
            caught_up = true;
            break;
        }
    }
    assert!(caught_up, "caught up through the functions");
    eprintln!("{} records through the function binaries in {:.1} s", records.len(), started.elapsed().as_secs_f64());
    assert!(pipeline.service.dead_letters().is_empty(), "{:?}", pipeline.service.dead_letters());
    for function in ["sluice-indexer", "sluice-merger"] {
        let answers = pipeline.service.answers(function);
        assert!(!answers.is_empty(), "{function} ran");
        for (event, answer) in &answers {
            assert!(matches!(answer, Answer::Response(_)), "{function} {event}: {answer:?}");
        }
    }

    // Every record once, through the api function, equal to the library's own answer.
    let count = json!({"queryType": "timeseries", "dataSource": name, "intervals": ["2015-09-01/2015-10-01"],
                       "granularity": "all", "aggregations": [{"type": "count", "name": "rows"}]});
    let (status, body) = pipeline.http("POST", "/druid/v2", &count.to_string()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body[0]["result"]["rows"], json!(records.len()), "{body}");
    let (status, top) = pipeline.http("POST", "/druid/v2", &tutorial_query("wikipedia-top-pages.json", &name)).await;
    assert_eq!(status, 200, "{top}");
    // The shipped sample: the documented ranking, stamped with the first record left on the day.
    assert_eq!(top[0]["result"], documented_answer("wikipedia-top-pages.json")["result"], "{top}");
    let meta = sluice_store::metadata::open_metadata(&metadata).await.expect("metadata");
    let store = sluice_store::storage::open_store(&storage).await.expect("store");
    let direct = sluice_query::run_query(
        meta.as_ref(),
        store.as_ref(),
        None,
        &tutorial_query("wikipedia-top-pages.json", &name),
    )
    .await
    .expect("query in this process");
    assert_eq!(top, direct, "the api function answers as the library does");
    // Those queries were fanned out: their batches answered by the query-worker processes.
    let worker_answers = pipeline.service.answers("sluice-query-worker");
    assert!(worker_answers.len() >= 4, "two queries of at least two batches: {}", worker_answers.len());
    for (_, answer) in &worker_answers {
        assert!(matches!(answer, Answer::Response(a) if a["partial"].is_string()), "{answer:?}");
    }
    // A worker that cannot read the segments, and one out of time: each batch is invoked
    // twice, then the query fails naming the worker; never a partial answer.
    let elsewhere = format!("{storage}-elsewhere");
    let lost = ["sluice-api-lost", "sluice-worker-lost", "not found"];
    pipeline.start_broken_workers(lost[0], lost[1], [&storage, &elsewhere], Duration::from_secs(60), &metadata).await;
    let slow = ["sluice-api-slow", "sluice-worker-slow", "Task timed out"];
    pipeline.start_broken_workers(slow[0], slow[1], [&storage, &storage], Duration::from_millis(1), &metadata).await;
    for [api, worker, says] in [lost, slow] {
        let (status, body) = pipeline.http_to(api, "POST", "/druid/v2", &count.to_string()).await;
        assert_eq!(status, 500, "{api}: {body}");
        let message = body["errorMessage"].as_str().unwrap_or_default();
        assert!(message.contains(&format!("query worker {worker}, batch")) && message.contains(says), "{api}: {body}");
        let answers = pipeline.service.answers(worker);
        assert!(answers.len() >= 2, "{worker}: the failed batch was invoked again: {answers:?}");
        assert!(answers.iter().all(|(_, a)| !matches!(a, Answer::Response(r) if r["partial"].is_string())), "{worker}");
    }
    // Druid SQL through the api function: the same count, and a parse error as Druid's JSON.
    let sql = json!({"query": format!("SELECT COUNT(*) AS n FROM \"{name}\""), "resultFormat": "array"});
    let (status, body) = pipeline.http("POST", "/druid/v2/sql", &sql.to_string()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!([[records.len()]]));
    let (status, body) = pipeline.http("POST", "/druid/v2/sql", r#"{"query": "SELECT page FROM"}"#).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "SQL parse failed", "{body}");
    assert!(body["errorMessage"].as_str().is_some_and(|m| m.contains("line 1, column")), "{body}");

    // A bad query is Druid's error JSON with 400; a bad event is a non-retryable error naming the field.
    let (status, body) = pipeline.http("POST", "/druid/v2", r#"{"queryType":"topN","dataSource":"x"}"#).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].is_string() && body["errorMessage"].is_string(), "{body}");
    let (answer, failed) = pipeline
        .call("sluice-indexer", &json!({"job": "index", "task": {"datasource": name, "group": 0, "seq": "x"}}))
        .await;
    assert!(failed, "{answer}");
    assert_eq!(answer["errorType"], "Sluice.InvalidEvent", "{answer}");
    assert!(answer["errorMessage"].as_str().is_some_and(|m| m.contains("task.seq")), "{answer}");

    // Counters as CloudWatch Embedded Metric Format lines.
    let emf = |function: &str, metric: &str| {
        pipeline.service.logs(function).lines().any(|l| l.contains("\"_aws\"") && l.contains(&format!("\"{metric}\"")))
    };
    assert!(
        emf("sluice-supervisor", "Lag")
            && emf("sluice-supervisor", "QueryableLag")
            && emf("sluice-supervisor", "TotalLag"),
        "supervisor EMF"
    );
    assert!(emf("sluice-indexer", "RowsProcessed") && emf("sluice-indexer", "RowsUnparseable"), "indexer EMF");
    assert!(emf("sluice-merger", "Segments"), "merger EMF");

    // Compaction: Druid's config through the operations function, a scheduled pass of the
    // compactor, one segment per day left and the same answers.
    let before = sluice_pipeline::timeline::visible_segments(meta.as_ref(), &name).await.expect("timeline");
    let config = json!({"dataSource": name, "skipOffsetFromLatest": "PT0S", "maxRowsPerSegment": 100_000}).to_string();
    let (status, body) =
        pipeline.http_to("sluice-operations", "POST", "/druid/coordinator/v1/config/compaction", &config).await;
    assert_eq!(status, 200, "{body}");
    let (answer, failed) = pipeline.call("sluice-compactor", &scheduler_event(99)).await;
    assert!(!failed, "{answer}");
    let pass =
        answer["datasources"].as_array().and_then(|d| d.iter().find(|p| p["datasource"] == json!(name))).cloned();
    let after = sluice_pipeline::timeline::visible_segments(meta.as_ref(), &name).await.expect("timeline");
    let days: std::collections::BTreeSet<_> = before.iter().map(|s| s.interval).collect();
    assert!(before.len() > days.len(), "more segments than days before: {}", before.len());
    assert_eq!(after.len(), days.len(), "one segment per day after {pass:?}");
    let field = |f: &str| pass.as_ref().and_then(|p| p[f].as_u64()).unwrap_or(0) as usize;
    assert_eq!(field("segmentsWritten"), field("chunksCompacted"), "{pass:?}");
    assert_eq!(field("segmentsCompacted") + days.len() - field("chunksCompacted"), before.len(), "{pass:?}");
    let (status, again) = pipeline.http("POST", "/druid/v2", &tutorial_query("wikipedia-top-pages.json", &name)).await;
    assert_eq!((status, &again), (200, &top), "the same answer from the compacted segments");
    assert!(emf("sluice-compactor", "ChunksCompacted"), "compactor EMF");

    // A batch task (Druid's index_parallel, inline rows appended) through the operations
    // function, run by scheduler ticks: the supervisor hands its split to the indexer, which
    // hands the publish to the merger.
    let text = std::fs::read_to_string(format!("{ROOT}/data/specs/wikipedia-index-parallel.json")).expect("spec");
    let mut batch: Value = serde_json::from_str(&text).expect("the batch tutorial spec");
    batch["spec"]["dataSchema"]["dataSource"] = name.clone().into();
    let rows: Vec<String> = (0..25)
        .map(|i| json!({"time": format!("2015-09-12T10:{i:02}:00Z"), "page": "Backfilled", "added": i}).to_string())
        .collect();
    batch["spec"]["ioConfig"]["inputSource"] = json!({"type": "inline", "data": rows.join("\n")});
    batch["spec"]["ioConfig"]["appendToExisting"] = true.into();
    let (status, body) = pipeline.http("POST", "/druid/indexer/v1/task", &batch.to_string()).await;
    assert_eq!(status, 200, "{body}");
    let id = body["task"].as_str().expect("the task id").to_string();
    let mut state = Value::Null;
    for tick in 100..110 {
        pipeline.tick(&scheduler_event(tick)).await;
        assert!(pipeline.service.wait_idle(Duration::from_secs(300)).await, "the functions went idle");
        let (_, body) = pipeline.http("GET", &format!("/druid/indexer/v1/task/{id}/status"), "").await;
        state = body["status"]["status"].clone();
        if state != "RUNNING" {
            break;
        }
    }
    assert_eq!(state, "SUCCESS", "the batch task published through the functions");
    let outcome = |function: &str, job: &str| {
        pipeline.service.answers(function).iter().any(|(_, a)| {
            matches!(a, Answer::Response(r) if r["job"]["job"] == job && (r["outcome"] == "done" || r["outcome"] == "published"))
        })
    };
    assert!(outcome("sluice-indexer", "batch-index") && outcome("sluice-merger", "batch-publish"), "the jobs ran");
    let (status, body) = pipeline.http("POST", "/druid/v2", &count.to_string()).await;
    assert_eq!((status, &body[0]["result"]["rows"]), (200, &json!(records.len() + 25)), "{body}");

    for (function, binary, resource) in [
        ("sluice-supervisor", "supervisor", "SupervisorFunction"),
        ("sluice-indexer", "indexer", "IndexerFunction"),
        ("sluice-merger", "merger", "MergerFunction"),
        ("sluice-compactor", "compactor", "CompactorFunction"),
        ("sluice-api", "api", "ApiFunction"),
        ("sluice-operations", "api", "OperationsFunction"),
        ("sluice-query-worker", "query-worker", "QueryWorkerFunction"),
    ] {
        let size = std::fs::metadata(bootstrap(binary, resource)).map(|m| m.len()).unwrap_or(0);
        let init = pipeline.service.cold_start(function).expect("polled");
        eprintln!(
            "{function}: bootstrap {:.1} MB, cold-start initialisation {:.0} ms",
            size as f64 / 1e6,
            init.as_secs_f64() * 1e3
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_secret_fails_initialisation_with_one_message() {
    let storage = format!("{}/{}", required_env("SLUICE_STORAGE").trim_end_matches('/'), unique("lambda"));
    let secret = "arn:aws:secretsmanager:us-east-1:123456789012:secret:sluice-kafka-missing";
    let mut pipeline = Pipeline::start(&required_env("SLUICE_METADATA"), &storage, Some(secret)).await;
    for function in ["sluice-supervisor", "sluice-indexer", "sluice-operations"] {
        let status = pipeline.service.exit_status(function, Duration::from_secs(60)).await.expect("the process exits");
        assert!(!status.success(), "{function}");
        let logs = pipeline.service.logs(function);
        let errors: Vec<&str> = logs.lines().filter(|l| l.contains(secret)).collect();
        assert_eq!(errors.len(), 1, "{function}: one message naming the secret: {logs}");
        assert!(errors[0].contains("initialisation failed") && errors[0].contains("can't find"), "{}", errors[0]);
        assert!(pipeline.service.cold_start(function).is_none(), "{function} never polled for work");
    }
    // The functions that read no Kafka start without the secret.
    let (status, _) = pipeline.http("GET", "/status/health", "").await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spec_may_not_override_the_deployments_kafka_connection() {
    let bootstrap_servers = required_env("SLUICE_KAFKA");
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let secrets = aws_sdk_secretsmanager::Client::new(&config);
    let secret = secrets
        .create_secret()
        .name(unique("sluice-kafka"))
        .secret_string(json!({"bootstrap.servers": bootstrap_servers, "client.id": "sluice"}).to_string())
        .send()
        .await
        .expect("create the secret");
    let arn = secret.arn().expect("secret ARN").to_string();
    let storage = format!("{}/{}", required_env("SLUICE_STORAGE").trim_end_matches('/'), unique("lambda"));
    let pipeline = Pipeline::start(&required_env("SLUICE_METADATA"), &storage, Some(&arn)).await;
    let name = unique("owned");
    let mut spec = tutorial_spec(&name, "wikipedia", &bootstrap_servers);
    for (property, value) in
        [("bootstrap.servers", "198.51.100.7:9092"), ("ssl.endpoint.identification.algorithm", "none")]
    {
        let mut hostile = spec.clone();
        hostile["ioConfig"]["consumerProperties"][property] = value.into();
        let (status, body) = pipeline.http("POST", "/druid/indexer/v1/supervisor", &hostile.to_string()).await;
        assert_eq!(status, 400, "{property}: {body}");
        let message = body["errorMessage"].as_str().unwrap_or_default();
        assert!(message.contains(&format!("consumerProperties.{property}")), "the property is named: {body}");
        assert!(!message.contains(value), "no value is echoed: {body}");
    }
    let (status, body) = pipeline.http("GET", &format!("/druid/indexer/v1/supervisor/{name}"), "").await;
    assert_eq!(status, 404, "nothing was submitted: {body}");
    spec["ioConfig"]["consumerProperties"]["client.id"] = "any".into();
    let (status, body) = pipeline.http("POST", "/druid/indexer/v1/supervisor", &spec.to_string()).await;
    assert_eq!(status, 200, "the deployment's brokers, and properties it does not own, are accepted: {body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_broker_fails_the_pass_and_publishes_nothing() {
    let storage = format!("{}/{}", required_env("SLUICE_STORAGE").trim_end_matches('/'), unique("lambda"));
    let metadata = fresh_table("lambda").await;
    let pipeline = Pipeline::start(&metadata, &storage, None).await;
    let name = unique("unreachable");
    let spec = tutorial_spec(&name, "wikipedia", "127.0.0.1:1");
    let (status, body) = pipeline.http("POST", "/druid/indexer/v1/supervisor", &spec.to_string()).await;
    assert_eq!(status, 200, "{body}");
    let (answer, failed) = pipeline.call("sluice-supervisor", &json!({"datasource": name})).await;
    assert!(failed, "{answer}");
    assert_eq!(answer["errorType"], "Sluice.Retryable", "{answer}");
    let message = answer["errorMessage"].as_str().expect("message");
    assert!(message.contains(&name) && message.contains("127.0.0.1:1"), "{message}");
    assert!(pipeline.service.answers("sluice-indexer").is_empty(), "no task was started");
    let meta = sluice_store::metadata::open_metadata(&metadata).await.expect("metadata");
    let visible = sluice_pipeline::timeline::visible_segments(meta.as_ref(), &name).await.expect("timeline");
    assert!(visible.is_empty(), "nothing published: {visible:?}");
}
