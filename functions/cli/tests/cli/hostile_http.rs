//! A hostile-input campaign against `sluice serve`: a generator that knows the shape of Druid's
//! queries and supervisor specs sends them with extreme values, deep nesting, huge sizes and
//! wrong types. Every request must get an answer within a bounded time (a result or Druid's
//! error JSON, never a dropped connection), the server's memory must stay bounded, and a normal
//! query must still get Druid's answer afterwards. `SLUICE_HOSTILE_CASES` sets the number of
//! cases (300 by default; the long mode runs thousands) and `SLUICE_HOSTILE_SEED` replays one.

use super::local_server::{request, Server, ANSWER_WITHIN};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Most resident memory the server may reach, in KiB.
const MAX_RSS_KIB: u64 = 3 << 20;

fn sluice(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .current_dir(dir)
        .env_remove("SLUICE_METADATA")
        .env_remove("SLUICE_STORAGE")
        .output()
        .expect("run sluice")
}

/// Values a careless or hostile client sends where a number, string or structure belongs.
fn extreme(rng: &mut fastrand::Rng) -> Value {
    match rng.u8(0..14) {
        0 => json!(i64::MAX),
        1 => json!(i64::MIN),
        2 => json!(-1),
        3 => json!(1e308),
        4 => json!(0),
        5 => json!("x".repeat(rng.usize(1..200_000))),
        6 => json!(""),
        7 => json!(null),
        8 => Value::Array((0..rng.usize(0..50_000)).map(|i| json!(i)).collect()),
        9 => json!({"type": "unknown", "nested": {"deep": [1, 2, {"x": null}]}}),
        10 => json!("NaN"),
        11 => json!("-292275055-05-16T16:47:04.192Z/292278994-08-17T07:12:55.807Z"),
        12 => json!(true),
        _ => json!(u64::MAX),
    }
}

fn nested_filter(depth: usize) -> Value {
    let mut f = json!({"type": "selector", "dimension": "page", "value": "x"});
    for i in 0..depth {
        f = if i % 2 == 0 { json!({"type": "not", "field": f}) } else { json!({"type": "and", "fields": [f]}) };
    }
    f
}

fn expression(rng: &mut fastrand::Rng) -> String {
    let n = rng.usize(1..20_000);
    match rng.u8(0..5) {
        0 => format!("{}added{}", "(".repeat(n), ")".repeat(n)),
        1 => vec!["added"; n].join("+"),
        2 => format!("{}1", "-".repeat(n)),
        3 => format!("concat({})", vec!["page"; n].join(",")),
        _ => format!("timestamp_floor(__time, 'P{}Y')", rng.u64(..)),
    }
}

fn granularity(rng: &mut fastrand::Rng) -> Value {
    match rng.u8(0..7) {
        0 => json!({"type": "period", "period": format!("P{}Y", rng.u64(..))}),
        1 => json!({"type": "period", "period": "PT0.001S"}),
        2 => json!({"type": "period", "period": "PT0S"}),
        3 => json!({"type": "period", "period": "PT1S", "timeZone": "America/New_York"}),
        4 => json!({"type": "duration", "duration": rng.i64(..)}),
        5 => json!("minute"),
        _ => extreme(rng),
    }
}

