//! Datasources as the metadata store holds them: the catalog of datasource names, and per
//! datasource the submitted spec with its state and the history of its schema changes, the
//! specs submitted before it (`history#`, redacted), the
//! planning state (`plan#`) and the committed offsets (`offsets#`) of each partition group.
//! This module writes them (submit, supervisor state); the reads are `sluice-metastore`'s,
//! re-exported here. Layout: `docs/metadata-layout.md`.

pub use crate::item::DatasourceError;
use crate::item::{parse_body, to_json};
use crate::keys::{catalog_sk, datasource_pk, history_sk, CATALOG_PK, HISTORY_PREFIX, SPEC_SK};
pub use crate::layout::datasource::{
    OffsetsItem, PlanItem, SchemaChange, SpecItem, SpecVersion, SupervisorState, MAX_SPEC_VERSIONS,
};
use crate::layout::task::MAX_SPEC_BYTES;
use sluice_format::spec::{load_spec_value, DatasourceSpec};
use sluice_layout::timeline_log::Change;
pub use sluice_metastore::datasource::{list, load};
use sluice_metastore::timeline::head::transact_visible;
use sluice_store::metadata::{Condition, Item, MetadataStore, TxOp};

/// What a submit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submitted {
    /// A new datasource.
    Created,
    /// The spec replaced the previous one; `schema_changed` when dimensions or metrics differ.
    Updated {
        /// Whether the dimension or metric schema changed (recorded in the history).
        schema_changed: bool,
    },
}

fn schema(spec: &DatasourceSpec) -> (Vec<String>, Vec<String>) {
    (
        spec.dimensions.iter().map(|d| d.name.clone()).collect(),
        spec.metrics.iter().map(|m| m.name().to_string()).collect(),
    )
}

/// Submits (creates or replaces) a datasource's spec; a running datasource keeps running,
/// a terminated one starts again. Returns what happened and the spec's warnings.
pub async fn submit(
    meta: &dyn MetadataStore,
    spec_json: serde_json::Value,
    now_ms: i64,
) -> Result<(String, Submitted, Vec<String>), DatasourceError> {
    let bytes = spec_json.to_string().len();
    if bytes > MAX_SPEC_BYTES {
        return Err(DatasourceError::InvalidSpec {
            datasource: String::new(),
            reason: format!(
                "the spec is {bytes} bytes of JSON, over the {MAX_SPEC_BYTES}-byte limit: every task carries its \
                 spec in a metadata item of at most 400 KB"
            ),
        });
    }
    let loaded = load_spec_value(spec_json.clone())
        .map_err(|e| DatasourceError::InvalidSpec { datasource: String::new(), reason: e.to_string() })?;
    let name = loaded.spec.data_source.clone();
    // Refused now rather than at the first pass: a spec may not set where or how Sluice
    // connects when the deployment configures Kafka (its secret).
    sluice_kafka::ConsumerSettings::new(&loaded.spec.io.consumer_properties)
        .map_err(|e| DatasourceError::InvalidSpec { datasource: name.clone(), reason: e.to_string() })?;
    // A spec the indexers could not parse records with is refused here, not at every task.
    crate::schemas::schema_sources(&loaded.spec, &crate::schemas::descriptor_dir())
        .await
        .map_err(|e| e.to_string())
        .and_then(|sources| sluice_format::input::RecordParser::check(&loaded.spec, sources).map_err(|e| e.to_string()))
        .map_err(|reason| DatasourceError::InvalidSpec { datasource: name.clone(), reason })?;
    let (dimensions, metrics) = schema(&loaded.spec);
    let change = SchemaChange { at_ms: now_ms, dimensions, metrics };
    let pk = datasource_pk(&name);
    match meta.get(&pk, SPEC_SK).await? {
        None => {
            let item = SpecItem { spec: spec_json, state: SupervisorState::Running, schema_history: vec![change] };
            let version = history_put(&pk, &item.spec, now_ms);
            let ops = vec![
                TxOp::Put { item: Item::new(&pk, SPEC_SK, to_json(&item)), condition: Condition::Absent },
                TxOp::Put {
                    item: Item::new(CATALOG_PK, catalog_sk(&name), serde_json::json!({})),
                    condition: Condition::None,
                },
                version,
            ];
            // The timeline's head is written with the spec: the supervisor makes it ready.
            transact_visible(meta, &name, ops, Change::Reset, (&[], &[]), now_ms).await?;
            trim_history(meta, &pk).await?;
            Ok((name, Submitted::Created, loaded.warnings.iter().map(ToString::to_string).collect()))
        }
        Some(current) => {
            let mut item: SpecItem = parse_body(&name, &current)?;
            let last = item.schema_history.last();
            let schema_changed = last.is_none_or(|l| l.dimensions != change.dimensions || l.metrics != change.metrics);
            if schema_changed {
                tracing::warn!(datasource = name, ?change, "schema change: applies to tasks planned from now on");
                item.schema_history.push(change);
                // Informational only: the oldest entries go, so the item stays under 400 KB.
                let over = item.schema_history.len().saturating_sub(MAX_SCHEMA_HISTORY);
                item.schema_history.drain(..over);
                while item.schema_history.len() > 1 && to_json(&item).to_string().len() > MAX_SPEC_ITEM_BYTES {
                    item.schema_history.remove(0);
                }
            }
            // Whether queries read what running tasks checkpointed: a change readers cannot
            // follow from what they kept.
            let was_realtime = load_spec_value(item.spec.clone()).is_ok_and(|s| s.spec.sluice.realtime.is_some());
            let mode_changed = was_realtime != loaded.spec.sluice.realtime.is_some();
            item.spec = spec_json;
            if item.state == SupervisorState::Terminated {
                item.state = SupervisorState::Running;
            }
            let version = history_put(&pk, &item.spec, now_ms);
            let spec = Item::new(&pk, SPEC_SK, to_json(&item));
            let ops = vec![TxOp::Put { item: spec, condition: Condition::Version(current.version) }, version];
            if mode_changed {
                transact_visible(meta, &name, ops, Change::Reset, (&[], &[]), now_ms).await?;
            } else {
                meta.transact(ops).await?;
            }
            trim_history(meta, &pk).await?;
            Ok((name, Submitted::Updated { schema_changed }, loaded.warnings.iter().map(ToString::to_string).collect()))
        }
    }
}

