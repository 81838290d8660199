//! Indexing tasks in tests: a spec over a test topic, a planned task item, and the rows the
//! hydrants of a task hold once merged.

use sluice_format::merge::{merge, MergeOptions};
use sluice_format::row::DimValue;
use sluice_format::segment::Segment;
use sluice_format::spec::Compression;
use sluice_kafka::OffsetRange;
use sluice_pipeline::indexer::MessageWindow;
use sluice_pipeline::task::{HydrantRef, TaskId, TaskItem};
use sluice_store::metadata::{Condition, Item, MetadataStore};
use sluice_store::storage::ObjectStore;
use std::collections::BTreeMap;

/// A Druid Kafka supervisor spec for `topic`: dimensions `id` and `page`, a count and a sum of
/// `added`, hourly chunks, rollup off; `input_format` and `tuning` as given.
pub fn spec(
    datasource: &str,
    topic: &str,
    bootstrap: &str,
    input_format: serde_json::Value,
    tuning: serde_json::Value,
) -> serde_json::Value {
    serde_json::json!({"type": "kafka", "spec": {
        "dataSchema": {
            "dataSource": datasource,
            "timestampSpec": {"column": "ts", "format": "iso"},
            "dimensionsSpec": {"dimensions": ["id", "page"]},
            "metricsSpec": [{"type": "count", "name": "count"}, {"type": "longSum", "name": "added", "fieldName": "added"}],
            "granularitySpec": {"segmentGranularity": "hour", "queryGranularity": "none", "rollup": false}
        },
        "ioConfig": {"topic": topic, "inputFormat": input_format,
            "consumerProperties": {"bootstrap.servers": bootstrap, "sluice.stall.timeout.ms": "10000"}},
        "tuningConfig": tuning
    }})
}

