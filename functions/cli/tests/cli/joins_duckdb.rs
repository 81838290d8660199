//! Joins and lookups against DuckDB through `sluice serve`: random lookups over the Wikipedia
//! sample's columns created through Druid's lookup API, and random SQL joining to them (INNER
//! and LEFT JOIN to `lookup.<name>`, `LOOKUP()`, a join to a grouped subquery), each agreeing
//! with DuckDB joining the same rows to the same maps (`tests/joins/joins.py`, with the query
//! tools `localstack/up.sh` installs, `SLUICE_PYTHON`). `SLUICE_JOINS_SEED` replays a run.

use super::local_server::Server;
use serde_json::Value;
use sluice_integration::required_env;
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const CASES: &str = "60";

#[test]
fn random_joins_to_random_lookups_agree_with_duckdb() {
    let python = required_env("SLUICE_PYTHON");
    let seed = std::env::var("SLUICE_JOINS_SEED").unwrap_or_else(|_| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock");
        (now.as_nanos() % 1_000_000_007).to_string()
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::on_demo(dir.path(), &["--allow-operations"]);
    let run = Command::new(python)
        .arg(format!("{ROOT}/tests/joins/joins.py"))
        .arg(format!("http://{}", server.address))
        .arg(format!("{ROOT}/data/wikiticker-2015-09-12-sampled.json.gz"))
        .args([seed.as_str(), CASES])
        .output()
        .expect("run the joins");
    let report: Value = serde_json::from_slice(&run.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr))
    });
    assert!(run.status.success(), "SLUICE_JOINS_SEED={seed}: {report:#}\n{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(report["passed"], format!("{CASES} of {CASES}"), "SLUICE_JOINS_SEED={seed}: {report:#}");
}
