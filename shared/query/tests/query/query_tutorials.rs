//! Druid's tutorial queries (`data/queries/`) on the Wikipedia sample give the answers Druid's
//! documentation prints ("Tutorial: Querying data"), and bad queries fail naming the field.
//!
//! The sample shipped here has its first twelve records moved off 2015-09-12 to the days
//! around it (same time of day). Druid's documented answers are for the original day, so the
//! tutorial tests put those records back; `shipped_sample_differs_by_the_stray_rows` checks
//! the shipped sample's answers differ from the documented ones by exactly those records.

use crate::common::*;
use serde_json::{json, Value};
use sluice_format::time::Interval;
use sluice_query::{execute, parse_query, QuerySegment};
use std::sync::OnceLock;

/// Indexes `lines` under the tutorial spec: one segment per daily chunk.
fn segments(lines: &[String]) -> Vec<QuerySegment> {
    let spec = spec("wikipedia-kafka-supervisor.json");
    let (indexes, _) = index_records(&spec, lines.iter().map(|l| l.as_bytes()));
    indexes
        .values()
        .map(|index| {
            let interval: Interval = index.interval();
            let segment = merge_all(&[persist(index, "hydrant")], 5_000_000).remove(0);
            QuerySegment { id: format!("wikipedia_{interval}_v1"), interval, segment }
        })
        .collect()
}

/// The records moved off 2015-09-12 in the shipped sample.
fn is_stray(line: &str) -> bool {
    line.starts_with("{\"time\":\"2015-09-") && !line.starts_with("{\"time\":\"2015-09-12")
}

/// The sample as Druid's tutorial has it: every record on 2015-09-12.
pub(crate) fn wikipedia() -> &'static [QuerySegment] {
    static SEGMENTS: OnceLock<Vec<QuerySegment>> = OnceLock::new();
    SEGMENTS.get_or_init(|| {
        let lines: Vec<String> = wikipedia_lines()
            .into_iter()
            .map(|l| if is_stray(&l) { format!("{{\"time\":\"2015-09-12{}", &l[19..]) } else { l })
            .collect();
        segments(&lines)
    })
}

/// The sample as shipped.
fn shipped() -> &'static [QuerySegment] {
    static SEGMENTS: OnceLock<Vec<QuerySegment>> = OnceLock::new();
    SEGMENTS.get_or_init(|| segments(&wikipedia_lines()))
}

fn read_query(file: &str) -> String {
    std::fs::read_to_string(data_path(&format!("queries/{file}"))).expect("query file")
}

/// Druid's documented answer to tutorial query `file`.
fn documented(file: &str) -> Value {
    let text = std::fs::read_to_string(data_path("queries/wikipedia-documented-answers.json")).expect("answers");
    serde_json::from_str::<Value>(&text).expect("answers JSON")[file].clone()
}

fn run(file: &str) -> Value {
    execute(&parse_query(&read_query(file)).expect("valid query"), wikipedia()).expect("query runs")
}

fn query(text: &str) -> Value {
    execute(&parse_query(text).expect("valid query"), wikipedia()).expect("query runs")
}

#[test]
fn top_pages_match_the_tutorial() {
    let expected = json!([documented("wikipedia-top-pages.json")]);
    let got = run("wikipedia-top-pages.json");
    // Line by line, as Druid pretty-prints it.
    assert_eq!(
        serde_json::to_string_pretty(&got).expect("test value"),
        serde_json::to_string_pretty(&expected).expect("test value")
    );
}

#[test]
fn deleted_lines_by_hour_match_the_tutorial() {
    let documented = documented("wikipedia-deleted-by-hour.json");
    let got = run("wikipedia-deleted-by-hour.json");
    let rows = got.as_array().expect("array");
    assert_eq!(rows.len(), 24, "{got}");
    for (h, row) in rows.iter().enumerate() {
        assert_eq!(row["timestamp"], json!(format!("2015-09-12T{h:02}:00:00.000Z")));
        assert_eq!(row["result"]["LinesDeleted"], documented[h], "hour {h}");
    }
}

#[test]
fn channels_by_added_match_the_tutorial() {
    let got = run("wikipedia-channels-by-added.json");
    let pairs: Vec<Value> =
        got.as_array().expect("array").iter().map(|r| json!([r["event"]["channel"], r["event"]["added"]])).collect();
    assert_eq!(Value::Array(pairs), documented("wikipedia-channels-by-added.json"));
    assert_eq!(got[0]["version"], "v1");
    assert_eq!(got[0]["timestamp"], "2015-09-12T00:00:00.000Z");
}

#[test]
fn scan_returns_the_tutorial_rows() {
    let got = run("wikipedia-scan.json");
    let events: Vec<(String, String)> = got
        .as_array()
        .expect("array")
        .iter()
        .flat_map(|batch| batch["events"].as_array().expect("test value").clone())
        .map(|e| {
            (e["user"].as_str().expect("test value").to_string(), e["page"].as_str().expect("test value").to_string())
        })
        .collect();
    let documented = [
        ("Thiago89", "Campeonato Mundial de Voleibol Femenino Sub-20 de 2015"),
        ("91.34.200.249", "Friede von Schönbrunn"),
        ("TuHan-Bot", "Trĩ vàng"),
        ("Lowercase sigmabot III", "User talk:ErrantX"),
        ("BattyBot", "Hans W. Jung"),
    ];
    assert_eq!(events, documented.map(|(u, p)| (u.to_string(), p.to_string())));
    assert_eq!(got[0]["columns"], json!(["user", "page"]));
}

