//! Druid's nested columns tutorial (`docs/querying/nested-columns.md`): its spec ingests its
//! sample (`data/nested/`, the five rows the page's `SELECT *` shows) with `shipTo` and
//! `details` as `json` dimensions, and its queries give the answers the page documents.

use super::common::*;
use serde_json::{json, Value};
use sluice_sql::{run_sql, MemorySegments, SqlRequest};
use std::sync::OnceLock;

fn example() -> &'static MemorySegments {
    static SOURCE: OnceLock<MemorySegments> = OnceLock::new();
    SOURCE.get_or_init(|| {
        let spec = spec("nested-kafka-supervisor.json");
        let data = std::fs::read_to_string(data_path("nested/nested_example_data.json")).expect("sample");
        super::memory_source("nested_data_example", &spec, data.lines().map(str::as_bytes))
    })
}

fn rows(text: &str) -> Vec<Vec<Value>> {
    let answer = super::runtime().block_on(run_sql(example(), &SqlRequest::new(text)));
    answer.unwrap_or_else(|e| panic!("{text}: {e}")).rows
}

#[test]
fn json_columns_show_as_complex_json() {
    let got = rows(
        "SELECT COLUMN_NAME, DATA_TYPE FROM INFORMATION_SCHEMA.COLUMNS \
         WHERE TABLE_NAME = 'nested_data_example' ORDER BY COLUMN_NAME",
    );
    assert_eq!(
        got,
        [
            ["__time", "TIMESTAMP"],
            ["department", "VARCHAR"],
            ["details", "COMPLEX<json>"],
            ["product", "VARCHAR"],
            ["shipTo", "COMPLEX<json>"]
        ]
        .map(|r| r.map(|c| json!(c)).to_vec())
    );
}

#[test]
fn select_star_returns_the_documents_in_their_key_order() {
    let got = rows("SELECT * FROM nested_data_example");
    assert_eq!(got.len(), 5);
    assert_eq!(got[0][0], json!("2022-06-13T07:52:29.000Z"));
    assert_eq!(got[4][1..4], [json!("Computers"), json!({"color": "plum", "price": 40.0}), json!("Keyboard")]);
    let ship_to = serde_json::to_string(&got[0][4]).expect("json");
    assert_eq!(
        ship_to,
        r#"{"firstName":"Russ","lastName":"Cole","address":{"street":"77173 Rusty Station","city":"South Yeseniabury","state":"WA","country":"BL","postalCode":"01893"},"phoneNumbers":[{"type":"primary","number":"891-374-6188 x74568"},{"type":"secondary","number":"1-248-998-4426 x33037"}]}"#
    );
}

#[test]
fn json_value_extracts_literals_as_documented() {
    let got = rows(
        "SELECT product, department, JSON_VALUE(shipTo, '$.address.country') as country, \
         JSON_VALUE(shipTo, '$.phoneNumbers[0].number') as primaryPhone, JSON_VALUE(details, '$.price') as price \
         FROM nested_data_example",
    );
    let want = json!([
        ["Bike", "Sports", "BL", "891-374-6188 x74568", "542.0"],
        ["Bike", "Sports", "ME", "593.475.0449 x86733", "955.0"],
        ["Sausages", "Grocery", "AD", "(904) 890-0696 x581", "8.0"],
        ["Mouse", "Computers", "CW", "(689) 766-4272 x60778", "90.0"],
        ["Keyboard", "Computers", "TV", "1-788-771-7028 x8627", "40.0"]
    ]);
    assert_eq!(json!(got), want);
}

#[test]
fn json_value_returning_gives_the_documented_types() {
    let got = rows(
        "SELECT product, JSON_VALUE(shipTo, '$.address.country') as country, \
         JSON_VALUE(details, '$.price' RETURNING BIGINT) as price_int, \
         JSON_VALUE(details, '$.price' RETURNING DECIMAL) as price_decimal, \
         JSON_VALUE(details, '$.price' RETURNING VARCHAR) as price_varchar FROM nested_data_example",
    );
    let want = json!([
        ["Bike", "BL", 542, 542.0, "542.0"],
        ["Bike", "ME", 955, 955.0, "955.0"],
        ["Sausages", "AD", 8, 8.0, "8.0"],
        ["Mouse", "CW", 90, 90.0, "90.0"],
        ["Keyboard", "TV", 40, 40.0, "40.0"]
    ]);
    assert_eq!(json!(got), want);
}

#[test]
fn grouping_and_filtering_on_paths_give_the_documented_rows() {
    let got = rows(
        "SELECT product, JSON_VALUE(shipTo, '$.address.country'), \
         SUM(JSON_VALUE(details, '$.price' RETURNING BIGINT)) FROM nested_data_example \
         WHERE JSON_VALUE(shipTo, '$.address.country') in ('BL', 'CW') GROUP BY 1,2 ORDER BY 3 DESC",
    );
    assert_eq!(json!(got), json!([["Bike", "BL", 542], ["Mouse", "CW", 90]]));
}

