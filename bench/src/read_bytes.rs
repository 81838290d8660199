//! What a query reads of the benchmark's segments as a query worker reads a large segment
//! (`sluice_query::ranged`): bytes per row (the first GET, the parts it names, the gaps read
//! through), GETs per segment, and the runs of adjacent parts it reads in each segment (the
//! ranges a much larger segment needs at least). `sluice-sim`'s query model takes its figures from here.

use sluice_query::{Query, QuerySegment, ReadPlan};

/// Bytes per row and GETs per segment.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ReadCost {
    pub bytes_per_row: f64,
    pub gets_per_segment: f64,
    pub runs_per_segment: f64,
}

/// What `query` reads of `segments`: every byte in one GET each when it names no columns.
pub(super) fn of(query: &Query, segments: &[QuerySegment]) -> ReadCost {
    let plan = ReadPlan::of(query);
    let (mut bytes, mut gets, mut runs, mut rows) = (0u64, 0u64, 0u64, 0u64);
    for s in segments {
        rows += s.segment.num_rows() as u64;
        let (b, g, r) = match &plan {
            Some(plan) => {
                let (b, g) = sluice_query::ranged::read_cost(&s.segment, plan);
                (b, g, sluice_query::ranged::part_runs(&s.segment, plan))
            }
            None => (s.segment.size() as u64, 1, 1),
        };
        bytes += b;
        gets += g;
        runs += r;
    }
    ReadCost {
        bytes_per_row: bytes as f64 / rows.max(1) as f64,
        gets_per_segment: gets as f64 / segments.len().max(1) as f64,
        runs_per_segment: runs as f64 / segments.len().max(1) as f64,
    }
}
