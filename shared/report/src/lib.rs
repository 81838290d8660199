//! The report of `sluice bench pipeline`, as it is written to `bench/results/*.json`, and the
//! two-point fit of its figures: one typed report read by `sluice bench cost` and by
//! `sluice-sim`, so a field renamed on one side fails to load on the other instead of reading
//! as zero.

mod fit;
mod meters;
mod pass_fit;

pub use fit::{Fit, Observation};
pub use meters::Meters;
pub use pass_fit::{PassFit, PassObservation};

use serde::{Deserialize, Serialize};

/// Seconds per stage of the throughput phase.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Stages {
    /// Consumer open (watermarks, assignment).
    pub open: f64,
    /// Reading records, at the raw consume rate of phase 1.
    pub read: f64,
    /// Parsing and indexing: the task's read loop minus the raw read.
    pub parse_index: f64,
    /// Persisting indexes to hydrant bytes.
    pub persist: f64,
    /// Uploading hydrants.
    pub upload: f64,
    /// Claims and checkpoints.
    pub checkpoint: f64,
    /// Merging spilled hydrants in the indexer before a checkpoint.
    #[serde(default)]
    pub spill_merge: f64,
    /// Merging hydrants into segments (merger time outside the stores).
    pub merge: f64,
    /// The merger's object store requests (hydrants read, segments written).
    pub merge_storage: f64,
    /// The merger's metadata requests: order check, partition numbers, segment records, the
    /// publish transaction, visibility.
    pub publish: f64,
    /// Supervisor passes.
    pub supervisor: f64,
}

impl Stages {
    /// Sum of the stages.
    pub fn total(&self) -> f64 {
        self.open
            + self.read
            + self.parse_index
            + self.persist
            + self.upload
            + self.checkpoint
            + self.spill_merge
            + self.merge
            + self.merge_storage
            + self.publish
            + self.supervisor
    }
}

/// What one kind of function used over a phase.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct FunctionUse {
    /// Invocations.
    pub invocations: u64,
    /// Wall seconds, all invocations.
    pub secs: f64,
    /// Requests and capacity units.
    pub meters: Meters,
}

/// Per function kind.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Functions {
    /// Supervisor passes.
    pub supervisor: FunctionUse,
    /// Indexer attempts.
    pub indexer: FunctionUse,
    /// Merger runs.
    pub merger: FunctionUse,
}

/// The throughput phase.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Throughput {
    /// Rows published.
    pub rows: u64,
    /// Seconds from each wave's first record read to its last segment published, summed.
    pub secs: f64,
    /// Tasks published.
    pub tasks: u64,
    /// Hydrants of the tasks' checkpoints.
    pub hydrants: u64,
    /// Hydrants persisted, spilled or checkpointed (reports written before spilling: as many
    /// as `hydrants`).
    #[serde(default)]
    pub persists: u64,
    /// Visible segments at the end, and their bytes.
    pub segments: u64,
    /// Bytes of the visible segments.
    pub segment_bytes: u64,
    /// Seconds per stage.
    pub stages: Stages,
    /// Per function kind.
    pub functions: Functions,
    /// Peak resident memory of the process during the phase.
    pub peak_rss_bytes: u64,
}

/// The report of `bench pipeline`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PipelineReport {
    /// Partitions of the topic.
    pub partitions: i32,
    /// Partition groups (`taskCount`); reports written before it was recorded had one.
    #[serde(default = "one_group")]
    pub task_count: u32,
    /// `tuningConfig.maxRowsInMemory` when set (else the default, 150,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rows_in_memory: Option<u64>,
    /// `tuningConfig.maxTotalRows` when set (else the default, 20,000,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_rows: Option<u64>,
    /// `tuningConfig.maxRowsPerSegment` when set (else the default, 5,000,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rows_per_segment: Option<u64>,
    /// Bytes of JSON per record, on average.
    pub record_bytes: f64,
    /// Indexer-only rate (phase 1), rows/s.
    pub indexer_only_rows_per_sec: f64,
    /// Raw consume rate of the same records, rows/s.
    pub raw_read_rows_per_sec: f64,
    /// Throughput phase.
    pub throughput: Throughput,
    /// Steady phase.
    pub steady: Steady,
}

fn one_group() -> u32 {
    1
}

