//! The `sluice ingest` command end to end: the binary, real files, segments on disk.

use std::process::Command;

fn data(name: &str) -> String {
    format!("{}/../../data/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn ingest(spec: &str, inputs: &[&str], out: &std::path::Path) -> (bool, serde_json::Value, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("ingest")
        .arg("--spec")
        .arg(spec)
        .args(inputs)
        .arg("--out")
        .arg(out)
        .arg("--json")
        .output()
        .expect("run sluice");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let json = serde_json::from_str(&stdout).unwrap_or(serde_json::Value::Null);
    (output.status.success(), json, String::from_utf8_lossy(&output.stderr).to_string())
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-ingest-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn rollup_tutorial_writes_two_daily_segments() {
    let out = temp_dir("rollup");
    let (ok, report, stderr) = ingest(&data("specs/rollup-kafka-supervisor.json"), &[&data("rollup-data.json")], &out);
    assert!(ok, "{stderr}");
    assert_eq!(report["rowStats"]["processed"], 9);
    let rows: Vec<u64> =
        report["segments"].as_array().expect("segments").iter().map(|s| s["rows"].as_u64().expect("rows")).collect();
    assert_eq!(rows, vec![3, 2], "Druid's rollup tutorial: 3 rows on Jan 1, 2 on Jan 2");
    let files = std::fs::read_dir(&out).expect("out").count();
    assert_eq!(files, 2);
}

#[test]
fn bad_records_are_counted_and_named_by_line() {
    let out = temp_dir("bad");
    let input = out.with_extension("json");
    std::fs::write(&input, concat!(
        "{\"timestamp\":\"2018-01-01T01:01:35Z\",\"srcIP\":\"1.1.1.1\",\"dstIP\":\"2.2.2.2\",\"packets\":20,\"bytes\":9024}\n",
        "{not json\n",
        "{\"srcIP\":\"1.1.1.1\"}\n",
        "{\"timestamp\":\"2018-01-01T01:01:36Z\",\"srcIP\":\"1.1.1.1\",\"dstIP\":\"2.2.2.2\",\"packets\":\"many\",\"bytes\":1}\n",
    )).expect("input");
    let (ok, report, stderr) =
        ingest(&data("specs/rollup-kafka-supervisor.json"), &[input.to_str().expect("path")], &out);
    assert!(ok, "{stderr}");
    assert_eq!(
        report["rowStats"],
        serde_json::json!({"processed": 2, "processedWithError": 1, "unparseable": 2, "thrownAway": 0})
    );
    let lines: Vec<u64> = report["parseExceptions"]
        .as_array()
        .expect("exceptions")
        .iter()
        .map(|e| e["line"].as_u64().expect("line"))
        .collect();
    assert_eq!(lines, vec![4, 3, 2]);
    let reasons = report["parseExceptions"].to_string();
    assert!(
        reasons.contains("malformed JSON") && reasons.contains("missing timestamp") && reasons.contains("many"),
        "{reasons}"
    );
}

#[test]
fn too_many_parse_exceptions_fail_the_run() {
    let out = temp_dir("strict");
    let spec = out.with_extension("spec.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data("specs/rollup-kafka-supervisor.json")).expect("spec"))
            .expect("json");
    json["spec"]["tuningConfig"]["maxParseExceptions"] = 0.into();
    std::fs::write(&spec, json.to_string()).expect("spec");
    let input = out.with_extension("json");
    std::fs::write(&input, "{not json\n").expect("input");
    let (ok, _, stderr) = ingest(spec.to_str().expect("path"), &[input.to_str().expect("path")], &out);
    assert!(!ok);
    assert!(stderr.contains("maxParseExceptions") && stderr.contains(":1:"), "{stderr}");
}
