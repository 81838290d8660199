//! Druid's lookup API (`/druid/coordinator/v1/lookups/...`): `map` lookups by tier, created,
//! replaced (only by a greater version) and deleted as Druid's coordinator takes them, read
//! back in its shapes, and their status (a lookup is loaded as soon as it is written: every
//! query reads the lookups' items itself).

use super::{json_body, ApiError, ApiState};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use sluice_metastore::lookups::{self, LookupError, LookupItem, LookupSpec};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

impl From<LookupError> for ApiError {
    fn from(e: LookupError) -> Self {
        let (status, error) = match &e {
            LookupError::Invalid { .. } | LookupError::NotNewer { .. } => (StatusCode::BAD_REQUEST, "Invalid request"),
            LookupError::Conflict { .. } => (StatusCode::CONFLICT, "Conflict"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "Unknown exception"),
        };
        ApiError::new(status, error, "LookupError", e.to_string())
    }
}

fn not_found(what: String) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "Not found", "LookupError", what)
}

fn accepted(body: Value) -> Response {
    (StatusCode::ACCEPTED, axum::Json(body)).into_response()
}

/// The lookups' items by tier, then name.
async fn by_tier(s: &ApiState) -> Result<BTreeMap<String, BTreeMap<String, LookupItem>>, ApiError> {
    let mut tiers: BTreeMap<String, BTreeMap<String, LookupItem>> = BTreeMap::new();
    for item in lookups::list(s.meta.as_ref()).await? {
        tiers.entry(item.tier.clone()).or_default().insert(item.name.clone(), item);
    }
    Ok(tiers)
}

/// `GET /lookups/config`: the tiers that hold lookups.
pub(super) async fn tiers(State(s): State<Arc<ApiState>>) -> Result<axum::Json<Value>, ApiError> {
    Ok(axum::Json(json!(by_tier(&s).await?.keys().collect::<Vec<_>>())))
}

/// `POST /lookups/config`: creates or replaces every lookup the body names
/// (`{tier: {name: spec}}`), all or none; `{}` (Druid's initialization) changes nothing.
pub(super) async fn update_all(State(s): State<Arc<ApiState>>, body: String) -> Result<Response, ApiError> {
    let body = json_body(&body)?;
    let Value::Object(tiers) = &body else {
        return Err(LookupError::Invalid {
            tier: String::new(),
            name: String::new(),
            reason: "expected {tier: {name: spec}}".into(),
        }
        .into());
    };
    let mut updates = Vec::new();
    for (tier, names) in tiers {
        let Value::Object(names) = names else {
            let reason = "expected {name: spec} under the tier".into();
            return Err(LookupError::Invalid { tier: tier.clone(), name: String::new(), reason }.into());
        };
        for (name, spec) in names {
            updates.push((tier.clone(), name.clone(), LookupSpec::parse(tier, name, spec)?));
        }
    }
    if !updates.is_empty() {
        lookups::put_all(s.meta.as_ref(), s.store.as_ref(), &updates).await?;
    }
    Ok(accepted(body))
}

/// `GET /lookups/config/all`: every lookup, `{tier: {name: spec}}`.
pub(super) async fn all(State(s): State<Arc<ApiState>>) -> Result<axum::Json<Value>, ApiError> {
    let mut out = Map::new();
    for (tier, items) in by_tier(&s).await? {
        out.insert(tier, Value::Object(specs(&s, items.into_values()).await?));
    }
    Ok(axum::Json(Value::Object(out)))
}

async fn specs(s: &ApiState, items: impl Iterator<Item = LookupItem>) -> Result<Map<String, Value>, ApiError> {
    let mut out = Map::new();
    for item in items {
        if let Some(spec) = lookups::read(s.meta.as_ref(), s.store.as_ref(), &item.tier, &item.name).await? {
            out.insert(item.name, spec.to_json());
        }
    }
    Ok(out)
}

