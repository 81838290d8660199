//! The constructs SQL plans, each checked against the native query that computes the same
//! thing on the sample or against counts worked out from the rows.

use super::*;
use serde_json::json;

const DAY: &str = "2015-09-12T00:00:00.000Z/2015-09-13T00:00:00.000Z";

/// The value of a single-row, single-column answer.
fn one(text: &str) -> Value {
    let rows = sql(text);
    assert_eq!(rows.len(), 1, "{text}: {rows:?}");
    rows[0][0].clone()
}

fn native_total(aggregation: Value, filter: Option<Value>) -> Value {
    let mut q = json!({"queryType": "timeseries", "dataSource": "wikipedia", "intervals": [DAY], "granularity": "all",
        "aggregations": [aggregation]});
    if let Some(f) = filter {
        q["filter"] = f;
    }
    native(q)[0]["result"]["x"].clone()
}

#[test]
fn counts_and_sums_agree_with_native_aggregators() {
    assert_eq!(one("SELECT COUNT(*) FROM wikipedia"), json!(39_244));
    assert_eq!(
        one("SELECT SUM(added) FROM wikipedia"),
        native_total(json!({"type": "longSum", "name": "x", "fieldName": "added"}), None)
    );
    assert_eq!(
        one("SELECT MIN(delta) FROM wikipedia"),
        native_total(json!({"type": "longMin", "name": "x", "fieldName": "delta"}), None)
    );
    assert_eq!(
        one("SELECT MAX(delta) FROM wikipedia"),
        native_total(json!({"type": "longMax", "name": "x", "fieldName": "delta"}), None)
    );
    let robots = json!({"type": "equals", "column": "isRobot", "matchValueType": "STRING", "matchValue": "true"});
    assert_eq!(
        one("SELECT COUNT(*) FROM wikipedia WHERE isRobot = 'true'"),
        native_total(json!({"type": "count", "name": "x"}), Some(robots))
    );
    // COUNT(x) skips nulls; cityName is null on most rows.
    let cities = one("SELECT COUNT(cityName) FROM wikipedia");
    let not_null = json!({"type": "not", "field": {"type": "null", "column": "cityName"}});
    assert_eq!(cities, native_total(json!({"type": "count", "name": "x"}), Some(not_null)));
    assert!(cities.as_i64().expect("count") < 39_244);
}

#[test]
fn avg_and_arithmetic_over_aggregates_are_post_aggregations() {
    let rows = sql("SELECT AVG(added), SUM(added) * 1.0 / COUNT(*), SUM(added) - SUM(deleted), SUM(added) FILTER (WHERE isRobot = 'true') FROM wikipedia");
    let (avg, ratio) = (rows[0][0].as_f64().expect("avg"), rows[0][1].as_f64().expect("ratio"));
    let sum = one("SELECT SUM(added) FROM wikipedia").as_f64().expect("sum");
    assert!((avg - sum / 39_244.0).abs() < 1e-9 && (ratio - avg).abs() < 1e-9, "{rows:?}");
    let deleted = one("SELECT SUM(deleted) FROM wikipedia").as_f64().expect("deleted");
    assert_eq!(rows[0][2].as_f64(), Some(sum - deleted));
    assert_eq!(rows[0][3], one("SELECT SUM(added) FROM wikipedia WHERE isRobot = 'true'"));
}

