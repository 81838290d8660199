//! Which time chunks a compaction configuration asks to compact, over a datasource's visible
//! segments, as Druid's coordinator searches for segments awaiting compaction: a chunk ending
//! after the latest segment's end minus `skipOffsetFromLatest` is skipped (data still
//! arriving); any other chunk awaits compaction when it holds more segments than its rows need
//! (ceil(rows / `maxRowsPerSegment`)), when `granularitySpec.segmentGranularity` would cut
//! it into other chunks, or when one of its segments was not written under the configuration's
//! row changes (`queryGranularity`, `rollup`, `dimensionsSpec`, `metricsSpec`: Druid's
//! `lastCompactionState`); the rest count as compacted. Reported in the shape of Druid's
//! `GET /druid/coordinator/v1/compaction/status`.

use super::config::CompactionConfig;
use crate::item::DatasourceError;
use crate::timeline::{visible_segments, SegmentRecord};
use serde_json::{json, Value};
use sluice_format::time::Interval;
use sluice_store::metadata::MetadataStore;
use std::collections::BTreeMap;

/// One time chunk's visible segments, summed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkState {
    /// The chunk.
    pub interval: Interval,
    /// Segments.
    pub segments: u64,
    /// Rows.
    pub rows: u64,
    /// Bytes.
    pub bytes: u64,
    /// Segments it needs: ceil(rows / `maxRowsPerSegment`), at least one.
    pub target_segments: u64,
}

/// The chunks of a datasource by what compaction would do with them now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactionPlan {
    /// To compact, oldest first.
    pub awaiting: Vec<ChunkState>,
    /// Already as the configuration asks.
    pub compacted: Vec<ChunkState>,
    /// Too recent (`skipOffsetFromLatest`).
    pub skipped: Vec<ChunkState>,
}

/// Sorts `visible` segments' chunks by what `config` asks of them.
pub fn plan(config: &CompactionConfig, visible: &[SegmentRecord]) -> CompactionPlan {
    let changes = config.row_changes();
    let mut chunks: BTreeMap<Interval, ChunkState> = BTreeMap::new();
    let mut restated: BTreeMap<Interval, bool> = BTreeMap::new();
    for s in visible {
        let c = chunks.entry(s.interval).or_insert(ChunkState {
            interval: s.interval,
            segments: 0,
            rows: 0,
            bytes: 0,
            target_segments: 1,
        });
        c.segments += 1;
        c.rows += s.num_rows;
        c.bytes += s.num_bytes;
        // A segment not written under the configuration's row changes has yet to get them.
        *restated.entry(s.interval).or_default() |= changes.is_some() && s.compaction_state != changes;
    }
    let mut out = CompactionPlan::default();
    let Some(latest) = chunks.keys().map(|i| i.end).max() else {
        return out;
    };
    let horizon = config.skip_offset_from_latest.add_to(latest, -1);
    for (interval, mut c) in chunks {
        c.target_segments = c.rows.div_ceil(config.max_rows_per_segment).max(1);
        let regranulated = config.segment_granularity.is_some_and(|g| g.bucket(interval.start) != interval);
        if interval.end > horizon {
            out.skipped.push(c);
        } else if c.segments > c.target_segments || regranulated || restated[&interval] {
            out.awaiting.push(c);
        } else {
            out.compacted.push(c);
        }
    }
    out
}

/// The plan of `datasource` under `config`, over its visible segments now.
pub async fn plan_now(meta: &dyn MetadataStore, config: &CompactionConfig) -> Result<CompactionPlan, DatasourceError> {
    Ok(plan(config, &visible_segments(meta, &config.data_source).await?))
}