/// The write of a submitted spec into the supervisor's history (redacted: the history is
/// shown, and keeps no copy of a secret).
fn history_put(pk: &str, spec: &serde_json::Value, now_ms: i64) -> TxOp {
    let version = SpecVersion { submitted_ms: now_ms, spec: sluice_format::spec::redacted_spec(spec) };
    TxOp::Put { item: Item::new(pk, history_sk(now_ms), to_json(&version)), condition: Condition::None }
}

/// Deletes the oldest specs of the history past [`MAX_SPEC_VERSIONS`].
async fn trim_history(meta: &dyn MetadataStore, pk: &str) -> Result<(), DatasourceError> {
    let versions = meta.query(pk, HISTORY_PREFIX).await?;
    for old in versions.iter().take(versions.len().saturating_sub(MAX_SPEC_VERSIONS)) {
        meta.delete(pk, &old.sk, Condition::None).await?;
    }
    Ok(())
}

/// The specs submitted for a datasource, newest first (at most [`MAX_SPEC_VERSIONS`]; none for
/// specs submitted before releases kept a history).
pub async fn history(meta: &dyn MetadataStore, datasource: &str) -> Result<Vec<SpecVersion>, DatasourceError> {
    let items = meta.query(&datasource_pk(datasource), HISTORY_PREFIX).await?;
    items.iter().rev().map(|i| parse_body(datasource, i)).collect()
}

/// Sets a datasource's supervisor state (suspend, resume, terminate).
pub async fn set_state(
    meta: &dyn MetadataStore,
    datasource: &str,
    state: SupervisorState,
) -> Result<(), DatasourceError> {
    let (mut item, version) = load(meta, datasource).await?;
    item.state = state;
    meta.put(Item::new(datasource_pk(datasource), SPEC_SK, to_json(&item)), Condition::Version(version)).await?;
    Ok(())
}

/// Schema changes kept in the spec item, newest last.
pub const MAX_SCHEMA_HISTORY: usize = 50;
/// Size the schema history may bring the spec item to, leaving room under DynamoDB's 400 KB.
const MAX_SPEC_ITEM_BYTES: usize = 300 << 10;

