//! The web console in a real browser: headless Chromium driven through chromedriver
//! (WebDriver, by fantoccini) against `sluice serve` on the stores `sluice demo` published.
//! Each view's tables must agree with the API's JSON, read beside the page; a SQL query, its
//! EXPLAIN, a time series with its chart, a native query and a query returning markup show
//! what the API answers (the markup as text); a read-only server shows no write button, and on
//! one with `--allow-operations` the buttons suspend and resume a supervisor, which the page
//! and the API both show.
//!
//! Needs `/usr/bin/chromium` and `/usr/bin/chromedriver` (`tests/browser/install.sh`; other
//! paths by `SLUICE_CHROMIUM` and `SLUICE_CHROMEDRIVER`); `SLUICE_SKIP_BROWSER=1` skips it.
//! On failure it leaves a screenshot, the page's HTML and the browser's console log in the
//! folder its message names. With `SLUICE_CONSOLE_SCREENSHOTS=DIR` it saves a screenshot of
//! each view into `DIR` (`docs/console/` holds them).

use super::command::sluice;
use super::local_server::{request, Server};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Longest the page may take to show a view or an answer (a debug build of the server).
const SHOWN_WITHIN: Duration = Duration::from_secs(60);

/// The flags Chromium needs here: headless, and no connection of its own beyond the page's
/// (this network refuses them).
const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--window-size=1360,1000",
    "--force-device-scale-factor=1",
    "--lang=en-US",
];

/// Where a failed run leaves what the browser showed.
fn artifacts() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-browser")
}

/// A tool's path: `var` if set, else `default`; a clear failure when it is not there.
fn tool(var: &str, default: &str) -> PathBuf {
    let path = PathBuf::from(std::env::var(var).unwrap_or_else(|_| default.to_string()));
    assert!(
        path.is_file(),
        "{} is missing: the console's browser test needs Chromium and chromedriver; install them with \
         tests/browser/install.sh (Debian's chromium and chromium-driver), point {var} at another, or set \
         SLUICE_SKIP_BROWSER=1 to skip this test",
        path.display()
    );
    path
}

/// chromedriver, listening on a loopback port of its own until dropped.
struct Driver {
    child: Child,
    address: String,
}

impl Driver {
    fn start(binary: &Path, log: &Path) -> Driver {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let child = Command::new(binary)
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", log.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", binary.display()));
        let driver = Driver { child, address: format!("127.0.0.1:{port}") };
        let started = Instant::now();
        while TcpStream::connect(&driver.address).is_err() {
            assert!(started.elapsed() < Duration::from_secs(30), "chromedriver did not listen on {}", driver.address);
            std::thread::sleep(Duration::from_millis(100));
        }
        driver
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A browser session: Chromium at `chromium` with a fresh profile in `profile`.
async fn session(driver: &Driver, chromium: &Path, profile: &Path) -> Client {
    let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|f| f.to_string()).collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    let capabilities = json!({
        "browserName": "chrome",
        "goog:chromeOptions": {"binary": chromium, "args": args},
        "goog:loggingPrefs": {"browser": "ALL"},
        // A confirmation stays open until the test accepts or dismisses it.
        "unhandledPromptBehavior": "ignore",
    });
    let Value::Object(capabilities) = capabilities else { unreachable!("an object") };
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(capabilities)
        .connect(&format!("http://{}", driver.address))
        .await
        .unwrap_or_else(|e| panic!("a Chromium session through chromedriver at {}: {e}", driver.address))
}

/// chromedriver's JSON answer to `POST path` with `body`. It keeps the connection open after
/// its answer, so the answer is read to its `Content-Length`.
fn driver_post(address: &str, path: &str, body: &str) -> Result<Value, String> {
    let mut stream = TcpStream::connect(address).map_err(|e| format!("connect to chromedriver: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes())).map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).map_err(|e| e.to_string())?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().map_err(|_| format!("Content-Length {value:?}"))?;
            }
        }
    }
    let mut answer = vec![0; length];
    reader.read_exact(&mut answer).map_err(|e| e.to_string())?;
    serde_json::from_slice(&answer).map_err(|e| e.to_string())
}

