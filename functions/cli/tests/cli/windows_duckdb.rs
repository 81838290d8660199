//! Window functions against DuckDB through `sluice serve`: the shapes dashboards write (ranks,
//! running and partition totals, a share of the total, moving averages, LAG/LEAD, NTILE,
//! first and last values, named windows, a window over ungrouped rows, ORDER BY and LIMIT over
//! the windowed rows), each agreeing with DuckDB over the sample (`tests/windows/windows.py`,
//! with the query tools `localstack/up.sh` installs, `SLUICE_PYTHON`).

use super::local_server::Server;
use serde_json::Value;
use sluice_integration::required_env;
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

#[test]
fn window_functions_agree_with_duckdb() {
    let python = required_env("SLUICE_PYTHON");
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::on_demo(dir.path(), &[]);
    let run = Command::new(python)
        .arg(format!("{ROOT}/tests/windows/windows.py"))
        .arg(format!("http://{}", server.address))
        .arg(format!("{ROOT}/data/wikiticker-2015-09-12-sampled.json.gz"))
        .output()
        .expect("run the window queries");
    let report: Value = serde_json::from_slice(&run.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr))
    });
    assert!(run.status.success(), "{report:#}\n{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(report["passed"], "11 of 11", "{report:#}");
    for (name, query) in report.as_object().expect("queries").iter().filter(|(k, _)| *k != "passed") {
        assert!(query["rows"].as_u64().is_some_and(|n| n > 0), "{name}: no rows: {query}");
    }
}