#[test]
fn filtered_group_by_with_having_and_post_aggregator() {
    let got = run("wikipedia-robot-edits-by-namespace.json");
    let rows = got.as_array().expect("array");
    assert!(!rows.is_empty() && rows.len() <= 5, "{got}");
    let mut last = i64::MAX;
    for r in rows {
        let e = &r["event"];
        let edits = e["edits"].as_i64().expect("test value");
        assert!(edits > 100 && edits <= last, "having and descending order: {got}");
        last = edits;
        assert!(["#en.wikipedia", "#de.wikipedia"].contains(&e["channel"].as_str().expect("test value")));
        let per = e["added"].as_f64().expect("test value") / edits as f64;
        assert!((e["addedPerEdit"].as_f64().expect("test value") - per).abs() < 1e-9);
        // The same group counted by a scan-side filter agrees.
        let check = query(&format!(
            r#"{{"queryType":"timeseries","dataSource":"wikipedia","intervals":["2015-09-12/2015-09-13"],"granularity":"all",
               "filter":{{"type":"and","fields":[{{"type":"equals","column":"isRobot","matchValueType":"STRING","matchValue":"true"}},
                 {{"type":"selector","dimension":"channel","value":{}}},{{"type":"selector","dimension":"namespace","value":{}}}]}},
               "aggregations":[{{"type":"count","name":"n"}}]}}"#,
            e["channel"], e["namespace"]
        ));
        assert_eq!(check[0]["result"]["n"], json!(edits));
    }
}

