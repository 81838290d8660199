//! A datasource in a fresh embedded metadata store and local deep storage, and batch specs
//! over files of a directory the test allows.

use serde_json::{json, Value};
use sluice_format::time::now_ms;
use sluice_pipeline::batch::{self, BatchAccess, BatchError, Submitted};
use sluice_store::metadata::EmbeddedStore;
use sluice_store::storage::LocalStore;
use std::path::{Path, PathBuf};

/// A fresh deployment: its stores, a datasource `wikipedia` and an input directory.
pub struct Env {
    /// Holds the stores and the input.
    pub dir: tempfile::TempDir,
    /// The metadata store.
    pub meta: EmbeddedStore,
    /// Deep storage.
    pub store: LocalStore,
}

/// The datasource every test writes.
pub const DS: &str = "wikipedia";

impl Env {
    /// A deployment whose datasource `wikipedia` exists.
    pub async fn new() -> Env {
        let dir = tempfile::tempdir().expect("dir");
        let meta = EmbeddedStore::open("embedded://test", &dir.path().join("meta")).expect("metadata");
        let storage = dir.path().join("storage");
        let store = LocalStore::open(&format!("file://{}", storage.display()), &storage.display().to_string())
            .expect("storage");
        std::fs::create_dir(dir.path().join("input")).expect("input dir");
        let env = Env { dir, meta, store };
        env.add_datasource(DS).await;
        env
    }

    /// Submits the supervisor spec of datasource `name` (the same schema).
    pub async fn add_datasource(&self, name: &str) {
        let spec = json!({"type": "kafka", "spec": {
            "dataSchema": data_schema_of(name),
            "ioConfig": {"topic": "t", "inputFormat": {"type": "json"},
                "consumerProperties": {"bootstrap.servers": "localhost:9"}},
            "tuningConfig": {}
        }});
        sluice_pipeline::datasource::submit(&self.meta, spec, now_ms()).await.expect("datasource");
    }

    /// The directory batch input may come from.
    pub fn input(&self) -> PathBuf {
        self.dir.path().join("input")
    }

    /// What the deployment allows: the input directory.
    pub fn access(&self) -> BatchAccess {
        BatchAccess::default().allow_dir(&self.input())
    }

    /// Submits `spec`.
    pub async fn submit(&self, spec: Value) -> Result<Submitted, BatchError> {
        batch::submit(&self.meta, &self.access(), spec, now_ms()).await
    }

    /// Writes `text` to the input file `name` and submits a task reading it: the file and the task.
    pub async fn submit_file(&self, name: &str, text: &str) -> (PathBuf, Submitted) {
        let file = self.input().join(name);
        std::fs::write(&file, text).expect("write");
        let submitted = self.submit(spec(local(&[&file]), json!({}))).await.expect("submit");
        (file, submitted)
    }
}

/// The datasource's schema, the stream's and its batch tasks'.
fn data_schema_of(datasource: &str) -> Value {
    json!({
        "dataSource": datasource,
        "timestampSpec": {"column": "ts", "format": "iso"},
        "dimensionsSpec": {"dimensions": ["id"]},
        "metricsSpec": [{"type": "count", "name": "count"}],
        "granularitySpec": {"segmentGranularity": "hour", "queryGranularity": "none", "rollup": false}
    })
}

/// `n` JSON records, one a line.
pub fn rows(n: usize) -> String {
    (0..n).map(|i| format!("{{\"ts\": \"2015-09-12T00:00:{:02}Z\", \"id\": \"r{i}\"}}\n", i % 60)).collect()
}

/// An `index_parallel` spec of the datasource over `input`.
pub fn spec(input: Value, tuning: Value) -> Value {
    spec_of(DS, input, tuning)
}

/// An `index_parallel` spec of `datasource` over `input`.
pub fn spec_of(datasource: &str, input: Value, tuning: Value) -> Value {
    let mut tuning_config = json!({"type": "index_parallel"});
    for (k, v) in tuning.as_object().into_iter().flatten() {
        tuning_config[k] = v.clone();
    }
    json!({"type": "index_parallel", "spec": {
        "dataSchema": data_schema_of(datasource),
        "ioConfig": {"type": "index_parallel", "inputSource": input, "inputFormat": {"type": "json"},
            "appendToExisting": true},
        "tuningConfig": tuning_config
    }})
}

/// A `local` input source listing `files`.
pub fn local(files: &[&Path]) -> Value {
    json!({"type": "local", "files": files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>()})
}
