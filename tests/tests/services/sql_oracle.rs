//! Druid SQL against an oracle: the query oracle's random rows go through the whole pipeline,
//! random SQL from a grammar (grouping keys, aggregates and arithmetic over them, filters,
//! time ranges, HAVING, ORDER BY with LIMIT, one key ranked by an aggregate, scans) runs through Sluice's SQL on the published
//! segments and through DuckDB over the same rows (`tests/oracle/duckdb_oracle.py`, a view of
//! the same name and columns). The text is the same but for the time functions (TIME_FLOOR
//! and FLOOR ... TO become time_bucket and date_trunc). Answers must agree (doubles to 1e-9).
//!
//! `SLUICE_SQL_ORACLE_QUERIES` (default 150) and `SLUICE_ORACLE_SEED` choose the run.

use super::query_oracle::{duckdb, ingest, oracle_seed, quote, row, same, COUNTRIES, DEVICES};
use serde_json::Value;
use sluice_sql::{run_sql, SqlRequest, StoreSegments};
use sluice_store::faults::Rng;

/// A SQL text for Sluice and the same for DuckDB.
#[derive(Clone)]
struct Text {
    sluice: String,
    duck: String,
}

impl Text {
    fn same(s: impl Into<String>) -> Self {
        let s = s.into();
        Text { duck: s.clone(), sluice: s }
    }

    fn join(parts: &[Text], sep: &str) -> Text {
        Text {
            sluice: parts.iter().map(|p| p.sluice.as_str()).collect::<Vec<_>>().join(sep),
            duck: parts.iter().map(|p| p.duck.as_str()).collect::<Vec<_>>().join(sep),
        }
    }
}

/// A grouping key: its text and whether it is ordered as a number.
fn key(rng: &mut Rng) -> Text {
    match rng.below(9) {
        0 => Text::same("country"),
        1 => Text::same("device"),
        2 => Text::same("\"user\""),
        3 => Text::same("n"),
        4 => {
            Text { sluice: "TIME_FLOOR(__time, 'PT6H')".into(), duck: "time_bucket(INTERVAL '6 hours', __time)".into() }
        }
        5 => Text { sluice: "FLOOR(__time TO DAY)".into(), duck: "date_trunc('day', __time)".into() },
        6 => Text::same("CASE WHEN n > 100 THEN 'big' WHEN n IS NULL THEN 'none' ELSE 'small' END"),
        7 => Text::same("UPPER(device)"),
        _ => Text::same("country || '-' || device"),
    }
}

fn aggregate(rng: &mut Rng) -> &'static str {
    [
        "COUNT(*)",
        "SUM(bytes)",
        "MIN(bytes)",
        "MAX(bytes)",
        "SUM(latency)",
        "MIN(latency)",
        "MAX(latency)",
        "COUNT(n)",
        "SUM(n)",
        "AVG(bytes)",
        "AVG(n)",
        "COUNT(*) FILTER (WHERE device = 'mobile')",
        "SUM(bytes) - MIN(bytes)",
        "MAX(latency) * 2",
    ][rng.below(14) as usize]
}

/// A random condition.
fn condition(rng: &mut Rng, depth: u32) -> Text {
    let pick = if depth == 0 { rng.below(10) } else { rng.below(13) };
    Text::same(match pick {
        0 => match COUNTRIES[rng.below(7) as usize] {
            Some(c) => format!("country = {}", quote(c)),
            None => "country IS NULL".into(),
        },
        1 => format!("country <> {}", quote(COUNTRIES[rng.below(6) as usize].unwrap_or("US"))),
        2 => format!(
            "device {}IN ({}, {})",
            if rng.chance(0.3) { "NOT " } else { "" },
            quote(DEVICES[rng.below(4) as usize]),
            quote(DEVICES[rng.below(4) as usize])
        ),
        3 => format!("n >= {} AND n < {}", rng.below(120), 60 + rng.below(140)),
        4 => format!("n BETWEEN {} AND {}", rng.below(100), 100 + rng.below(100)),
        5 => format!("\"user\" LIKE 'u{}%'", rng.below(6)),
        6 => format!("latency > {}", rng.below(1000)),
        7 => format!("bytes + n > {}", rng.below(100_000)),
        8 => "UPPER(device) = 'TV' OR n IS NOT NULL".into(),
        9 => format!("__time >= TIMESTAMP '2015-09-1{} {:02}:00:00'", 2 + rng.below(3), rng.below(24)),
        10 => return Text::same(format!("NOT ({})", condition(rng, depth - 1).sluice)),
        k => {
            let (a, b) = (condition(rng, depth - 1).sluice, condition(rng, depth - 1).sluice);
            format!("({a}) {} ({b})", if k == 11 { "AND" } else { "OR" })
        }
    })
}

