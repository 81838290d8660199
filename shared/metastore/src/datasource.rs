//! Datasources as readers see them: the catalog of datasource names, a datasource's spec item
//! (spec, supervisor state, schema history), and the per-group items (`plan#`, `offsets#`)
//! by group number. Layout: `docs/metadata-layout.md`.

pub use sluice_layout::datasource::{SpecItem, SupervisorState};
use sluice_layout::keys::{datasource_pk, group_of, CATALOG_PK, CATALOG_PREFIX, SPEC_SK};
use sluice_store::metadata::{Item, MetaError, MetadataStore};
use std::collections::BTreeMap;

/// Errors of datasource operations. Reads fail as [`Unknown`](Self::Unknown),
/// [`Corrupt`](Self::Corrupt) or [`Metadata`](Self::Metadata); the spec, compaction and
/// retention variants are the refusals of `sluice-pipeline`'s writes, in the same type so that
/// a failure reads the same wherever it arises.
#[derive(Debug, thiserror::Error)]
pub enum DatasourceError {
    /// No spec was submitted under this name.
    #[error("datasource {0:?} does not exist (submit its spec first)")]
    Unknown(String),
    /// The spec is invalid.
    #[error("spec of datasource {datasource:?}: {reason}")]
    InvalidSpec {
        /// The datasource.
        datasource: String,
        /// Why.
        reason: String,
    },
    /// The compaction configuration is invalid.
    #[error("compaction config of datasource {datasource:?}: {reason}")]
    InvalidCompaction {
        /// The datasource (empty when the config names none).
        datasource: String,
        /// Why.
        reason: String,
    },
    /// The retention rules are invalid.
    #[error("retention rules of datasource {datasource:?}: {reason}")]
    InvalidRules {
        /// The datasource.
        datasource: String,
        /// Why.
        reason: String,
    },
    /// An item cannot be read.
    #[error("datasource {datasource:?}: item {sk} is malformed: {reason}")]
    Corrupt {
        /// The datasource.
        datasource: String,
        /// The item's sort key.
        sk: String,
        /// Why.
        reason: String,
    },
    /// The metadata store failed.
    #[error(transparent)]
    Metadata(#[from] MetaError),
}

/// A body as its item holds it.
pub fn to_json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).expect("items serialize to JSON")
}

/// Parses an item body, naming the item when it does not fit.
pub fn parse_body<T: serde::de::DeserializeOwned>(datasource: &str, item: &Item) -> Result<T, DatasourceError> {
    serde_json::from_value(item.body.clone()).map_err(|e| DatasourceError::Corrupt {
        datasource: datasource.into(),
        sk: item.sk.clone(),
        reason: e.to_string(),
    })
}

/// A datasource's items under `prefix` (`plan#`, `offsets#`) by group number, with versions.
pub async fn query_groups<T: serde::de::DeserializeOwned>(
    meta: &dyn MetadataStore,
    datasource: &str,
    prefix: &str,
) -> Result<BTreeMap<u32, (T, u64)>, DatasourceError> {
    let mut out = BTreeMap::new();
    for item in meta.query(&datasource_pk(datasource), prefix).await? {
        let group = group_of(&item.sk, prefix).ok_or_else(|| DatasourceError::Corrupt {
            datasource: datasource.into(),
            sk: item.sk.clone(),
            reason: "malformed key: no group number".into(),
        })?;
        out.insert(group, (parse_body::<T>(datasource, &item)?, item.version));
    }
    Ok(out)
}

/// The datasource names of the catalog.
pub async fn list(meta: &dyn MetadataStore) -> Result<Vec<String>, DatasourceError> {
    Ok(meta
        .query(CATALOG_PK, CATALOG_PREFIX)
        .await?
        .into_iter()
        .filter_map(|i| i.sk.strip_prefix(CATALOG_PREFIX).map(String::from))
        .collect())
}

/// A datasource's spec item with its version, or [`DatasourceError::Unknown`].
pub async fn load(meta: &dyn MetadataStore, datasource: &str) -> Result<(SpecItem, u64), DatasourceError> {
    let item = meta
        .get(&datasource_pk(datasource), SPEC_SK)
        .await?
        .ok_or_else(|| DatasourceError::Unknown(datasource.into()))?;
    Ok((parse_body(datasource, &item)?, item.version))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_layout::keys::{catalog_sk, plan_sk, PLAN_PREFIX};
    use sluice_store::metadata::{open_metadata, Condition};

    #[tokio::test]
    async fn datasources_read_back_as_written_and_malformed_items_are_named() {
        let dir = tempfile::tempdir().expect("temp dir");
        let meta = open_metadata(&format!("file://{}", dir.path().display())).await.expect("embedded store");
        let meta = meta.as_ref();
        assert!(list(meta).await.expect("list").is_empty());
        assert!(matches!(load(meta, "wiki").await, Err(DatasourceError::Unknown(name)) if name == "wiki"));
        let spec = SpecItem {
            spec: serde_json::json!({"type": "kafka"}),
            state: SupervisorState::Running,
            schema_history: vec![],
        };
        let body = serde_json::to_value(&spec).expect("spec body");
        meta.put(Item::new(datasource_pk("wiki"), SPEC_SK, body), Condition::Absent).await.expect("spec");
        meta.put(Item::new(CATALOG_PK, catalog_sk("wiki"), serde_json::json!({})), Condition::None)
            .await
            .expect("name");
        assert_eq!(list(meta).await.expect("list"), ["wiki"]);
        assert_eq!(load(meta, "wiki").await.expect("load").0, spec);
        // A body that does not fit, and a group key without its number, name their item.
        meta.put(Item::new(datasource_pk("wiki"), plan_sk(3), serde_json::json!("no plan")), Condition::None)
            .await
            .expect("plan");
        let err = query_groups::<serde_json::Map<String, serde_json::Value>>(meta, "wiki", PLAN_PREFIX)
            .await
            .expect_err("malformed plan");
        assert!(matches!(&err, DatasourceError::Corrupt { sk, .. } if *sk == plan_sk(3)), "{err}");
        meta.put(Item::new(datasource_pk("wiki"), format!("{PLAN_PREFIX}x"), serde_json::json!({})), Condition::None)
            .await
            .expect("plan");
        let err = query_groups::<serde_json::Value>(meta, "wiki", PLAN_PREFIX).await.expect_err("no group number");
        assert!(err.to_string().contains("no group number"), "{err}");
    }
}
