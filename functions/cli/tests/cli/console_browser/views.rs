//! Each view's tables against the API's JSON for the same things, read beside the page.

use super::page::Page;
use fantoccini::Locator;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A value as a cell shows it: a string as it is, null as nothing, anything else as JSON.
pub(super) fn plain(value: &Value) -> String {
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
pub(super) async fn supervisors_agree(page: &Page) -> Value {
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
    assert_eq!(ungrouped(&page.field("aggregateLagMillis").await), plain(&p["aggregateLagMillis"]));
    assert!(p["minimumLagMillis"].as_object().is_some_and(|m| !m.is_empty()), "time lag per partition: {p}");
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
            vec![
                key.clone(),
                committed,
                plain(offset),
                plain(&p["minimumLag"][key]),
                plain(&p["minimumLagMillis"][key]),
            ]
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
pub(super) async fn tasks_agree(page: &Page) {
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
pub(super) async fn segments_agree(page: &Page) {
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
pub(super) async fn answer(page: &Page, button: &str) -> (Vec<String>, Vec<Vec<String>>) {
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
pub(super) async fn queries_agree(page: &Page, datasource: &Value) {
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
pub(super) async fn compaction_agrees(page: &Page) {
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
