//! Superset's charts against `sluice serve`: the SQL Superset's Druid engine writes for nine
//! ordinary charts (time grains through `TIME_FLOOR`, week grains through `TIMESTAMPADD` and
//! `FLOOR(... TO WEEK)`, time filters through `TIME_PARSE`, a series limit, a distinct count, a
//! SQL Lab sample), sent through pydruid's SQLAlchemy dialect (`tests/superset/charts.py`, with
//! the query tools `localstack/up.sh` installs, `SLUICE_PYTHON`), each agreeing with DuckDB over
//! the same sample rows.

use super::local_server::Server;
use serde_json::Value;
use sluice_integration::required_env;
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

#[test]
fn supersets_nine_chart_queries_run_and_agree_with_duckdb() {
    let python = required_env("SLUICE_PYTHON");
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::on_demo(dir.path(), &[]);
    let run = Command::new(python)
        .arg(format!("{ROOT}/tests/superset/charts.py"))
        .arg(format!("http://{}", server.address))
        .arg(format!("{ROOT}/data/wikiticker-2015-09-12-sampled.json.gz"))
        .output()
        .expect("run the charts");
    let report: Value = serde_json::from_slice(&run.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr))
    });
    assert!(run.status.success(), "{report:#}\n{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(report["passed"], "9 of 9", "{report:#}");
    let charts = report.as_object().expect("charts").iter().filter(|(k, _)| *k != "passed");
    for (name, chart) in charts {
        assert!(chart["rows"].as_u64().is_some_and(|n| n > 0), "{name}: no rows: {chart}");
    }
}