/// One hostile Druid SQL request: deep or long expressions, huge lists and strings, nested
/// subqueries, extremes in every place a value goes, and garbage; or one whose rewrites or
/// answer would grow far past its text ([`heavy_sql`]).
fn sql(rng: &mut fastrand::Rng) -> Value {
    if rng.u8(0..3) == 0 {
        return json!({"query": heavy_sql(rng)});
    }
    let n = rng.usize(1..20_000);
    let text = match rng.u8(0..12) {
        0 => format!("SELECT {}added{} FROM wikipedia", "(".repeat(n), ")".repeat(n)),
        1 => format!("SELECT {} FROM wikipedia", vec!["added"; n].join(" + ")),
        2 => format!("SELECT COUNT(*) FROM wikipedia WHERE {}", vec!["page = 'x'"; n].join(" OR ")),
        3 => format!("SELECT COUNT(*) FROM wikipedia WHERE page IN ({})", vec!["'p'"; n].join(", ")),
        4 => format!("SELECT COUNT(*) FROM wikipedia WHERE page LIKE '{}'", "%_".repeat(n)),
        5 => format!("SELECT {} FROM wikipedia LIMIT 1", vec!["page"; n.min(5_000)].join(", ")),
        6 => {
            let depth = rng.usize(1..60);
            format!("{}SELECT COUNT(*) AS c FROM wikipedia{}", "SELECT c FROM (".repeat(depth), ")".repeat(depth))
        }
        7 => format!("SELECT TIME_FLOOR(__time, 'P{}Y'), COUNT(*) FROM wikipedia GROUP BY 1", rng.u64(..)),
        8 => format!("SELECT SUBSTRING(page, {}, {}) FROM wikipedia LIMIT {}", rng.i64(..), rng.i64(..), rng.u64(..)),
        9 => format!("SELECT page FROM wikipedia WHERE __time > TIMESTAMP '{}' LIMIT 5", "9".repeat(n.min(500))),
        10 => format!("SELECT CASE {} END FROM wikipedia LIMIT 1", "WHEN added > 1 THEN 'x' ".repeat(n.min(5_000))),
        _ => (0..n.min(2_000))
            .map(|_| ["SELECT", "(", ")", ",", "'", "\"", "FROM", "*", "?", ";", "--", "x"][rng.usize(0..12)])
            .collect::<Vec<_>>()
            .join(" "),
    };
    let mut body = json!({"query": text});
    if rng.u8(0..4) == 0 {
        body["resultFormat"] = extreme(rng);
        body["parameters"] = json!([{"type": "VARCHAR", "value": extreme(rng)}]);
        body["context"] = json!({"timeout": extreme(rng)});
    }
    body
}

