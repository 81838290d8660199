//! The time functions BI tools write: `TIME_PARSE`, `TIME_SHIFT`, `TIMESTAMPADD` and
//! `TIMESTAMPDIFF`, folded where constant (so that a `TIME_PARSE` bound narrows the query's
//! intervals), and Superset's week grains.

use super::*;
use serde_json::json;

/// The native query `text` plans to.
fn planned(text: &str) -> Value {
    let r = answer(&SqlRequest::new(format!("EXPLAIN PLAN FOR {text}"))).expect("explain");
    let plan: Value = serde_json::from_str(r.rows[0][0].as_str().expect("plan")).expect("plan JSON");
    plan[0]["query"].clone()
}

#[test]
fn time_parse_reads_iso_sql_and_joda_text_and_null_for_the_rest() {
    let row = sql("SELECT TIME_PARSE('2015-09-12T01:02:03'), TIME_PARSE('2015-09-12 01:02:03'), \
        TIME_PARSE('12/09/2015', 'dd/MM/yyyy'), TIME_PARSE('not a time')");
    let t = json!("2015-09-12T01:02:03.000Z");
    assert_eq!(row, vec![vec![t.clone(), t, json!("2015-09-12T00:00:00.000Z"), Value::Null]]);
    // Not a constant: each row's text parsed.
    let same = sql("SELECT COUNT(*) FROM wikipedia WHERE TIME_PARSE(TIME_FORMAT(__time)) = __time");
    assert_eq!(same, vec![vec![json!(39_244)]]);
}

#[test]
fn a_time_parse_bound_narrows_the_intervals_as_a_timestamp_literal_does() {
    let query = "SELECT COUNT(*) FROM wikipedia WHERE __time >= TIME_PARSE('2015-09-12T06:00:00') \
        AND __time < TIME_PARSE('2015-09-12T12:00:00')";
    assert_eq!(planned(query)["intervals"], json!(["2015-09-12T06:00:00.000Z/2015-09-12T12:00:00.000Z"]));
    assert!(planned(query).get("filter").is_none(), "{}", planned(query));
    let literal = "SELECT COUNT(*) FROM wikipedia WHERE __time >= TIMESTAMP '2015-09-12 06:00:00' \
        AND __time < TIMESTAMP '2015-09-12 12:00:00'";
    assert_eq!(sql(query), sql(literal));
}

#[test]
fn shifts_and_differences_move_by_calendar_units() {
    let row = sql("SELECT TIMESTAMPADD(DAY, 5, TIMESTAMP '2015-09-12 00:00:00'), \
        TIMESTAMPADD(MONTH, 1, TIMESTAMP '2015-01-31 10:00:00'), TIME_SHIFT(TIMESTAMP '2015-03-31 00:00:00', 'P1M', -1), \
        TIMESTAMPDIFF(HOUR, TIMESTAMP '2015-09-12 00:00:00', TIMESTAMP '2015-09-12 05:59:59'), \
        TIMESTAMPDIFF(MONTH, TIMESTAMP '2015-01-31 00:00:00', TIMESTAMP '2015-03-30 00:00:00'), \
        TIMESTAMPDIFF(YEAR, TIMESTAMP '2016-02-29 00:00:00', TIMESTAMP '2015-02-28 00:00:00')");
    assert_eq!(
        row,
        vec![vec![
            json!("2015-09-17T00:00:00.000Z"),
            json!("2015-02-28T10:00:00.000Z"),
            json!("2015-02-28T00:00:00.000Z"),
            json!(5),
            json!(1),
            json!(-1)
        ]]
    );
    // Per row: an hour later, every row.
    let later =
        sql("SELECT COUNT(*) FROM wikipedia WHERE TIMESTAMPDIFF(MINUTE, __time, TIMESTAMPADD(HOUR, 1, __time)) = 60");
    assert_eq!(later, vec![vec![json!(39_244)]]);
}

#[test]
fn supersets_week_ending_saturday_buckets_every_row_by_its_saturday() {
    let rows = sql("SELECT TIMESTAMPADD(DAY, 5, FLOOR(TIMESTAMPADD(DAY, 1, CAST(__time AS TIMESTAMP)) TO WEEK)) AS w, \
        COUNT(*) FROM wikipedia GROUP BY TIMESTAMPADD(DAY, 5, FLOOR(TIMESTAMPADD(DAY, 1, CAST(__time AS TIMESTAMP)) TO WEEK))");
    // 2015-09-12 is a Saturday: the week ending on it holds the sample's day.
    assert_eq!(rows, vec![vec![json!("2015-09-12T00:00:00.000Z"), json!(39_244)]]);
    let starting_sunday =
        sql("SELECT TIMESTAMPADD(DAY, -1, FLOOR(TIMESTAMPADD(DAY, 1, CAST(__time AS TIMESTAMP)) TO WEEK)), \
        COUNT(*) FROM wikipedia GROUP BY 1");
    assert_eq!(starting_sunday, vec![vec![json!("2015-09-06T00:00:00.000Z"), json!(39_244)]]);
}

#[test]
fn bad_time_arguments_are_named() {
    for (text, expected) in [
        ("SELECT TIMESTAMPADD(FORTNIGHT, 1, __time) FROM wikipedia", "FORTNIGHT"),
        ("SELECT TIME_PARSE('2015', 'qq') FROM wikipedia", "qq"),
        ("SELECT TIME_SHIFT(__time, 'P1D', 1, 'Mars/Olympus') FROM wikipedia", "Mars/Olympus"),
        ("SELECT TIMESTAMPADD(DAY, 1, page) FROM wikipedia", "TIMESTAMP"),
        ("SELECT TIME_SHIFT(__time, page, 1) FROM wikipedia", "string literal"),
    ] {
        refused_naming(text, expected);
    }
}

#[test]
fn earliest_by_and_latest_by_order_by_the_time_they_are_given() {
    let row =
        &sql("SELECT EARLIEST_BY(page, MILLIS_TO_TIMESTAMP(added)), LATEST_BY(page, MILLIS_TO_TIMESTAMP(added)), \
        LATEST_BY(page, __time), LATEST(page) FROM wikipedia")[0];
    // Ties on the time are broken by the value, smaller first and larger last, as first/last do.
    let least = sql("SELECT page FROM (SELECT page, added FROM wikipedia) ORDER BY added, page LIMIT 1");
    let most = sql("SELECT page FROM (SELECT page, added FROM wikipedia) ORDER BY added DESC, page DESC LIMIT 1");
    assert_eq!((&row[0], &row[1]), (&least[0][0], &most[0][0]));
    assert_eq!(row[2], row[3], "by __time, as LATEST");
    let plan = planned("SELECT LATEST_BY(page, MILLIS_TO_TIMESTAMP(added)) FROM wikipedia");
    let agg = &plan["aggregations"][0];
    assert_eq!((&agg["type"], agg["timeColumn"].is_string()), (&json!("stringLast"), true), "{plan}");
    let per_channel = sql(
        "SELECT channel, EARLIEST_BY(added, MILLIS_TO_TIMESTAMP(deleted)) FROM wikipedia GROUP BY 1 ORDER BY 1 LIMIT 3",
    );
    assert_eq!(per_channel.len(), 3);
    refused_naming("SELECT LATEST_BY(page, channel) FROM wikipedia", "must be a TIMESTAMP");
}
