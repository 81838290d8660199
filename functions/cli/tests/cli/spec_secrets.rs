//! Secrets in specs, end to end: every kind of spec the API stores (supervisor specs in both
//! forms, batch tasks of both types, compaction configs, retention rules, lookups), each holding
//! every kind of secret, submitted to `sluice serve`, and an indexing task planned with its
//! supervisor's spec; then every read route of the API's table (`sluice_http::ROUTES`), every
//! system table and the command's views are read, and no answer may hold a secret value.
//!
//! A read route is read here with every id of what was submitted (and must answer it), unless
//! [`NO_SPEC`] says why it cannot show a spec: a new route is read as soon as it is in the
//! table, and a route this file cannot read (a path parameter or a `POST` body it does not know)
//! fails the test until it is taught here or listed there.

use super::command::sluice;
use super::local_server::Server;
use serde_json::{json, Value};
use sluice_http::{Class, ROUTES};
use sluice_sql::system::SYSTEM_TABLES;
use std::path::Path;

/// What every secret value holds: an answer holding it shows a secret.
const MARK: &str = "hunter2";

/// Read routes that show no spec, and why: these are not read.
const NO_SPEC: [(&str, &str); 2] = [
    ("/druid/indexer/v1/task/{id}/log", "refused by name: a fixed message saying where logs are"),
    ("/druid/indexer/v1/task/{id}/segments", "refused by name: a fixed message naming sys.segments"),
];

/// Read routes whose answers show a spec, each checked to hold a redacted one (so that a
/// route answering without the spec does not pass for one that redacts it).
const SHOWS_SPEC: [&str; 8] = [
    "/druid/indexer/v1/supervisor/{id}",
    "/druid/indexer/v1/supervisor/{id}/history",
    "/druid/indexer/v1/supervisor/history",
    "/druid/indexer/v1/task/{id}",
    "/druid/coordinator/v1/config/compaction",
    "/druid/coordinator/v1/config/compaction/{datasource}",
    "/druid/coordinator/v1/rules",
    "/druid/coordinator/v1/rules/{datasource}",
];

/// A secret value, named for where it stands.
fn secret(at: &str) -> String {
    format!("{MARK}-{at}")
}

/// A URL with user info and a query string, both secret.
fn url(host: &str, at: &str) -> String {
    format!(
        "https://user:{}@{host}/base?apikey={}&x=1",
        secret(&format!("{at}-userinfo")),
        secret(&format!("{at}-query"))
    )
}

/// A schema registry decoder with a secret in its URL, its client settings and its headers.
fn registry(at: &str) -> Value {
    json!({"type": "schema_registry", "url": url("registry.example:8081", at),
        "config": {"basic.auth.credentials.source": "USER_INFO",
            "basic.auth.user.info": format!("user:{}", secret(&format!("{at}-basic-auth")))},
        "headers": {"Authorization": format!("Bearer {}", secret(&format!("{at}-bearer"))),
            "X-Api-Key": secret(&format!("{at}-header"))}})
}

/// Kafka consumer properties holding every kind of secret librdkafka takes.
fn consumer_properties(at: &str) -> Value {
    json!({
        "bootstrap.servers": "broker.example:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": format!(
            "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"{}\";",
            secret(&format!("{at}-jaas"))),
        "sasl.password": secret(&format!("{at}-sasl")),
        "ssl.key.password": secret(&format!("{at}-ssl-key")),
        "ssl.keystore.password": secret(&format!("{at}-keystore")),
        "ssl.key.pem": format!("-----BEGIN PRIVATE KEY-----{}", secret(&format!("{at}-pem"))),
        "sasl.oauthbearer.client.secret": secret(&format!("{at}-oauth")),
        "sasl.oauthbearer.token.endpoint.url": url("idp.example", &format!("{at}-oidc")),
    })
}

fn data_schema(datasource: &str) -> Value {
    json!({"dataSource": datasource, "timestampSpec": {"column": "ts", "format": "iso"},
        "dimensionsSpec": {"dimensions": ["page"]},
        "granularitySpec": {"segmentGranularity": "hour", "queryGranularity": "none", "rollup": false}})
}

