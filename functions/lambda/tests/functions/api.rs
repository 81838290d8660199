//! The HTTP API's routes and Druid's error JSON, against the embedded stores (no network).

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use sluice_http::{router_for, ApiState, Routes};
use tower::ServiceExt;

async fn state() -> (ApiState, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().display().to_string();
    let meta = sluice_store::metadata::open_metadata(&format!("file://{root}/meta")).await.expect("metadata");
    let store = sluice_store::storage::open_store(&format!("file://{root}/store")).await.expect("store");
    (ApiState { meta, store, cache: None, fanout: None, tables: Default::default() }, dir)
}

async fn call(state: &ApiState, method: &str, path: &str, body: &str) -> (StatusCode, Value) {
    call_routes(state, Routes::All, method, path, body).await
}

async fn call_routes(state: &ApiState, routes: Routes, method: &str, path: &str, body: &str) -> (StatusCode, Value) {
    let request = Request::builder().method(method).uri(path).body(Body::from(body.to_string())).expect("request");
    let response = router_for(state.clone(), routes).oneshot(request).await.expect("response");
    let status = response.status();
    let bytes = response.into_body().collect().await.expect("body").to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn spec(name: &str) -> String {
    json!({"type": "kafka", "spec": {
        "dataSchema": {"dataSource": name, "timestampSpec": {"column": "ts"}, "dimensionsSpec": {"dimensions": ["page"]},
                       "granularitySpec": {"segmentGranularity": "hour", "rollup": false}},
        "ioConfig": {"topic": "t", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "127.0.0.1:1"}}}})
    .to_string()
}