/// SQL whose text is small and whose rewrites, plans or answers are not: names that look like
/// the planner's own, control characters in names, `WITH` chains that double, 64-branch
/// `UNION ALL`s of scans, many window functions over every row, and self-joins.
fn heavy_sql(rng: &mut fastrand::Rng) -> String {
    let depth = rng.usize(2..40);
    match rng.u8(0..7) {
        0 => {
            // Each name reads a quoted name holding what a placeholder of the planner's could
            // look like, twice.
            let mut q = String::from("WITH c0 AS (SELECT page FROM wikipedia)");
            for i in 1..depth {
                q.push_str(&format!(
                    ", c{i} AS (SELECT page FROM \"\u{0}with#{p}\" WHERE page IN (SELECT page FROM \"\u{0}with#{p}\"))",
                    p = i - 1
                ));
            }
            q + &format!(" SELECT COUNT(*) FROM c{}", depth - 1)
        }
        1 => {
            let name: String = (0..rng.usize(1..64)).map(|_| char::from(rng.u8(0..32))).collect();
            [
                "SELECT \"X\" FROM wikipedia",
                "SELECT page AS \"X\" FROM \"X\"",
                "WITH \"X\" AS (SELECT 1) SELECT * FROM \"X\"",
            ][rng.usize(0..3)]
            .replace('X', &name)
        }
        2 => {
            let mut q = String::from("WITH c0 AS (SELECT page FROM wikipedia)");
            for i in 1..depth {
                q.push_str(&format!(", c{i} AS (SELECT page FROM c{p} UNION ALL SELECT page FROM c{p})", p = i - 1));
            }
            q + &format!(" SELECT COUNT(*) FROM c{}", depth - 1)
        }
        3 => vec!["SELECT * FROM wikipedia"; 64].join(" UNION ALL "),
        4 => {
            let calls: Vec<String> = (0..rng.usize(1..2_000))
                .map(|i| {
                    format!("MAX(added) OVER (ORDER BY page ROWS BETWEEN 50000 PRECEDING AND 50000 FOLLOWING) AS w{i}")
                })
                .collect();
            format!("SELECT page, {} FROM wikipedia", calls.join(", "))
        }
        5 => {
            let joins: String = (0..rng.usize(1..20))
                .map(|i| format!(" JOIN (SELECT channel AS c{i} FROM wikipedia) j{i} ON w.channel = j{i}.c{i}"))
                .collect();
            format!("SELECT COUNT(*) FROM wikipedia w{joins}")
        }
        _ => format!(
            "SELECT {} FROM wikipedia",
            (0..rng.usize(1..500))
                .map(|i| format!("LAST_VALUE(comment) OVER () AS v{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// One hostile query: a well-formed skeleton with some fields replaced by extremes.
fn query(rng: &mut fastrand::Rng) -> Value {
    let kind = ["timeseries", "topN", "groupBy", "scan", "timeBoundary", "segmentMetadata"][rng.usize(0..6)];
    let mut q = json!({
        "queryType": kind, "dataSource": "wikipedia", "intervals": ["2015-09-12/2015-09-13"],
        "granularity": "hour", "dimension": "page", "dimensions": ["page", "channel"], "metric": "added",
        "threshold": 5, "aggregations": [{"type": "longSum", "name": "added", "fieldName": "added"}],
        "limit": 10, "columns": ["page", "added"], "order": "ascending",
    });
    for _ in 0..rng.usize(1..4) {
        match rng.u8(0..12) {
            0 => q["filter"] = nested_filter(rng.usize(1..200)),
            1 => {
                q["virtualColumns"] = json!([{"type": "expression", "name": "v", "expression": expression(rng)}]);
                q["dimensions"] = json!(["v"]);
            }
            2 => q["granularity"] = granularity(rng),
            3 => q["intervals"] = json!(["-292275055/292278994", "0000/9999", "2015/2014"]),
            4 => {
                q["filter"] =
                    json!({"type": "regex", "dimension": "page", "pattern": "(a+)+$".repeat(rng.usize(1..500))})
            }
            5 => {
                q["filter"] = json!({"type": "like", "dimension": "page", "pattern": "%".repeat(rng.usize(1..100_000))})
            }
            6 => q["context"] = json!({"timeout": extreme(rng), "maxRowsQueuedForOrdering": extreme(rng)}),
            7 => {
                let aggs: Vec<Value> =
                    (0..rng.usize(1..2_000)).map(|i| json!({"type": "count", "name": format!("n{i}")})).collect();
                q["aggregations"] = Value::Array(aggs);
            }
            8 => q["limit"] = extreme(rng),
            9 => q["threshold"] = extreme(rng),
            10 => {
                let field = ["dataSource", "dimension", "metric", "columns", "dimensions", "having", "limitSpec"];
                q[field[rng.usize(0..field.len())]] = extreme(rng);
            }
            _ => {
                q["postAggregations"] = json!([{"type": "arithmetic", "name": "p", "fn": "/", "fields": [
                {"type": "fieldAccess", "fieldName": "added"}, {"type": "constant", "value": extreme(rng)}]}])
            }
        }
    }
    q
}

/// One hostile supervisor spec.
fn spec(rng: &mut fastrand::Rng) -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/specs/wikipedia-kafka-supervisor.json"
    ))
    .expect("tutorial spec");
    let mut s: Value = serde_json::from_str(&text).expect("spec JSON");
    let pointers = [
        "/dataSchema/dataSource",
        "/ioConfig/topic",
        "/ioConfig/taskCount",
        "/ioConfig/taskDuration",
        "/tuningConfig/maxRowsInMemory",
        "/tuningConfig/maxBytesInMemory",
        "/dataSchema/granularitySpec",
        "/dataSchema/parser/parseSpec/dimensionsSpec/dimensions",
        "/ioConfig/consumerProperties",
    ];
    for _ in 0..rng.usize(1..4) {
        let at = pointers[rng.usize(0..pointers.len())];
        if let Some(v) = s.pointer_mut(at) {
            *v = extreme(rng);
        }
    }
    if rng.bool() {
        s["dataSchema"]["transformSpec"] =
            json!({"transforms": [{"type": "expression", "name": "t", "expression": expression(rng)}]});
    }
    s
}

/// The server's peak resident memory, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_string))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

#[test]
fn sluice_serve_answers_every_hostile_request_and_keeps_serving() {
    let cases: usize = std::env::var("SLUICE_HOSTILE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    let seed: u64 = std::env::var("SLUICE_HOSTILE_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let demo = sluice(dir.path(), &["demo"]);
    assert!(demo.status.success(), "demo: {}", String::from_utf8_lossy(&demo.stderr));
    let root = dir.path().join(".sluice/demo").canonicalize().expect("demo folder");
    let metadata = format!("file://{}/metadata", root.display());
    let storage = format!("file://{}/storage", root.display());
    let server = Server::start(dir.path(), &["--metadata", &metadata, "--storage", &storage], &["--allow-operations"]);
    let (pid, address) = (server.pid(), server.address.clone());

    let top =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/queries/wikipedia-top-pages.json"))
            .expect("query");
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut by_status: BTreeMap<u16, usize> = BTreeMap::new();
    let mut slowest = Duration::ZERO;
    for case in 0..cases {
        let (path, body) = match rng.u8(0..5) {
            0 => ("/druid/indexer/v1/supervisor", spec(&mut rng)),
            1 => ("/druid/v2/sql", sql(&mut rng)),
            _ => ("/druid/v2", query(&mut rng)),
        };
        let text = body.to_string();
        let started = Instant::now();
        // While a hostile SQL request is served, a normal query is answered as it always is.
        let probe = path.ends_with("/sql").then(|| {
            let (address, top) = (address.clone(), top.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                let asked = Instant::now();
                (request(&address, "POST", "/druid/v2", Some(&top)), asked.elapsed())
            })
        });
        let answer = request(&address, "POST", path, Some(&text));
        let took = started.elapsed();
        if let Some(probe) = probe {
            let (answer, probe_took) = probe.join().expect("the probe");
            let (status, reply) = answer.unwrap_or_else(|e| panic!("seed {seed} case {case}: the probe: {e}"));
            assert_eq!(status, 200, "seed {seed} case {case}: the probe during {text:.300}: {reply:.300}");
            assert!(probe_took < ANSWER_WITHIN, "seed {seed} case {case}: the probe took {probe_took:?}");
        }
        slowest = slowest.max(took);
        let (status, reply) =
            answer.unwrap_or_else(|e| panic!("seed {seed} case {case}: {e} after {took:?}: {text:.500}"));
        // SQL answers in its result format: only errors and the default format are JSON.
        if path.ends_with("/sql") && status == 200 {
            assert!(took < ANSWER_WITHIN, "seed {seed} case {case}: {took:?}");
            *by_status.entry(status).or_default() += 1;
            continue;
        }
        let parsed: Value = serde_json::from_str(&reply).unwrap_or_else(|e| {
            panic!("seed {seed} case {case}: {status} with a body that is not JSON ({e}): {reply:.300}")
        });
        if status != 200 {
            assert!(
                parsed["error"].is_string() && parsed["errorMessage"].is_string(),
                "seed {seed} case {case}: {reply:.300}"
            );
            assert!(
                reply.len() < 20_000,
                "seed {seed} case {case}: an error of {} bytes echoes its input: {:.300}",
                reply.len(),
                reply
            );
        }
        assert!(took < ANSWER_WITHIN, "seed {seed} case {case}: {took:?}");
        *by_status.entry(status).or_default() += 1;
    }
    let peak = peak_rss_kib(pid);
    eprintln!(
        "hostile campaign: seed {seed}, {cases} cases, answers by status {by_status:?}, slowest {slowest:?}, peak RSS {} MiB",
        peak >> 10
    );
    assert!(peak < MAX_RSS_KIB, "peak RSS {peak} KiB");
    let (status, reply) = request(&address, "POST", "/druid/v2", Some(&top)).expect("a normal query afterwards");
    assert_eq!(status, 200, "{reply}");
    let answer: Value = serde_json::from_str(&reply).expect("JSON");
    assert_eq!(answer[0]["result"][0]["page"], "Wikipedia:Vandalismusmeldung", "{reply:.500}");
}

/// A route's path naming `name` (a supervisor, a datasource, a lookup of the default tier).
fn placed(path: &str, name: &str) -> String {
    path.replace("{id}", name).replace("{datasource}", name).replace("{tier}", "__default").replace("{name}", name)
}

/// A map lookup at `version`.
fn lookup(version: &str) -> Value {
    json!({"version": version, "lookupExtractorFactory": {"type": "map", "map": {"en": "English"}}})
}

/// A request to each write route of the table, with a body that would change state.
fn write_requests(name: &str) -> Vec<(String, String, String)> {
    let spec = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/specs/wikipedia-kafka-supervisor.json"
    ))
    .expect("tutorial spec");
    let reset_offsets = json!({"type": "kafka", "partitions": {"type": "end", "stream": "wikipedia",
        "partitionOffsetMap": {"0": 100}}});
    let mut out = Vec::new();
    for route in sluice_http::ROUTES.iter().filter(|r| r.class == sluice_http::Class::Write) {
        let bodies: Vec<(&str, String)> = match (route.method.as_str(), route.path) {
            ("POST", "/druid/indexer/v1/supervisor") => vec![("", spec.replace("\"wikipedia\"", "\"other\""))],
            ("POST", "/druid/indexer/v1/supervisor/{id}/{action}") => {
                ["suspend", "resume", "reset", "terminate", "shutdown"]
                    .map(|a| (a, String::new()))
                    .into_iter()
                    .chain([("resetOffsets", reset_offsets.to_string())])
                    .collect()
            }
            ("POST", "/druid/coordinator/v1/config/compaction") => {
                vec![("", json!({"dataSource": name, "skipOffsetFromLatest": "PT1H"}).to_string())]
            }
            ("DELETE", "/druid/coordinator/v1/config/compaction/{datasource}") => vec![("", String::new())],
            ("POST", "/druid/coordinator/v1/rules/{datasource}") => {
                vec![("", json!([{"type": "dropForever"}]).to_string())]
            }
            ("POST", "/druid/indexer/v1/task") => vec![("", json!({"type": "index_parallel"}).to_string())],
            ("POST", "/druid/coordinator/v1/lookups/config") => {
                vec![("", json!({"__default": {name: lookup("v9")}}).to_string())]
            }
            ("POST", "/druid/coordinator/v1/lookups/config/{tier}/{name}") => vec![("", lookup("v9").to_string())],
            ("DELETE", "/druid/coordinator/v1/lookups/config/{tier}")
            | ("DELETE", "/druid/coordinator/v1/lookups/config/{tier}/{name}") => vec![("", String::new())],
            ("POST", "/druid/indexer/v1/supervisor/suspendAll" | "/druid/indexer/v1/supervisor/resumeAll")
            | ("POST", "/druid/indexer/v1/supervisor/terminateAll")
            | ("POST", "/druid/indexer/v1/task/{id}/shutdown")
            | ("POST", "/druid/indexer/v1/supervisor/{id}/taskGroups/handoff")
            | ("POST", "/druid/indexer/v1/datasources/{datasource}/shutdownAllTasks")
            | ("DELETE", "/druid/indexer/v1/pendingSegments/{datasource}") => vec![("", String::new())],
            (method, path) => panic!("write route {method} {path} has no request in this test"),
        };
        for (action, body) in bodies {
            let path = placed(route.path, name).replace("{action}", action);
            out.push((route.method.to_string(), path, body));
        }
    }
    out
}

