//! Turnilo's query engine against `sluice serve`: plywood and plywood-druid-requester (npm,
//! installed by `localstack/up.sh`, `SLUICE_PLYWOOD`) introspect the demo's datasource as
//! Turnilo does and query it; every answer is the one Sluice's own native queries give.

use super::local_server::Server;
use serde_json::{json, Value};
use sluice_integration::required_env;
use sluice_integration::wikipedia::documented_answer;
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// A native query's result from `server`.
fn native(server: &Server, query: Value) -> Value {
    let (status, body) = server.request("POST", "/druid/v2", Some(&query.to_string())).expect("an answer");
    assert_eq!(status, 200, "{query}: {body}");
    serde_json::from_str(&body).expect("JSON")
}

#[test]
fn plywood_introspects_and_queries_as_turnilo_does() {
    let modules = required_env("SLUICE_PLYWOOD");
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::on_demo(dir.path(), &[]);

    let run = Command::new("node")
        .arg(format!("{ROOT}/tests/plywood/queries.js"))
        .args([server.address.as_str(), "wikipedia"])
        .env("NODE_PATH", &modules)
        .output()
        .expect("run node (Node.js is needed for this test)");
    assert!(run.status.success(), "plywood: {}", String::from_utf8_lossy(&run.stderr));
    let got: Value = serde_json::from_slice(&run.stdout).expect("plywood printed JSON");

    assert_eq!(got["version"], "34.0.0", "GET /status's version");
    let attributes = got["attributes"].as_array().expect("attributes");
    for expected in [json!(["__time", "TIME"]), json!(["page", "STRING"]), json!(["added", "NUMBER"])] {
        assert!(attributes.contains(&expected), "{expected} in {attributes:?}");
    }
    assert_eq!(attributes.len(), 20, "__time, 16 dimensions and 3 metrics: {attributes:?}");

    let day = "2015-09-12/2015-09-13";
    let top: Vec<Value> = documented_answer("wikipedia-top-pages.json")["result"]
        .as_array()
        .expect("documented topN")
        .iter()
        .take(3)
        .map(|r| json!([r["page"], r["count"]]))
        .collect();
    assert_eq!(got["top"], Value::Array(top), "Druid's documented top pages");

    let hourly = native(
        &server,
        json!({"queryType": "timeseries", "dataSource": "wikipedia", "intervals": [day], "granularity": "hour",
               "aggregations": [{"type": "count", "name": "count"}, {"type": "longSum", "name": "added", "fieldName": "added"}]}),
    );
    let hourly: Vec<Value> = hourly
        .as_array()
        .expect("timeseries")
        .iter()
        .map(|r| json!([r["timestamp"], r["result"]["count"], r["result"]["added"]]))
        .collect();
    assert_eq!(hourly.len(), 24);
    assert_eq!(got["hourly"], Value::Array(hourly.clone()));
    let total: i64 = hourly.iter().map(|r| r[1].as_i64().expect("count")).sum();
    assert_eq!(got["count"], total);

    let pairs = native(
        &server,
        json!({"queryType": "groupBy", "dataSource": "wikipedia", "intervals": [day], "granularity": "all",
               "dimensions": ["channel", "namespace"], "aggregations": [{"type": "count", "name": "count"}],
               "limitSpec": {"type": "default", "limit": 3, "columns": [{"dimension": "count", "direction": "descending"}]}}),
    );
    let pairs: Vec<Value> = pairs
        .as_array()
        .expect("groupBy")
        .iter()
        .map(|r| json!([r["event"]["channel"], r["event"]["namespace"], r["event"]["count"]]))
        .collect();
    assert_eq!(got["pairs"], Value::Array(pairs));
}
