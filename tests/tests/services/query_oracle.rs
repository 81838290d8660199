//! The query engine against an oracle: random rows go through the whole pipeline (the real
//! broker, supervisor, indexers, merger, published segments), random timeseries / topN /
//! groupBy queries with random filters and granularities run on the published segments, and
//! DuckDB computes the same queries as SQL over the same rows (`tests/oracle/duckdb_oracle.py`,
//! with the Python of `SLUICE_PYTHON`). Answers must agree exactly (doubles to 1e-9).
//!
//! `SLUICE_ORACLE_QUERIES` (default 120) and `SLUICE_ORACLE_SEED` choose the run.

use serde_json::{json, Value};
use sluice_format::time::Interval;
use sluice_integration::indexing::Backends;
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::{required_env, unique};
use sluice_pipeline::datasource::submit;
use sluice_pipeline::runner::run_until_caught_up;
use sluice_query::{execute, load_segments, parse_query};
use sluice_store::faults::Rng;
use std::time::Duration;

pub(super) const COUNTRIES: [Option<&str>; 7] =
    [Some("US"), Some("DE"), Some("FR"), Some("IN"), Some("BR"), Some("JP"), None];
pub(super) const DEVICES: [&str; 4] = ["mobile", "desktop", "tablet", "tv"];
/// 2015-09-12T00:00:00Z.
pub(super) const START: i64 = 1_442_016_000_000;

/// One random row, as JSON for Kafka and for DuckDB.
pub(super) fn row(rng: &mut Rng) -> Value {
    let t = START + rng.below(3 * 86_400_000) as i64;
    let country = COUNTRIES[rng.below(7) as usize];
    let n = if rng.chance(0.1) { Value::Null } else { json!(rng.below(200)) };
    let latency = if rng.chance(0.05) { Value::Null } else { json!(rng.below(1_000_000) as f64 / 1000.0) };
    json!({"t": t, "country": country, "device": DEVICES[rng.below(4) as usize], "user": format!("u{}", rng.below(60)),
           "n": n, "bytes": rng.below(100_000), "latency": latency})
}

pub(super) fn spec(datasource: &str, topic: &str, bootstrap: &str) -> Value {
    json!({"type": "kafka", "spec": {
        "dataSchema": {
            "dataSource": datasource,
            "timestampSpec": {"column": "t", "format": "millis"},
            "dimensionsSpec": {"dimensions": ["country", "device", "user", {"name": "n", "type": "long"}]},
            "metricsSpec": [{"type": "count", "name": "count"}, {"type": "longSum", "name": "bytes", "fieldName": "bytes"},
                            {"type": "doubleSum", "name": "latency", "fieldName": "latency"}],
            "granularitySpec": {"segmentGranularity": "day", "queryGranularity": "none", "rollup": false}
        },
        "ioConfig": {"topic": topic, "useEarliestOffset": true, "taskCount": 2, "inputFormat": {"type": "json"},
            "consumerProperties": {"bootstrap.servers": bootstrap}},
        "tuningConfig": {"maxRowsInMemory": 700, "maxRowsPerSegment": 900}
    }})
}

/// A granularity as Druid JSON and as the SQL bucket of the epoch-millisecond column `t`.
fn granularity(rng: &mut Rng) -> (Value, Option<String>) {
    match rng.below(5) {
        0 => (json!("all"), None),
        1 => (json!("hour"), Some("(t - t % 3600000)".into())),
        2 => (json!("day"), Some("(t - t % 86400000)".into())),
        3 => (json!({"type": "period", "period": "PT6H"}), Some("(t - t % 21600000)".into())),
        _ => (
            json!({"type": "period", "period": "P1D", "timeZone": "America/New_York"}),
            Some("epoch_ms(timezone('America/New_York', time_bucket(INTERVAL '1 day', timezone('America/New_York', to_timestamp(t / 1000.0)))))".into()),
        ),
    }
}