#[tokio::test]
async fn reads_and_writes_are_served_apart() {
    let (s, _dir) = state().await;
    let (status, body) = call_routes(&s, Routes::Reads, "POST", "/druid/indexer/v1/supervisor", &spec("w")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body["errorMessage"].as_str().is_some_and(|m| m.contains("operations endpoint")), "{body}");
    let (status, body) = call_routes(&s, Routes::Writes, "POST", "/druid/indexer/v1/supervisor", &spec("w")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for op in ["suspend", "terminate", "reset"] {
        let path = format!("/druid/indexer/v1/supervisor/w/{op}");
        let (status, body) = call_routes(&s, Routes::Reads, "POST", &path, "").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{op}: {body}");
    }
    let (_, status_read) = call_routes(&s, Routes::Reads, "GET", "/druid/indexer/v1/supervisor/w/status", "").await;
    assert_eq!(status_read["payload"]["sluice"]["state"], "running", "{status_read}");
    assert_eq!(status_read["payload"]["state"], "PENDING", "no pass yet: {status_read}");
    let query = r#"{"queryType":"timeBoundary","dataSource":"w"}"#;
    let (status, body) = call_routes(&s, Routes::Writes, "POST", "/druid/v2", query).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = call_routes(&s, Routes::Reads, "POST", "/druid/v2", query).await;
    assert_eq!(status, StatusCode::OK);
    let sql = r#"{"query": "SELECT 1 AS one"}"#;
    let (status, body) = call_routes(&s, Routes::Writes, "POST", "/druid/v2/sql", sql).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = call_routes(&s, Routes::Reads, "POST", "/druid/v2/sql", sql).await;
    assert_eq!((status, body), (StatusCode::OK, json!([{"one": 1}])));
    assert!(Routes::from_name(Some("everything")).is_err());
}

#[tokio::test]
async fn sql_errors_are_druid_error_json() {
    let (s, _dir) = state().await;
    for (body, status, error, mentions) in [
        (r#"{"query": "SELECT FROM nowhere WHERE"}"#, StatusCode::BAD_REQUEST, "SQL parse failed", "line 1, column"),
        (r#"{"query": "SELECT * FROM nowhere"}"#, StatusCode::BAD_REQUEST, "Plan validation failed", "nowhere"),
        (r#"{"query": "SELECT 1 UNION SELECT 2"}"#, StatusCode::BAD_REQUEST, "Unsupported operation", "UNION"),
        (r#"{"sql": "SELECT 1"}"#, StatusCode::BAD_REQUEST, "Invalid request", "query"),
        (r#"{"query": "SELECT 1", "resultFormat": "xml"}"#, StatusCode::BAD_REQUEST, "Invalid request", "xml"),
    ] {
        let (got, json) = call(&s, "POST", "/druid/v2/sql", body).await;
        assert_eq!(got, status, "{body}: {json}");
        assert_eq!(json["error"], error, "{body}: {json}");
        assert!(json["errorClass"].is_string(), "{json}");
        assert!(json["errorMessage"].as_str().is_some_and(|m| m.contains(mentions)), "{body}: {json}");
    }
}

#[tokio::test]
async fn supervisor_endpoints_follow_druid() {
    let (s, _dir) = state().await;
    let (status, body) = call(&s, "POST", "/druid/indexer/v1/supervisor", &spec("wiki")).await;
    assert_eq!((status, &body["id"]), (StatusCode::OK, &json!("wiki")), "{body}");
    let (_, list) = call(&s, "GET", "/druid/indexer/v1/supervisor", "").await;
    assert_eq!(list, json!(["wiki"]));
    let (status, got) = call(&s, "GET", "/druid/indexer/v1/supervisor/wiki", "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(got["spec"]["dataSchema"]["dataSource"], "wiki", "{got}");
    let (status, st) = call(&s, "GET", "/druid/indexer/v1/supervisor/wiki/status", "").await;
    assert_eq!((status, &st["id"]), (StatusCode::OK, &json!("wiki")), "{st}");
    let payload = &st["payload"];
    assert_eq!((&payload["dataSource"], &payload["stream"]), (&json!("wiki"), &json!("t")), "{st}");
    assert_eq!((&payload["aggregateLag"], &payload["healthy"]), (&json!(0), &json!(true)), "{st}");
    let (status, health) = call(&s, "GET", "/druid/indexer/v1/supervisor/wiki/health", "").await;
    assert_eq!((status, health), (StatusCode::OK, json!({"healthy": true})));
    let (_, states) = call(&s, "GET", "/druid/indexer/v1/supervisor?state=true", "").await;
    assert_eq!(states[0]["id"], "wiki", "{states}");
    assert_eq!((&states[0]["state"], &states[0]["suspended"]), (&json!("PENDING"), &json!(false)), "{states}");
    let (_, full) = call(&s, "GET", "/druid/indexer/v1/supervisor?full", "").await;
    assert_eq!(full[0]["spec"]["spec"]["dataSchema"]["dataSource"], "wiki", "{full}");
    for op in ["suspend", "resume"] {
        let (status, body) = call(&s, "POST", &format!("/druid/indexer/v1/supervisor/wiki/{op}"), "").await;
        assert_eq!(status, StatusCode::OK, "{op}: {body}");
    }
    let reset = json!({"type": "kafka", "partitions": {"type": "end", "stream": "t", "partitionOffsetMap": {"0": 5}}});
    let (status, body) = call(&s, "POST", "/druid/indexer/v1/supervisor/wiki/resetOffsets", &reset.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) =
        call(&s, "POST", "/druid/indexer/v1/supervisor/wiki/resetOffsets", r#"{"partitions":{}}"#).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["errorMessage"].as_str().is_some_and(|m| m.contains("partitionOffsetMap")), "{body}");

    // Druid's error JSON: unknown supervisor 404, bad spec 400.
    let (status, body) = call(&s, "GET", "/druid/indexer/v1/supervisor/nope/status", "").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body["error"].is_string() && body["errorMessage"].as_str().is_some_and(|m| m.contains("nope")), "{body}");
    assert!(body.get("errorClass").is_some() && body.get("host").is_some(), "{body}");
    let (status, body) = call(&s, "POST", "/druid/indexer/v1/supervisor", r#"{"type":"kafka","spec":{}}"#).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = call(&s, "POST", "/druid/indexer/v1/supervisor/wiki/terminate", "").await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn query_endpoint_answers_and_rejects_bad_queries() {
    let (s, _dir) = state().await;
    let (status, body) = call(&s, "GET", "/status/health", "").await;
    assert_eq!((status, body), (StatusCode::OK, json!(true)));
    // Druid's server status, which Druid's tools read first, from either function.
    for routes in [Routes::Reads, Routes::Writes] {
        let (status, body) = call_routes(&s, routes, "GET", "/status", "").await;
        assert_eq!(status, StatusCode::OK, "{routes:?}: {body}");
        assert_eq!(body["version"], sluice_http::status::DRUID_VERSION, "{body}");
        assert!(body["memory"]["usedMemory"].is_i64() && body["modules"].is_array(), "{body}");
    }
    // No such datasource: Druid's empty answer.
    let q = r#"{"queryType":"timeseries","dataSource":"none","intervals":["2015/2016"],"aggregations":[{"type":"count","name":"n"}]}"#;
    let (status, body) = call(&s, "POST", "/druid/v2/?pretty", q).await;
    assert_eq!((status, body), (StatusCode::OK, json!([])));
    let (status, body) =
        call(&s, "POST", "/druid/v2", r#"{"queryType":"topN","dataSource":"x","intervals":["2015/2016"]}"#).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"], "Invalid query");
    assert!(
        body["errorMessage"].as_str().is_some_and(|m| m.contains("topN query") && m.contains("dimension")),
        "{body}"
    );
    let (status, body) = call(&s, "POST", "/druid/v2", "not json").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

#[tokio::test]
async fn compaction_config_endpoints_follow_druid() {
    let (s, _dir) = state().await;
    const PATH: &str = "/druid/coordinator/v1/config/compaction";
    // Druid's documented example; like Druid, a config may name a datasource not yet submitted.
    let config = json!({"dataSource": "wikipedia_hour", "skipOffsetFromLatest": "PT0S",
        "tuningConfig": {"partitionsSpec": {"type": "dynamic"}}, "granularitySpec": {"segmentGranularity": "DAY"},
        "taskPriority": 10});
    let (status, body) = call(&s, "POST", PATH, &config.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["warnings"][0].as_str().map(|w| w.starts_with("taskPriority")), Some(true), "{body}");
    let (status, got) = call(&s, "GET", &format!("{PATH}/wikipedia_hour"), "").await;
    assert_eq!(status, StatusCode::OK, "{got}");
    assert_eq!(got["skipOffsetFromLatest"], "PT0S");
    assert_eq!(got["granularitySpec"]["segmentGranularity"], "DAY");
    assert_eq!(
        (got["taskPriority"].as_i64(), got["inputSegmentSizeBytes"].as_u64()),
        (Some(10), Some(100_000_000_000_000))
    );
    let (_, all) = call(&s, "GET", PATH, "").await;
    assert_eq!(all["compactionConfigs"], json!([got]), "{all}");
    assert_eq!(all["compactionTaskSlotRatio"], 0.1);
    let status_path = "/druid/coordinator/v1/compaction/status";
    let (status, snapshots) = call(&s, "GET", &format!("{status_path}?dataSource=wikipedia_hour"), "").await;
    assert_eq!(status, StatusCode::OK, "{snapshots}");
    let snapshot = &snapshots["latestStatus"][0];
    assert_eq!((&snapshot["dataSource"], &snapshot["scheduleStatus"]), (&json!("wikipedia_hour"), &json!("RUNNING")));
    assert_eq!(snapshot["segmentCountAwaitingCompaction"], 0, "no segments yet: {snapshot}");
    let (status, _) = call(&s, "GET", &format!("{status_path}?dataSource=nobody"), "").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let bad = json!({"dataSource": "wikipedia_hour", "tuningConfig": {"partitionsSpec": {"type": "hashed"}}});
    let (status, body) = call(&s, "POST", PATH, &bad.to_string()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["errorMessage"].as_str().is_some_and(|m| m.contains("only dynamic partitioning")), "{body}");
    let (_, still) = call(&s, "GET", &format!("{PATH}/wikipedia_hour"), "").await;
    assert_eq!(still, got, "a refused config leaves the stored one");

    let (status, _) = call_routes(&s, Routes::Reads, "DELETE", &format!("{PATH}/wikipedia_hour"), "").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "the query endpoint changes nothing");
    let (status, _) = call_routes(&s, Routes::Reads, "POST", PATH, &config.to_string()).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = call_routes(&s, Routes::Reads, "GET", PATH, "").await;
    assert_eq!(status, StatusCode::OK, "reading configs is a read");
    let (status, _) = call(&s, "DELETE", &format!("{PATH}/wikipedia_hour"), "").await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = call(&s, "GET", &format!("{PATH}/wikipedia_hour"), "").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, _) = call(&s, "DELETE", &format!("{PATH}/wikipedia_hour"), "").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "removing twice");
    let (_, all) = call(&s, "GET", PATH, "").await;
    assert_eq!(all["compactionConfigs"], json!([]));
}

#[tokio::test]
async fn retention_rule_endpoints_follow_druid() {
    let (s, _dir) = state().await;
    const PATH: &str = "/druid/coordinator/v1/rules";
    let (status, none) = call(&s, "GET", &format!("{PATH}/wiki"), "").await;
    assert_eq!((status, none), (StatusCode::OK, json!([])), "no rules set: an empty list, as Druid answers");
    let rules = json!([{"type": "loadByPeriod", "period": "P7D", "tieredReplicants": {"_default_tier": 2}},
        {"type": "dropForever"}]);
    let (status, body) = call(&s, "POST", &format!("{PATH}/wiki"), &rules.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["warnings"].as_array().map(Vec::len), Some(1), "tiers are warned: {body}");
    let (_, got) = call(&s, "GET", &format!("{PATH}/wiki"), "").await;
    assert_eq!(got, rules);
    let (_, all) = call(&s, "GET", PATH, "").await;
    assert_eq!((&all["wiki"], &all["_default"]), (&rules, &json!([{"type": "loadForever"}])), "{all}");
    let (status, body) = call(&s, "POST", &format!("{PATH}/wiki"), r#"[{"type": "broadcastForever"}]"#).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["errorMessage"].as_str().is_some_and(|m| m.contains("[0].type")), "{body}");
    let (status, _) = call_routes(&s, Routes::Reads, "POST", &format!("{PATH}/wiki"), &rules.to_string()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "the query endpoint changes nothing");
    let (status, _) = call_routes(&s, Routes::Reads, "GET", &format!("{PATH}/wiki"), "").await;
    assert_eq!(status, StatusCode::OK);
}
