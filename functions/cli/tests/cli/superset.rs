//! Superset's charts against `sluice serve`: the SQL Superset's Druid engine writes for nine
//! ordinary charts (time grains through `TIME_FLOOR`, week grains through `TIMESTAMPADD` and
//! `FLOOR(... TO WEEK)`, time filters through `TIME_PARSE`, a series limit, a distinct count, a
//! SQL Lab sample), sent through pydruid's SQLAlchemy dialect (`tests/superset/charts.py`, with
//! the query tools `localstack/up.sh` installs, `SLUICE_PYTHON`), each agreeing with DuckDB over
//! the same sample rows.

use super::query_scripts::{every_entry_has_rows, run};

#[test]
fn supersets_nine_chart_queries_run_and_agree_with_duckdb() {
    let report = run("superset/charts.py", &[], &[]);
    assert!(report.ok, "{:#}\n{}", report.json, report.stderr);
    assert_eq!(report.json["passed"], "9 of 9", "{:#}", report.json);
    every_entry_has_rows(&report.json);
}
