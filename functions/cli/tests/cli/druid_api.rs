//! Druid's API reference, route by route, against `sluice serve` on the demo's stores: every
//! supervisor, task and status route Druid documents with an example answer, called as the
//! reference calls it, answers in the example's shape (`druid_api/shape.rs`), or is refused
//! by name with Druid's error shape where it cannot apply. Druid's own example supervisor spec,
//! submitted, is answered back as Druid's reference shows it, value by value.

#[path = "druid_api/shape.rs"]
mod shape;

use super::local_server::Server;
use serde_json::{json, Value};
use shape::{differences, example, examples, value_differences, Example};

/// Where a documented field cannot apply here: (fixture, path, why).
const EXEMPT: [(&str, &str, &str); 8] = [
    ("tasks_list.json", "/*/location/host", LAMBDA_HOST),
    ("tasks_complete.json", "/*/location/host", LAMBDA_HOST),
    ("task_status.json", "/status/location/host", LAMBDA_HOST),
    ("task_status_bulk.json", "/%/location/host", LAMBDA_HOST),
    ("task_reports.json", "/ingestionStatsAndErrors/payload/rowStats/determinePartitions", PARALLEL_TASK),
    ("task_payload.json", "/payload/spec", PARALLEL_TASK),
    ("task_payload.json", "/payload/context/forceTimeChunkLock", PARALLEL_TASK),
    ("task_payload.json", "/payload/context/useLineageBasedSegmentAllocation", PARALLEL_TASK),
];

const LAMBDA_HOST: &str = "a task runs in a Lambda invocation: no host (Druid's unknown location)";
const PARALLEL_TASK: &str =
    "Druid's example is an index_parallel task; an index_kafka task has no determinePartitions phase and holds its spec at the top";

/// Paths whose keys are data (partitions, task groups, task ids, supervisor ids), by fixture.
fn keyed(file: &str) -> &'static [&'static str] {
    match file {
        "supervisor_status.json" => &[
            "/payload/latestOffsets",
            "/payload/minimumLag",
            "/payload/activeTasks/*/startingOffsets",
            "/payload/activeTasks/*/currentOffsets",
            "/payload/activeTasks/*/lag",
        ],
        "supervisor_stats.json" => &["", "/%"],
        "task_status_bulk.json" => &[""],
        _ => &[],
    }
}

/// `differences` less the exempted ones, each exemption required to be met (a stale one fails).
fn checked(file: &str, documented: &Value, ours: &Value, used: &mut Vec<(String, String)>) -> Vec<String> {
    differences(documented, ours, keyed(file))
        .into_iter()
        .filter(|d| {
            let exempt = EXEMPT.iter().find(|(f, path, _)| *f == file && d.starts_with(&format!("{path}:")));
            if let Some((f, path, _)) = exempt {
                used.push((f.to_string(), path.to_string()));
            }
            exempt.is_none()
        })
        .collect()
}

/// `ex`'s route with the demo's ids.
fn route(ex: &Example, supervisor: &str, task: &str) -> String {
    let path = ex
        .route
        .replace("{supervisorId}", supervisor)
        .replace("{taskId}", task)
        .replace("{dataSourceName}", supervisor);
    match ex.file.as_str() {
        // The documented filter, on the demo's datasource.
        "tasks_list.json" => format!("{path}?state=complete&datasource={supervisor}&max=10"),
        _ if ex.query.is_empty() => path,
        _ => format!("{path}?{}", ex.query),
    }
}

fn call(server: &Server, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let text = body.map(Value::to_string);
    let (status, reply) = server.request(method, path, text.as_deref()).unwrap_or_else(|e| panic!("{path}: {e}"));
    let value = serde_json::from_str(&reply).unwrap_or_else(|e| panic!("{method} {path}: {e}: {reply}"));
    (status, value)
}

/// A published task of the demo.
fn demo_task(server: &Server) -> String {
    let (_, tasks) = call(server, "GET", "/druid/indexer/v1/completeTasks", None);
    tasks[0]["id"].as_str().expect("the demo published tasks").to_string()
}

#[test]
fn every_documented_read_answers_in_druids_shape() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::on_demo(dir.path(), &[]);
    let task = demo_task(&server);
    let (mut found, mut used, mut read) = (Vec::new(), Vec::new(), 0);
    for ex in examples().iter().filter(|e| e.method == "GET") {
        let path = route(ex, "wikipedia", &task);
        let (status, ours) = call(&server, "GET", &path, None);
        assert_eq!(status, 200, "GET {path}: {ours}");
        // The demo's tasks are all published: the running, waiting and pending lists are empty
        // here, so only the complete lists' items (the same TaskStatusPlus) show their shape.
        if matches!(ex.file.as_str(), "tasks_complete.json" | "tasks_list.json") {
            assert!(ours.as_array().is_some_and(|a| !a.is_empty()), "GET {path}: {ours}");
        }
        let documented = match ex.file.as_str() {
            // Druid's spec examples are of a spec in the current form; the demo's has a
            // `parser` (the older form), which holds its own timestampSpec and dimensionsSpec.
            "supervisor_spec.json"
            | "supervisor_list_full.json"
            | "supervisor_history.json"
            | "supervisor_all_history.json" => continue,
            _ => &ex.answer,
        };
        found.extend(checked(&ex.file, documented, &ours, &mut used).into_iter().map(|d| format!("{}: {d}", ex.file)));
        read += 1;
    }
    assert!(found.is_empty(), "differences from Druid's examples:\n{}", found.join("\n"));
    assert!(read >= 13, "{read} routes read");
    let gets: Vec<String> = examples().into_iter().filter(|e| e.method == "GET").map(|e| e.file).collect();
    for (file, path, why) in EXEMPT.iter().filter(|(f, ..)| gets.iter().any(|g| g == f)) {
        assert!(used.contains(&(file.to_string(), path.to_string())), "exemption no longer met: {file} {path} ({why})");
    }
}

