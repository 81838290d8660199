//! `sqlTimeZone` on the Wikipedia sample (every row on 2015-09-12 UTC, so 2015-09-11 17:00 to
//! 2015-09-12 17:00 in Los Angeles): time floors bucket on the zone's wall clock, TIMESTAMP
//! literals and TIME_PARSE read on it, EXTRACT and TIME_FORMAT show it and TIMESTAMP values are
//! written with its offset; each checked against the same question asked in UTC.

use super::{answer, sql};
use serde_json::{json, Value};
use sluice_sql::{SqlError, SqlRequest};

const LA: &str = "America/Los_Angeles";

fn in_zone(text: &str, zone: &str) -> Result<Vec<Vec<Value>>, SqlError> {
    let mut r = SqlRequest::new(text);
    r.result_format = sluice_sql::ResultFormat::Array;
    r.context.insert("sqlTimeZone".into(), json!(zone));
    answer(&r).map(|r| r.rows)
}

fn la(text: &str) -> Vec<Vec<Value>> {
    in_zone(text, LA).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn instant(v: &Value) -> i64 {
    sluice_format::time::parse_iso_instant(v.as_str().expect("a timestamp")).expect("ISO 8601")
}

fn count(rows: Vec<Vec<Value>>) -> i64 {
    rows[0][0].as_i64().expect("a count")
}

#[test]
fn days_are_the_zones_days() {
    let days = la("SELECT TIME_FLOOR(__time, 'P1D') AS d, COUNT(*) FROM wikipedia GROUP BY 1 ORDER BY 1");
    let before_7 = count(sql("SELECT COUNT(*) FROM wikipedia WHERE __time < TIMESTAMP '2015-09-12 07:00:00'"));
    let total = count(sql("SELECT COUNT(*) FROM wikipedia"));
    assert_eq!(days.len(), 2, "{days:?}");
    let t = |s: &str| sluice_format::time::parse_iso_instant(s).expect("time");
    assert_eq!(instant(&days[0][0]), t("2015-09-11T07:00:00Z"));
    assert_eq!(days[0][0], json!("2015-09-11T00:00:00.000-07:00"), "written on the zone's clock, as Druid writes it");
    assert_eq!(instant(&days[1][0]), t("2015-09-12T07:00:00Z"));
    assert_eq!((days[0][1].as_i64(), days[1][1].as_i64()), (Some(before_7), Some(total - before_7)));
    let floored = la("SELECT FLOOR(__time TO DAY), COUNT(*) FROM wikipedia GROUP BY 1 ORDER BY 1");
    assert_eq!(floored, days, "FLOOR TO DAY is the same bucket");
    let utc_days = la("SELECT TIME_FLOOR(__time, 'P1D', NULL, 'UTC'), COUNT(*) FROM wikipedia GROUP BY 1");
    assert_eq!(utc_days.len(), 1, "an explicit zone wins over the request's");
}

#[test]
fn literals_and_time_parse_read_the_zones_wall_clock() {
    let utc = count(sql("SELECT COUNT(*) FROM wikipedia WHERE __time >= TIMESTAMP '2015-09-12 07:00:00'"));
    let local = "SELECT COUNT(*) FROM wikipedia WHERE __time >= TIMESTAMP '2015-09-12 00:00:00'";
    assert_eq!(count(la(local)), utc);
    let parsed = "SELECT COUNT(*) FROM wikipedia WHERE __time >= TIME_PARSE('2015-09-12T00:00:00')";
    assert_eq!(count(la(parsed)), utc);
    let offset = "SELECT COUNT(*) FROM wikipedia WHERE __time >= TIME_PARSE('2015-09-12T07:00:00Z')";
    assert_eq!(count(la(offset)), utc, "a text naming its offset keeps it");
}

#[test]
fn extract_and_time_format_show_the_zones_clock() {
    let hours = la("SELECT EXTRACT(HOUR FROM __time) AS h, COUNT(*) FROM wikipedia GROUP BY 1 ORDER BY 1");
    let utc_hours = sql("SELECT EXTRACT(HOUR FROM __time) AS h, COUNT(*) FROM wikipedia GROUP BY 1 ORDER BY 1");
    let shifted: Vec<(i64, i64)> =
        (utc_hours.iter()).map(|r| ((r[0].as_i64().expect("hour") + 17) % 24, r[1].as_i64().expect("count"))).collect();
    let mut shifted = shifted;
    shifted.sort();
    let got: Vec<(i64, i64)> =
        hours.iter().map(|r| (r[0].as_i64().expect("hour"), r[1].as_i64().expect("count"))).collect();
    assert_eq!(got, shifted);
    let text = "SELECT TIME_FORMAT(__time, 'yyyy-MM-dd HH:mm') FROM wikipedia ORDER BY __time LIMIT 1";
    let (first, utc_first) = (la(text), sql(text));
    let time = la("SELECT __time FROM wikipedia ORDER BY __time LIMIT 1");
    assert_eq!(time, vec![vec![json!("2015-09-11T17:46:58.771-07:00")]]);
    let london = in_zone("SELECT TIME_FLOOR(__time, 'P1D') FROM wikipedia GROUP BY 1", "Europe/London").expect("runs");
    assert_eq!(london[0][0], json!("2015-09-12T00:00:00.000+01:00"));
    assert_eq!(utc_first[0][0], json!("2015-09-12 00:46"));
    assert_eq!(first[0][0], json!("2015-09-11 17:46"));
}

#[test]
fn explain_carries_the_zone_and_bad_zones_are_refused_by_name() {
    let plan = la("EXPLAIN PLAN FOR SELECT TIME_FLOOR(__time, 'P1D'), COUNT(*) FROM wikipedia GROUP BY 1");
    let plan: Value = serde_json::from_str(plan[0][0].as_str().expect("text")).expect("JSON");
    assert_eq!(plan[0]["query"]["granularity"], json!({"type": "period", "period": "P1D", "timeZone": LA}));
    let e = in_zone("SELECT 1", "Mars/Olympus").expect_err("refused").to_string();
    assert!(e.contains("sqlTimeZone \"Mars/Olympus\""), "{e}");
    let e = in_zone("SELECT 1", "-08:00").expect_err("refused").to_string();
    assert!(e.contains("offsets such as -08:00 are not supported"), "{e}");
}