#[test]
fn where_conditions_become_native_filters() {
    let count = |cond: &str| one(&format!("SELECT COUNT(*) FROM wikipedia WHERE {cond}")).as_i64().expect("count");
    let en = count("channel = '#en.wikipedia'");
    assert_eq!(count("channel <> '#en.wikipedia'") + en + count("channel IS NULL"), 39_244);
    assert_eq!(count("channel IN ('#en.wikipedia', '#fr.wikipedia')"), en + count("channel = '#fr.wikipedia'"));
    assert_eq!(count("channel NOT IN ('#en.wikipedia')"), count("channel <> '#en.wikipedia'"));
    assert_eq!(count("channel LIKE '#en%'"), count("channel >= '#en' AND channel < '#eo'"));
    assert_eq!(count("NOT (channel LIKE '#en%') OR channel IS NULL") + count("channel LIKE '#en%'"), 39_244);
    assert_eq!(count("added BETWEEN 10 AND 20"), count("added >= 10 AND added <= 20"));
    assert_eq!(
        count("added > 100 OR deleted > 100"),
        count("added > 100") + count("deleted > 100") - count("added > 100 AND deleted > 100")
    );
    assert_eq!(count("UPPER(channel) = '#EN.WIKIPEDIA'"), en);
    assert_eq!(count("LOWER(channel) LIKE '%en.wiki%'"), count("channel LIKE '%en.wiki%'"));
    assert_eq!(count("channel ILIKE '#EN.%'"), count("channel LIKE '#en.%'"));
    assert_eq!(count("added + deleted > 1000"), count("NOT (added + deleted <= 1000)"));
    assert_eq!(count("cityName IS NOT NULL"), one("SELECT COUNT(cityName) FROM wikipedia").as_i64().expect("n"));
    assert_eq!(
        count("TIME_IN_INTERVAL(__time, '2015-09-12T01:00:00Z/2015-09-12T02:00:00Z')"),
        count("__time >= TIMESTAMP '2015-09-12 01:00:00' AND __time < '2015-09-12 02:00:00'")
    );
    assert_eq!(
        count("__time < TIMESTAMP '2015-09-12 01:00:00' OR __time >= TIMESTAMP '2015-09-12 23:00:00'"),
        count("__time < TIMESTAMP '2015-09-12 01:00:00'") + count("__time >= TIMESTAMP '2015-09-12 23:00:00'")
    );
    assert_eq!(count("REGEXP_LIKE(page, '^User')"), count("page LIKE 'User%'"));
    assert_eq!(count("1 = 1"), 39_244);
    assert_eq!(count("__time >= TIMESTAMP '2015-09-13 00:00:00'"), 0);
}

#[test]
fn group_by_ordinals_aliases_having_order_and_offset() {
    let all = sql("SELECT channel, COUNT(*) AS edits FROM wikipedia GROUP BY channel ORDER BY edits DESC, channel");
    let channels = sql("SELECT COUNT(*) FROM (SELECT DISTINCT channel FROM wikipedia WHERE channel IS NOT NULL)");
    let with_null = all.iter().any(|r| r[0].is_null());
    assert_eq!(json!(all.len() - usize::from(with_null)), channels[0][0]);
    let total: i64 = all.iter().map(|r| r[1].as_i64().expect("n")).sum();
    assert_eq!(total, 39_244);
    assert!(all.windows(2).all(|w| w[0][1].as_i64() >= w[1][1].as_i64()));
    let page = sql("SELECT channel, COUNT(*) AS edits FROM wikipedia GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 3 OFFSET 2");
    assert_eq!(page, all[2..5].to_vec());
    let busy = sql("SELECT channel, COUNT(*) FROM wikipedia GROUP BY channel HAVING COUNT(*) > 1000 ORDER BY channel");
    let mut want: Vec<Vec<Value>> = all.iter().filter(|r| r[1].as_i64() > Some(1000)).cloned().collect();
    want.sort_by(|a, b| a[0].as_str().cmp(&b[0].as_str()));
    assert_eq!(busy, want);
    let two = sql("SELECT channel, isRobot, SUM(delta) FROM wikipedia WHERE channel LIKE '#e%' GROUP BY channel, isRobot ORDER BY channel, isRobot");
    let native =
        native(json!({"queryType": "groupBy", "dataSource": "wikipedia", "intervals": [DAY], "granularity": "all",
        "filter": {"type": "like", "dimension": "channel", "pattern": "#e%"}, "dimensions": ["channel", "isRobot"],
        "aggregations": [{"type": "longSum", "name": "d", "fieldName": "delta"}],
        "limitSpec": {"type": "default", "columns": ["channel", "isRobot"]}}));
    let want: Vec<Vec<Value>> = native
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| vec![r["event"]["channel"].clone(), r["event"]["isRobot"].clone(), r["event"]["d"].clone()])
        .collect();
    assert_eq!(two, want);
    let distinct = sql("SELECT DISTINCT isRobot FROM wikipedia ORDER BY isRobot");
    assert_eq!(distinct, vec![vec![json!("false")], vec![json!("true")]]);
}

