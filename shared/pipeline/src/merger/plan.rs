//! Which of a time chunk's hydrants the merger publishes as they were persisted and which it
//! merges, in batches its memory holds.

use crate::task::HydrantRef;
use sluice_format::spec::TuningSettings;

/// A hydrant of at least `maxRowsPerSegment` / this many rows is published as its own segment.
pub const MIN_SHARE_AS_PERSISTED: u64 = 4;

/// Hydrant bytes merged together without a function size to bound them.
pub const MERGE_BATCH_BYTES: u64 = 256 << 20;

/// The smallest batch bound: a smaller function merges batches of this many bytes anyway.
const MIN_MERGE_BATCH_BYTES: u64 = 16 << 20;

/// Memory a merger needs beside its merge: the process, one hydrant published as persisted.
const FIXED_BYTES: u64 = 256 << 20;

/// Memory a merge needs per byte of its inputs (the inputs, the segments they become, the
/// merge's working memory), as a task's spill merge measured.
const MERGE_BYTES_PER_INPUT_BYTE: u64 = 5;

/// Hydrant bytes a merger of `memory_mb` MB (Lambda's `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`)
/// merges together: what is left beside its fixed part, per byte a merge needs; at least
/// [`MIN_MERGE_BATCH_BYTES`]. Without a function size, [`MERGE_BATCH_BYTES`].
pub fn merge_batch_bound(memory_mb: Option<u64>) -> u64 {
    let Some(mb) = memory_mb else { return MERGE_BATCH_BYTES };
    ((mb << 20).saturating_sub(FIXED_BYTES) / MERGE_BYTES_PER_INPUT_BYTE).max(MIN_MERGE_BATCH_BYTES)
}

/// Which of a chunk's hydrants are published as they were persisted, one segment each, and
/// which are merged. As Druid publishes a segment at each handoff and does not roll up rows of
/// two handoffs together (compaction joins them), a hydrant of at least a quarter of
/// `maxRowsPerSegment` (a checkpoint at a segment's end or at the spill's bound) is a segment
/// as it is: merging it again would cost the merger a pass over its rows for segments at most
/// four times fewer. Smaller hydrants (a task's last checkpoint, a real-time task's
/// checkpoints) are merged together, unless only one is left, in batches of at most the
/// merger's bound of bytes (rows of two batches are not rolled up together either). Hydrants
/// of another compression than the segments' are all rewritten.
pub(super) struct ChunkPlan<'a> {
    pub as_persisted: Vec<&'a HydrantRef>,
    /// The hydrants merged, batch by batch in checkpoint order.
    pub batches: Vec<Vec<&'a HydrantRef>>,
}