/// A supervisor spec, wrapped (`{"type", "spec": {...}}`) or flat (Druid's older form).
fn supervisor_spec(datasource: &str, wrapped: bool) -> Value {
    let io = json!({"topic": "edits", "consumerProperties": consumer_properties(datasource),
        "inputFormat": {"type": "kafka",
            "valueFormat": {"type": "avro_stream", "avroBytesDecoder": registry(&format!("{datasource}-value"))},
            "keyFormat": {"type": "avro_stream", "avroBytesDecoder": registry(&format!("{datasource}-key"))}}});
    let body = json!({"dataSchema": data_schema(datasource), "ioConfig": io, "tuningConfig": {"type": "kafka"}});
    let mut spec = if wrapped {
        json!({"type": "kafka", "spec": body})
    } else {
        let mut flat = body;
        flat["type"] = "kafka".into();
        flat
    };
    spec["context"] = json!({"apiToken": secret(&format!("{datasource}-context"))});
    spec
}

/// A batch task reading with a registry decoder, `avro_stream` or `protobuf`.
fn batch_spec(id: &str, datasource: &str, kind: &str, format: &str) -> Value {
    let decoder = registry(&format!("{id}-decoder"));
    let input_format = match format {
        "avro_stream" => json!({"type": "avro_stream", "avroBytesDecoder": decoder}),
        _ => json!({"type": "protobuf", "protoBytesDecoder": decoder}),
    };
    json!({"type": kind, "id": id, "spec": {
        "dataSchema": data_schema(datasource),
        "ioConfig": {"type": kind, "inputSource": {"type": "inline", "data": "x"}, "inputFormat": input_format},
        "tuningConfig": {"type": kind}}})
}

/// A compaction config with secrets where Druid keeps free-form fields.
fn compaction_config(datasource: &str) -> Value {
    json!({"dataSource": datasource, "skipOffsetFromLatest": "PT1H",
        "taskContext": {"password": secret(&format!("{datasource}-task-context")),
            "callback": url("hooks.example", &format!("{datasource}-callback"))},
        "tuningConfig": {"partitionsSpec": {"type": "dynamic"},
            "awsSecretAccessKey": secret(&format!("{datasource}-tuning"))}})
}

/// Lookups Sluice refuses (they would hold a connector's credentials), each with its secrets.
fn connector_lookups() -> [Value; 2] {
    [
        json!({"version": "v1", "lookupExtractorFactory": {"type": "cachedNamespace", "extractionNamespace": {
            "type": "jdbc", "table": "t", "keyColumn": "k", "valueColumn": "v",
            "connectorConfig": {"connectURI": format!("jdbc:postgresql://db.example/x?password={}", secret("jdbc-uri")),
                "user": "u", "password": secret("jdbc-password")}}}}),
        json!({"version": "v1", "lookupExtractorFactory": {"type": "cachedNamespace", "extractionNamespace": {
            "type": "uri", "uri": url("bucket.example", "lookup-uri"),
            "namespaceParseSpec": {"format": "simpleJson"}}}}),
    ]
}

/// Every answer read, by what was asked.
#[derive(Default)]
struct Answers {
    all: Vec<(String, String)>,
}

impl Answers {
    fn call(&mut self, server: &Server, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
        let text = body.map(Value::to_string);
        let (status, answer) =
            server.request(method, path, text.as_deref()).unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        self.all.push((format!("{method} {path} {}: {status}", text.unwrap_or_default()), answer.clone()));
        (status, answer)
    }

    fn run(&mut self, dir: &Path, args: &[&str]) -> String {
        let (ok, out, err) = sluice(dir, args, None);
        assert!(ok, "sluice {args:?}: {out}{err}");
        self.all.push((format!("sluice {args:?}"), format!("{out}{err}")));
        out
    }

    /// What asked for an answer holding a secret, and where the secret stands in it.
    fn leaks(&self) -> Vec<String> {
        let mut leaks = Vec::new();
        for (what, answer) in &self.all {
            if let Some(at) = answer.find(MARK) {
                let around = answer.get(at.saturating_sub(60)..(at + 60).min(answer.len())).unwrap_or(answer);
                leaks.push(format!("{what}: ...{around}..."));
            }
        }
        leaks
    }
}

/// The values a path parameter takes: the ids of what was submitted.
fn bindings<'a>(route: &str, param: &str, ids: &'a Ids) -> &'a [String] {
    match param {
        "{id}" if route.starts_with("/druid/indexer/v1/supervisor/") => &ids.datasources,
        "{id}" if route.starts_with("/druid/indexer/v1/task/") => &ids.tasks,
        "{datasource}" => &ids.datasources,
        "{tier}" => &ids.tiers,
        "{name}" => &ids.lookups,
        other => panic!("{route}: no values for {other} here; teach spec_secrets.rs the ids it takes"),
    }
}

