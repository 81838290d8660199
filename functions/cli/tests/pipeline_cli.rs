//! The pipeline commands end to end: the binary in a fresh folder (embedded backends under
//! `./.sluice/`), the real broker (tansu, from `localstack/up.sh`).

use sluice_integration::indexing::{json_record, spec};
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::{required_env, unique};
use std::path::Path;
use std::process::Command;

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
    let (ok, _, err) = sluice(dir.path(), &["run", "--until-caught-up", "--interval", "1", "--datasource", &name]);
    assert!(ok && err.contains("caught up"), "{err}");
    assert!(dir.path().join(".sluice/metadata").is_dir(), "embedded backends under ./.sluice/");

    let (ok, out, err) = sluice(dir.path(), &["segments", &name, "--json"]);
    assert!(ok, "{err}");
    let segments: serde_json::Value = serde_json::from_str(&out).expect("segments JSON");
    let rows: u64 = segments.as_array().expect("list").iter().map(|s| s["numRows"].as_u64().unwrap_or(0)).sum();
    assert_eq!(rows, 40);

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