pub(super) fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A random filter as Druid JSON and SQL.
fn filter(rng: &mut Rng, depth: u32) -> (Value, String) {
    let pick = if depth == 0 { rng.below(7) } else { rng.below(10) };
    match pick {
        0 => match COUNTRIES[rng.below(7) as usize] {
            Some(c) => {
                (json!({"type": "selector", "dimension": "country", "value": c}), format!("country = {}", quote(c)))
            }
            None => (json!({"type": "selector", "dimension": "country", "value": null}), "country IS NULL".into()),
        },
        1 => {
            let (a, b) = (DEVICES[rng.below(4) as usize], DEVICES[rng.below(4) as usize]);
            (
                json!({"type": "in", "dimension": "device", "values": [a, b]}),
                format!("device IN ({}, {})", quote(a), quote(b)),
            )
        }
        2 => {
            let (lo, hi) = (rng.below(120), 60 + rng.below(140));
            let (ls, us) = (rng.chance(0.5), rng.chance(0.5));
            (
                json!({"type": "bound", "dimension": "n", "lower": lo.to_string(), "upper": hi.to_string(),
                       "lowerStrict": ls, "upperStrict": us, "ordering": "numeric"}),
                format!("n {} {lo} AND n {} {hi}", if ls { ">" } else { ">=" }, if us { "<" } else { "<=" }),
            )
        }
        3 => {
            let d = rng.below(6);
            (
                json!({"type": "like", "dimension": "user", "pattern": format!("u{d}%")}),
                format!("\"user\" LIKE 'u{d}%'"),
            )
        }
        4 => (
            json!({"type": "regex", "dimension": "user", "pattern": "^u[2-3]"}),
            "regexp_matches(\"user\", '^u[2-3]')".into(),
        ),
        5 => {
            let x = rng.below(1000);
            (
                json!({"type": "range", "column": "latency", "matchValueType": "DOUBLE", "lower": x, "lowerOpen": true}),
                format!("latency > {x}"),
            )
        }
        6 => (json!({"type": "null", "column": "n"}), "n IS NULL".into()),
        7 => {
            let (f, s) = filter(rng, depth - 1);
            (json!({"type": "not", "field": f}), format!("NOT ({s})"))
        }
        k => {
            let (a, sa) = filter(rng, depth - 1);
            let (b, sb) = filter(rng, depth - 1);
            let (kind, op) = if k == 8 { ("and", "AND") } else { ("or", "OR") };
            (json!({"type": kind, "fields": [a, b]}), format!("({sa}) {op} ({sb})"))
        }
    }
}

/// The aggregators of every query, in Druid JSON and SQL, in the same order.
fn aggregations() -> (Value, Vec<&'static str>) {
    (
        json!([{"type": "count", "name": "rows"}, {"type": "longSum", "name": "bytes", "fieldName": "bytes"},
               {"type": "doubleSum", "name": "latency", "fieldName": "latency"}, {"type": "longMax", "name": "maxBytes", "fieldName": "bytes"},
               {"type": "doubleMin", "name": "minLatency", "fieldName": "latency"},
               {"type": "filtered", "name": "mobile", "filter": {"type": "selector", "dimension": "device", "value": "mobile"},
                "aggregator": {"type": "count", "name": "mobile"}}]),
        vec![
            "count(*)",
            "sum(bytes)",
            "sum(latency)",
            "max(bytes)",
            "min(latency)",
            "count(*) FILTER (WHERE device = 'mobile')",
        ],
    )
}

const AGG_NAMES: [&str; 6] = ["rows", "bytes", "latency", "maxBytes", "minLatency", "mobile"];

/// A random query: its Druid JSON, its SQL, and how to read Sluice's answer as rows
/// (bucket, dimensions..., aggregates...) comparable with the SQL's.
struct Case {
    druid: Value,
    sql: String,
    kind: &'static str,
    dims: Vec<String>,
    timed: bool,
}

