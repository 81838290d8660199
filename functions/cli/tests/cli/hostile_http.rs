//! A hostile-input campaign against `sluice serve`: a generator that knows the shape of Druid's
//! queries and supervisor specs sends them with extreme values, deep nesting, huge sizes and
//! wrong types. Every request must get an answer within a bounded time (a result or Druid's
//! error JSON, never a dropped connection), the server's memory must stay bounded, and a normal
//! query must still get Druid's answer afterwards. `SLUICE_HOSTILE_CASES` sets the number of
//! cases (300 by default; the long mode runs thousands) and `SLUICE_HOSTILE_SEED` replays one.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a request may take to be answered (by a debug build of the server).
const ANSWER_WITHIN: Duration = Duration::from_secs(60);
/// Most resident memory the server may reach, in KiB.
const MAX_RSS_KIB: u64 = 3 << 20;

/// Kills `sluice serve` when the test ends, however it ends.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sluice(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .current_dir(dir)
        .env_remove("SLUICE_METADATA")
        .env_remove("SLUICE_STORAGE")
        .output()
        .expect("run sluice")
}

/// The status and body of a `POST` (or `GET` when `body` is `None`) to `path`.
fn request(address: &str, method: &str, path: &str, body: Option<&str>) -> Result<(u16, String), String> {
    let mut stream = TcpStream::connect(address).map_err(|e| format!("connect: {e}"))?;
    stream.set_read_timeout(Some(ANSWER_WITHIN)).map_err(|e| e.to_string())?;
    let body = body.unwrap_or("");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes())).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    stream.read_to_end(&mut out).map_err(|e| format!("no answer: {e}"))?;
    let text = String::from_utf8_lossy(&out);
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no HTTP response")?;
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or("no status")?;
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { unchunk(body) } else { body.into() };
    Ok((status, body))
}

/// A chunked body's bytes.
fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
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
/// subqueries, extremes in every place a value goes, and garbage.
fn sql(rng: &mut fastrand::Rng) -> Value {
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
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--metadata", &format!("file://{}/metadata", root.display())])
        .args(["--storage", &format!("file://{}/storage", root.display())])
        .args(["serve", "--listen", "127.0.0.1:0", "--allow-operations"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sluice serve");
    let (pid, stderr) = (child.id(), child.stderr.take().expect("stderr"));
    let _server = Server(child);
    let mut lines = BufReader::new(stderr).lines();
    let address = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("http://").map(str::to_string)))
        .expect("serve prints its address");
    std::thread::spawn(move || lines.for_each(drop));

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
        let answer = request(&address, "POST", path, Some(&text));
        let took = started.elapsed();
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
    let top =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/queries/wikipedia-top-pages.json"))
            .expect("query");
    let (status, reply) = request(&address, "POST", "/druid/v2", Some(&top)).expect("a normal query afterwards");
    assert_eq!(status, 200, "{reply}");
    let answer: Value = serde_json::from_str(&reply).expect("JSON");
    assert_eq!(answer[0]["result"][0]["page"], "Wikipedia:Vandalismusmeldung", "{reply:.500}");
}