/// The browser's console log since it was last read (chromedriver's log endpoint): each
/// entry's level and message.
async fn console_log(client: &Client, driver: &Driver) -> Vec<(String, String)> {
    let Ok(Some(session)) = client.session_id().await else { return Vec::new() };
    let path = format!("/session/{session}/se/log");
    let entries = match driver_post(&driver.address, &path, r#"{"type": "browser"}"#) {
        Ok(entries) => entries,
        Err(e) => return vec![("UNREAD".into(), format!("the browser's log could not be read: {e}"))],
    };
    entries["value"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| (e["level"].as_str().unwrap_or("").to_string(), e["message"].as_str().unwrap_or("").to_string()))
        .collect()
}

/// Saves what the browser shows now (screenshot, HTML, console log) under [`artifacts`].
async fn leave_artifacts(client: &Client, driver: &Driver) -> PathBuf {
    let dir = artifacts();
    let _ = std::fs::create_dir_all(&dir);
    if let Ok(png) = client.screenshot().await {
        let _ = std::fs::write(dir.join("screenshot.png"), png);
    }
    if let Ok(html) = client.source().await {
        let _ = std::fs::write(dir.join("page.html"), html);
    }
    let log: Vec<String> = console_log(client, driver).await.into_iter().map(|(l, m)| format!("{l} {m}")).collect();
    let _ = std::fs::write(dir.join("console.log"), log.join("\n"));
    dir
}

fn panic_text(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(p) => p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into()),
        Err(e) => e.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_what_the_api_answers_and_operates_supervisors_only_when_allowed() {
    if std::env::var("SLUICE_SKIP_BROWSER").is_ok_and(|v| v == "1") {
        eprintln!("SLUICE_SKIP_BROWSER=1: the console's browser test is skipped");
        return;
    }
    let chromium = tool("SLUICE_CHROMIUM", "/usr/bin/chromium");
    let chromedriver = tool("SLUICE_CHROMEDRIVER", "/usr/bin/chromedriver");
    let dir = tempfile::tempdir().expect("temp dir");
    let (ok, out, err) = sluice(dir.path(), &["demo"], None);
    assert!(ok, "sluice demo: {out}{err}");
    let root = dir.path().join(".sluice/demo").canonicalize().expect("demo folder");
    let backends = [
        "--metadata".to_string(),
        format!("file://{}/metadata", root.display()),
        "--storage".to_string(),
        format!("file://{}/storage", root.display()),
    ];
    let backends: Vec<&str> = backends.iter().map(String::as_str).collect();
    let read_only = Server::start(dir.path(), &backends, &[]);
    let operating = Server::start(dir.path(), &backends, &["--allow-operations"]);

    let _ = std::fs::remove_dir_all(artifacts());
    std::fs::create_dir_all(artifacts()).expect("artifacts folder");
    let driver = Driver::start(&chromedriver, &artifacts().join("chromedriver.log"));
    let profile = tempfile::tempdir().expect("profile folder");
    let client = session(&driver, &chromium, profile.path()).await;
    let run = tokio::spawn(scenario(client.clone(), read_only.address.clone(), operating.address.clone()));
    let mut failure = run.await.err().map(panic_text);
    if failure.is_none() {
        // Nothing went wrong in the page: no script error, refused load or policy violation.
        // The operations probe's refusal (403 or 404) is the one expected failed request.
        let log = console_log(&client, &driver).await;
        let errors: Vec<&(String, String)> = log
            .iter()
            .filter(|(level, message)| {
                (level == "SEVERE" || level == "UNREAD") && !message.contains("/console/operations")
            })
            .collect();
        if !errors.is_empty() {
            failure = Some(format!("the browser's console logged errors: {errors:?}"));
        } else if !log.iter().any(|(_, message)| message.contains("/console/operations")) {
            failure = Some(format!("the browser's log lacks the operations probe's refusal: {log:?}"));
        }
    }
    if let Some(message) = failure {
        let saved = leave_artifacts(&client, &driver).await;
        let _ = client.close().await;
        panic!("{message}\n(the browser's screenshot, page and console log are in {})", saved.display());
    }
    client.close().await.expect("close the browser");
}

