//! Joins and lookups against DuckDB through `sluice serve`: random lookups over the Wikipedia
//! sample's columns created through Druid's lookup API, and random SQL joining to them (INNER
//! and LEFT JOIN to `lookup.<name>`, `LOOKUP()`, a join to a grouped subquery), each agreeing
//! with DuckDB joining the same rows to the same maps (`tests/joins/joins.py`, with the query
//! tools `localstack/up.sh` installs, `SLUICE_PYTHON`). `SLUICE_JOINS_SEED` replays a run.

use super::query_scripts::run;

const CASES: &str = "60";

#[test]
fn random_joins_to_random_lookups_agree_with_duckdb() {
    let seed = std::env::var("SLUICE_JOINS_SEED").unwrap_or_else(|_| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock");
        (now.as_nanos() % 1_000_000_007).to_string()
    });
    let report = run("joins/joins.py", &["--allow-operations"], &[seed.as_str(), CASES]);
    assert!(report.ok, "SLUICE_JOINS_SEED={seed}: {:#}\n{}", report.json, report.stderr);
    assert_eq!(report.json["passed"], format!("{CASES} of {CASES}"), "SLUICE_JOINS_SEED={seed}: {:#}", report.json);
}