fn case(rng: &mut Rng, datasource: &str) -> Case {
    let (gran, bucket) = granularity(rng);
    let (filter_json, filter_sql) = if rng.chance(0.8) { filter(rng, 2) } else { (Value::Null, "TRUE".into()) };
    let (aggs, agg_sql) = aggregations();
    let mut druid = json!({"dataSource": datasource, "intervals": ["2015-09-01/2015-10-01"], "granularity": gran,
                           "aggregations": aggs});
    if !filter_json.is_null() {
        druid["filter"] = filter_json;
    }
    let timed = bucket.is_some();
    let b = bucket.clone().unwrap_or_else(|| "NULL".into());
    let aggs_sql = agg_sql.join(", ");
    match rng.below(3) {
        0 => {
            druid["queryType"] = json!("timeseries");
            druid["context"] = json!({"skipEmptyBuckets": true});
            let sql = if timed {
                format!("SELECT {b} AS b, {aggs_sql} FROM r WHERE {filter_sql} GROUP BY b ORDER BY b")
            } else {
                format!("SELECT NULL AS b, {aggs_sql} FROM r WHERE {filter_sql}")
            };
            Case { druid, sql, kind: "timeseries", dims: vec![], timed }
        }
        1 => {
            let dim = ["country", "device", "user"][rng.below(3) as usize];
            let (metric, metric_sql) = if rng.chance(0.5) { ("rows", "count(*)") } else { ("bytes", "sum(bytes)") };
            druid["queryType"] = json!("topN");
            druid["dimension"] = json!(dim);
            druid["metric"] = json!(metric);
            druid["threshold"] = json!(5);
            let sql = format!(
                "SELECT {b} AS b, \"{dim}\", {aggs_sql} FROM r WHERE {filter_sql} GROUP BY b, \"{dim}\" \
                 QUALIFY row_number() OVER (PARTITION BY b ORDER BY {metric_sql} DESC, \"{dim}\" ASC NULLS FIRST) <= 5 \
                 ORDER BY b, {metric_sql} DESC, \"{dim}\" ASC NULLS FIRST"
            );
            Case { druid, sql, kind: "topN", dims: vec![dim.to_string()], timed }
        }
        _ => {
            let all = ["country", "device", "n"];
            let first = rng.below(3) as usize;
            let mut dims = vec![all[first]];
            if rng.chance(0.5) {
                dims.push(all[(first + 1 + rng.below(2) as usize) % 3]);
            }
            druid["queryType"] = json!("groupBy");
            druid["dimensions"] = json!(dims);
            let select: Vec<String> = dims.iter().map(|d| format!("CAST({d} AS VARCHAR) AS {d}")).collect();
            let order_dims: Vec<String> = dims.iter().map(|d| format!("{d} ASC NULLS FIRST")).collect();
            let mut having = String::new();
            if rng.chance(0.4) {
                let k = rng.below(40);
                druid["having"] = json!({"type": "greaterThan", "aggregation": "rows", "value": k});
                having = format!(" HAVING count(*) > {k}");
            }
            let mut order = format!("b, {}", order_dims.join(", "));
            let mut limit = String::new();
            if rng.chance(0.4) {
                druid["limitSpec"] = json!({"type": "default", "limit": 7,
                    "columns": [{"dimension": "rows", "direction": "descending", "dimensionOrder": "numeric"}]});
                order = format!("count(*) DESC, {order}");
                limit = " LIMIT 7".into();
            }
            let sql = format!(
                "SELECT {b} AS b, {}, {aggs_sql} FROM r WHERE {filter_sql} GROUP BY b, {}{having} ORDER BY {order}{limit}",
                select.join(", "),
                dims.join(", ")
            );
            Case { druid, sql, kind: "groupBy", dims: dims.iter().map(|d| d.to_string()).collect(), timed }
        }
    }
}

/// Sluice's answer as rows: bucket (ms, or null without buckets), dimensions, aggregates.
fn rows_of(case: &Case, answer: &Value) -> Vec<Vec<Value>> {
    let ms = |ts: &Value| {
        if case.timed {
            json!(sluice_format::time::parse_iso_instant(ts.as_str().expect("timestamp")).expect("instant"))
        } else {
            Value::Null
        }
    };
    let mut out = Vec::new();
    for item in answer.as_array().expect("array") {
        let b = ms(&item["timestamp"]);
        let entries: Vec<&Value> = match case.kind {
            "timeseries" => vec![&item["result"]],
            "topN" => item["result"].as_array().expect("topN list").iter().collect(),
            _ => vec![&item["event"]],
        };
        for e in entries {
            let mut row = vec![b.clone()];
            row.extend(case.dims.iter().map(|d| e[d].clone()));
            row.extend(AGG_NAMES.iter().map(|a| e[*a].clone()));
            out.push(row);
        }
    }
    out
}

pub(super) fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
        _ => a == b,
    }
}

/// The run's seed: `SLUICE_ORACLE_SEED`, or the clock; printed so that a run can be repeated.
pub(super) fn oracle_seed(what: &str) -> u64 {
    let seed: u64 = std::env::var("SLUICE_ORACLE_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(7)
    });
    eprintln!("{what} seed {seed} (SLUICE_ORACLE_SEED={seed} repeats this run)");
    seed
}

