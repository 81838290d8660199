//! Datasources' compaction configurations: Druid's auto-compaction `DataSourceCompactionConfig`,
//! one item per datasource under the `compaction` partition key, holding the configuration as
//! Druid's `GET /druid/coordinator/v1/config/compaction/{dataSource}` returns it. As in Druid,
//! a configuration may name a datasource that does not exist (yet).

pub mod load;
pub use load::{load_compaction_config, load_compaction_value, CompactionConfig, LoadedCompaction};

use crate::item::{parse_body, to_json, DatasourceError};
use crate::keys::{catalog_sk, CATALOG_PREFIX, COMPACTION_PK};
use crate::layout::coordinator::CompactionItem;
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore};

/// Checks and stores a configuration, replacing the datasource's earlier one; returns it and
/// the options it ignores.
pub async fn submit(meta: &dyn MetadataStore, json: serde_json::Value) -> Result<LoadedCompaction, DatasourceError> {
    let datasource = json.get("dataSource").and_then(|d| d.as_str()).unwrap_or_default().to_string();
    let loaded = load_compaction_value(json)
        .map_err(|e| DatasourceError::InvalidCompaction { datasource, reason: e.to_string() })?;
    let c = &loaded.config;
    let item = CompactionItem { config: c.json.clone() };
    meta.put(Item::new(COMPACTION_PK, catalog_sk(&c.data_source), to_json(&item)), Condition::None).await?;
    Ok(loaded)
}

/// The configuration of `datasource`, if any.
pub async fn get(meta: &dyn MetadataStore, datasource: &str) -> Result<Option<CompactionConfig>, DatasourceError> {
    match meta.get(COMPACTION_PK, &catalog_sk(datasource)).await? {
        None => Ok(None),
        Some(item) => Ok(Some(parse(datasource, &item)?)),
    }
}

/// Every configuration, by datasource name.
pub async fn list(meta: &dyn MetadataStore) -> Result<Vec<CompactionConfig>, DatasourceError> {
    let mut out = Vec::new();
    for item in meta.query(COMPACTION_PK, CATALOG_PREFIX).await? {
        let datasource = item.sk.strip_prefix(CATALOG_PREFIX).unwrap_or(&item.sk).to_string();
        out.push(parse(&datasource, &item)?);
    }
    Ok(out)
}

/// Removes the configuration of `datasource`; false when it had none.
pub async fn remove(meta: &dyn MetadataStore, datasource: &str) -> Result<bool, DatasourceError> {
    match meta.delete(COMPACTION_PK, &catalog_sk(datasource), Condition::Exists).await {
        Ok(()) => Ok(true),
        Err(MetaError::ConditionFailed { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// A stored configuration, checked again as it is read back.
fn parse(datasource: &str, item: &Item) -> Result<CompactionConfig, DatasourceError> {
    let body: CompactionItem = parse_body(datasource, item)?;
    let corrupt =
        |reason: String| DatasourceError::Corrupt { datasource: datasource.into(), sk: item.sk.clone(), reason };
    let loaded = load_compaction_value(body.config).map_err(|e| corrupt(e.to_string()))?;
    if loaded.config.data_source != datasource {
        return Err(corrupt(format!("the configuration names datasource {:?}", loaded.config.data_source)));
    }
    Ok(loaded.config)
}