#[test]
fn metadata_queries_describe_the_sample() {
    let tb = query(r#"{"queryType":"timeBoundary","dataSource":"wikipedia"}"#);
    assert_eq!(tb[0]["result"]["minTime"], "2015-09-12T00:46:58.771Z", "{tb}");
    assert_eq!(tb[0]["result"]["maxTime"], "2015-09-12T23:59:59.200Z", "{tb}");
    let sm = query(
        r#"{"queryType":"segmentMetadata","dataSource":"wikipedia","intervals":["2015-09-12/2015-09-13"],
            "toInclude":{"type":"list","columns":["channel","added"]}}"#,
    );
    assert_eq!(sm[0]["numRows"], 39_244, "{sm}");
    assert_eq!(sm[0]["columns"]["channel"]["type"], "STRING");
    assert_eq!(sm[0]["columns"]["channel"]["cardinality"], 51);
    assert_eq!(sm[0]["columns"]["added"]["type"], "LONG");
    let ds = query(r#"{"queryType":"dataSourceMetadata","dataSource":"wikipedia"}"#);
    assert_eq!(ds[0]["result"]["maxIngestedEventTime"], tb[0]["result"]["maxTime"]);
}

#[test]
fn filters_use_sql_null_logic_and_unknown_columns_are_null() {
    let count = |filter: &str| {
        let q = format!(
            r#"{{"queryType":"timeseries","dataSource":"wikipedia","intervals":["2015-09-12/2015-09-13"],
                "granularity":"all","filter":{filter},"aggregations":[{{"type":"count","name":"n"}}]}}"#
        );
        query(&q)[0]["result"]["n"].as_i64().expect("count")
    };
    let all = count(r#"{"type":"true"}"#);
    assert_eq!(all, 39_244);
    let with_city = count(r#"{"type":"not","field":{"type":"null","column":"cityName"}}"#);
    let en = count(r#"{"type":"selector","dimension":"cityName","value":"New York"}"#);
    let not_en = count(r#"{"type":"not","field":{"type":"selector","dimension":"cityName","value":"New York"}}"#);
    assert!(en > 0 && with_city < all);
    assert_eq!(en + not_en, with_city, "NOT(city = x) leaves the null cities out");
    assert_eq!(count(r#"{"type":"selector","dimension":"noSuchColumn","value":"x"}"#), 0);
    assert_eq!(count(r#"{"type":"null","column":"noSuchColumn"}"#), all);
    let like = count(r#"{"type":"like","dimension":"page","pattern":"Wikipedia:%"}"#);
    let regex = count(r#"{"type":"regex","dimension":"page","pattern":"^Wikipedia:"}"#);
    assert_eq!(like, regex);
    let bound = count(r#"{"type":"bound","dimension":"added","lower":"100","upper":"200","ordering":"numeric"}"#);
    let range = count(r#"{"type":"range","column":"added","matchValueType":"LONG","lower":100,"upper":200}"#);
    let expr = count(r#"{"type":"expression","expression":"added >= 100 && added <= 200"}"#);
    assert!(bound > 0);
    assert_eq!((bound, range), (expr, expr));
}

#[test]
fn empty_answers_where_druid_gives_them() {
    let empty = |q: &str| assert_eq!(query(q), json!([]), "{q}");
    empty(
        r#"{"queryType":"timeseries","dataSource":"wikipedia","intervals":["2001-01-01/2001-01-02"],"granularity":"all","aggregations":[{"type":"count","name":"n"}]}"#,
    );
    empty(
        r#"{"queryType":"topN","dataSource":"wikipedia","intervals":["2015-09-12/2015-09-12"],"granularity":"all","dimension":"page","metric":"n","threshold":3,"aggregations":[{"type":"count","name":"n"}]}"#,
    );
    let none = execute(
        &parse_query(r#"{"queryType":"groupBy","dataSource":"nope","intervals":["2015/2016"],"granularity":"all","dimensions":["page"]}"#)
            .expect("test value"),
        &[],
    )
    .expect("test value");
    assert_eq!(none, json!([]));
}

#[test]
fn invalid_queries_name_the_field_and_the_expected_form() {
    let err = |q: &str| parse_query(q).and_then(|q| execute(&q, wikipedia())).expect_err("invalid").to_string();
    let e = err(
        r#"{"queryType":"topN","dataSource":"wikipedia","intervals":["2015/2016"],"dimension":"page","metric":"nope","threshold":3,"aggregations":[{"type":"count","name":"n"}]}"#,
    );
    assert!(e.contains("metric") && e.contains("nope"), "{e}");
    let e = err(
        r#"{"queryType":"timeseries","dataSource":"wikipedia","intervals":["2015/2016"],"granularity":"fortnight"}"#,
    );
    assert!(e.contains("fortnight"), "{e}");
    let e = err(r#"{"queryType":"timeseries","dataSource":"wikipedia","intervals":"yesterday"}"#);
    assert!(e.contains("intervals") || e.contains("yesterday"), "{e}");
    let e = err(r#"{"queryType":"sql","dataSource":"wikipedia"}"#);
    assert!(e.contains("queryType") && e.contains("timeseries"), "{e}");
    let e = err(
        r#"{"queryType":"groupBy","dataSource":"wikipedia","intervals":["2015/2016"],"dimensions":["page"],"limitSpec":{"type":"default","columns":["nope"]}}"#,
    );
    assert!(e.contains("limitSpec.columns[0].dimension"), "{e}");
    let e = err(
        r#"{"queryType":"timeseries","dataSource":"wikipedia","intervals":["2015/2016"],"aggregations":[{"type":"longSum","name":"x"}]}"#,
    );
    assert!(e.contains("aggregations[0]") && e.contains("fieldName"), "{e}");
}

#[test]
fn shipped_sample_differs_by_the_stray_rows() {
    let strays: Vec<Value> = wikipedia_lines()
        .iter()
        .filter(|l| is_stray(l))
        .map(|l| serde_json::from_str(l).expect("test value"))
        .collect();
    assert_eq!(strays.len(), 12);
    let on_shipped =
        |file: &str| execute(&parse_query(&read_query(file)).expect("test value"), shipped()).expect("test value");
    // Hourly deleted lines: the documented sums minus the stray records' (all in hour 0).
    let restored = run("wikipedia-deleted-by-hour.json");
    let got = on_shipped("wikipedia-deleted-by-hour.json");
    let stray_deleted: i64 = strays.iter().map(|r| r["deleted"].as_i64().expect("test value")).sum();
    let documented_hour_0 = documented("wikipedia-deleted-by-hour.json")[0].as_i64().expect("test value");
    assert_eq!(got[0]["result"]["LinesDeleted"].as_i64().expect("test value") + stray_deleted, documented_hour_0);
    assert_eq!(got.as_array().expect("test value")[1..], restored.as_array().expect("test value")[1..]);
    // Added per channel: #en.wikipedia loses what its stray records added.
    let got = on_shipped("wikipedia-channels-by-added.json");
    let en_stray: i64 = strays
        .iter()
        .filter(|r| r["channel"] == "#en.wikipedia")
        .map(|r| r["added"].as_i64().expect("test value"))
        .sum();
    assert_eq!(got[0]["event"]["added"].as_i64().expect("test value") + en_stray, 3_045_299);
    // Top pages: the same ranking, stamped with the first record left on the day.
    let got = on_shipped("wikipedia-top-pages.json");
    assert_eq!(got[0]["result"], run("wikipedia-top-pages.json")[0]["result"]);
    assert_eq!(got[0]["timestamp"], "2015-09-12T00:47:35.776Z");
    // The stray records are still there, in their own days.
    let q = r#"{"queryType":"timeseries","dataSource":"wikipedia","intervals":["2015-09-01/2015-10-01"],
                "granularity":"day","context":{"skipEmptyBuckets":true},"aggregations":[{"type":"count","name":"n"}]}"#;
    let days = execute(&parse_query(q).expect("test value"), shipped()).expect("test value");
    let counts: Vec<i64> =
        days.as_array().expect("test value").iter().map(|d| d["result"]["n"].as_i64().expect("test value")).collect();
    assert_eq!(counts.len(), 13);
    assert_eq!(counts.iter().sum::<i64>(), 39_244);
    assert_eq!(counts[4], 39_232);
}
