//! Planning a partition group's next offset ranges: pure functions, so every rule is
//! unit-tested without a store or a broker.

use sluice_kafka::OffsetRange;
use std::collections::BTreeMap;

/// The ranges of the group's next task: for each partition of the group, from where the last
/// planned range ended up to the high watermark, at most `budget / partitions` records each
/// (at least one). `None` when no partition has a record past its planned start.
pub fn next_ranges(
    next_start: &BTreeMap<i32, i64>,
    highs: &BTreeMap<i32, i64>,
    budget: u64,
) -> Option<Vec<OffsetRange>> {
    let per_partition = (budget / next_start.len().max(1) as u64).max(1) as i64;
    let ranges: Vec<OffsetRange> = next_start
        .iter()
        .map(|(&partition, &start)| {
            let high = highs.get(&partition).copied().unwrap_or(start).max(start);
            OffsetRange { partition, start, end: high.min(start.saturating_add(per_partition)) }
        })
        .collect();
    ranges.iter().any(|r| r.end > r.start).then_some(ranges)
}

/// Records one task may read: `maxRecordsPerTask`, and `maxBytesPerTask` divided by the mean
/// record size of the group's published tasks once there are some (`processed_bytes` over
/// `processed` rows).
pub fn record_budget(max_records: u64, max_bytes: u64, processed_bytes: u64, processed: u64) -> u64 {
    if processed == 0 || processed_bytes == 0 {
        return max_records;
    }
    let mean = processed_bytes.div_ceil(processed);
    max_records.min((max_bytes / mean).max(1))
}

/// Where a partition new to the supervisor starts: the earliest offset kept with
/// `useEarliestOffset`, else the high watermark (only records written from now on).
pub fn initial_offset(use_earliest: bool, low: i64, high: i64) -> i64 {
    if use_earliest {
        low
    } else {
        high
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(i32, i64)]) -> BTreeMap<i32, i64> {
        pairs.iter().copied().collect()
    }

    #[test]
    fn plans_from_the_last_planned_end_within_the_budget() {
        let ranges = next_ranges(&map(&[(0, 10), (2, 5)]), &map(&[(0, 1000), (2, 7)]), 100).expect("data");
        assert_eq!(
            ranges,
            vec![OffsetRange { partition: 0, start: 10, end: 60 }, OffsetRange { partition: 2, start: 5, end: 7 }]
        );
        assert_eq!(next_ranges(&map(&[(0, 10)]), &map(&[(0, 10)]), 100), None, "caught up: nothing to plan");
        assert_eq!(
            next_ranges(&map(&[(0, 10)]), &map(&[(0, 3)]), 100),
            None,
            "a high watermark below the planned start (a reset topic) plans nothing"
        );
        let tiny = next_ranges(&map(&[(0, 0), (1, 0), (2, 0)]), &map(&[(0, 9), (1, 9), (2, 9)]), 1).expect("data");
        assert!(tiny.iter().all(|r| r.end - r.start == 1), "at least one record per partition: {tiny:?}");
    }

    #[test]
    fn the_byte_budget_bounds_tasks_once_record_sizes_are_known() {
        assert_eq!(record_budget(1000, 1 << 20, 0, 0), 1000, "no published task yet: the record budget");
        assert_eq!(record_budget(1_000_000, 1 << 20, 2048 * 10, 10), 512, "2 KiB records: 1 MiB holds 512");
        assert_eq!(record_budget(100, 1 << 30, 500, 10), 100);
        assert_eq!(record_budget(100, 10, 1 << 20, 1), 1, "a record over the byte budget still makes a task");
    }

    #[test]
    fn new_partitions_start_as_use_earliest_offset_says() {
        assert_eq!(initial_offset(true, 4, 9), 4);
        assert_eq!(initial_offset(false, 4, 9), 9);
    }
}