/// How an answer is compared.
#[derive(Clone, Copy, PartialEq)]
enum Check {
    /// Row for row.
    Ordered,
    /// As multisets.
    Unordered,
    /// The top `k` by the last column: DuckDB answers every group; Sluice's rows must be
    /// groups of it, with the `k` largest values of the last column in order (ties at the
    /// cut may pick either group).
    Top(usize),
}

/// A random query: grouped (keys, aggregates, maybe HAVING, ordered by every key, maybe
/// first by an aggregate with a LIMIT), one key ranked by an aggregate (a topN), an aggregate
/// over everything, or a scan.
fn query(rng: &mut Rng, table: &str) -> (Text, Check) {
    let filter = if rng.chance(0.8) { format!(" WHERE {}", condition(rng, 2).sluice) } else { String::new() };
    let mut aggs: Vec<&str> = (0..1 + rng.below(3)).map(|_| aggregate(rng)).collect();
    aggs.dedup();
    match rng.below(6) {
        0 => {
            let cols = ["__time", "country", "device", "n", "bytes", "latency"];
            let first = rng.below(4) as usize;
            let text = format!("SELECT {} FROM {table}{filter}", cols[first..first + 3].join(", "));
            (Text::same(text), Check::Unordered)
        }
        1 => (Text::same(format!("SELECT {} FROM {table}{filter}", aggs.join(", "))), Check::Ordered),
        2 => {
            let key = ["country", "device", "\"user\""][rng.below(3) as usize];
            let metric = ["COUNT(*)", "SUM(bytes)", "MAX(latency)"][rng.below(3) as usize];
            let k = 1 + rng.below(8) as usize;
            let head = format!("SELECT {key}, {metric} AS m FROM {table}{filter} GROUP BY 1");
            (Text { sluice: format!("{head} ORDER BY m DESC LIMIT {k}"), duck: head }, Check::Top(k))
        }
        _ => {
            let mut keys: Vec<Text> = Vec::new();
            for _ in 0..1 + rng.below(2) {
                let k = key(rng);
                if !keys.iter().any(|x| x.sluice == k.sluice) {
                    keys.push(k);
                }
            }
            let n = keys.len();
            let ordinals: Vec<String> = (1..=n).map(|i| format!("{i} ASC NULLS FIRST")).collect();
            let mut order = ordinals.join(", ");
            let mut limit = String::new();
            if rng.chance(0.4) {
                order = format!("{} DESC NULLS LAST, {order}", n + 1);
                limit = format!(" LIMIT {}", 1 + rng.below(8));
            }
            let having = if rng.chance(0.3) { format!(" HAVING COUNT(*) > {}", rng.below(30)) } else { String::new() };
            let group: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
            let head = Text::join(&keys, ", ");
            let tail = format!(
                ", {} FROM {table}{filter} GROUP BY {}{having} ORDER BY {order}{limit}",
                aggs.join(", "),
                group.join(", ")
            );
            let text =
                Text { sluice: format!("SELECT {}{tail}", head.sluice), duck: format!("SELECT {}{tail}", head.duck) };
            (text, Check::Ordered)
        }
    }
}

