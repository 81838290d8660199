//! Tasks that persist more than once, in the cost model. The fits of [`super::cost`] come from
//! tasks of one hydrant each, whose merger publishes that hydrant as it is; a task of more rows
//! than `maxRowsInMemory` persists a hydrant per that many rows, each a PUT and a checkpoint
//! transaction, and its merger reads and merges them all. What each hydrant beyond the first
//! adds comes from a run whose tasks persisted several (`bench pipeline --max-rows-in-memory`)
//! beside the report's, both throughput phases on the same records and tasks:
//!
//! - per hydrant beyond a task's first: the indexer's seconds (its stages summed: here a
//!   persist runs beside reading on a second core, which a Lambda of one vCPU does not have),
//!   units and PUTs, the merger's units and GETs (the difference per task over the
//!   difference in hydrants per task);
//! - per row of a task that persisted more than once: the merger's seconds (the difference per
//!   row: merging rather than publishing the one hydrant).

use super::cost_figures::Figures;
use sluice_report::PipelineReport;

/// `maxRowsInMemory`'s default: rows per hydrant of a task unless `bench cost` is told another.
pub const MAX_ROWS_IN_MEMORY: u64 = 150_000;

/// What a task's hydrants beyond its first add.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtraHydrants {
    /// Per hydrant beyond the first, the indexer's figures.
    pub(super) indexer: Figures,
    /// Per hydrant beyond the first, the merger's figures (its seconds are per row, below).
    pub(super) merger: Figures,
    /// Per row of a task with several hydrants, the merger's seconds.
    pub(super) merge_secs_per_row: f64,
}

impl ExtraHydrants {
    /// From `one` (tasks of one hydrant) and `several` (the same tasks persisting several).
    pub fn fit(one: &PipelineReport, several: &PipelineReport) -> Result<Self, String> {
        let (a, b) = (&one.throughput, &several.throughput);
        let per_task = |h: u64, tasks: u64| h as f64 / tasks.max(1) as f64;
        let more = per_task(b.hydrants, b.tasks) - per_task(a.hydrants, a.tasks);
        if more < 1.0 {
            return Err(format!(
                "the runs' tasks persisted {} and {} hydrants each: not enough apart to fit a hydrant's cost",
                per_task(a.hydrants, a.tasks),
                per_task(b.hydrants, b.tasks)
            ));
        }
        let delta = |f: fn(&sluice_report::Functions) -> &sluice_report::FunctionUse| {
            let (x, y) = (Figures::of(f(&a.functions), a.tasks as f64), Figures::of(f(&b.functions), b.tasks as f64));
            y.zip(x, |y, x| ((y - x) / more).max(0.0))
        };
        let merger_secs_per_row = |t: &sluice_report::Throughput| t.functions.merger.secs / t.rows.max(1) as f64;
        // A task persists beside reading on this machine's second core, which a Lambda of
        // one vCPU or less does not have: the indexer's seconds are its stages' sum.
        let stages = |t: &sluice_report::Throughput| {
            let s = &t.stages;
            (s.open + s.read + s.parse_index + s.persist + s.upload + s.checkpoint) / t.tasks.max(1) as f64
        };
        let indexer_secs = ((stages(b) - stages(a)) / more).max(0.0);
        Ok(ExtraHydrants {
            indexer: Figures { secs: indexer_secs, ..delta(|f| &f.indexer) },
            merger: Figures { secs: 0.0, ..delta(|f| &f.merger) },
            merge_secs_per_row: (merger_secs_per_row(b) - merger_secs_per_row(a)).max(0.0),
        })
    }

    /// The indexer's and the merger's figures added to a task of `rows` rows that persisted
    /// `hydrants` hydrants.
    pub fn added(&self, rows: f64, hydrants: f64) -> (Figures, Figures) {
        let extra = (hydrants - 1.0).max(0.0);
        let merge = if extra > 0.0 { rows * self.merge_secs_per_row } else { 0.0 };
        let merger = self.merger.map(|x| x * extra);
        (self.indexer.map(|x| x * extra), Figures { secs: merge, ..merger })
    }
}

/// Hydrants of a planned task of `rows` rows persisting every `rows_per_hydrant`.
pub fn hydrants_of(rows: f64, rows_per_hydrant: f64) -> f64 {
    (rows / rows_per_hydrant.max(1.0)).ceil().max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hydrant_adds_what_the_runs_differ_by_per_hydrant() {
        let model = ExtraHydrants {
            indexer: Figures { secs: 0.01, write_units: 5.0, puts: 1.0, ..Default::default() },
            merger: Figures { gets: 1.0, ..Default::default() },
            merge_secs_per_row: 1e-6,
        };
        let (indexer, merger) = model.added(1_000_000.0, 7.0);
        assert!((indexer.puts - 6.0).abs() < 1e-9 && (indexer.write_units - 30.0).abs() < 1e-9, "{indexer:?}");
        assert!((merger.gets - 6.0).abs() < 1e-9 && (merger.secs - 1.0).abs() < 1e-9, "{merger:?}");
        let (indexer, merger) = model.added(100_000.0, 1.0);
        assert_eq!((indexer.puts, merger.secs), (0.0, 0.0), "one hydrant adds nothing");
        assert_eq!(hydrants_of(100.0, 150_000.0), 1.0);
        assert_eq!(hydrants_of(5_450_000.0, 150_000.0), 37.0);
        assert_eq!(hydrants_of(5_450_000.0, 1_000_000.0), 6.0);
    }
}