#[test]
fn druids_example_spec_is_answered_back_as_druids_reference_shows_it_and_submits_again_unchanged() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::on_demo(dir.path(), &["--allow-operations"]);
    let create = example("supervisor_create.json");
    let (status, created) = call(&server, "POST", &create.route, create.body.as_ref());
    assert_eq!(status, 200, "{created}");
    assert!(differences(&create.answer, &created, &[]).is_empty(), "{created}");
    assert_eq!(created["id"], json!("social_media"));

    let (_, shown) = call(&server, "GET", "/druid/indexer/v1/supervisor/social_media", None);
    let mut found = Vec::new();
    value_differences(&example("supervisor_spec.json").answer, &shown, "", &mut found);
    // Sluice's defaults, which it runs with, where Druid's differ.
    let sluice_defaults = ["/tuningConfig/maxTotalRows", "/tuningConfig/maxSavedParseExceptions"];
    found.retain(|d| {
        !sluice_defaults.iter().any(|p| d.starts_with(&format!("{p}:")) || d.starts_with(&format!("/spec{p}:")))
    });
    assert!(found.is_empty(), "differences from Druid's answer:\n{}", found.join("\n"));

    let (status, again) = call(&server, "POST", "/druid/indexer/v1/supervisor", Some(&shown));
    assert_eq!((status, &again["warnings"]), (200, &json!([])), "{again}");
    assert_eq!(call(&server, "GET", "/druid/indexer/v1/supervisor/social_media", None).1, shown);

    // The list, the history and the full list hold it in the same shape.
    let (mut shapes, mut used) = (Vec::new(), Vec::new());
    for file in ["supervisor_list_full.json", "supervisor_history.json", "supervisor_all_history.json"] {
        let ex = example(file);
        let (_, ours) = call(&server, "GET", &route(&ex, "social_media", ""), None);
        let (documented, items): (&Value, Vec<&Value>) = match file {
            "supervisor_list_full.json" => {
                (&ex.answer[0], ours.as_array().expect("a list").iter().filter(|i| i["id"] == "social_media").collect())
            }
            "supervisor_history.json" => (&ex.answer[0], ours.as_array().expect("versions").iter().collect()),
            _ => {
                (&ex.answer["social_media"][0], ours["social_media"].as_array().expect("its versions").iter().collect())
            }
        };
        assert!(!items.is_empty(), "{file}: {ours}");
        for item in items {
            shapes.extend(checked(file, documented, item, &mut used).into_iter().map(|d| format!("{file}: {d}")));
        }
    }
    assert!(shapes.is_empty(), "{}", shapes.join("\n"));
}

#[test]
fn every_documented_write_answers_in_druids_shape_or_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::on_demo(dir.path(), &["--allow-operations"]);
    let task = demo_task(&server);
    let create = example("supervisor_create.json");
    assert_eq!(call(&server, "POST", &create.route, create.body.as_ref()).0, 200);
    // Refused by name: a task is planned and retried by its supervisor until it publishes
    // exactly once, so it is not shut down on its own.
    let refused = ["task_shutdown.json", "tasks_shutdown_all.json"];
    let (mut found, mut used) = (Vec::new(), Vec::new());
    for ex in examples().iter().filter(|e| e.method != "GET" && e.file != "supervisor_create.json") {
        if ex.file == "task_submit.json" {
            continue;
        }
        let supervisor = if ex.route.contains("dataSourceName") { "wikipedia" } else { "social_media" };
        let path = route(ex, supervisor, &task);
        let body = match ex.file.as_str() {
            "task_status_bulk.json" => Some(json!([task])),
            _ => ex.body.clone(),
        };
        let (status, ours) = call(&server, &ex.method, &path, body.as_ref());
        if refused.contains(&ex.file.as_str()) {
            assert_eq!(status, 400, "{path}: {ours}");
            let message = ours["errorMessage"].as_str().unwrap_or_default();
            assert!(ours["error"].is_string() && message.contains("suspend"), "{path}: {ours}");
            continue;
        }
        assert_eq!(status, 200, "{} {path}: {ours}", ex.method);
        found.extend(checked(&ex.file, &ex.answer, &ours, &mut used).into_iter().map(|d| format!("{}: {d}", ex.file)));
    }
    assert!(used.contains(&("task_status_bulk.json".into(), "/%/location/host".into())), "{used:?}");
    assert!(found.is_empty(), "differences from Druid's examples:\n{}", found.join("\n"));
    let (_, states) = call(&server, "GET", "/druid/indexer/v1/supervisor?state=true", None);
    let detailed: Vec<&Value> = states.as_array().expect("a list").iter().map(|s| &s["detailedState"]).collect();
    assert_eq!(detailed, [&json!("TERMINATED"), &json!("TERMINATED")], "after terminateAll: {states}");
}
