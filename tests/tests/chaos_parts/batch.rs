//! The chaos schedules' batch tasks: an `index_parallel` append of local files (cut into
//! byte-range splits of a few hundred bytes, indexed by up to three invocations at once) into
//! the stream's hours and hour 5, resubmitted once; once it published, an overwrite of hour 5.
//! Their jobs run among the stream's, with the same faults; the records each task published
//! must be visible once, and an overwrite's hour hold only its rows.

use serde_json::{json, Value};
use sluice_integration::indexing::spec;
use sluice_pipeline::batch::{self, find, BatchState};
use sluice_store::faults::Rng;
use sluice_store::metadata::MetadataStore;
use std::io::Write;

/// Hours of 2015-09-12 the append's rows fall in (the stream's are 0 to 2).
const HOURS: [usize; 4] = [0, 1, 2, 5];
/// Rows of the overwrite, all in hour 5.
const OVERWRITE_ROWS: usize = 5;

/// One schedule's batch tasks.
pub struct BatchPart {
    dir: tempfile::TempDir,
    datasource: String,
    rows: usize,
    split_bytes: u64,
    concurrent: u64,
    append: Option<String>,
    overwrite: Option<String>,
}

fn row(id: &str, hour: usize, n: usize) -> String {
    format!(r#"{{"ts": "2015-09-12T0{hour}:{:02}:00Z", "id": "{id}", "page": "p{}", "added": {n}}}"#, n % 60, n % 7)
}

impl BatchPart {
    /// Input files of 30 to 90 rows: two plain, one gzipped (read whole).
    pub fn new(rng: &mut Rng, datasource: &str) -> Self {
        let dir = tempfile::tempdir().expect("batch input");
        let rows = 30 + rng.below(60) as usize;
        let mut files = [String::new(), String::new(), String::new()];
        for n in 0..rows {
            files[n % 3].push_str(&row(&format!("b{n}"), HOURS[n % 4], n));
            files[n % 3].push('\n');
        }
        std::fs::write(dir.path().join("a.json"), &files[0]).expect("write");
        std::fs::write(dir.path().join("b.json"), &files[1]).expect("write");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(files[2].as_bytes()).expect("gzip");
        std::fs::write(dir.path().join("c.json.gz"), gz.finish().expect("gzip")).expect("write");
        batch::allow_in_process(Some(dir.path()), None);
        BatchPart {
            dir,
            datasource: datasource.into(),
            rows,
            split_bytes: 150 + rng.below(500),
            concurrent: 1 + rng.below(3),
            append: None,
            overwrite: None,
        }
    }

    fn spec(&self, id: &str, input: Value, append: bool) -> Value {
        // The stream's data schema (tests/src/indexing.rs), its chunks hourly.
        let schema =
            spec(&self.datasource, "t", "b:9092", json!({"type": "json"}), json!({}))["spec"]["dataSchema"].clone();
        json!({"type": "index_parallel", "id": id, "spec": {
            "dataSchema": schema,
            "ioConfig": {"type": "index_parallel", "inputSource": input, "inputFormat": {"type": "json"},
                "appendToExisting": append},
            "tuningConfig": {"type": "index_parallel", "maxNumConcurrentSubTasks": self.concurrent, "maxRowsInMemory": 7,
                "splitHintSpec": {"type": "maxSize", "maxSplitSize": self.split_bytes, "maxNumFiles": 2}}
        }})
    }

    fn append_spec(&self) -> Value {
        let input = json!({"type": "local", "baseDir": self.dir.path().display().to_string(), "filter": "*.json*"});
        self.spec(&format!("{}-append", self.datasource), input, true)
    }

    /// Submits the append at `iteration` 3 (and once more at 6: the same task), the overwrite
    /// once the append published.
    pub async fn step(&mut self, meta: &dyn MetadataStore, iteration: usize, count: impl Fn(&'static str)) {
        let access = batch::process_access();
        if iteration == 3 || iteration == 6 {
            match batch::submit(meta, &access, self.append_spec(), sluice_format::time::now_ms()).await {
                Ok(s) => {
                    assert!(self.append.is_none() || s.existed, "a resubmitted id is the same task: {s:?}");
                    count(if s.existed { "batch task resubmitted" } else { "batch task submitted" });
                    self.append = Some(s.id);
                }
                Err(e) => panic!("batch append: {e}"),
            }
        }
        if self.overwrite.is_none() && self.state(meta, self.append.as_deref()).await == Some(BatchState::Published) {
            let data: Vec<String> = (0..OVERWRITE_ROWS).map(|n| row(&format!("o{n}"), 5, n)).collect();
            let input = json!({"type": "inline", "data": data.join("\n")});
            let spec = self.spec(&format!("{}-overwrite", self.datasource), input, false);
            let s = batch::submit(meta, &access, spec, sluice_format::time::now_ms()).await.expect("batch overwrite");
            count("batch overwrite submitted");
            self.overwrite = Some(s.id);
        }
    }

    async fn state(&self, meta: &dyn MetadataStore, id: Option<&str>) -> Option<BatchState> {
        let id = id?;
        find(meta, id).await.expect("batch task").map(|(t, _)| t.state)
    }

    /// Whether every task submitted finished and the overwrite was submitted when it could be.
    pub async fn finished(&self, meta: &dyn MetadataStore) -> bool {
        let append = self.state(meta, self.append.as_deref()).await;
        let overwrite = self.state(meta, self.overwrite.as_deref()).await;
        match (append, overwrite) {
            (Some(BatchState::Failed), _) => true,
            (Some(BatchState::Published), Some(o)) => o != BatchState::Running,
            _ => false,
        }
    }

    /// The tasks and their splits, a line each (for a schedule that does not finish).
    pub async fn describe(&self, meta: &dyn MetadataStore) -> String {
        let mut out = Vec::new();
        for id in [&self.append, &self.overwrite].into_iter().flatten() {
            let Ok(Some((task, _))) = find(meta, id).await else { continue };
            out.push(format!("  {id}: {:?} {:?}", task.state, task.error));
            let splits = meta.query(&sluice_pipeline::keys::batch_pk(id), sluice_pipeline::keys::SPLIT_PREFIX).await;
            for item in splits.unwrap_or_default() {
                let b = &item.body;
                out.push(format!(
                    "    split {}: {} attempt {} since {} for {} ms (now {}) error {}",
                    b["n"],
                    b["state"],
                    b["attempt"],
                    b["startedMs"],
                    b["leaseMs"],
                    sluice_format::time::now_ms(),
                    b["error"]
                ));
            }
        }
        out.join("\n")
    }

    /// The ids the batch tasks leave visible (none of hour 0 when retention drops it), and how
    /// each task ended, counted.
    pub async fn expected(
        &self,
        meta: &dyn MetadataStore,
        drop_first_hour: bool,
        count: impl Fn(&'static str),
    ) -> Vec<String> {
        let append = self.state(meta, self.append.as_deref()).await;
        let overwrite = self.state(meta, self.overwrite.as_deref()).await;
        // Why a task failed, for the run's log.
        for id in [&self.append, &self.overwrite].into_iter().flatten() {
            if let Ok(Some((task, _))) = find(meta, id).await {
                if let Some(error) = task.error {
                    eprintln!("chaos: batch task {id} failed: {error}");
                }
            }
        }
        count(match append {
            Some(BatchState::Published) => "batch append published",
            _ => "batch append failed",
        });
        let overwritten = overwrite == Some(BatchState::Published);
        count(match overwrite {
            Some(BatchState::Published) => "batch overwrite published",
            Some(BatchState::Failed) => "batch overwrite failed (a segment past hour 5)",
            _ => "batch overwrite not submitted",
        });
        let mut out = Vec::new();
        if append == Some(BatchState::Published) {
            for n in 0..self.rows {
                let hour = HOURS[n % 4];
                let gone = (drop_first_hour && hour == 0) || (overwritten && hour == 5);
                if !gone {
                    out.push(format!("b{n}"));
                }
            }
        }
        if overwritten {
            out.extend((0..OVERWRITE_ROWS).map(|n| format!("o{n}")));
        }
        out
    }
}