/// The ids of what was submitted.
struct Ids {
    datasources: Vec<String>,
    tasks: Vec<String>,
    tiers: Vec<String>,
    lookups: Vec<String>,
}

/// Every request path of `route`: each parameter bound to each of its values, with the query
/// strings that change what it shows.
fn paths(route: &str, ids: &Ids) -> Vec<String> {
    let mut paths = vec![String::new()];
    for segment in route.split('/').skip(1) {
        let values: Vec<String> =
            if segment.starts_with('{') { bindings(route, segment, ids).to_vec() } else { vec![segment.to_string()] };
        paths = paths.iter().flat_map(|p| values.iter().map(move |v| format!("{p}/{v}"))).collect();
    }
    let queries: &[&str] = match route {
        "/druid/indexer/v1/supervisor" => &["", "?state=true", "?full", "?system"],
        "/druid/coordinator/v1/lookups/config/{tier}" => &["", "?detailed=true"],
        "/druid/v2/datasources/{datasource}" => &["", "?full"],
        _ => &[""],
    };
    paths.iter().flat_map(|p| queries.iter().map(move |q| format!("{p}{q}"))).collect()
}

/// The bodies a `POST` read or query route is read with.
fn bodies(route: &str, ids: &Ids) -> Vec<Value> {
    match route {
        "/druid/v2/sql" | "/druid/v2/sql/" => SYSTEM_TABLES
            .iter()
            .map(|(schema, table, _)| json!({"query": format!("SELECT * FROM \"{schema}\".\"{table}\"")}))
            .collect(),
        "/druid/v2" | "/druid/v2/" => ids
            .datasources
            .iter()
            .map(|d| {
                json!({"queryType": "timeseries", "dataSource": d, "intervals": ["2000/3000"], "granularity": "all",
                    "aggregations": [{"type": "count", "name": "n"}]})
            })
            .collect(),
        "/druid/indexer/v1/taskStatus" => vec![json!(ids.tasks)],
        other => panic!("POST {other}: no body to read it with here; teach spec_secrets.rs one"),
    }
}

