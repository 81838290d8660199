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

mod browser;
mod page;
mod views;

use super::command::sluice;
use super::local_server::Server;
use browser::{artifacts, console_log, leave_artifacts, panic_text, session, tool, Driver};
use fantoccini::Client;
use page::Page;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use views::{answer, compaction_agrees, plain, queries_agree, segments_agree, supervisors_agree, tasks_agree};

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
    autoscaler_shown(&page, &supervisor).await;
    if let Ok(dir) = std::env::var("SLUICE_CONSOLE_SCREENSHOTS") {
        screenshots(&page, Path::new(&dir)).await;
    }
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

/// A supervisor whose spec enables the autoscaler: the page shows the task groups and the
/// decision its status reports.
async fn autoscaler_shown(page: &Page, demo: &Value) {
    let id = "scaled";
    let mut spec = sluice_integration::wikipedia::tutorial_spec(id, "scaled", "127.0.0.1:1");
    spec["ioConfig"]["autoScalerConfig"] =
        json!({"enableTaskAutoScaler": true, "taskCountMin": 2, "taskCountMax": 6, "taskCountStart": 3});
    assert_ne!(demo["dataSource"], id);
    page.api("POST", "/druid/indexer/v1/supervisor", Some(spec));
    let report = page.api("GET", &format!("/druid/indexer/v1/supervisor/{id}/status"), None);
    let a = &report["payload"]["sluice"]["autoscaler"];
    assert_eq!((&a["taskCount"], &a["desired"]), (&json!(3), &Value::Null), "no sample yet, no decision: {a}");
    page.go(&format!("supervisors/{id}")).await;
    assert_eq!(page.field("autoscalerTaskCount").await, "3 (from 2 to 6)");
    assert_eq!(page.field("autoscalerDecision").await, "keep 3");
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
