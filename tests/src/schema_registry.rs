//! A schema registry for the tests: the few REST calls of Confluent's Schema Registry that its
//! serializers (`confluent-kafka`'s `AvroSerializer` and `ProtobufSerializer`: register a
//! schema under a subject, look a referenced schema up) and Sluice (fetch a schema by id, a
//! referenced one by subject and version) make, in memory, on 127.0.0.1. Identical schemas get
//! one id, as the real registry gives them; every fetch by id is counted. As the real registry
//! does, it answers a Protobuf schema as a serialized descriptor only when asked with
//! `format=serialized` (otherwise with `.proto` text, which this registry does not write).

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One registered schema; its id is its index + 1, its version its place among its subject's.
struct Registration {
    subject: String,
    schema: String,
    kind: Option<String>,
    references: Value,
}

#[derive(Default)]
struct Registered {
    schemas: Vec<Registration>,
    /// Fetches by id, per id.
    fetches: std::collections::BTreeMap<u32, usize>,
    /// Answering 503 to fetches, as a registry down does.
    down: bool,
}

impl Registered {
    /// The version of registration `index` within its subject.
    fn version(&self, index: usize) -> usize {
        let subject = &self.schemas[index].subject;
        self.schemas[..=index].iter().filter(|r| r.subject == *subject).count()
    }

    /// The answer for registration `index`.
    fn answer(&self, index: usize, format: Option<&str>) -> Value {
        let r = &self.schemas[index];
        let schema = match (r.kind.as_deref(), format) {
            (Some("PROTOBUF"), Some("serialized")) | (None | Some("AVRO"), _) => r.schema.clone(),
            _ => "// .proto text: ask with format=serialized for the descriptor".to_string(),
        };
        let mut answer = json!({"subject": r.subject, "id": index + 1, "version": self.version(index),
            "schema": schema, "references": r.references});
        if let Some(k) = &r.kind {
            answer["schemaType"] = k.clone().into();
        }
        answer
    }
}

type Shared = Arc<Mutex<Registered>>;
type Refusal = (StatusCode, Json<Value>);
type Answer = Result<Json<Value>, Refusal>;

/// A running registry; it stops with the test's runtime.
#[derive(Clone)]
pub struct SchemaRegistry {
    /// Its base URL.
    pub url: String,
    state: Shared,
}

impl SchemaRegistry {
    /// Starts a registry on a free port, and lets this process's registry clients ask it there.
    pub async fn start() -> Self {
        sluice_kafka::allow_local_registries();
        let state = Arc::new(Mutex::new(Registered::default()));
        let app = Router::new()
            .route("/subjects/{subject}/versions", post(register))
            .route("/subjects/{subject}", post(lookup))
            .route("/subjects/{subject}/versions/{version}", get(by_version))
            .route("/schemas/ids/{id}", get(by_id))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the schema registry");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { url, state }
    }

    /// The schemas registered under `subject`, with their ids.
    pub fn schemas(&self, subject: &str) -> Vec<(u32, String)> {
        let state = self.state.lock().expect("registry state");
        (1..).zip(&state.schemas).filter(|(_, r)| r.subject == subject).map(|(id, r)| (id, r.schema.clone())).collect()
    }

    /// The subjects schemas were registered under, in order of first registration.
    pub fn subjects(&self) -> Vec<String> {
        let state = self.state.lock().expect("registry state");
        let mut subjects: Vec<String> = Vec::new();
        for r in &state.schemas {
            if !subjects.contains(&r.subject) {
                subjects.push(r.subject.clone());
            }
        }
        subjects
    }

    /// Registers Avro schema `schema` under `subject`, as a serializer would: its id.
    pub fn register(&self, subject: &str, schema: &str) -> u32 {
        let mut state = self.state.lock().expect("registry state");
        state.schemas.push(Registration {
            subject: subject.into(),
            schema: schema.into(),
            kind: None,
            references: json!([]),
        });
        state.schemas.len() as u32
    }

    /// Makes fetches fail (503) or succeed again.
    pub fn set_down(&self, down: bool) {
        self.state.lock().expect("registry state").down = down;
    }

    /// How often schema `id` was fetched.
    pub fn fetches(&self, id: u32) -> usize {
        self.state.lock().expect("registry state").fetches.get(&id).copied().unwrap_or(0)
    }
}

fn error(status: StatusCode, code: u32, message: &str) -> Refusal {
    (status, Json(json!({"error_code": code, "message": message})))
}

/// The registration `body` describes: (schema, kind, references).
fn described(body: &Value) -> Result<(String, Option<String>, Value), Refusal> {
    let Some(schema) = body["schema"].as_str() else {
        return Err(error(StatusCode::UNPROCESSABLE_ENTITY, 42201, "no schema"));
    };
    let kind = body["schemaType"].as_str().map(String::from);
    let references = if body["references"].is_array() { body["references"].clone() } else { json!([]) };
    Ok((schema.to_string(), kind, references))
}

fn find(state: &Registered, subject: &str, schema: &str, kind: &Option<String>) -> Option<usize> {
    state.schemas.iter().position(|r| r.subject == subject && r.schema == schema && r.kind == *kind)
}

async fn register(State(state): State<Shared>, Path(subject): Path<String>, Json(body): Json<Value>) -> Answer {
    let (schema, kind, references) = described(&body)?;
    let mut state = state.lock().expect("registry state");
    let index = match find(&state, &subject, &schema, &kind) {
        Some(i) => i,
        None => {
            state.schemas.push(Registration { subject, schema, kind, references });
            state.schemas.len() - 1
        }
    };
    Ok(Json(json!({"id": index + 1, "version": state.version(index)})))
}

async fn lookup(State(state): State<Shared>, Path(subject): Path<String>, Json(body): Json<Value>) -> Answer {
    let (schema, kind, _) = described(&body)?;
    let state = state.lock().expect("registry state");
    match find(&state, &subject, &schema, &kind) {
        Some(index) => Ok(Json(state.answer(index, Some("serialized")))),
        None => Err(error(StatusCode::NOT_FOUND, 40403, "Schema not found")),
    }
}

async fn by_version(
    State(state): State<Shared>,
    Path((subject, version)): Path<(String, usize)>,
    Query(query): Query<HashMap<String, String>>,
) -> Answer {
    let state = state.lock().expect("registry state");
    if state.down {
        return Err(error(StatusCode::SERVICE_UNAVAILABLE, 50301, "down"));
    }
    let index = (0..state.schemas.len()).find(|&i| state.schemas[i].subject == subject && state.version(i) == version);
    match index {
        Some(i) => Ok(Json(state.answer(i, query.get("format").map(String::as_str)))),
        None => Err(error(StatusCode::NOT_FOUND, 40402, "Version not found")),
    }
}

async fn by_id(
    State(state): State<Shared>,
    Path(id): Path<u32>,
    Query(query): Query<HashMap<String, String>>,
) -> Answer {
    let mut state = state.lock().expect("registry state");
    *state.fetches.entry(id).or_default() += 1;
    if state.down {
        return Err(error(StatusCode::SERVICE_UNAVAILABLE, 50301, "down"));
    }
    let index = (id as usize).wrapping_sub(1);
    if index >= state.schemas.len() {
        return Err(error(StatusCode::NOT_FOUND, 40403, "Schema not found"));
    }
    Ok(Json(state.answer(index, query.get("format").map(String::as_str))))
}
