//! The browser on one server's console: the API asked beside it, scripts run in the page,
//! waiting for a view or an answer, and the tables and fields a view shows.

use super::super::local_server::request;
use fantoccini::{Client, Locator};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Longest the page may take to show a view or an answer (a debug build of the server).
const SHOWN_WITHIN: Duration = Duration::from_secs(60);

/// The browser on one server's console.
pub(super) struct Page {
    /// The session.
    pub(super) client: Client,
    /// The server's address, `127.0.0.1:PORT`.
    pub(super) address: String,
}

impl Page {
    /// The API's JSON answer to `METHOD path` (`body` as JSON), asked beside the page.
    pub(super) fn api(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let body = body.map(|b| b.to_string());
        let (status, text) =
            request(&self.address, method, path, body.as_deref()).unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        assert_eq!(status, 200, "{method} {path}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {path}: {e}: {text}"))
    }

    /// Runs `script` in the page (`arguments[0]` is `arg`) and gives its value.
    pub(super) async fn js(&self, script: &str, arg: Value) -> Value {
        self.client.execute(script, vec![arg]).await.unwrap_or_else(|e| panic!("script {script:?}: {e}"))
    }

    /// How many times the page has rendered a view.
    pub(super) async fn renders(&self) -> u64 {
        self.js("return Number(document.getElementById('view')?.dataset.rendered ?? 0)", json!(null))
            .await
            .as_u64()
            .unwrap_or(0)
    }

    /// Waits until `script` (its value `true` meaning done) holds, or fails saying `what`.
    pub(super) async fn until(&self, what: &str, script: &str, arg: Value) {
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
    pub(super) async fn shown(&self, id: &str, after: u64) {
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
    pub(super) async fn open(&self, path: &str, id: &str) {
        let url = format!("http://{}{path}", self.address);
        self.client.goto(&url).await.unwrap_or_else(|e| panic!("load {url}: {e}"));
        self.shown(id, 0).await;
    }

    /// Goes to the view and argument of `hash` (`tasks/abc`) and waits for it.
    pub(super) async fn go(&self, hash: &str) {
        let before = self.renders().await;
        self.js("location.hash = arguments[0]", json!(hash)).await;
        self.shown(hash.split('/').next().unwrap_or(hash), before).await;
    }

    /// The cells' text of table `name`, row by row (no rows: the table says it is empty).
    pub(super) async fn rows(&self, name: &str) -> Vec<Vec<String>> {
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
    pub(super) async fn header(&self, name: &str) -> Vec<String> {
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
    pub(super) async fn field(&self, name: &str) -> String {
        let found = self
            .js("return document.querySelector(`[data-field=\"${arguments[0]}\"]`)?.textContent", json!(name))
            .await;
        found.as_str().unwrap_or_else(|| panic!("the page shows no field {name}")).trim().to_string()
    }

    pub(super) async fn click(&self, css: &str) {
        let element = self.client.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("find {css}: {e}"));
        element.click().await.unwrap_or_else(|e| panic!("click {css}: {e}"));
    }
}