impl<'a> ChunkPlan<'a> {
    /// The plan of `hydrants` (in checkpoint order), merging at most `max_batch_bytes` of
    /// them together (a larger hydrant alone).
    pub fn of(hydrants: &[&'a HydrantRef], tuning: &TuningSettings, max_batch_bytes: u64) -> Self {
        let (as_persisted, merged) = Self::split(hydrants, tuning);
        let mut batches: Vec<Vec<&HydrantRef>> = Vec::new();
        let mut bytes = 0u64;
        for h in merged {
            match batches.last_mut() {
                Some(batch) if bytes.saturating_add(h.num_bytes) <= max_batch_bytes => batch.push(h),
                _ => {
                    batches.push(vec![h]);
                    bytes = 0;
                }
            }
            bytes = bytes.saturating_add(h.num_bytes);
        }
        ChunkPlan { as_persisted, batches }
    }

    fn split(hydrants: &[&'a HydrantRef], tuning: &TuningSettings) -> (Vec<&'a HydrantRef>, Vec<&'a HydrantRef>) {
        if tuning.intermediate_index != tuning.index {
            return (Vec::new(), hydrants.to_vec());
        }
        let max = tuning.max_rows_per_segment;
        let fits = |h: &&HydrantRef| h.num_rows <= max;
        let (mut as_persisted, mut merged): (Vec<_>, Vec<_>) =
            hydrants.iter().partition(|h| fits(h) && h.num_rows >= max.div_ceil(MIN_SHARE_AS_PERSISTED));
        if merged.len() == 1 && fits(&merged[0]) {
            as_persisted.append(&mut merged);
        }
        (as_persisted, merged)
    }

    /// Segments a batch's merge gives at most: one per `maxRowsPerSegment` of its rows (fewer
    /// when rows roll up).
    pub fn most_segments(batch: &[&HydrantRef], max_rows_per_segment: u64) -> u64 {
        let rows: u64 = batch.iter().map(|h| h.num_rows).sum();
        rows.div_ceil(max_rows_per_segment.max(1)).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::indexer::test_hydrants::spec;
    use sluice_format::time::Interval;

    fn refs(sizes: &[(u64, u64)]) -> Vec<HydrantRef> {
        sizes
            .iter()
            .enumerate()
            .map(|(n, &(num_rows, num_bytes))| HydrantRef {
                key: format!("h{n}"),
                chunk: Interval::new(0, 3_600_000),
                num_rows,
                num_bytes,
            })
            .collect()
    }

    /// The rows of the hydrants published as persisted, and of those merged (one batch).
    fn plan(tuning: serde_json::Value, rows: &[u64]) -> (Vec<u64>, Vec<u64>) {
        let spec = spec(tuning);
        let hydrants = refs(&rows.iter().map(|&r| (r, 0)).collect::<Vec<_>>());
        let hydrants: Vec<&HydrantRef> = hydrants.iter().collect();
        let plan = ChunkPlan::of(&hydrants, &spec.tuning, MERGE_BATCH_BYTES);
        assert!(plan.batches.len() <= 1, "no bytes: one batch");
        let merged = plan.batches.into_iter().flatten().map(|h| h.num_rows).collect();
        (plan.as_persisted.iter().map(|h| h.num_rows).collect(), merged)
    }

    #[test]
    fn hydrants_of_a_quarter_segment_are_published_as_persisted_and_smaller_ones_merged() {
        let max = |n: u64| serde_json::json!({"maxRowsPerSegment": n});
        assert_eq!(plan(max(40), &[20]), (vec![20], vec![]), "one hydrant that fits a segment");
        assert_eq!(plan(max(40), &[5]), (vec![5], vec![]), "a small hydrant alone is not merged");
        assert_eq!(plan(max(40), &[38, 38, 4]), (vec![38, 38, 4], vec![]), "one small hydrant left");
        assert_eq!(plan(max(40), &[10, 3, 38, 9]), (vec![10, 38], vec![3, 9]), "a quarter is 10 rows");
        assert_eq!(plan(max(40), &[5, 5, 5]), (vec![], vec![5, 5, 5]), "small hydrants merge together");
        assert_eq!(plan(max(40), &[41, 20]), (vec![20], vec![41]), "a hydrant past maxRowsPerSegment is split");
        let lz4_hydrants = serde_json::json!({
            "maxRowsPerSegment": 40,
            "indexSpec": {"metricCompression": "zstd", "dimensionCompression": "zstd"},
            "indexSpecForIntermediatePersists": {"metricCompression": "lz4", "dimensionCompression": "lz4"},
        });
        assert_eq!(plan(lz4_hydrants, &[20, 30]), (vec![], vec![20, 30]), "another compression is rewritten");
    }

    #[test]
    fn merged_hydrants_are_batched_by_the_bytes_a_merger_holds_in_checkpoint_order() {
        let spec = spec(serde_json::json!({"maxRowsPerSegment": 1000}));
        let hydrants = refs(&[(10, 40), (10, 50), (10, 20), (10, 100), (10, 150), (10, 5)]);
        let hydrants: Vec<&HydrantRef> = hydrants.iter().collect();
        let plan = ChunkPlan::of(&hydrants, &spec.tuning, 100);
        let keys: Vec<Vec<&str>> = plan.batches.iter().map(|b| b.iter().map(|h| h.key.as_str()).collect()).collect();
        // 40 + 50 fit 100; 20 + 100 do not; a hydrant past the bound is a batch of its own.
        assert_eq!(keys, [vec!["h0", "h1"], vec!["h2"], vec!["h3"], vec!["h4"], vec!["h5"]]);
        assert!(plan.as_persisted.is_empty());
        assert_eq!(ChunkPlan::most_segments(&plan.batches[0], 1000), 1);
        assert_eq!(ChunkPlan::most_segments(&plan.batches[0], 7), 3, "20 rows in segments of 7");
        let one = ChunkPlan::of(&hydrants, &spec.tuning, MERGE_BATCH_BYTES);
        assert_eq!(one.batches.len(), 1, "365 bytes in one batch");
    }

    #[test]
    fn a_functions_memory_bounds_its_merge_batches() {
        let mib = 1 << 20;
        assert_eq!(merge_batch_bound(None), MERGE_BATCH_BYTES);
        assert_eq!(merge_batch_bound(Some(1024)), (1024 - 256) * mib / 5, "the template's 1,024 MB");
        assert_eq!(merge_batch_bound(Some(128)), MIN_MERGE_BATCH_BYTES, "the smallest function");
    }
}