#[test]
fn json_query_returns_objects_and_arrays_where_json_value_gives_null() {
    let got = rows(
        "SELECT JSON_VALUE(shipTo, '$.address'), JSON_QUERY(shipTo, '$.address'), \
         JSON_VALUE(shipTo, '$.phoneNumbers'), JSON_QUERY(shipTo, '$.phoneNumbers') FROM nested_data_example",
    );
    assert_eq!(got.len(), 5);
    // Druid's page shows "" for the JSON_VALUE columns, from its legacy null handling; SQL's
    // null is what Druid gives since version 28.
    assert_eq!(got[0][0], Value::Null);
    assert_eq!(got[0][2], Value::Null);
    assert_eq!(
        got[0][1],
        json!({"street":"77173 Rusty Station","city":"South Yeseniabury","state":"WA","country":"BL","postalCode":"01893"})
    );
    assert_eq!(
        got[4][3],
        json!([{"type":"primary","number":"1-788-771-7028 x8627"},{"type":"secondary","number":"1-460-496-4884 x887"}])
    );
}

#[test]
fn parse_json_and_to_json_string_give_the_documented_text() {
    let got =
        rows(r#"SELECT PARSE_JSON('{"x":"y"}'), TO_JSON_STRING('{"x":"y"}'), TO_JSON_STRING(PARSE_JSON('{"x":"y"}'))"#);
    assert_eq!(got, vec![vec![json!({"x": "y"}), json!(r#""{\"x\":\"y\"}""#), json!(r#"{"x":"y"}"#)]]);
}

#[test]
fn json_keys_and_paths_list_the_documents_schema() {
    let got = rows("SELECT JSON_KEYS(shipTo, '$.'), JSON_KEYS(shipTo, '$.address'), JSON_PATHS(details) FROM nested_data_example LIMIT 1");
    assert_eq!(
        got[0],
        vec![
            json!(["firstName", "lastName", "address", "phoneNumbers"]),
            json!(["street", "city", "state", "country", "postalCode"]),
            json!(["$.color", "$.price"])
        ]
    );
}

#[test]
fn schema_discovery_types_the_wikipedia_sample_and_answers_the_tutorial() {
    let spec = json!({"type": "kafka", "spec": {
        "dataSchema": {"dataSource": "wikipedia", "timestampSpec": {"column": "time", "format": "iso"},
            "dimensionsSpec": {"dimensions": [], "useSchemaDiscovery": true},
            "granularitySpec": {"segmentGranularity": "day", "queryGranularity": "none", "rollup": false}},
        "ioConfig": {"topic": "t", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "x:9092"}}}});
    let spec = sluice_format::spec::load_spec(&spec.to_string()).expect("spec").spec;
    let lines = super::tutorial_lines();
    let source = super::memory_source("wikipedia", &spec, lines.iter().map(|l| l.as_bytes()));
    let run = |text: &str| {
        let answer = super::runtime().block_on(run_sql(&source, &SqlRequest::new(text)));
        answer.unwrap_or_else(|e| panic!("{text}: {e}")).rows
    };
    let types = run("SELECT COLUMN_NAME, DATA_TYPE FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_NAME = 'wikipedia' \
        AND COLUMN_NAME IN ('added', 'delta', 'metroCode', 'channel', 'cityName', 'isRobot') ORDER BY 1");
    assert_eq!(
        json!(types),
        json!([
            ["added", "BIGINT"],
            ["channel", "VARCHAR"],
            ["cityName", "VARCHAR"],
            ["delta", "BIGINT"],
            ["isRobot", "VARCHAR"],
            ["metroCode", "BIGINT"]
        ])
    );
    // The tutorial's top channels by lines added, from the discovered long column.
    let rows = run("SELECT channel, SUM(added) FROM wikipedia \
        WHERE \"__time\" BETWEEN TIMESTAMP '2015-09-12 00:00:00' AND TIMESTAMP '2015-09-13 00:00:00' \
        GROUP BY channel ORDER BY SUM(added) DESC LIMIT 5");
    let text = std::fs::read_to_string(data_path("queries/wikipedia-documented-answers.json")).expect("answers");
    let want = serde_json::from_str::<Value>(&text).expect("answers")["wikipedia-channels-by-added.json"].clone();
    assert_eq!(json!(rows), want);
    assert_eq!(
        run("SELECT COUNT(*) FROM wikipedia WHERE metroCode > 600")[0][0],
        json!(lines_with_metro_over(&lines, 600))
    );
}

fn lines_with_metro_over(lines: &[String], n: i64) -> usize {
    lines
        .iter()
        .filter(|l| serde_json::from_str::<Value>(l).expect("row")["metroCode"].as_i64().is_some_and(|m| m > n))
        .count()
}
