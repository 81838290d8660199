//! Datasources' retention rules (Druid's `POST /druid/coordinator/v1/rules/{dataSource}`): one
//! item per datasource under the `rules` partition key, holding the rules as submitted. As in
//! Druid, rules may name a datasource that does not exist (yet); a datasource without rules
//! keeps every segment (Druid's default `loadForever`).

pub mod load;
pub use load::{load_rules, retained, LoadedRules, RetentionRule, MAX_RULES};

use crate::item::{parse_body, to_json, DatasourceError};
use crate::keys::{catalog_sk, CATALOG_PREFIX, RULES_PK};
use crate::layout::coordinator::RulesItem;
use sluice_format::spec::datasource_name_problem;
use sluice_store::metadata::{Condition, Item, MetadataStore};

/// A datasource's rules: checked, and as submitted.
#[derive(Debug, Clone)]
pub struct Rules {
    /// The rules, in order.
    pub rules: Vec<RetentionRule>,
    /// Druid's JSON, as `GET /druid/coordinator/v1/rules/{dataSource}` returns it.
    pub json: serde_json::Value,
}

/// Checks and stores `datasource`'s rules, replacing earlier ones; returns them with the
/// options they ignore.
pub async fn set(
    meta: &dyn MetadataStore,
    datasource: &str,
    json: serde_json::Value,
) -> Result<LoadedRules, DatasourceError> {
    let invalid = |reason: String| DatasourceError::InvalidRules { datasource: datasource.into(), reason };
    if let Some(problem) = datasource_name_problem(datasource) {
        return Err(invalid(format!("datasource name {problem}")));
    }
    let loaded = load_rules(&json).map_err(|e| invalid(e.to_string()))?;
    meta.put(Item::new(RULES_PK, catalog_sk(datasource), to_json(&RulesItem { rules: json })), Condition::None).await?;
    Ok(loaded)
}

/// The rules of `datasource`, if any were set.
pub async fn get(meta: &dyn MetadataStore, datasource: &str) -> Result<Option<Rules>, DatasourceError> {
    match meta.get(RULES_PK, &catalog_sk(datasource)).await? {
        None => Ok(None),
        Some(item) => Ok(Some(parse(datasource, &item)?)),
    }
}

/// Every datasource's rules, by name.
pub async fn list(meta: &dyn MetadataStore) -> Result<Vec<(String, Rules)>, DatasourceError> {
    let mut out = Vec::new();
    for item in meta.query(RULES_PK, CATALOG_PREFIX).await? {
        let datasource = item.sk.strip_prefix(CATALOG_PREFIX).unwrap_or(&item.sk).to_string();
        let rules = parse(&datasource, &item)?;
        out.push((datasource, rules));
    }
    Ok(out)
}

/// Stored rules, checked again as they are read back.
fn parse(datasource: &str, item: &Item) -> Result<Rules, DatasourceError> {
    let body: RulesItem = parse_body(datasource, item)?;
    let loaded = load_rules(&body.rules).map_err(|e| DatasourceError::Corrupt {
        datasource: datasource.into(),
        sk: item.sk.clone(),
        reason: e.to_string(),
    })?;
    Ok(Rules { rules: loaded.rules, json: body.rules })
}
