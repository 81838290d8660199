//! Chromium and chromedriver run by the console's browser test: the tools' paths, a driver on
//! a loopback port of its own, a session with a fresh profile, the browser's console log, and
//! what a failed run leaves behind.

use fantoccini::{Client, ClientBuilder};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
pub(super) fn artifacts() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-browser")
}

/// A tool's path: `var` if set, else `default`; a clear failure when it is not there.
pub(super) fn tool(var: &str, default: &str) -> PathBuf {
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
pub(super) struct Driver {
    child: Child,
    address: String,
}

impl Driver {
    /// Starts `binary`, logging to `log`, and waits until it listens.
    pub(super) fn start(binary: &Path, log: &Path) -> Driver {
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
pub(super) async fn session(driver: &Driver, chromium: &Path, profile: &Path) -> Client {
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
pub(super) async fn console_log(client: &Client, driver: &Driver) -> Vec<(String, String)> {
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
pub(super) async fn leave_artifacts(client: &Client, driver: &Driver) -> PathBuf {
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

pub(super) fn panic_text(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(p) => p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into()),
        Err(e) => e.to_string(),
    }
}