/// Everything the browser does, against the read-only server then the operating one.
async fn scenario(client: Client, read_only: String, operating: String) {
    let page = Page { client, address: read_only };
    page.open("/unified-console.html", "supervisors").await;
    assert_eq!(page.js("return document.getElementById('server').dataset.operations", json!(null)).await, "false");
    let supervisor = supervisors_agree(&page).await;
    assert_eq!(page.js("return document.querySelectorAll('[data-action]').length", json!(null)).await, 0);
    tasks_agree(&page).await;
    segments_agree(&page).await;
    queries_agree(&page, &supervisor["dataSource"]).await;
    compaction_agrees(&page).await;

    let page = Page { address: operating, ..page };
    page.open("/console", "supervisors").await;
    assert_eq!(page.js("return document.getElementById('server').dataset.operations", json!(null)).await, "true");
    supervisor_operations(&page, supervisor["id"].as_str().expect("supervisor id")).await;
    if let Ok(dir) = std::env::var("SLUICE_CONSOLE_SCREENSHOTS") {
        screenshots(&page, Path::new(&dir)).await;
    }
}

/// The browser on one server's console.
struct Page {
    client: Client,
    address: String,
}

impl Page {
    /// The API's JSON answer to `METHOD path` (`body` as JSON), asked beside the page.
    fn api(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let body = body.map(|b| b.to_string());
        let (status, text) =
            request(&self.address, method, path, body.as_deref()).unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        assert_eq!(status, 200, "{method} {path}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {path}: {e}: {text}"))
    }

    /// Runs `script` in the page (`arguments[0]` is `arg`) and gives its value.
    async fn js(&self, script: &str, arg: Value) -> Value {
        self.client.execute(script, vec![arg]).await.unwrap_or_else(|e| panic!("script {script:?}: {e}"))
    }

    /// How many times the page has rendered a view.
    async fn renders(&self) -> u64 {
        self.js("return Number(document.getElementById('view')?.dataset.rendered ?? 0)", json!(null))
            .await
            .as_u64()
            .unwrap_or(0)
    }

    /// Waits until `script` (its value `true` meaning done) holds, or fails saying `what`.
    async fn until(&self, what: &str, script: &str, arg: Value) {
        let started = Instant::now();
        loop {
            if self.js(script, arg.clone()).await == json!(true) {
                return;
            }
            assert!(started.elapsed() < SHOWN_WITHIN, "the page did not show {what} within {SHOWN_WITHIN:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until view `id` has rendered after render number `after`, and not as an error.
    async fn shown(&self, id: &str, after: u64) {
        self.until(
            &format!("the {id} view"),
            "const v = document.getElementById('view'); \
             return v.dataset.view === arguments[0][0] && Number(v.dataset.rendered) > arguments[0][1] \
               && v.dataset.state !== 'loading'",
            json!([id, after]),
        )
        .await;
        let state = self.js("return document.getElementById('view').dataset.state", json!(null)).await;
        let text = self.js("return document.getElementById('view').innerText", json!(null)).await;
        assert_eq!(state, "ready", "the {id} view: {text}");
    }

    /// Loads `path` of the server and waits for view `id`.
    async fn open(&self, path: &str, id: &str) {
        let url = format!("http://{}{path}", self.address);
        self.client.goto(&url).await.unwrap_or_else(|e| panic!("load {url}: {e}"));
        self.shown(id, 0).await;
    }

    /// Goes to the view and argument of `hash` (`tasks/abc`) and waits for it.
    async fn go(&self, hash: &str) {
        let before = self.renders().await;
        self.js("location.hash = arguments[0]", json!(hash)).await;
        self.shown(hash.split('/').next().unwrap_or(hash), before).await;
    }

    /// The cells' text of table `name`, row by row (no rows: the table says it is empty).
    async fn rows(&self, name: &str) -> Vec<Vec<String>> {
        let found = self
            .js(
                "const t = document.querySelector(`table[data-table=\"${arguments[0]}\"]`); \
                 if (t) return [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent.trim())); \
                 return document.querySelector(`[data-empty=\"${arguments[0]}\"]`) ? [] : null;",
                json!(name),
            )
            .await;
        assert!(!found.is_null(), "the page shows no table {name}");
        serde_json::from_value(found).expect("rows of text")
    }

    /// The column labels of table `name`.
    async fn header(&self, name: &str) -> Vec<String> {
        let found = self
            .js(
                "const t = document.querySelector(`table[data-table=\"${arguments[0]}\"]`); \
                 return t ? [...t.tHead.rows[0].cells].map(c => c.textContent) : null;",
                json!(name),
            )
            .await;
        serde_json::from_value(found).unwrap_or_else(|_| panic!("the page shows no table {name}"))
    }

    /// The text of the element `[data-field=name]`.
    async fn field(&self, name: &str) -> String {
        let found = self
            .js("return document.querySelector(`[data-field=\"${arguments[0]}\"]`)?.textContent", json!(name))
            .await;
        found.as_str().unwrap_or_else(|| panic!("the page shows no field {name}")).trim().to_string()
    }

    async fn click(&self, css: &str) {
        let element = self.client.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("find {css}: {e}"));
        element.click().await.unwrap_or_else(|e| panic!("click {css}: {e}"));
    }
}

/// A value as a cell shows it: strings as they are, counts without their grouping commas.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A counter cell's number (`39,244` → `39244`).
fn ungrouped(cell: &str) -> String {
    cell.replace(',', "")
}

/// The supervisors table and the first supervisor's details against the list, report and
/// stats; gives the first supervisor's list item.
async fn supervisors_agree(page: &Page) -> Value {
    let list = page.api("GET", "/druid/indexer/v1/supervisor?full", None);
    let list = list.as_array().expect("supervisor list").clone();
    assert!(!list.is_empty(), "the demo submitted a supervisor");
    let expected: Vec<Vec<String>> = list
        .iter()
        .map(|s| ["id", "dataSource", "state", "detailedState", "healthy", "suspended"].map(|f| plain(&s[f])).to_vec())
        .collect();
    assert_eq!(page.rows("supervisors").await, expected);

    let id = list[0]["id"].as_str().expect("id");
    let report = page.api("GET", &format!("/druid/indexer/v1/supervisor/{id}/status"), None);
    let p = &report["payload"];
    assert_eq!(page.field("detailedState").await, plain(&p["detailedState"]));
    assert_eq!(ungrouped(&page.field("aggregateLag").await), plain(&p["aggregateLag"]));
    let latest = p["latestOffsets"].as_object().expect("latestOffsets");
    assert!(!latest.is_empty(), "the demo's supervisor read its partitions: {p}");
    let mut expected: Vec<Vec<String>> = latest
        .iter()
        .map(|(key, offset)| {
            let committed = p["sluice"]["partitions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|x| x["partition"].as_i64() == key.parse().ok())
                .map(|x| plain(&x["committed"]))
                .unwrap_or_default();
            vec![key.clone(), committed, plain(offset), plain(&p["minimumLag"][key])]
        })
        .collect();
    let mut shown: Vec<Vec<String>> =
        page.rows("partitions").await.into_iter().map(|r| r.iter().map(|c| ungrouped(c)).collect()).collect();
    expected.sort();
    shown.sort();
    assert_eq!(shown, expected);

    let totals = &p["sluice"]["totals"];
    let expected = ["processed", "processedBytes", "processedWithError", "unparseable", "thrownAway"]
        .map(|f| plain(&totals[f]))
        .to_vec();
    let shown: Vec<Vec<String>> =
        page.rows("totals").await.into_iter().map(|r| r.iter().map(|c| ungrouped(c)).collect()).collect();
    assert_eq!(shown, vec![expected]);
    assert!(totals["processed"].as_u64().is_some_and(|n| n > 0), "{totals}");

    let tasks: Vec<String> = ["activeTasks", "publishingTasks"]
        .iter()
        .flat_map(|k| p[k].as_array().cloned().unwrap_or_default())
        .map(|t| plain(&t["id"]))
        .collect();
    let shown: Vec<String> = page.rows("supervisor-tasks").await.into_iter().map(|r| r[0].clone()).collect();
    assert_eq!(shown, tasks);
    let errors = p["recentErrors"].as_array().map(Vec::len).unwrap_or(0);
    assert_eq!(page.rows("errors").await.len(), errors);
    let stats = page.api("GET", &format!("/druid/indexer/v1/supervisor/{id}/stats"), None);
    let metered: usize =
        stats.as_object().into_iter().flatten().map(|(_, g)| g.as_object().map_or(0, |g| g.len())).sum();
    assert_eq!(page.rows("stats").await.len(), metered);
    list[0].clone()
}

/// The task tables against the task list; a task's report against its JSON.
async fn tasks_agree(page: &Page) {
    page.go("tasks").await;
    let list = page.api("GET", "/druid/indexer/v1/tasks", None);
    let list = list.as_array().expect("task list");
    assert!(!list.is_empty(), "the demo ran tasks");
    let mut expected: Vec<Vec<String>> =
        list.iter().map(|t| ["id", "dataSource", "type", "statusCode"].map(|f| plain(&t[f])).to_vec()).collect();
    let mut shown: Vec<Vec<String>> = page.rows("tasks-active").await;
    shown.extend(page.rows("tasks-complete").await);
    let mut shown: Vec<Vec<String>> = shown.into_iter().map(|r| r[..4].to_vec()).collect();
    expected.sort();
    shown.sort();
    assert_eq!(shown, expected);

    // A task's report, opened by its link.
    let id = page.rows("tasks-complete").await.first().map(|r| r[0].clone()).expect("a finished task");
    let before = page.renders().await;
    page.click("table[data-table=\"tasks-complete\"] tbody tr:first-child a").await;
    page.shown("tasks", before).await;
    let shown_id = page.js("return document.querySelector('[data-report]')?.dataset.report", json!(null)).await;
    assert_eq!(shown_id, json!(id));
    let report = page.api("GET", &format!("/druid/indexer/v1/task/{id}/reports"), None);
    let payload = &report["ingestionStatsAndErrors"]["payload"];
    assert_eq!(page.field("ingestionState").await, plain(&payload["ingestionState"]));
    let expected: Vec<Vec<String>> = payload["rowStats"]
        .as_object()
        .expect("rowStats")
        .iter()
        .map(|(phase, s)| {
            let mut row = vec![phase.clone()];
            row.extend(
                ["processed", "processedBytes", "processedWithError", "unparseable", "thrownAway"]
                    .map(|f| plain(&s[f])),
            );
            row
        })
        .collect();
    let shown: Vec<Vec<String>> =
        page.rows("row-stats").await.into_iter().map(|r| r.iter().map(|c| ungrouped(c)).collect()).collect();
    assert_eq!(shown, expected);
    assert!(payload["rowStats"]["buildSegments"]["processed"].as_u64().is_some_and(|n| n > 0), "{payload}");
    let events: usize = payload["unparseableEvents"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(_, l)| l.as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(page.rows("unparseable").await.len(), events);
}

/// The time chunks table against `sys.segments` read whole and summed here.
async fn segments_agree(page: &Page) {
    page.go("segments").await;
    let all = page.api(
        "POST",
        "/druid/v2/sql",
        Some(json!({"query": "SELECT * FROM sys.segments", "resultFormat": "object"})),
    );
    let mut chunks: BTreeMap<(String, String, String), (u64, u64, u64)> = BTreeMap::new();
    for s in all.as_array().expect("segments").iter().filter(|s| s["is_active"] == 1) {
        let key = (plain(&s["datasource"]), plain(&s["start"]), plain(&s["end"]));
        let chunk = chunks.entry(key).or_default();
        chunk.0 += 1;
        chunk.1 += s["size"].as_u64().expect("size");
        chunk.2 += s["num_rows"].as_u64().expect("num_rows");
    }
    assert!(!chunks.is_empty(), "the demo published segments");
    let expected: Vec<Vec<String>> = chunks
        .iter()
        .map(|((ds, start, end), (n, size, rows))| {
            vec![ds.clone(), start.clone(), end.clone(), n.to_string(), size.to_string(), rows.to_string()]
        })
        .collect();
    let shown: Vec<Vec<String>> =
        page.rows("segments").await.into_iter().map(|r| r.iter().map(|c| ungrouped(c)).collect()).collect();
    assert_eq!(shown, expected);
    let rows_of = |ds: &str| chunks.iter().filter(|((d, _, _), _)| d == ds).map(|(_, c)| c.2).sum::<u64>();
    for row in page.rows("datasources").await {
        assert_eq!(ungrouped(&row[4]), rows_of(&row[0]).to_string(), "{row:?}");
    }
}

/// Types `text` into the query editor as a user does.
async fn type_query(page: &Page, text: &str) {
    let editor = page.client.find(Locator::Id("query-text")).await.expect("the editor");
    editor.clear().await.expect("clear the editor");
    editor.send_keys(text).await.expect("type the query");
}

/// Presses `button` (`run` or `explain`) and waits for the answer; gives the table shown.
async fn answer(page: &Page, button: &str) -> (Vec<String>, Vec<Vec<String>>) {
    page.js("document.querySelector('[data-results]').dataset.queryState = 'sent'", json!(null)).await;
    page.click(&format!("[data-{button}]")).await;
    page.until(
        "a query's answer",
        "const s = document.querySelector('[data-results]').dataset.queryState; return s === 'done' || s === 'error'",
        json!(null),
    )
    .await;
    let state = page.js("return document.querySelector('[data-results]').dataset.queryState", json!(null)).await;
    let text = page.js("return document.querySelector('[data-results]').innerText", json!(null)).await;
    assert_eq!(state, "done", "{text}");
    let elapsed = page.field("elapsed").await;
    assert!(elapsed.contains(" ms"), "the answer says how long it took: {elapsed}");
    let rows = page.rows("results").await;
    let header = if rows.is_empty() { Vec::new() } else { page.header("results").await };
    (header, rows)
}

/// The API's SQL answer to `query`: its column names and rows as cells show them.
fn sql_answer(page: &Page, query: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let answer =
        page.api("POST", "/druid/v2/sql", Some(json!({"query": query, "resultFormat": "array", "header": true})));
    let mut rows: Vec<Vec<String>> = answer
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r.as_array().expect("a row").iter().map(plain).collect())
        .collect();
    let header = rows.remove(0);
    (header, rows)
}

/// SQL, its EXPLAIN, a time series and its chart, markup in a result, and a native query.
async fn queries_agree(page: &Page, datasource: &Value) {
    page.go("query").await;
    let table = format!("\"{}\"", plain(datasource));
    let by_channel = format!("SELECT channel, COUNT(*) AS edits FROM {table} GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 7");
    type_query(page, &by_channel).await;
    let shown = answer(page, "run").await;
    let expected = sql_answer(page, &by_channel);
    assert!(!expected.1.is_empty(), "{expected:?}");
    assert_eq!(shown, expected);

    let hourly =
        format!("SELECT TIME_FLOOR(__time, 'PT1H') AS \"hour\", COUNT(*) AS edits FROM {table} GROUP BY 1 ORDER BY 1");
    type_query(page, &hourly).await;
    let shown = answer(page, "run").await;
    let expected = sql_answer(page, &hourly);
    assert_eq!(shown, expected);
    let points =
        page.js("return document.querySelector('svg[data-chart=\"time\"]')?.dataset.points", json!(null)).await;
    assert_eq!(points, json!(expected.1.len().to_string()), "a time series is drawn, a point a row");
    let line = page
        .js("return document.querySelector('svg[data-chart=\"time\"] polyline')?.getAttribute('points')", json!(null))
        .await;
    assert_eq!(line.as_str().map(|l| l.split(' ').count()), Some(expected.1.len()), "{line}");

    let shown = answer(page, "explain").await;
    let expected = sql_answer(page, &format!("EXPLAIN PLAN FOR {hourly}"));
    assert_eq!(shown.0, expected.0);
    let plan = page.js("return document.querySelector('pre[data-plan]')?.textContent", json!(null)).await;
    let plan: Value = serde_json::from_str(plan.as_str().expect("the plan shown")).expect("the plan as JSON");
    let expected_plan: Value = serde_json::from_str(&expected.1[0][0]).expect("the API's plan");
    assert_eq!(plan, expected_plan);
    let chart = page.js("return document.querySelector('svg[data-chart]') === null", json!(null)).await;
    assert_eq!(chart, json!(true), "a plan is no time series");

    // Markup in an answer is shown as text, never run.
    let markup = format!(
        "SELECT page, '<img src=x onerror=\"window.pwned=1\">' AS \"<b>name</b>\" FROM {table} GROUP BY 1 ORDER BY 1 LIMIT 3"
    );
    type_query(page, &markup).await;
    let shown = answer(page, "run").await;
    assert_eq!(shown, sql_answer(page, &markup));
    let injected = page
        .js("return [document.querySelectorAll('main img, main b').length, window.pwned ?? null]", json!(null))
        .await;
    assert_eq!(injected, json!([0, null]));

    // A native query: the tutorial's topN, one row an item of its result.
    let top =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/queries/wikipedia-top-pages.json"))
            .expect("query file");
    let mut top: Value = serde_json::from_str(&top).expect("query JSON");
    top["dataSource"] = datasource.clone();
    page.js(
        "const m = document.getElementById('query-mode'); m.value = 'native'; m.dispatchEvent(new Event('change')); \
         const e = document.getElementById('query-text'); e.value = arguments[0]; e.dispatchEvent(new Event('input'))",
        json!(top.to_string()),
    )
    .await;
    let shown = answer(page, "run").await;
    let result = page.api("POST", "/druid/v2", Some(top));
    let mut expected_rows = Vec::new();
    let mut expected_header = vec!["timestamp".to_string()];
    for bucket in result.as_array().expect("topN result") {
        for item in bucket["result"].as_array().expect("topN items") {
            let item = item.as_object().expect("an item");
            for key in item.keys() {
                if !expected_header.contains(key) {
                    expected_header.push(key.clone());
                }
            }
            let mut row = vec![plain(&bucket["timestamp"])];
            row.extend(item.values().map(plain));
            expected_rows.push(row);
        }
    }
    assert!(!expected_rows.is_empty(), "{result}");
    assert_eq!(shown, (expected_header, expected_rows));
}

/// The compaction configs, status and retention rules against their JSON.
async fn compaction_agrees(page: &Page) {
    page.go("compaction").await;
    let configs = page.api("GET", "/druid/coordinator/v1/config/compaction", None);
    let expected: Vec<Vec<String>> = configs["compactionConfigs"]
        .as_array()
        .expect("configs")
        .iter()
        .map(|c| vec![plain(&c["dataSource"]), plain(&c["skipOffsetFromLatest"])])
        .collect();
    assert!(!expected.is_empty(), "the demo configured compaction: {configs}");
    let shown: Vec<Vec<String>> = page.rows("compaction-configs").await.into_iter().map(|r| r[..2].to_vec()).collect();
    assert_eq!(shown, expected);

    let status = page.api("GET", "/druid/coordinator/v1/compaction/status", None);
    let counted = [
        "segmentCountAwaitingCompaction",
        "segmentCountCompacted",
        "intervalCountAwaitingCompaction",
        "intervalCountCompacted",
    ];
    let expected: Vec<Vec<String>> = status["latestStatus"]
        .as_array()
        .expect("latestStatus")
        .iter()
        .map(|s| {
            let mut row = vec![plain(&s["dataSource"]), plain(&s["scheduleStatus"])];
            row.extend(counted.map(|f| plain(&s[f])));
            row
        })
        .collect();
    let shown: Vec<Vec<String>> = page
        .rows("compaction-status")
        .await
        .into_iter()
        .map(|r| [&r[..2], &r[4..]].concat().iter().map(|c| ungrouped(c)).collect())
        .collect();
    assert_eq!(shown, expected);

    let rules = page.api("GET", "/druid/coordinator/v1/rules", None);
    let expected: Vec<Vec<String>> = rules
        .as_object()
        .expect("rules")
        .iter()
        .flat_map(|(ds, list)| {
            list.as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .map(move |(i, r)| vec![ds.clone(), (i + 1).to_string(), plain(&r["type"])])
        })
        .collect();
    assert!(!expected.is_empty(), "{rules}");
    let shown: Vec<Vec<String>> = page.rows("rules").await.into_iter().map(|r| r[..3].to_vec()).collect();
    assert_eq!(shown, expected);
}

/// The actions the page offers for the supervisor shown.
async fn actions(page: &Page) -> Vec<String> {
    let found =
        page.js("return [...document.querySelectorAll('[data-action]')].map(b => b.dataset.action)", json!(null)).await;
    serde_json::from_value(found).expect("actions")
}

/// Presses the button of `action`, answers its confirmation (`accept`), and gives the API's
/// report of supervisor `id` once the page has shown the outcome.
async fn operate(page: &Page, id: &str, action: &str, accept: bool) -> Value {
    let before = page.renders().await;
    page.click(&format!("[data-action=\"{action}\"]")).await;
    let question = page.client.get_alert_text().await.expect("a confirmation");
    assert!(question.contains(id), "the confirmation names the supervisor: {question}");
    if !accept {
        page.client.dismiss_alert().await.expect("dismiss");
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(page.renders().await, before, "a dismissed confirmation changes nothing");
        return page.api("GET", &format!("/druid/indexer/v1/supervisor/{id}/status"), None);
    }
    page.client.accept_alert().await.expect("accept");
    page.shown("supervisors", before).await;
    let report = page.api("GET", &format!("/druid/indexer/v1/supervisor/{id}/status"), None);
    assert_eq!(page.field("detailedState").await, plain(&report["payload"]["detailedState"]), "after {action}");
    report
}

/// Suspend and resume through the buttons; a dismissed confirmation does nothing.
async fn supervisor_operations(page: &Page, id: &str) {
    let before = page.api("GET", &format!("/druid/indexer/v1/supervisor/{id}/status"), None);
    assert_eq!(before["payload"]["suspended"], false, "{before}");
    let mut offered = actions(page).await;
    offered.sort();
    assert_eq!(offered, ["reset", "suspend", "terminate"]);

    let dismissed = operate(page, id, "terminate", false).await;
    assert_eq!(dismissed["payload"]["detailedState"], before["payload"]["detailedState"]);

    let suspended = operate(page, id, "suspend", true).await;
    assert_eq!(suspended["payload"]["suspended"], true, "{suspended}");
    assert_eq!(suspended["payload"]["state"], "SUSPENDED", "{suspended}");
    assert!(actions(page).await.contains(&"resume".to_string()));

    let resumed = operate(page, id, "resume", true).await;
    assert_eq!(resumed["payload"]["suspended"], false, "{resumed}");
    assert_eq!(resumed["payload"]["state"], before["payload"]["state"], "{resumed}");
    assert!(actions(page).await.contains(&"suspend".to_string()));
}

/// A screenshot of each view into `dir`, as `docs/console/` keeps them.
async fn screenshots(page: &Page, dir: &Path) {
    std::fs::create_dir_all(dir).expect("screenshot folder");
    let tasks = page.api("GET", "/druid/indexer/v1/tasks", None);
    let task = plain(&tasks[0]["id"]);
    for (view, hash) in [
        ("supervisors", "supervisors".to_string()),
        ("tasks", format!("tasks/{task}")),
        ("segments", "segments".to_string()),
        ("query", "query".to_string()),
        ("compaction", "compaction".to_string()),
    ] {
        page.go(&hash).await;
        if view == "query" {
            answer(page, "run").await;
        }
        page.js("window.scrollTo(0, 0)", json!(null)).await;
        let png = page.client.screenshot().await.expect("screenshot");
        std::fs::write(dir.join(format!("{view}.png")), png).expect("save the screenshot");
    }
}
