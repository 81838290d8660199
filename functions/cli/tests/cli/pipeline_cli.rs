//! The pipeline commands end to end: the binary in a fresh folder (embedded backends under
//! `./.sluice/`), the real broker (tansu, from `localstack/up.sh`). Then `sluice serve` answers
//! pydruid, a Druid client from PyPI: Druid's tutorial topN, timeseries and groupBy over the
//! Wikipedia sample give Druid's documented answers (`tests/pydruid/tutorial_queries.py`).

use serde_json::{json, Value};
use sluice_integration::indexing::{json_record, spec};
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::wikipedia::{documented_answer, records, tutorial_lines, tutorial_spec};
use sluice_integration::{required_env, unique};
use std::path::Path;
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn sluice(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .current_dir(dir)
        .env_remove("SLUICE_METADATA")
        .env_remove("SLUICE_STORAGE")
        .output()
        .expect("run sluice");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[tokio::test(flavor = "multi_thread")]
async fn submit_run_until_caught_up_and_operate() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "cli", 2).await;
    let records: Vec<(i32, Vec<u8>)> = (0..40).map(|n| ((n % 2) as i32, json_record(&format!("k{n}"), n))).collect();
    produce(&bootstrap, &topic, &records).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let name = unique("cli");
    let mut spec = spec(&name, &topic, &bootstrap, serde_json::json!({"type": "json"}), serde_json::json!({}));
    spec["spec"]["ioConfig"]["taskCount"] = 2.into();
    spec["spec"]["ioConfig"]["useEarliestOffset"] = true.into();
    std::fs::write(dir.path().join("spec.json"), spec.to_string()).expect("spec file");

    let (ok, out, err) = sluice(dir.path(), &["supervisor", "submit", "spec.json"]);
    assert!(ok && out.contains(&format!("{name}: created")), "{out}{err}");
    let compaction = serde_json::json!({"dataSource": name, "skipOffsetFromLatest": "PT0S"}).to_string();
    std::fs::write(dir.path().join("compaction.json"), compaction).expect("config file");
    let (ok, _, err) = sluice(dir.path(), &["compaction", "submit", "compaction.json"]);
    assert!(ok, "{err}");
    let (ok, _, err) = sluice(dir.path(), &["run", "--until-caught-up", "--interval", "1", "--datasource", &name]);
    assert!(ok && err.contains("caught up"), "{err}");
    // Two groups' tasks published a segment each into each of the 3 hours; the run compacted
    // them before it returned.
    assert!(err.contains(&format!("{name}: 3 chunks compacted (6 segments -> 3, 40 rows")), "{err}");
    assert!(dir.path().join(".sluice/metadata").is_dir(), "embedded backends under ./.sluice/");

    let (ok, out, err) = sluice(dir.path(), &["segments", &name, "--json"]);
    assert!(ok, "{err}");
    let segments: serde_json::Value = serde_json::from_str(&out).expect("segments JSON");
    let rows: u64 = segments.as_array().expect("list").iter().map(|s| s["numRows"].as_u64().unwrap_or(0)).sum();
    assert_eq!((rows, segments.as_array().map(Vec::len)), (40, Some(3)), "one segment an hour: {segments}");
    let (ok, out, err) = sluice(dir.path(), &["segments", &name, "--json", "--interval", "2015-09-12T01:30:00Z/PT1M"]);
    assert!(ok, "{err}");
    let hour: serde_json::Value = serde_json::from_str(&out).expect("segments JSON");
    let starts: Vec<i64> =
        hour.as_array().expect("list").iter().map(|s| s["interval"]["start"].as_i64().unwrap_or(0)).collect();
    assert_eq!(starts, vec![1_442_019_600_000], "the second hour's segment only: {hour}");
    let (ok, out, err) = sluice(dir.path(), &["timeline", "reset", &name]);
    assert!(ok && out.contains("initializing since"), "{out}{err}");
    let (ok, out, err) = sluice(dir.path(), &["timeline", "show", &name]);
    let head: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    assert!(ok && head["head"]["state"] == "initializing" && head["version"].as_u64() > Some(1), "{out}{err}");

    let (ok, out, err) = sluice(dir.path(), &["supervisor", "status", &name, "--json"]);
    assert!(ok, "{err}");
    let status: serde_json::Value = serde_json::from_str(&out).expect("status JSON");
    assert_eq!(status["totals"]["processed"], 40);
    assert!(status["partitions"].as_array().expect("partitions").iter().all(|p| p["lag"] == 0), "{status}");

    let (ok, _, err) = sluice(dir.path(), &["supervisor", "suspend", &name]);
    assert!(ok, "{err}");
    let (_, out, _) = sluice(dir.path(), &["supervisor", "status", &name, "--json"]);
    assert!(out.contains("\"state\": \"suspended\""), "{out}");
    let (ok, out, err) = sluice(dir.path(), &["supervisor", "reset-offsets", &name, "0=5"]);
    assert!(ok && out.contains("offsets {0: 5} set") && err.contains("data loss"), "{out}{err}");
    let (ok, _, err) = sluice(dir.path(), &["supervisor", "reset-offsets", &name, "zero"]);
    assert!(!ok && err.contains("expected PARTITION=OFFSET"), "{err}");
    let (ok, _, err) = sluice(dir.path(), &["supervisor", "terminate", "nobody"]);
    assert!(!ok && err.contains("datasource \"nobody\" does not exist"), "{err}");
}

