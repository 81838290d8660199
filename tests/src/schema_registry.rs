//! A schema registry for the tests: the few REST calls of Confluent's Schema Registry that its
//! serializers (`confluent-kafka`'s `AvroSerializer`: register a schema under a subject) and
//! Sluice (fetch a schema by id) make, in memory, on 127.0.0.1. Identical schemas get one id,
//! as the real registry gives them; every fetch by id is counted.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Registered {
    /// (subject, schema text, schema type), id = index + 1.
    schemas: Vec<(String, String, Option<String>)>,
    /// Fetches by id, per id.
    fetches: std::collections::BTreeMap<u32, usize>,
    /// Answering 503 to fetches, as a registry down does.
    down: bool,
}

/// A running registry; it stops with the test's runtime.
#[derive(Clone)]
pub struct SchemaRegistry {
    /// Its base URL.
    pub url: String,
    state: Arc<Mutex<Registered>>,
}

impl SchemaRegistry {
    /// Starts a registry on a free port.
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(Registered::default()));
        let app = Router::new()
            .route("/subjects/{subject}/versions", post(register))
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
        (1..)
            .zip(&state.schemas)
            .filter(|(_, (s, _, _))| s == subject)
            .map(|(id, (_, text, _))| (id, text.clone()))
            .collect()
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

async fn register(
    State(state): State<Arc<Mutex<Registered>>>,
    Path(subject): Path<String>,
    Json(body): Json<Value>,
) -> Result<Json<Value>, (StatusCode, Json<Value>)> {
    let Some(schema) = body["schema"].as_str() else {
        return Err((StatusCode::UNPROCESSABLE_ENTITY, Json(json!({"error_code": 42201, "message": "no schema"}))));
    };
    let kind = body["schemaType"].as_str().map(String::from);
    let mut state = state.lock().expect("registry state");
    let id = match state.schemas.iter().position(|(s, text, k)| *s == subject && text == schema && *k == kind) {
        Some(i) => i + 1,
        None => {
            state.schemas.push((subject, schema.to_string(), kind));
            state.schemas.len()
        }
    };
    Ok(Json(json!({"id": id})))
}

async fn by_id(
    State(state): State<Arc<Mutex<Registered>>>,
    Path(id): Path<u32>,
) -> Result<Json<Value>, (StatusCode, Json<Value>)> {
    let mut state = state.lock().expect("registry state");
    *state.fetches.entry(id).or_default() += 1;
    if state.down {
        return Err((StatusCode::SERVICE_UNAVAILABLE, Json(json!({"error_code": 50301, "message": "down"}))));
    }
    match state.schemas.get((id as usize).wrapping_sub(1)) {
        Some((_, text, kind)) => {
            let mut answer = json!({"schema": text});
            if let Some(k) = kind {
                answer["schemaType"] = k.clone().into();
            }
            Ok(Json(answer))
        }
        None => Err((StatusCode::NOT_FOUND, Json(json!({"error_code": 40403, "message": "Schema not found"})))),
    }
}