/// `GET /lookups/config/{tier}`: the tier's lookup names (`?detailed=true`: their specs).
pub(super) async fn tier(
    State(s): State<Arc<ApiState>>,
    Path(tier): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    let Some(items) = by_tier(&s).await?.remove(&tier) else {
        return Err(not_found(format!("Tier [{}] not found", short(&tier))));
    };
    if params.get("detailed").is_some_and(|d| d == "true") {
        return Ok(axum::Json(Value::Object(specs(&s, items.into_values()).await?)));
    }
    Ok(axum::Json(json!(items.keys().collect::<Vec<_>>())))
}

/// `DELETE /lookups/config/{tier}`: deletes every lookup of the tier.
pub(super) async fn delete_tier(
    State(s): State<Arc<ApiState>>,
    Path(tier): Path<String>,
) -> Result<Response, ApiError> {
    let Some(items) = by_tier(&s).await?.remove(&tier) else {
        return Err(not_found(format!("Tier [{}] not found", short(&tier))));
    };
    for name in items.keys() {
        lookups::remove(s.meta.as_ref(), &tier, name).await?;
    }
    Ok(accepted(json!({})))
}

/// `GET /lookups/config/{tier}/{name}`: the lookup as it was given.
pub(super) async fn get(
    State(s): State<Arc<ApiState>>,
    Path((tier, name)): Path<(String, String)>,
) -> Result<axum::Json<Value>, ApiError> {
    match lookups::read(s.meta.as_ref(), s.store.as_ref(), &tier, &name).await? {
        Some(spec) => Ok(axum::Json(spec.to_json())),
        None => Err(not_found(format!("lookup [{}] not found", short(&name)))),
    }
}

/// `POST /lookups/config/{tier}/{name}`: creates or replaces the lookup.
pub(super) async fn put(
    State(s): State<Arc<ApiState>>,
    Path((tier, name)): Path<(String, String)>,
    body: String,
) -> Result<Response, ApiError> {
    let spec = LookupSpec::parse(&tier, &name, &json_body(&body)?)?;
    lookups::put(s.meta.as_ref(), s.store.as_ref(), &tier, &name, &spec).await?;
    Ok(accepted(json!({})))
}

/// `DELETE /lookups/config/{tier}/{name}`.
pub(super) async fn delete(
    State(s): State<Arc<ApiState>>,
    Path((tier, name)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    if lookups::remove(s.meta.as_ref(), &tier, &name).await? {
        Ok(accepted(json!({})))
    } else {
        Err(not_found(format!("lookup [{}] not found", short(&name))))
    }
}

fn loaded(detailed: bool) -> Value {
    if detailed {
        json!({"loaded": true, "pendingNodes": []})
    } else {
        json!({"loaded": true})
    }
}

fn detailed(params: &HashMap<String, String>) -> bool {
    params.get("detailed").is_some_and(|d| d == "true")
}

/// `GET /lookups/status`: every lookup is loaded once written.
pub(super) async fn status(
    State(s): State<Arc<ApiState>>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    let d = detailed(&params);
    let tiers = by_tier(&s).await?;
    let out: Map<String, Value> = tiers
        .into_iter()
        .map(|(tier, items)| (tier, Value::Object(items.into_keys().map(|n| (n, loaded(d))).collect())))
        .collect();
    Ok(axum::Json(Value::Object(out)))
}

/// `GET /lookups/status/{tier}`.
pub(super) async fn tier_status(
    State(s): State<Arc<ApiState>>,
    Path(tier): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    let Some(items) = by_tier(&s).await?.remove(&tier) else {
        return Err(not_found(format!("No lookups found for tier [{}].", short(&tier))));
    };
    let d = detailed(&params);
    Ok(axum::Json(Value::Object(items.into_keys().map(|n| (n, loaded(d))).collect())))
}

/// `GET /lookups/status/{tier}/{name}`.
pub(super) async fn lookup_status(
    State(s): State<Arc<ApiState>>,
    Path((tier, name)): Path<(String, String)>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    match lookups::item(s.meta.as_ref(), &tier, &name).await? {
        Some(_) => Ok(axum::Json(loaded(detailed(&params)))),
        None => Err(not_found(format!("Lookup [{}] not found for tier [{}].", short(&name), short(&tier)))),
    }
}

fn short(text: &str) -> std::borrow::Cow<'_, str> {
    sluice_format::text::excerpt(text, 80)
}