/// A JSON record with a unique `id`, in hour `n % 3` of 2015-09-12.
pub fn json_record(id: &str, n: usize) -> Vec<u8> {
    format!(r#"{{"ts": "2015-09-12T0{}:{:02}:00Z", "id": "{id}", "page": "p{}", "added": {n}}}"#, n % 3, n % 60, n % 7)
        .into_bytes()
}

/// Writes a planned task item for `ranges` of `topic` and returns its id.
pub async fn plan(meta: &dyn MetadataStore, spec: &serde_json::Value, ranges: Vec<OffsetRange>) -> TaskId {
    let datasource = spec["spec"]["dataSchema"]["dataSource"].as_str().expect("dataSource").to_string();
    let topic = spec["spec"]["ioConfig"]["topic"].as_str().expect("topic").to_string();
    let id = TaskId { datasource, group: 0, seq: 1 };
    let item = TaskItem::planned(id.clone(), spec.clone(), &topic, ranges, MessageWindow::default(), 0);
    let body = serde_json::to_value(&item).expect("task item");
    meta.put(Item::new(id.pk(), id.sk(), body), Condition::Absent).await.expect("plan the task");
    id
}

/// The values of dimension `dim` over every row of the hydrants, merged per time chunk as the
/// merger will merge them; sorted.
pub async fn merged_values(store: &dyn ObjectStore, hydrants: &[HydrantRef], dim: &str) -> Vec<String> {
    let mut chunks: BTreeMap<i64, Vec<Segment>> = BTreeMap::new();
    for h in hydrants {
        let bytes = store.get(&h.key).await.expect("hydrant object");
        assert_eq!(bytes.len() as u64, h.num_bytes, "{}: size as checkpointed", h.key);
        let segment = Segment::from_bytes(&h.key, bytes.to_vec()).expect("hydrant decodes");
        assert_eq!(segment.num_rows() as u64, h.num_rows, "{}: rows as checkpointed", h.key);
        chunks.entry(h.chunk.start).or_default().push(segment);
    }
    let options = MergeOptions { max_rows_per_segment: 5_000_000, compression: Compression::default() };
    let mut values = Vec::new();
    for parts in chunks.values() {
        for bytes in merge(parts, &options).expect("merge") {
            let segment = Segment::from_bytes("merged", bytes).expect("merged segment");
            push_values(&segment, dim, &mut values);
        }
    }
    values.sort();
    values
}

/// Appends the value of dimension `dim` of every row of `segment`.
fn push_values(segment: &Segment, dim: &str, values: &mut Vec<String>) {
    let dims: Vec<String> =
        segment.directory().columns[1..].iter().filter(|c| c.aggregator.is_none()).map(|c| c.name.clone()).collect();
    let at = dims.iter().position(|d| d == dim).expect("dimension present");
    for (_, row, _) in segment.read_rows().expect("rows") {
        match &row[at] {
            DimValue::Str(s) => values.push(s.clone()),
            other => values.push(format!("{other:?}")),
        }
    }
}

/// Stores a test runs a task against: kept alive by the guard.
#[derive(Clone)]
pub struct Backends {
    /// The metadata store.
    pub meta: std::sync::Arc<dyn MetadataStore>,
    /// The object store.
    pub store: std::sync::Arc<dyn ObjectStore>,
    _dir: Option<std::sync::Arc<tempfile::TempDir>>,
}

impl Backends {
    /// Local files and the embedded metadata store in a fresh temporary folder.
    pub async fn local() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().display().to_string();
        let meta = sluice_store::metadata::open_metadata(&format!("file://{root}/meta")).await.expect("embedded");
        let store = sluice_store::storage::open_store(&format!("file://{root}/store")).await.expect("local store");
        Self { meta, store, _dir: Some(std::sync::Arc::new(dir)) }
    }

    /// S3 and DynamoDB at the endpoint `localstack/up.sh` starts, under a fresh prefix.
    pub async fn aws() -> Self {
        let url = crate::required_env("SLUICE_STORAGE");
        let store =
            sluice_store::storage::open_store(&format!("{}/{}", url.trim_end_matches('/'), crate::unique("task")))
                .await
                .expect("S3 store");
        let meta =
            sluice_store::metadata::open_metadata(&crate::required_env("SLUICE_METADATA")).await.expect("DynamoDB");
        Self { meta, store, _dir: None }
    }

    /// The same backends with the metadata store `meta` (a wrapper of this one).
    pub fn with_meta(&self, meta: std::sync::Arc<dyn MetadataStore>) -> Self {
        Self { meta, store: self.store.clone(), _dir: self._dir.clone() }
    }

    /// Deletes every object of the store (its prefix is the test's own) and every item of
    /// `datasource`, so that a long run does not grow the endpoint's memory and tables.
    pub async fn discard(&self, datasource: &str) {
        use sluice_pipeline::keys::{catalog_sk, datasource_pk, group_pk, CATALOG_PK};
        use sluice_store::metadata::Condition;
        for object in self.store.list("").await.expect("list the test's objects") {
            self.store.delete(&object.key).await.expect("delete an object");
        }
        let groups = sluice_pipeline::task::planned_groups(self.meta.as_ref(), datasource).await.expect("the groups");
        let keys = groups.into_keys().map(|g| group_pk(datasource, g)).chain([datasource_pk(datasource)]);
        for pk in keys {
            for item in self.meta.query(&pk, "").await.expect("the datasource's items") {
                self.meta.delete(&pk, &item.sk, Condition::None).await.expect("delete an item");
            }
        }
        let catalog = catalog_sk(datasource);
        self.meta.delete(CATALOG_PK, &catalog, Condition::None).await.expect("delete the catalog item");
    }
}

/// The values of dimension `dim` in every visible segment of `datasource`, sorted: what a
/// query sees.
pub async fn visible_values(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    datasource: &str,
    dim: &str,
) -> Vec<String> {
    let mut values = Vec::new();
    for record in sluice_pipeline::timeline::visible_segments(meta, datasource).await.expect("timeline") {
        let bytes = store.get(&record.key).await.expect("segment object");
        let segment = Segment::from_bytes(&record.key, bytes.to_vec()).expect("segment decodes");
        push_values(&segment, dim, &mut values);
    }
    values.sort();
    values
}