#[test]
fn expressions_are_virtual_columns() {
    let rows = sql("SELECT UPPER(channel) AS c, CONCAT(countryIsoCode, '-', regionIsoCode) AS place, SUBSTRING(page, 1, 4) AS p4,
            CHAR_LENGTH(page) AS len, added * 2 + 1 AS x, CAST(added AS DOUBLE) / 2 AS half,
            CASE WHEN added > 100 THEN 'big' ELSE 'small' END AS size, TIME_FORMAT(__time, 'yyyy-MM-dd HH') AS hour,
            TIME_EXTRACT(__time, 'HOUR') AS h, EXTRACT(MINUTE FROM __time) AS m, page, added, channel, countryIsoCode, regionIsoCode, __time
        FROM wikipedia WHERE countryIsoCode IS NOT NULL ORDER BY __time LIMIT 50");
    assert_eq!(rows.len(), 50);
    for r in &rows {
        let page = r[10].as_str().expect("page");
        let added = r[11].as_i64().expect("added");
        assert_eq!(r[0].as_str(), r[12].as_str().map(str::to_uppercase).as_deref());
        let place = match (r[13].as_str(), r[14].as_str()) {
            (Some(c), Some(g)) => json!(format!("{c}-{g}")),
            _ => Value::Null,
        };
        assert_eq!(r[1], place);
        assert_eq!(r[2], json!(page.chars().take(4).collect::<String>()));
        assert_eq!(r[3], json!(page.chars().count()));
        assert_eq!(r[4], json!(added * 2 + 1));
        assert_eq!(r[5].as_f64(), Some(added as f64 / 2.0));
        assert_eq!(r[6], json!(if added > 100 { "big" } else { "small" }));
        let time = r[15].as_str().expect("time");
        assert_eq!(r[7], json!(format!("{} {}", &time[..10], &time[11..13])));
        assert_eq!(r[8], json!(time[11..13].parse::<i64>().expect("hour")));
        assert_eq!(r[9], json!(time[14..16].parse::<i64>().expect("minute")));
    }
    assert!(rows.windows(2).all(|w| w[0][15].as_str() <= w[1][15].as_str()), "ordered by time");
    let newest = sql("SELECT __time FROM wikipedia ORDER BY __time DESC LIMIT 1");
    assert_eq!(sql("SELECT MAX(__time) FROM wikipedia"), newest);
    let grouped = sql("SELECT CASE WHEN added > 100 THEN 'big' ELSE 'small' END AS size, COUNT(*) FROM wikipedia GROUP BY 1 ORDER BY 1");
    let big = one("SELECT COUNT(*) FROM wikipedia WHERE added > 100");
    assert_eq!(
        grouped,
        vec![vec![json!("big"), big.clone()], vec![json!("small"), json!(39_244 - big.as_i64().expect("n"))]]
    );
}

#[test]
fn time_grouping_in_group_by_with_other_keys() {
    let rows =
        sql("SELECT TIME_FLOOR(__time, 'PT6H') AS t, isRobot, COUNT(*) FROM wikipedia GROUP BY 1, 2 ORDER BY 1, 2");
    assert_eq!(rows.len(), 8);
    assert_eq!(rows[0][0], json!("2015-09-12T00:00:00.000Z"));
    assert_eq!(rows[7][0], json!("2015-09-12T18:00:00.000Z"));
    assert_eq!(rows.iter().map(|r| r[2].as_i64().expect("n")).sum::<i64>(), 39_244);
    // As Superset writes it: the cast of __time is __time.
    let superset =
        sql("SELECT TIME_FLOOR(CAST(__time AS TIMESTAMP), 'PT6H') AS t, isRobot, COUNT(*) FROM druid.wikipedia \
        WHERE CAST(__time AS TIMESTAMP) >= TIMESTAMP '2015-09-12 00:00:00' GROUP BY 1, 2 ORDER BY 1, 2 LIMIT 10000");
    assert_eq!(superset, rows);
    let by_day = sql("SELECT DATE_TRUNC('day', __time), COUNT(*) FROM wikipedia GROUP BY 1");
    assert_eq!(by_day, vec![vec![json!("2015-09-12T00:00:00.000Z"), json!(39_244)]]);
}

#[test]
fn approximate_distinct_counts_and_earliest_latest() {
    let exact = sql("SELECT COUNT(*) FROM (SELECT DISTINCT \"user\" FROM wikipedia)");
    let approx = one("SELECT APPROX_COUNT_DISTINCT(\"user\") FROM wikipedia").as_f64().expect("estimate");
    let exact = exact[0][0].as_f64().expect("exact");
    assert!((approx - exact).abs() / exact < 0.05, "approx {approx} vs exact {exact}");
    assert_eq!(one("SELECT COUNT(DISTINCT \"user\") FROM wikipedia").as_f64(), Some(approx));
    let first = sql("SELECT EARLIEST(page, 100), LATEST(page, 100) FROM wikipedia");
    let oldest = sql("SELECT page FROM wikipedia ORDER BY __time LIMIT 1");
    let newest = sql("SELECT page FROM wikipedia ORDER BY __time DESC LIMIT 1");
    assert_eq!(first, vec![vec![oldest[0][0].clone(), newest[0][0].clone()]]);
}

#[test]
fn subqueries_in_from_run_over_the_inner_rows() {
    let outer = sql("SELECT COUNT(*), SUM(edits), MAX(edits) FROM (SELECT channel, COUNT(*) AS edits FROM wikipedia GROUP BY channel)");
    let channels = sql("SELECT channel, COUNT(*) FROM wikipedia GROUP BY channel");
    let max = channels.iter().map(|r| r[1].as_i64().expect("n")).max();
    assert_eq!(outer, vec![vec![json!(channels.len()), json!(39_244), json!(max)]]);
    let filtered = sql("SELECT c FROM (SELECT channel AS c, COUNT(*) AS n FROM wikipedia GROUP BY channel) WHERE n > 1000 ORDER BY n DESC LIMIT 2");
    assert_eq!(filtered, sql("SELECT channel FROM wikipedia GROUP BY channel ORDER BY COUNT(*) DESC LIMIT 2"));
}

#[test]
fn constants_without_a_table_and_empty_aggregates() {
    assert_eq!(sql("SELECT 1"), vec![vec![json!(1)]]);
    assert_eq!(sql("SELECT 1 + 2, UPPER('a'), 'x' || 'y'"), vec![vec![json!(3), json!("A"), json!("xy")]]);
    let empty = sql("SELECT COUNT(*), SUM(added) FROM wikipedia WHERE channel = 'none'");
    assert_eq!(empty, vec![vec![json!(0), Value::Null]]);
    assert!(sql("SELECT channel, COUNT(*) FROM wikipedia WHERE channel = 'none' GROUP BY channel").is_empty());
}

#[test]
fn explain_returns_the_native_query() {
    let r = answer(&SqlRequest::new(
        "EXPLAIN PLAN FOR SELECT channel, COUNT(*) FROM wikipedia GROUP BY channel ORDER BY 2 DESC LIMIT 3",
    ))
    .expect("explain");
    let names: Vec<&str> = r.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["PLAN", "RESOURCES", "ATTRIBUTES"]);
    let plan: Value = serde_json::from_str(r.rows[0][0].as_str().expect("plan")).expect("plan JSON");
    assert_eq!(plan[0]["query"]["queryType"], json!("topN"));
    assert_eq!(plan[0]["query"]["threshold"], json!(3));
    assert_eq!(r.rows[0][1], json!("[{\"name\":\"wikipedia\",\"type\":\"DATASOURCE\"}]"));
    // The plan is a native query Sluice runs, with the SQL answer.
    let answered = native(plan[0]["query"].clone());
    let pages = sql("SELECT channel, COUNT(*) FROM wikipedia GROUP BY channel ORDER BY 2 DESC LIMIT 3");
    assert_eq!(
        answered[0]["result"][0][plan[0]["query"]["dimension"]["outputName"].as_str().expect("name")],
        pages[0][0]
    );
}