#[test]
fn the_autoscaler_dry_run_decides_over_the_lags_given() {
    let dir = tempfile::tempdir().expect("temp dir");
    let name = unique("scaled");
    let mut spec = spec(&name, "scaled", "127.0.0.1:1", json!({"type": "json"}), json!({}));
    spec["spec"]["ioConfig"]["autoScalerConfig"] =
        json!({"enableTaskAutoScaler": true, "taskCountMin": 2, "taskCountMax": 6, "taskCountStart": 3});
    std::fs::write(dir.path().join("spec.json"), spec.to_string()).expect("spec file");
    let (ok, out, err) = sluice(dir.path(), &["supervisor", "submit", "spec.json"]);
    assert!(ok, "{out}{err}");
    // Druid's example: six of twenty samples at scaleOutThreshold (6,000,000) scale out by 2.
    let lags = [vec!["2000000"; 14], vec!["6000000"; 6]].concat().join(",");
    let (ok, out, err) = sluice(dir.path(), &["supervisor", "autoscaler", &name, "--lag", &lags, "--json"]);
    assert!(ok, "{err}");
    let sim: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!((&sim["taskCount"], &sim["desired"], &sim["samples"]), (&json!(3), &json!(5), &json!(20)), "{sim}");
    let (ok, out, _) = sluice(dir.path(), &["supervisor", "autoscaler", &name, "--lag", "0,0,0"]);
    assert!(ok && out.contains("decision: 3 -> 2 task groups"), "{out}");
    let (ok, out, _) = sluice(dir.path(), &["supervisor", "status", &name]);
    assert!(ok && out.contains("autoscaler, 3 task groups (from 2 to 6)"), "{out}");
    let mut plain = spec.clone();
    plain["spec"]["ioConfig"]["autoScalerConfig"] = json!({"enableTaskAutoScaler": false});
    std::fs::write(dir.path().join("spec.json"), plain.to_string()).expect("spec file");
    sluice(dir.path(), &["supervisor", "submit", "spec.json"]);
    let (ok, _, err) = sluice(dir.path(), &["supervisor", "autoscaler", &name]);
    assert!(!ok && err.contains("does not enable the autoscaler"), "{err}");
}