impl PipelineReport {
    /// End-to-end rows/s, first record read to last segment published.
    pub fn end_to_end_rows_per_sec(&self) -> f64 {
        self.throughput.rows as f64 / self.throughput.secs
    }
}

/// Freshness percentiles and mean, milliseconds.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Freshness {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Worst.
    pub max: f64,
}

/// The steady phase's figures.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Steady {
    /// Target produce rate, records/s.
    pub rate: u64,
    /// Records produced.
    pub produced: u64,
    /// Seconds the producer ran.
    pub produce_secs: f64,
    /// Supervisor period, milliseconds.
    pub period_ms: u64,
    /// With real-time tasks: their checkpoint period, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_ms: Option<u64>,
    /// Rows published.
    pub rows: u64,
    /// Seconds from the first send to the last publish.
    pub secs: f64,
    /// Tasks published.
    pub tasks: u64,
    /// Produce to queryable, per record.
    pub freshness_ms: Freshness,
    /// Records behind the high watermarks at each pass: (seconds since the first send, lag).
    pub lag: Vec<(f64, i64)>,
    /// Mean of the lag samples taken while the producer ran.
    pub mean_lag: f64,
    /// Worst lag sample.
    pub max_lag: i64,
    /// Per function kind.
    pub functions: Functions,
    /// With a crash injected (`--kill-at-secs`): seconds from the crash to the first
    /// checkpoint by an attempt started after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_secs: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::PipelineReport;

    #[test]
    fn the_committed_reports_load_with_every_field() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/results");
        let names = [
            "pipeline.json",
            "pipeline-16p.json",
            "pipeline-16p-4g.json",
            "pipeline-8p.json",
            "pipeline-8p-4c.json",
            "pipeline-8p-4s.json",
            "pipeline-2m.json",
            "pipeline-realtime.json",
            "pipeline-realtime-5s.json",
        ];
        for name in names {
            let text = std::fs::read_to_string(dir.join(name)).expect("report");
            let report: PipelineReport = serde_json::from_str(&text).expect("a pipeline report");
            assert!(report.throughput.rows > 0 && report.steady.rows > 0, "{name}");
            let checkpoint = report.steady.checkpoint_ms;
            assert!(
                name.contains("realtime") || checkpoint.is_none(),
                "{name}: planned ranges have no checkpoint period"
            );
            assert!(!name.ends_with("-5s.json") || checkpoint == Some(5_000), "{name}: {checkpoint:?}");
            assert_eq!(report.task_count, if name.ends_with("-4g.json") { 4 } else { 1 }, "{name}");
            let segmented = name.ends_with("-4s.json");
            let (spilled, checkpointed) = (name.contains("-8p"), name.ends_with("-4c.json") || segmented);
            assert_eq!(report.max_rows_in_memory, spilled.then_some(10_000), "{name}");
            assert_eq!(report.max_total_rows, checkpointed.then_some(20_000), "{name}");
            assert_eq!(report.max_rows_per_segment, segmented.then_some(40_000), "{name}");
            let t = &report.throughput;
            if name == "pipeline-2m.json" {
                // One task of 2M rows persisting by maxRowsInMemory or maxBytesInMemory.
                assert_eq!((t.tasks, t.hydrants, t.rows), (1, 1, 2_000_000), "{name}");
                assert!(t.persists >= 13 && t.stages.spill_merge > 0.0, "{name}: persists spilled and merged");
                continue;
            }
            assert_eq!(t.hydrants, t.tasks * if checkpointed { 4 } else { 1 }, "{name}: hydrants checkpointed");
            // Hydrants of a quarter of maxRowsPerSegment or more are published as they are.
            let segments = if checkpointed && !segmented { t.tasks } else { t.hydrants };
            assert_eq!(t.segments, segments, "{name}: segments published");
            // Reports from before spilling did not count persists.
            let persists = if spilled { 8 } else { 1 };
            assert!(t.persists == t.tasks * persists || (!spilled && t.persists == 0), "{name}: persists");
            // A field the types no longer know is refused, not read as zero.
            let mut value: serde_json::Value = serde_json::from_str(&text).expect("json");
            value["throughput"].as_object_mut().expect("throughput").remove("rows");
            assert!(serde_json::from_value::<PipelineReport>(value).is_err(), "{name} without throughput.rows");
        }
    }
}