pub use sluice_format::spec::redacted_spec;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_from_specs_shown() {
        let spec = serde_json::json!({"spec": {"ioConfig": {"topic": "t", "consumerProperties": {
            "bootstrap.servers": "b:9092",
            "sasl.password": "hunter2",
            "sasl.jaas.config": "PlainLoginModule required password=\"hunter2\";",
            "ssl.key.pem": "-----BEGIN PRIVATE KEY-----"
        }}}});
        let shown = redacted_spec(&spec);
        let text = shown.to_string();
        assert!(!text.contains("hunter2") && !text.contains("PRIVATE KEY"), "{text}");
        assert_eq!(shown["spec"]["ioConfig"]["consumerProperties"]["bootstrap.servers"], "b:9092");
        assert_eq!(shown["spec"]["ioConfig"]["consumerProperties"]["sasl.password"], "<redacted>");
        let legacy = serde_json::json!({"ioConfig": {"consumerProperties": {"sasl.password": "hunter2"}}});
        assert_eq!(redacted_spec(&legacy)["ioConfig"]["consumerProperties"]["sasl.password"], "<redacted>");
    }

    #[tokio::test]
    async fn specs_too_large_for_a_task_item_are_refused_at_submit() {
        let (_dir, meta) = embedded().await;
        let path = format!("{}/../../data/specs/wikipedia-kafka-supervisor.json", env!("CARGO_MANIFEST_DIR"));
        let mut spec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("spec")).expect("spec JSON");
        // Druid keeps unknown context: a large one is what makes a spec near 400 KB.
        spec["context"] = serde_json::json!({"note": "x".repeat(400 << 10)});
        let err = submit(meta.as_ref(), spec.clone(), 0).await.expect_err("too large");
        assert!(err.to_string().contains(&format!("over the {MAX_SPEC_BYTES}-byte limit")), "{err}");
        assert!(list(meta.as_ref()).await.expect("list").is_empty(), "nothing was written");
        // A spec at the limit still fits a task item of thousands of partitions, with positions
        // and an error.
        let around_the_note = spec.to_string().len() - (400 << 10);
        spec["context"]["note"] = "x".repeat(MAX_SPEC_BYTES - around_the_note).into();
        assert_eq!(spec.to_string().len(), MAX_SPEC_BYTES);
        let ranges: Vec<_> = (0..2_000)
            .map(|p| sluice_format::offsets::OffsetRange { partition: p, start: i64::MAX / 2, end: i64::MAX / 2 + 1 })
            .collect();
        let id = crate::layout::task::TaskId { datasource: "d".repeat(255), group: 1, seq: u64::MAX };
        let mut task = crate::layout::task::TaskItem::planned(
            id.clone(),
            spec,
            "t".repeat(249).as_str(),
            ranges,
            Default::default(),
            0,
        );
        task.error = Some("e".repeat(4 << 10));
        let item = Item::new(id.pk(), id.sk(), to_json(&task));
        assert!(item.size() <= sluice_store::metadata::MAX_ITEM_BYTES, "{} bytes", item.size());
        submit(meta.as_ref(), task.spec, 0).await.expect("a spec at the limit is taken");
    }

    /// An embedded metadata store in a folder that lives as long as the guard.
    async fn embedded() -> (tempfile::TempDir, std::sync::Arc<dyn MetadataStore>) {
        let dir = tempfile::tempdir().expect("temp dir");
        let meta = sluice_store::metadata::open_metadata(&format!("file://{}", dir.path().display()))
            .await
            .expect("embedded store");
        (dir, meta)
    }

    #[tokio::test]
    async fn the_schema_history_keeps_the_latest_changes() {
        let (_dir, meta) = embedded().await;
        let path = format!("{}/../../data/specs/wikipedia-kafka-supervisor.json", env!("CARGO_MANIFEST_DIR"));
        let mut spec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("spec")).expect("spec JSON");
        for i in 0..MAX_SCHEMA_HISTORY + 10 {
            let dimensions = spec.pointer_mut("/dataSchema/parser/parseSpec/dimensionsSpec/dimensions").expect("dims");
            *dimensions = serde_json::json!([format!("d{i}")]);
            submit(meta.as_ref(), spec.clone(), i as i64).await.expect("submit");
        }
        let (item, _) = load(meta.as_ref(), "wikipedia").await.expect("load");
        assert_eq!(item.schema_history.len(), MAX_SCHEMA_HISTORY);
        let last = format!("d{}", MAX_SCHEMA_HISTORY + 9);
        assert_eq!(item.schema_history.last().map(|c| c.dimensions.clone()), Some(vec![last]));
    }

    #[tokio::test]
    async fn specs_the_indexers_could_not_parse_with_are_refused_at_submission() {
        let (_dir, meta) = embedded().await;
        let recursive = serde_json::json!({"type": "record", "name": "Node", "fields": [
            {"name": "ts", "type": "long"}, {"name": "next", "type": ["null", "Node"]}]});
        let dir = tempfile::tempdir().expect("dir");
        let not_a_set = dir.path().join("not-a-set.desc");
        std::fs::write(&not_a_set, b"\xff\xff").expect("write");
        let avro = |decoder| serde_json::json!({"type": "avro_stream", "avroBytesDecoder": decoder});
        let protobuf = |decoder| serde_json::json!({"type": "protobuf", "protoBytesDecoder": decoder});
        for (format, refusal) in [
            (avro(serde_json::json!({"type": "schema_inline", "schema": recursive})), "refers to itself"),
            (
                avro(serde_json::json!({"type": "schema_registry", "url": "http://r",
                    "config": {"basic.auth.credentials.source": "SASL_INHERIT"}})),
                "SASL_INHERIT",
            ),
            (protobuf(serde_json::json!({"type": "file", "descriptor": "/nonexistent/x.desc"})), "/nonexistent/x.desc"),
            (
                protobuf(serde_json::json!({"type": "file", "descriptor": not_a_set.display().to_string()})),
                "SLUICE_DESCRIPTOR_DIR names no directory",
            ),
            (protobuf(serde_json::json!({"type": "inline", "descriptorString": ""})), "holds no files"),
        ] {
            let spec = serde_json::json!({"type": "kafka", "spec": {
                "dataSchema": {"dataSource": "d", "timestampSpec": {"column": "ts", "format": "millis"},
                    "dimensionsSpec": {"dimensions": []}},
                "ioConfig": {"topic": "t", "consumerProperties": {"bootstrap.servers": "b:9092"},
                    "inputFormat": format}}});
            match submit(meta.as_ref(), spec, 0).await {
                Err(DatasourceError::InvalidSpec { reason, .. }) => assert!(reason.contains(refusal), "{reason}"),
                other => panic!("expected the spec refused, got {other:?}"),
            }
        }
        assert!(list(meta.as_ref()).await.expect("catalog").is_empty(), "nothing was stored");
    }
}
