//! The Python query checks under `tests/` (`superset/charts.py`, `joins/joins.py`,
//! `windows/windows.py`) run against `sluice serve` on the stores `sluice demo` published,
//! with the query tools `localstack/up.sh` installs (`SLUICE_PYTHON`: DuckDB, pydruid).

use super::local_server::Server;
use serde_json::Value;
use sluice_integration::required_env;
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// What a script answered: whether it exited 0, its JSON report and its standard error.
pub struct Report {
    /// It exited 0.
    pub ok: bool,
    /// The JSON object it printed.
    pub json: Value,
    /// What it wrote to standard error.
    pub stderr: String,
}

/// Runs `tests/<script> URL SAMPLE ARGS...` against `sluice serve SERVE...` on the demo's stores.
pub fn run(script: &str, serve: &[&str], args: &[&str]) -> Report {
    let python = required_env("SLUICE_PYTHON");
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::on_demo(dir.path(), serve);
    let out = Command::new(python)
        .arg(format!("{ROOT}/tests/{script}"))
        .arg(format!("http://{}", server.address))
        .arg(format!("{ROOT}/data/wikiticker-2015-09-12-sampled.json.gz"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{script}: {e}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    });
    Report { ok: out.status.success(), json, stderr: String::from_utf8_lossy(&out.stderr).into_owned() }
}

/// Asserts that every entry of a report but `passed` ran over at least one row.
pub fn every_entry_has_rows(report: &Value) {
    for (name, entry) in report.as_object().expect("entries").iter().filter(|(k, _)| *k != "passed") {
        assert!(entry["rows"].as_u64().is_some_and(|n| n > 0), "{name}: no rows: {entry}");
    }
}