impl CompactionPlan {
    /// Druid's `AutoCompactionSnapshot` of the plan (`scheduleStatus` `RUNNING`: a
    /// configured datasource is compacted by every compaction pass).
    pub fn druid_snapshot(&self, datasource: &str) -> Value {
        let sum = |chunks: &[ChunkState], f: fn(&ChunkState) -> u64| chunks.iter().map(f).sum::<u64>();
        json!({
            "dataSource": datasource,
            "scheduleStatus": "RUNNING",
            "bytesAwaitingCompaction": sum(&self.awaiting, |c| c.bytes),
            "bytesCompacted": sum(&self.compacted, |c| c.bytes),
            "bytesSkipped": sum(&self.skipped, |c| c.bytes),
            "segmentCountAwaitingCompaction": sum(&self.awaiting, |c| c.segments),
            "segmentCountCompacted": sum(&self.compacted, |c| c.segments),
            "segmentCountSkipped": sum(&self.skipped, |c| c.segments),
            "intervalCountAwaitingCompaction": self.awaiting.len(),
            "intervalCountCompacted": self.compacted.len(),
            "intervalCountSkipped": self.skipped.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::config::load_compaction_value;
    use crate::task::TaskId;

    const HOUR: i64 = 3_600_000;

    fn segment(hour: i64, partition: u32, rows: u64) -> SegmentRecord {
        SegmentRecord {
            interval: Interval::new(hour * HOUR, (hour + 1) * HOUR),
            version: "v1".into(),
            partition,
            key: format!("s/{hour}/{partition}"),
            num_rows: rows,
            num_bytes: rows * 10,
            dimensions: Vec::new(),
            metrics: Vec::new(),
            task: Some(TaskId { datasource: "w".into(), group: 0, seq: 1 }),
            replace: None,
            merge: "m".into(),
            compaction_state: None,
            visible: true,
            summary: None,
        }
    }

    fn config(json: Value) -> CompactionConfig {
        load_compaction_value(json).expect("config").config
    }

    #[test]
    fn chunks_with_more_segments_than_their_rows_need_await_compaction() {
        let c = config(json!({"dataSource": "w", "skipOffsetFromLatest": "PT2H", "maxRowsPerSegment": 100}));
        let mut visible = Vec::new();
        visible.extend((0..5).map(|p| segment(0, p, 10))); // 50 rows in 5 segments: awaits
        visible.extend((0..2).map(|p| segment(1, p, 100))); // 200 rows in 2 segments: compacted
        visible.extend((0..3).map(|p| segment(2, p, 100))); // 300 rows in 3: ends 3 h, horizon 3 h
        visible.extend((0..9).map(|p| segment(3, p, 1))); // ends after the horizon: skipped
        visible.extend((0..9).map(|p| segment(4, p, 1)));
        let p = plan(&c, &visible);
        let hours = |chunks: &[ChunkState]| chunks.iter().map(|c| c.interval.start / HOUR).collect::<Vec<_>>();
        assert_eq!((hours(&p.awaiting), hours(&p.compacted), hours(&p.skipped)), (vec![0], vec![1, 2], vec![3, 4]));
        assert_eq!((p.awaiting[0].segments, p.awaiting[0].rows, p.awaiting[0].target_segments), (5, 50, 1));
        let snapshot = p.druid_snapshot("w");
        assert_eq!(snapshot["segmentCountAwaitingCompaction"], 5);
        assert_eq!(snapshot["segmentCountCompacted"], 5);
        assert_eq!(
            (snapshot["intervalCountSkipped"].as_u64(), snapshot["bytesSkipped"].as_u64()),
            (Some(2), Some(180))
        );
    }

    #[test]
    fn a_segment_not_written_under_the_row_changes_awaits_them() {
        let c = config(json!({"dataSource": "w", "skipOffsetFromLatest": "PT0S",
            "granularitySpec": {"queryGranularity": "HOUR", "rollup": true}}));
        let changes = c.row_changes();
        assert!(changes.is_some());
        let done = SegmentRecord { compaction_state: changes, ..segment(1, 0, 10) };
        let p = plan(&c, &[segment(0, 0, 10), done]);
        assert_eq!((p.awaiting.len(), p.compacted.len()), (1, 1), "{p:?}");
        let plain = config(json!({"dataSource": "w", "skipOffsetFromLatest": "PT0S"}));
        assert_eq!(plain.row_changes(), None, "no row changes asked");
        assert_eq!(plan(&plain, &[segment(0, 0, 10)]).compacted.len(), 1);
    }

    #[test]
    fn a_new_segment_granularity_puts_every_other_chunk_up_for_compaction() {
        let c = config(json!({"dataSource": "w", "skipOffsetFromLatest": "PT0S",
            "granularitySpec": {"segmentGranularity": "DAY"}}));
        let p = plan(&c, &[segment(0, 0, 10), segment(1, 0, 10)]);
        assert_eq!(p.awaiting.len(), 2, "hourly chunks under a daily granularity: {p:?}");
        let same = config(json!({"dataSource": "w", "skipOffsetFromLatest": "PT0S",
            "granularitySpec": {"segmentGranularity": "HOUR"}}));
        assert_eq!(plan(&same, &[segment(0, 0, 10)]).compacted.len(), 1);
        assert_eq!(plan(&same, &[]), CompactionPlan::default(), "no segments, nothing to plan");
    }
}