/// The raw response to a `POST` of `{}` naming `host`.
fn raw_post(address: &str, path: &str, host: &str, content_type: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).expect("connect to sluice serve");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: {content_type}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
    )
    .expect("request");
    let mut out = String::new();
    stream.read_to_string(&mut out).expect("response");
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn pydruid_gets_the_tutorial_answers_from_sluice_serve() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let python = required_env("SLUICE_PYTHON");
    let topic = create_topic(&bootstrap, "pydruid", 2).await;
    produce(&bootstrap, &topic, &records(tutorial_lines(), 2)).await;

    let dir = tempfile::tempdir().expect("temp dir");
    let name = unique("wikipedia");
    let spec = tutorial_spec(&name, &topic, &bootstrap);
    std::fs::write(dir.path().join("spec.json"), spec.to_string()).expect("spec file");
    let (ok, out, err) = sluice(dir.path(), &["supervisor", "submit", "spec.json"]);
    assert!(ok, "{out}{err}");
    let (ok, out, err) = sluice(dir.path(), &["run", "--until-caught-up", "--interval", "1", "--datasource", &name]);
    assert!(ok, "{out}{err}");

    let server = crate::local_server::Server::start(dir.path(), &[], &[]);
    let url = format!("http://{}", server.address);

    // A script of tests/pydruid/ against the server: what it prints.
    let pydruid = |script: &str| -> Value {
        let out = Command::new(&python)
            .arg(format!("{ROOT}/tests/pydruid/{script}"))
            .args([&url, &name])
            .output()
            .unwrap_or_else(|e| panic!("run {script}: {e}"));
        assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{script} printed no JSON: {e}"))
    };
    let got = pydruid("tutorial_queries.py");
    let sql = pydruid("sql_queries.py");
    // What a web page the operator visits could send is refused: a form, another host's name,
    // and (off unless asked for) the state-changing routes.
    let address = url.trim_start_matches("http://").trim_end_matches('/');
    let terminate = format!("/druid/indexer/v1/supervisor/{name}/terminate");
    let form = raw_post(address, &terminate, address, "text/plain");
    assert!(form.starts_with("HTTP/1.1 415"), "{form}");
    let operation = raw_post(address, &terminate, address, "application/json");
    assert!(operation.starts_with("HTTP/1.1 403") && operation.contains("--allow-operations"), "{operation}");
    let rebound = raw_post(address, "/druid/v2", "attacker.example", "application/json");
    assert!(rebound.starts_with("HTTP/1.1 403"), "{rebound}");
    drop(server);
    let (_, out, _) = sluice(dir.path(), &["supervisor", "status", &name, "--json"]);
    assert!(out.contains("\"state\": \"running\""), "{out}");

    // "Tutorial: Querying data": top pages, lines deleted per hour, added lines per channel.
    assert_eq!(got["topn"], json!([documented_answer("wikipedia-top-pages.json")]), "{}", got["topn"]);
    let hourly = documented_answer("wikipedia-deleted-by-hour.json");
    let rows = got["timeseries"].as_array().expect("timeseries result");
    assert_eq!(rows.len(), 24, "{}", got["timeseries"]);
    for (h, row) in rows.iter().enumerate() {
        assert_eq!(row["timestamp"], json!(format!("2015-09-12T{h:02}:00:00.000Z")));
        assert_eq!(row["result"]["LinesDeleted"], hourly[h], "hour {h}");
    }
    let channels: Vec<Value> = got["groupby"]
        .as_array()
        .expect("groupBy result")
        .iter()
        .map(|r| json!([r["event"]["channel"], r["event"]["added"]]))
        .collect();
    assert_eq!(Value::Array(channels), documented_answer("wikipedia-channels-by-added.json"), "{}", got["groupby"]);

    // The same tutorial in SQL, through pydruid's DB-API and SQLAlchemy dialect.
    assert_eq!(sql["description"], json!(["page", "Edits"]));
    let by_count = |rows: Vec<(Value, Value)>| {
        let mut keys: Vec<String> = rows.iter().map(|(page, n)| format!("{n}|{page}")).collect();
        keys.sort();
        keys
    };
    let top: Vec<(Value, Value)> =
        sql["top_pages"].as_array().expect("top pages").iter().map(|r| (r[0].clone(), r[1].clone())).collect();
    let documented: Vec<(Value, Value)> = documented_answer("wikipedia-top-pages.json")["result"]
        .as_array()
        .expect("documented")
        .iter()
        .map(|r| (r["page"].clone(), r["count"].clone()))
        .collect();
    assert_eq!(by_count(top), by_count(documented), "ties may come in any order; the pages and counts may not");
    let hours = sql["deleted_by_hour"].as_array().expect("hours");
    assert_eq!(hours.len(), 24, "{hours:?}");
    for (h, row) in hours.iter().enumerate() {
        assert_eq!(row[0], json!(format!("2015-09-12T{h:02}:00:00.000Z")));
        assert_eq!(row[1], hourly[h], "hour {h}");
    }
    assert_eq!(sql["channels"], documented_answer("wikipedia-channels-by-added.json"));
    assert!(sql["parameterised"].as_i64().is_some_and(|n| n > 0 && n < 11_549), "{}", sql["parameterised"]);
    let error = sql["error"].as_str().expect("a ProgrammingError");
    assert!(error.contains("Plan validation failed") && error.contains("nothing"), "{error}");
    assert_eq!(sql["tables"], json!([name]));
    assert_eq!(sql["has_table"], json!(true));
    assert!(sql["schemas"].as_array().is_some_and(|s| s.contains(&json!("druid"))), "{}", sql["schemas"]);
    let columns = &sql["columns"];
    assert!(columns["__time"].as_str().is_some_and(|t| t.contains("TIMESTAMP")), "{columns}");
    assert!(columns["channel"].as_str().is_some_and(|t| t.contains("VARCHAR") || t.contains("STRING")), "{columns}");
    assert!(columns["added"].as_str().is_some_and(|t| t.contains("BIGINT")), "{columns}");
}
