//! A supervisor monitor written for Druid (`tests/monitor/druid_lag_monitor.py`: Druid's routes,
//! `payload.detailedState`, `healthy` and `aggregateLag`, the standard library only) run
//! unchanged against `sluice serve` on the demo's stores: it sees the supervisor running and
//! caught up, then suspended, then lagging once its offsets are reset back.

use super::local_server::Server;
use serde_json::{json, Value};
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The monitor's lines and exit code against `server`, alarming past `max_lag` records.
fn monitor(server: &Server, max_lag: u64) -> (Vec<Value>, i32) {
    let python = std::env::var("SLUICE_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(python)
        .arg(format!("{ROOT}/tests/monitor/druid_lag_monitor.py"))
        .args([format!("http://{}", server.address), max_lag.to_string()])
        .output()
        .expect("run the monitor");
    let lines = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    (lines, out.status.code().unwrap_or(-1))
}

#[test]
fn a_monitor_written_for_druid_reads_state_health_and_lag() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::on_demo(dir.path(), &["--allow-operations"]);
    let operate = |action: &str, body: &str| {
        let path = format!("/druid/indexer/v1/supervisor/wikipedia/{action}");
        let (status, reply) = server.request("POST", &path, Some(body)).expect("an answer");
        assert_eq!(status, 200, "{action}: {reply}");
    };

    let line = |state: &str, lag: u64| json!({"id": "wikipedia", "state": state, "healthy": true, "lag": lag});
    assert_eq!(monitor(&server, 0), (vec![line("RUNNING", 0)], 0), "running and caught up");
    operate("suspend", "");
    assert_eq!(monitor(&server, 0), (vec![line("SUSPENDED", 0)], 0), "suspended, as Druid reports it");
    let back = json!({"type": "kafka", "partitions": {"type": "end", "stream": "wikipedia",
        "partitionOffsetMap": {"0": 100}}});
    operate("resetOffsets", &back.to_string());
    let (lines, code) = monitor(&server, 1_000);
    let lag = lines[0]["lag"].as_u64().expect("lag");
    assert!(lag > 1_000, "partition 0 read again from offset 100: {lines:?}");
    assert_eq!(code, 2, "the monitor alarms past its threshold");
}