#[test]
fn parameters_bind_values() {
    let mut r = SqlRequest::new("SELECT COUNT(*) FROM wikipedia WHERE channel = ? AND added > ?");
    r.parameters =
        serde_json::from_value(json!([{"type": "VARCHAR", "value": "#en.wikipedia"}, {"type": "BIGINT", "value": 10}]))
            .expect("params");
    let got = answer(&r).expect("answer").rows;
    assert_eq!(got, sql("SELECT COUNT(*) FROM wikipedia WHERE channel = '#en.wikipedia' AND added > 10"));
}

#[test]
fn expressions_of_grouping_keys_are_computed_on_each_group() {
    let upper = sql("SELECT UPPER(channel) AS c, COUNT(*) FROM wikipedia GROUP BY channel ORDER BY 2 DESC LIMIT 2");
    let plain = sql("SELECT channel, COUNT(*) FROM wikipedia GROUP BY channel ORDER BY 2 DESC LIMIT 2");
    assert_eq!(upper.len(), 2);
    for (u, p) in upper.iter().zip(&plain) {
        assert_eq!(u[0], json!(p[0].as_str().expect("channel").to_uppercase()));
        assert_eq!(u[1], p[1]);
    }
    let named = sql("SELECT countryIsoCode, LOOKUP(countryIsoCode, 'country_names') FROM wikipedia \
                     WHERE countryIsoCode = 'FR' GROUP BY 1");
    assert_eq!(named, vec![vec![json!("FR"), json!("France")]]);
    super::refused_naming("SELECT UPPER(page), COUNT(*) FROM wikipedia GROUP BY channel", "is not being grouped");
}