/// What every read route of the table answers about `name` (the time an answer was made and
/// the server's memory left out; a route read by POST is sent an empty list).
fn read_back(server: &Server, name: &str) -> Vec<(String, u16, Value)> {
    let mut out = Vec::new();
    for route in sluice_http::ROUTES.iter().filter(|r| r.class == sluice_http::Class::Read) {
        let path = placed(route.path, name);
        let method = route.method.as_str();
        let body = (method == "POST").then_some("[]");
        let (status, body) = server.request(method, &path, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let mut body: Value = serde_json::from_str(&body).unwrap_or(Value::String(body));
        for moving in ["generationTime", "memory"] {
            if let Some(at) = body.get_mut(moving) {
                *at = Value::Null;
            }
        }
        out.push((path, status, body));
    }
    out
}

#[test]
fn a_read_only_sluice_serve_refuses_every_write_route_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = |args: &[&str], stdin: &str| {
        let (ok, out, err) = super::command::sluice(dir.path(), args, Some(stdin));
        assert!(ok, "sluice {args:?}: {out}{err}");
    };
    let spec = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/specs/wikipedia-kafka-supervisor.json");
    run(&["supervisor", "submit", spec], "");
    run(&["compaction", "submit", "-"], r#"{"dataSource": "wikipedia", "skipOffsetFromLatest": "P1D"}"#);
    run(&["retention", "set", "wikipedia", "-"], r#"[{"type": "loadForever"}]"#);
    run(&["lookups", "put", "wikipedia", "-"], &lookup("v1").to_string());
    let server = Server::start(dir.path(), &[], &[]);
    let before = read_back(&server, "wikipedia");
    // No task is named `wikipedia`: the routes of one task answer 404, every other 200.
    let answered = |path: &str| if path.starts_with("/druid/indexer/v1/task/") { 404 } else { 200 };
    assert!(before.iter().all(|(path, status, _)| *status == answered(path)), "{before:?}");
    let requests = write_requests("wikipedia");
    assert!(requests.len() >= 9, "{requests:?}");
    for (method, path, body) in &requests {
        let (status, reply) =
            server.request(method, path, Some(body)).unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        assert_eq!(status, 403, "{method} {path}: {reply}");
        let error: Value = serde_json::from_str(&reply).expect("Druid's error JSON");
        assert_eq!(error["error"], "Forbidden", "{reply}");
        assert!(error["errorMessage"].as_str().is_some_and(|m| m.contains("--allow-operations")), "{reply}");
    }
    for (method, path) in [("PUT", "/druid/coordinator/v1/rules/wikipedia"), ("POST", "/druid/coordinator/v1/lookups")]
    {
        let (status, reply) = server.request(method, path, Some("{}")).expect("an answer");
        assert_eq!(status, 403, "{method} {path}: {reply}");
    }
    assert_eq!(read_back(&server, "wikipedia"), before);
}