/// `rows` produced round-robin to a new topic of `partitions` partitions and ingested through
/// the whole pipeline (supervisor, indexers, merger) into a new datasource named from `prefix`.
pub(super) async fn ingest(rows: &[Value], partitions: i32, prefix: &str) -> (Backends, String) {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, prefix, partitions).await;
    let records: Vec<(i32, Vec<u8>)> =
        rows.iter().enumerate().map(|(i, r)| (i as i32 % partitions, r.to_string().into_bytes())).collect();
    produce(&bootstrap, &topic, &records).await;
    let b = Backends::local().await;
    let datasource = unique(prefix);
    submit(b.meta.as_ref(), spec(&datasource, &topic, &bootstrap), 0).await.expect("submit");
    let passes = run_until_caught_up(
        b.meta.as_ref(),
        b.store.as_ref(),
        Some(&datasource),
        50,
        Duration::from_secs(60),
        |_, _| {},
    )
    .await
    .expect("pipeline");
    assert!(passes.iter().all(|p| p.caught_up), "caught up");
    (b, datasource)
}

/// DuckDB's answers to `queries` over `rows` (`tests/oracle/duckdb_oracle.py`, with the Python
/// of `SLUICE_PYTHON`), over table `r` or also a view named `view` as Sluice's SQL sees it.
pub(super) fn duckdb(rows: &[Value], queries: &[&str], view: Option<&str>) -> Vec<Vec<Vec<Value>>> {
    let python = required_env("SLUICE_PYTHON");
    let dir = tempfile::tempdir().expect("temp dir");
    let rows_path = dir.path().join("rows.jsonl");
    std::fs::write(&rows_path, rows.iter().map(|r| format!("{r}\n")).collect::<String>()).expect("rows file");
    let sql_path = dir.path().join("queries.json");
    std::fs::write(&sql_path, serde_json::to_string(queries).expect("json")).expect("queries file");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/oracle/duckdb_oracle.py");
    let out = std::process::Command::new(&python)
        .arg(script)
        .arg(&rows_path)
        .arg(&sql_path)
        .args(view)
        .output()
        .expect("run DuckDB");
    assert!(out.status.success(), "DuckDB: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("DuckDB answers")
}

#[tokio::test(flavor = "multi_thread")]
async fn random_queries_agree_with_duckdb() {
    let queries: usize = std::env::var("SLUICE_ORACLE_QUERIES").ok().and_then(|v| v.parse().ok()).unwrap_or(120);
    let seed = oracle_seed("oracle");
    let mut rng = Rng::new(seed);

    // Random rows through the whole pipeline.
    let rows: Vec<Value> = (0..3000).map(|_| row(&mut rng)).collect();
    let (b, datasource) = ingest(&rows, 3, "oracle").await;
    let all = [Interval::new(START - 86_400_000, START + 5 * 86_400_000)];
    let segments =
        load_segments(b.meta.as_ref(), b.store.as_ref(), None, &datasource, &all, None).await.expect("segments");
    assert!(segments.len() > 3, "several segments per day ({})", segments.len());

    // The same queries through Sluice and DuckDB.
    let cases: Vec<Case> = (0..queries).map(|_| case(&mut rng, &datasource)).collect();
    let texts: Vec<&str> = cases.iter().map(|c| c.sql.as_str()).collect();
    let expected = duckdb(&rows, &texts, None);

    let mut kinds = std::collections::BTreeMap::new();
    for (case, want) in cases.iter().zip(&expected) {
        let text = case.druid.to_string();
        let answer = execute(&parse_query(&text).expect("query parses"), &segments).expect("query runs");
        let got = rows_of(case, &answer);
        let agree = got.len() == want.len()
            && got.iter().zip(want).all(|(g, w)| g.len() == w.len() && g.iter().zip(w).all(|(a, b)| same(a, b)));
        assert!(agree, "seed {seed}: {text}\nSQL: {}\nsluice: {got:?}\nduckdb: {want:?}", case.sql);
        *kinds.entry(case.kind).or_insert(0) += 1;
        assert!(
            !want.is_empty() || case.kind != "timeseries" || case.timed,
            "a granularity-all timeseries answers one row"
        );
    }
    eprintln!("{} queries agreed with DuckDB: {kinds:?}", cases.len());
}