/// A value comparable across both: instants as milliseconds, numbers as numbers.
fn normal(v: &Value) -> Value {
    match v {
        Value::String(s) if s.len() >= 19 && s.as_bytes()[4] == b'-' => {
            sluice_format::time::parse_iso_instant(s).map(Value::from).unwrap_or_else(|_| v.clone())
        }
        Value::Bool(b) => Value::from(i64::from(*b)),
        other => other.clone(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn random_sql_agrees_with_duckdb() {
    let queries: usize = std::env::var("SLUICE_SQL_ORACLE_QUERIES").ok().and_then(|v| v.parse().ok()).unwrap_or(150);
    let seed = oracle_seed("SQL oracle");
    let mut rng = Rng::new(seed);

    let rows: Vec<Value> = (0..2000).map(|_| row(&mut rng)).collect();
    let (b, datasource) = ingest(&rows, 2, "sqloracle").await;
    let table = format!("\"{datasource}\"");
    let cases: Vec<(Text, Check)> = (0..queries).map(|_| query(&mut rng, &table)).collect();
    let duck: Vec<&str> = cases.iter().map(|(t, _)| t.duck.as_str()).collect();
    let expected = duckdb(&rows, &duck, Some(&datasource));

    // Every other query through a segment cache (segments whole, kept for the request), the
    // rest with ranged reads of the parts each query needs.
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = sluice_query::SegmentCache::new(dir.path().join("cache"));
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    let mut answered = 0;
    for (i, ((text, check), want)) in cases.iter().zip(&expected).enumerate() {
        let source = StoreSegments::new(b.meta.as_ref(), b.store.as_ref(), (i % 2 == 0).then_some(&cache));
        let answer = run_sql(&source, &SqlRequest::new(text.sluice.clone()))
            .await
            .unwrap_or_else(|e| panic!("seed {seed}: {}\nfailed: {e}", text.sluice));
        let mut got: Vec<Vec<Value>> = answer.rows.iter().map(|r| r.iter().map(normal).collect()).collect();
        let mut want: Vec<Vec<Value>> = want.iter().map(|r| r.iter().map(normal).collect()).collect();
        let same_row = |g: &Vec<Value>, w: &Vec<Value>| g.len() == w.len() && g.iter().zip(w).all(|(a, b)| same(a, b));
        answered += usize::from(!got.is_empty());
        let agree = match check {
            Check::Ordered | Check::Unordered => {
                if *check == Check::Unordered {
                    got.sort_by_key(|r| Value::Array(r.clone()).to_string());
                    want.sort_by_key(|r| Value::Array(r.clone()).to_string());
                }
                got.len() == want.len() && got.iter().zip(&want).all(|(g, w)| same_row(g, w))
            }
            Check::Top(k) => {
                // Nulls rank last (a group whose metric is null only makes the cut if needed).
                let value = |r: &Vec<Value>| r.last().and_then(Value::as_f64).unwrap_or(f64::NEG_INFINITY);
                let mut best: Vec<f64> = want.iter().map(value).collect();
                best.sort_by(|a, b| b.total_cmp(a));
                best.truncate(*k);
                got.len() == best.len()
                    && got.iter().map(value).zip(&best).all(|(a, b)| same(&Value::from(a), &Value::from(*b)) || a == *b)
                    && got.iter().all(|g| want.iter().any(|w| same_row(g, w)))
            }
        };
        assert!(agree, "seed {seed}: {}\nDuckDB: {}\nsluice: {got:?}\nduckdb: {want:?}", text.sluice, text.duck);
        let explain =
            run_sql(&source, &SqlRequest::new(format!("EXPLAIN PLAN FOR {}", text.sluice))).await.expect("explain");
        let plan: Value = serde_json::from_str(explain.rows[0][0].as_str().unwrap_or("[]")).expect("plan");
        *kinds.entry(plan[0]["query"]["queryType"].as_str().unwrap_or("?").to_string()).or_default() += 1;
    }
    eprintln!("{} SQL queries agreed with DuckDB ({answered} with rows), planned as {kinds:?}", cases.len());
    assert!(answered * 2 > cases.len(), "most queries find rows: {answered} of {}", cases.len());
    assert!(kinds.len() >= 4, "the grammar reaches timeseries, topN, groupBy and scan: {kinds:?}");
}
