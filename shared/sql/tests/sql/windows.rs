//! Window functions on the Wikipedia sample, checked against the same answers computed
//! without them, and the refusals Druid's validation makes.

use super::{refused_naming, sql};
use serde_json::json;

#[test]
fn a_rank_and_a_total_over_grouped_rows_match_the_plain_answers() {
    let ranked = sql("SELECT channel, COUNT(*) AS n, RANK() OVER (ORDER BY COUNT(*) DESC) AS r, \
                      SUM(COUNT(*)) OVER () AS total FROM wikipedia GROUP BY channel ORDER BY r LIMIT 3");
    let top = sql("SELECT channel, COUNT(*) FROM wikipedia GROUP BY 1 ORDER BY 2 DESC LIMIT 3");
    let total = sql("SELECT COUNT(*) FROM wikipedia")[0][0].clone();
    assert_eq!(ranked.len(), 3);
    for (i, row) in ranked.iter().enumerate() {
        assert_eq!((&row[0], &row[1]), (&top[i][0], &top[i][1]), "{ranked:?}");
        assert_eq!(row[2], json!(i + 1));
        assert_eq!(row[3], total);
    }
}

#[test]
fn a_running_total_ends_at_the_partition_total() {
    let rows = sql("SELECT channel, TIME_FLOOR(__time, 'PT1H') AS h, \
                    SUM(SUM(added)) OVER (PARTITION BY channel ORDER BY TIME_FLOOR(__time, 'PT1H')) AS running \
                    FROM wikipedia WHERE channel = '#de.wikipedia' GROUP BY 1, 2 ORDER BY h DESC LIMIT 1");
    let total = sql("SELECT SUM(added) FROM wikipedia WHERE channel = '#de.wikipedia'");
    assert_eq!(rows[0][2], total[0][0]);
}

#[test]
fn window_constructs_druid_refuses_are_refused_by_name() {
    refused_naming(
        "SELECT channel, SUM(COUNT(*)) OVER (ORDER BY COUNT(*) RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) \
         FROM wikipedia GROUP BY 1",
        "RANGE frame with n PRECEDING",
    );
    refused_naming("SELECT NTILE(2) OVER (ORDER BY channel ROWS 1 PRECEDING) FROM wikipedia", "a frame for NTILE");
    refused_naming("SELECT *, RANK() OVER (ORDER BY added) FROM wikipedia", "* beside window functions");
    refused_naming("SELECT RANK() OVER w FROM wikipedia", "window 'w' is not defined");
    refused_naming("SELECT MEDIAN(added) OVER () FROM wikipedia", "window function MEDIAN");
}

#[test]
fn window_functions_are_bounded_together_not_each() {
    // Each sliding maximum over the 39,244 rows visits 101 to 164 rows a row (at most 6.5 million
    // in all), well within the bound alone; the 64 a query may have together are not.
    let calls: Vec<String> = (100..164)
        .map(|i| format!("MAX(added) OVER (ORDER BY page ROWS BETWEEN {i} PRECEDING AND CURRENT ROW) AS s{i}"))
        .collect();
    let text = format!("SELECT page, {} FROM wikipedia", calls.join(", "));
    refused_naming(&text, "a window MIN or MAX visits more than 200000000 rows");
    let few = format!("SELECT COUNT(*) FROM (SELECT page, {} FROM wikipedia)", calls[..4].join(", "));
    assert_eq!(sql(&few), [[json!(39_244)]]);
}