#[test]
fn no_read_route_system_table_or_command_shows_a_secret_of_any_spec() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &[], &["--allow-operations"]);
    let mut answers = Answers::default();
    let datasources = ["secrets_wrapped", "secrets_flat"];
    for (name, wrapped) in [(datasources[0], true), (datasources[1], false)] {
        let (status, answer) =
            answers.call(&server, "POST", "/druid/indexer/v1/supervisor", Some(&supervisor_spec(name, wrapped)));
        assert_eq!(status, 200, "{name}: {answer}");
        let suspend = format!("/druid/indexer/v1/supervisor/{name}/suspend");
        let (status, answer) = answers.call(&server, "POST", &suspend, None);
        assert!(status == 200 && answer.contains("<redacted>"), "suspend answers the spec: {answer}");
        let resume = format!("/druid/indexer/v1/supervisor/{name}/resume");
        assert_eq!(answers.call(&server, "POST", &resume, None).0, 200);
        let (status, answer) =
            answers.call(&server, "POST", "/druid/coordinator/v1/config/compaction", Some(&compaction_config(name)));
        assert_eq!(status, 200, "{name}: {answer}");
        let rules = json!([{"type": "loadForever", "password": secret(&format!("{name}-rule"))}]);
        let (status, answer) =
            answers.call(&server, "POST", &format!("/druid/coordinator/v1/rules/{name}"), Some(&rules));
        assert_eq!(status, 200, "{name}: {answer}");
    }
    let mut tasks = Vec::new();
    for (id, kind, format) in [("batch_avro", "index_parallel", "avro_stream"), ("batch_protobuf", "index", "protobuf")]
    {
        let spec = batch_spec(id, datasources[0], kind, format);
        let (status, answer) = answers.call(&server, "POST", "/druid/indexer/v1/task", Some(&spec));
        assert_eq!(status, 200, "{id}: {answer}");
        tasks.push(id.to_string());
    }
    let lookup = json!({"version": "v1", "lookupExtractorFactory": {"type": "map", "map": {"fr": "France"}}});
    let at = "/druid/coordinator/v1/lookups/config/__default/countries";
    assert_eq!(answers.call(&server, "POST", at, Some(&lookup)).0, 202);
    for (i, refused) in connector_lookups().iter().enumerate() {
        let at = format!("/druid/coordinator/v1/lookups/config/__default/connector{i}");
        assert_eq!(answers.call(&server, "POST", &at, Some(refused)).0, 400, "{refused}");
        let all = json!({"__default": {format!("connector{i}"): refused}});
        assert_eq!(answers.call(&server, "POST", "/druid/coordinator/v1/lookups/config", Some(&all)).0, 400);
    }
    // The supervisor's pass plans tasks holding its spec; none runs here, so one is planned as
    // it would be.
    let metadata = format!("file://{}", dir.path().join(".sluice/metadata").display());
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let task = runtime.block_on(async {
        let meta = sluice_store::metadata::open_metadata(&metadata).await.expect("metadata");
        let ranges = vec![sluice_kafka::OffsetRange { partition: 0, start: 0, end: 10 }];
        sluice_integration::indexing::plan(meta.as_ref(), &supervisor_spec(datasources[0], true), ranges).await
    });
    tasks.push(task.to_string());

    let ids = Ids {
        datasources: datasources.map(String::from).to_vec(),
        tasks,
        tiers: vec!["__default".into()],
        lookups: vec!["countries".into()],
    };
    let (mut shown_specs, mut read_sys_supervisors) = (Vec::new(), false);
    for route in ROUTES.iter().filter(|r| r.class != Class::Write) {
        if NO_SPEC.iter().any(|(path, _)| *path == route.path) {
            continue;
        }
        let requests: Vec<(String, Option<Value>)> = match route.method.as_str() {
            "GET" => paths(route.path, &ids).into_iter().map(|p| (p, None)).collect(),
            _ => {
                let path = paths(route.path, &ids).pop().expect("a path");
                bodies(route.path, &ids).into_iter().map(|b| (path.clone(), Some(b))).collect()
            }
        };
        for (path, body) in requests {
            let (status, answer) = answers.call(&server, route.method.as_str(), &path, body.as_ref());
            let health = route.path.ends_with("/health") && status == 503;
            assert!(status == 200 || health, "{} {path}: {status} {answer}", route.method);
            let sys_supervisors =
                body.as_ref().and_then(|b| b["query"].as_str()).is_some_and(|q| q.ends_with(".\"supervisors\""));
            read_sys_supervisors |= sys_supervisors;
            if SHOWS_SPEC.contains(&route.path) || sys_supervisors {
                let asked = body.map_or(path.clone(), |b| format!("{path} {b}"));
                shown_specs.push((asked, answer.contains("<redacted>")));
            }
        }
    }
    for (path, _) in NO_SPEC {
        assert!(ROUTES.iter().any(|r| r.path == path && r.class != Class::Write), "{path}: no such read route");
    }
    for path in SHOWS_SPEC {
        assert!(ROUTES.iter().any(|r| r.path == path), "{path}: no such route");
    }
    assert!(read_sys_supervisors, "sys.supervisors was read");

    // The command's views of the same stores.
    let (wrapped, batch) = (datasources[0], ids.tasks[0].as_str());
    for view in [
        &["compaction", "status", wrapped][..],
        &["compaction", "status"],
        &["retention", "show", wrapped],
        &["retention", "show"],
    ] {
        let shown = answers.run(dir.path(), view);
        shown_specs.push((format!("sluice {}", view.join(" ")), shown.contains("<redacted>")));
    }
    answers.run(dir.path(), &["lookups", "show"]);
    answers.run(dir.path(), &["supervisor", "status", wrapped, "--json"]);
    answers.run(dir.path(), &["task", "status", batch, "--json"]);
    for (schema, table, _) in SYSTEM_TABLES {
        answers.run(dir.path(), &["sql", &format!("SELECT * FROM \"{schema}\".\"{table}\"")]);
    }

    let leaks = answers.leaks();
    let unredacted: Vec<&String> = shown_specs.iter().filter(|(_, redacted)| !redacted).map(|(p, _)| p).collect();
    assert!(
        leaks.is_empty() && unredacted.is_empty(),
        "{} answers show a secret:\n{}\nthese show no redacted spec: {unredacted:?}",
        leaks.len(),
        leaks.join("\n")
    );
}
