//! Pieces of the protocol tests: a datasource over a fresh topic and its task items.

use crate::indexing::{json_record, spec, Backends};
use crate::kafka::{create_topic, produce};
use sluice_pipeline::datasource::submit;
use sluice_pipeline::task::TaskItem;

/// A datasource with records in its topic.
pub struct Setup {
    /// The stores.
    pub b: Backends,
    /// The datasource.
    pub name: String,
    /// Records produced: ids `r0`, `r1`, ...
    pub num_records: usize,
    /// The topic.
    pub topic: String,
    /// Its partitions.
    pub partitions: i32,
}

/// Supervisor passes and jobs in this process until `datasource` is caught up (40 passes at
/// most, or the test fails).
pub async fn catch_up(b: &Backends, datasource: &str) {
    let passes = sluice_pipeline::runner::run_until_caught_up(
        b.meta.as_ref(),
        b.store.as_ref(),
        Some(datasource),
        40,
        std::time::Duration::from_secs(60),
        |_, _| {},
    )
    .await
    .expect("pipeline");
    assert!(passes.last().is_some_and(|p| p.caught_up), "{passes:?}");
}

impl Setup {
    /// `num_records` JSON records round-robin over `partitions` partitions, a datasource with
    /// `task_count` groups reading from the earliest offset, tasks of at most
    /// `max_records_per_task` records; `tuning` merged into the tuningConfig.
    pub async fn new(
        b: Backends,
        partitions: i32,
        num_records: usize,
        task_count: u32,
        max_records_per_task: u64,
        tuning: serde_json::Value,
    ) -> Self {
        let bootstrap = crate::required_env("SLUICE_KAFKA");
        let topic = create_topic(&bootstrap, "protocol", partitions).await;
        let records: Vec<(i32, Vec<u8>)> =
            (0..num_records).map(|n| ((n % partitions as usize) as i32, json_record(&format!("r{n}"), n))).collect();
        produce(&bootstrap, &topic, &records).await;
        let name = crate::unique("protocol");
        let mut spec = spec(&name, &topic, &bootstrap, serde_json::json!({"type": "json"}), tuning);
        spec["spec"]["ioConfig"]["taskCount"] = task_count.into();
        spec["spec"]["ioConfig"]["useEarliestOffset"] = true.into();
        spec["spec"]["sluiceConfig"] = serde_json::json!({"maxRecordsPerTask": max_records_per_task});
        submit(b.meta.as_ref(), spec, 0).await.expect("submit");
        // Ready at once (no release before this one writes here): queries read by interval.
        let ready = sluice_metastore::timeline::head::prepare(b.meta.as_ref(), &name, 0, 0).await.expect("head");
        assert_eq!(ready, sluice_layout::timeline_log::HeadState::Ready);
        Self { b, name, num_records, topic, partitions }
    }

    /// Produces `more` records after those produced so far (ids going on from there).
    pub async fn produce_more(&mut self, more: usize) {
        let bootstrap = crate::required_env("SLUICE_KAFKA");
        let records: Vec<(i32, Vec<u8>)> = (self.num_records..self.num_records + more)
            .map(|n| ((n % self.partitions as usize) as i32, json_record(&format!("r{n}"), n)))
            .collect();
        produce(&bootstrap, &self.topic, &records).await;
        self.num_records += more;
    }

    /// Every record id, sorted as `visible_values` sorts.
    pub fn expected(&self) -> Vec<String> {
        let mut ids: Vec<String> = (0..self.num_records).map(|n| format!("r{n}")).collect();
        ids.sort();
        ids
    }

    /// Supervisor passes and jobs in this process until the datasource is caught up (40 passes
    /// at most, or the test fails).
    pub async fn catch_up(&self) {
        catch_up(&self.b, &self.name).await
    }

    /// The task items of the datasource, by group and sequence.
    pub async fn tasks(&self) -> Vec<TaskItem> {
        sluice_pipeline::task::tasks(self.b.meta.as_ref(), &self.name).await.expect("tasks")
    }
}
