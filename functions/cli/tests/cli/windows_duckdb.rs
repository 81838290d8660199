//! Window functions against DuckDB through `sluice serve`: the shapes dashboards write (ranks,
//! running and partition totals, a share of the total, moving averages, LAG/LEAD, NTILE,
//! first and last values, named windows, a window over ungrouped rows, ORDER BY and LIMIT over
//! the windowed rows), each agreeing with DuckDB over the sample (`tests/windows/windows.py`,
//! with the query tools `localstack/up.sh` installs, `SLUICE_PYTHON`).

use super::query_scripts::{every_entry_has_rows, run};

#[test]
fn window_functions_agree_with_duckdb() {
    let report = run("windows/windows.py", &[], &[]);
    assert!(report.ok, "{:#}\n{}", report.json, report.stderr);
    assert_eq!(report.json["passed"], "11 of 11", "{:#}", report.json);
    every_entry_has_rows(&report.json);
}
