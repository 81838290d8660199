//! Tasks that persist or checkpoint more than once, in the cost model. The fits of
//! [`super::cost`] come from tasks that persist and checkpoint once (one hydrant each, which
//! the merger publishes as it is). A planned task persists every `maxRowsInMemory` rows,
//! spilling to local disk, and checkpoints when the rows since its last checkpoint near
//! `min(maxRowsPerSegment, maxTotalRows)`, merging its spill into one hydrant per time chunk;
//! its merger publishes each hydrant of a quarter of `maxRowsPerSegment` or more as its own
//! segment and merges smaller ones. What each part adds comes from three runs beside the
//! report's, on the same records and tasks:
//!
//! - `spilled` (`bench pipeline --max-rows-in-memory`): the tasks persist several times and
//!   checkpoint once. Per persist beyond the first, the indexer's seconds outside the merge
//!   (its stages summed: here a persist runs beside reading on a second core, which a Lambda
//!   of one vCPU does not have), which real-time tasks' persists beside their checkpoints add;
//! - `sized` (`bench pipeline --rows 2000000 --partitions 128 --wave 15625`): one task of the
//!   shape priced at high rates, persisting every 150,000 rows and merging its spill into one
//!   checkpoint. Per row of a task that spills, its stages summed beyond the base fit's per
//!   row: its spill's merge (a merge of 10,000-row persists, as `spilled`'s, costs about twice
//!   per row what one of 150,000-row persists does), and what a large task costs per row above
//!   the base fit's slope (fitted through the steady phase's small tasks, it prices even the
//!   base's tasks of 80,000 rows below their stages), so a spilling task is priced from a
//!   task of that shape;
//! - `checkpointed` (the same and `--max-total-rows`): the same persists, checkpointed several
//!   times. Per checkpointed hydrant beyond the first, the indexer's and the merger's units,
//!   requests and the indexer's seconds (merges aside); per row of a task whose hydrants the
//!   merger merged, the merger's seconds;
//! - `segmented` (the same and `--max-rows-per-segment` at most four times the checkpoints):
//!   the same hydrants, each published as its own segment. Per hydrant beyond the first, the
//!   merger's units, requests and seconds.

use super::cost_figures::Figures;
use sluice_format::spec::DEFAULT_MAX_ROWS_PER_SEGMENT;
use sluice_pipeline::merger::MIN_SHARE_AS_PERSISTED;
use sluice_report::{Fit, PipelineReport, Throughput};

/// `maxRowsPerSegment`'s default, as the model counts rows.
pub const MAX_ROWS_PER_SEGMENT: f64 = DEFAULT_MAX_ROWS_PER_SEGMENT as f64;

/// What persists beyond a task's first add: to the indexer only.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtraPersists {
    /// Per persist beyond the first, the indexer's seconds outside the merge (what a
    /// real-time task's persists beside its checkpoints add).
    pub(super) indexer_secs: f64,
    /// Per row of a task that spills, the indexer's seconds beyond the base fit's per row
    /// (its persists, the spill's merge, the per-row cost of a large task), from the sized
    /// run's stages summed (none below the base's).
    pub(super) spilling_secs_per_row: f64,
    /// Rows per persist of the sized run: a task persisting more often than it did pays
    /// `indexer_secs` per persist more, one persisting less often that much less.
    pub(super) sized_rows_per_persist: f64,
}

/// What checkpointed hydrants beyond a task's first add.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtraHydrants {
    /// Per hydrant beyond the first, the indexer's figures.
    pub(super) indexer: Figures,
    /// Per hydrant beyond the first, the merger's figures (its seconds are per row, below).
    pub(super) merger: Figures,
    /// Per row of a task whose hydrants the merger merged, the merger's seconds.
    pub(super) merge_secs_per_row: f64,
    /// Per hydrant beyond the first that the merger publishes as its own segment, the
    /// merger's figures.
    pub(super) as_segments: Figures,
}

/// Rows per persist of the sized run at least: persists of `maxRowsInMemory`'s 150,000 rows
/// or of `maxBytesInMemory` (about 145,000 Wikipedia rows), not the small ones of `spilled`.
const MIN_SIZED_PERSIST_ROWS: f64 = 100_000.0;

/// Persists per task: reports from before spilling counted only hydrants, one per persist.
fn persists(t: &Throughput) -> u64 {
    if t.persists == 0 {
        t.hydrants
    } else {
        t.persists
    }
}

fn per_task(n: u64, t: &Throughput) -> f64 {
    n as f64 / t.tasks.max(1) as f64
}

/// The indexer's seconds per task, its stages summed, the spill's merge aside.
fn indexer_stage_secs(t: &Throughput) -> f64 {
    let s = &t.stages;
    (s.open + s.read + s.parse_index + s.persist + s.upload + s.checkpoint) / t.tasks.max(1) as f64
}

/// The indexer's seconds per task, its stages summed with the spill's merge: its time on one
/// core, where a persist beside reading on a second core does not shorten it.
pub(super) fn indexer_core_secs(t: &Throughput) -> f64 {
    indexer_stage_secs(t) + t.stages.spill_merge / t.tasks.max(1) as f64
}

/// Why the committed runs do not fit a persist's or a hydrant's cost.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    /// Two runs whose tasks did the thing priced too nearly as often.
    #[error("the runs' tasks {what} {a} and {b} {unit} each: not enough apart to fit {cost} cost")]
    TooClose {
        /// What the tasks did (`persisted`).
        what: &'static str,
        /// Its unit (`times`).
        unit: &'static str,
        /// The cost fitted (`a persist's`).
        cost: &'static str,
        /// Per task in the first run.
        a: f64,
        /// Per task in the second run.
        b: f64,
    },
    /// The sized run merged no spill of persists of the priced size.
    #[error(
        "the sized run's tasks persisted {persists} times into {hydrants} hydrants, {rows_per_persist:.0} rows \
         each: no spill of persists of {MIN_SIZED_PERSIST_ROWS} rows or more was merged"
    )]
    NoSizedSpill {
        /// Persists of the run's tasks.
        persists: u64,
        /// Hydrants they checkpointed.
        hydrants: u64,
        /// Rows per persist.
        rows_per_persist: f64,
    },
    /// The segmented run did not publish each hydrant as its own segment.
    #[error("the segmented run published {segments} segments of {hydrants} hydrants: not one each")]
    NotOneEach {
        /// Segments published.
        segments: u64,
        /// Hydrants checkpointed.
        hydrants: u64,
    },
}

impl ExtraPersists {
    /// From `one` (tasks persisting once, whose indexer the `base` fit is), `spilled` (the
    /// same tasks persisting several times, checkpointing once) and `sized` (a task of the
    /// priced shape).
    pub fn fit(
        one: &PipelineReport,
        spilled: &PipelineReport,
        sized: &PipelineReport,
        base: &Fit,
    ) -> Result<Self, FitError> {
        let (a, b, c) = (&one.throughput, &spilled.throughput, &sized.throughput);
        let more = per_task(persists(b), b) - per_task(persists(a), a);
        if more < 1.0 {
            return Err(FitError::TooClose {
                what: "persisted",
                unit: "times",
                cost: "a persist's",
                a: per_task(persists(a), a),
                b: per_task(persists(b), b),
            });
        }
        let rows_per_persist = c.rows as f64 / persists(c).max(1) as f64;
        if c.persists <= c.hydrants || c.stages.spill_merge <= 0.0 || rows_per_persist < MIN_SIZED_PERSIST_ROWS {
            return Err(FitError::NoSizedSpill { persists: c.persists, hydrants: c.hydrants, rows_per_persist });
        }
        let rows_per_task = c.rows as f64 / c.tasks.max(1) as f64;
        Ok(ExtraPersists {
            indexer_secs: ((indexer_stage_secs(b) - indexer_stage_secs(a)) / more).max(0.0),
            spilling_secs_per_row: ((indexer_core_secs(c) - base.fixed) / rows_per_task - base.per_row).max(0.0),
            sized_rows_per_persist: rows_per_persist,
        })
    }
}

impl ExtraHydrants {
    /// From `spilled` (tasks checkpointing once), `checkpointed` (the same persists,
    /// checkpointed several times, merged by the merger) and `segmented` (the same
    /// checkpoints, each published as its own segment).
    pub fn fit(
        spilled: &PipelineReport,
        checkpointed: &PipelineReport,
        segmented: &PipelineReport,
    ) -> Result<Self, FitError> {
        let a = &spilled.throughput;
        let (merged, per_hydrant) = Delta::between(a, &checkpointed.throughput)?;
        let (as_segments, _) = Delta::between(a, &segmented.throughput)?;
        if segmented.throughput.segments != segmented.throughput.hydrants {
            return Err(FitError::NotOneEach {
                segments: segmented.throughput.segments,
                hydrants: segmented.throughput.hydrants,
            });
        }
        let merger_secs_per_row = |t: &Throughput| t.functions.merger.secs / t.rows.max(1) as f64;
        let b = &checkpointed.throughput;
        Ok(ExtraHydrants {
            indexer: Figures { secs: per_hydrant, ..merged.indexer },
            merger: Figures { secs: 0.0, ..merged.merger },
            merge_secs_per_row: (merger_secs_per_row(b) - merger_secs_per_row(a)).max(0.0),
            as_segments: as_segments.merger,
        })
    }
}

/// Per hydrant beyond the first, what a run's tasks used beyond another's.
struct Delta {
    indexer: Figures,
    merger: Figures,
}

impl Delta {
    /// From `a` to `b`, and the indexer's seconds per hydrant (its stages summed, merges aside).
    fn between(a: &Throughput, b: &Throughput) -> Result<(Self, f64), FitError> {
        let more = per_task(b.hydrants, b) - per_task(a.hydrants, a);
        if more < 1.0 {
            return Err(FitError::TooClose {
                what: "checkpointed",
                unit: "hydrants",
                cost: "a hydrant's",
                a: per_task(a.hydrants, a),
                b: per_task(b.hydrants, b),
            });
        }
        let delta = |f: fn(&sluice_report::Functions) -> &sluice_report::FunctionUse| {
            let (x, y) = (Figures::of(f(&a.functions), a.tasks as f64), Figures::of(f(&b.functions), b.tasks as f64));
            y.zip(x, |y, x| ((y - x) / more).max(0.0))
        };
        let indexer_secs = ((indexer_stage_secs(b) - indexer_stage_secs(a)) / more).max(0.0);
        Ok((Delta { indexer: delta(|f| &f.indexer), merger: delta(|f| &f.merger) }, indexer_secs))
    }
}

/// How a task of some rows persists, checkpoints and is merged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskShape {
    /// Hydrants persisted.
    pub persists: f64,
    /// Hydrants checkpointed (one time chunk).
    pub hydrants: f64,
    /// Whether the indexer merged a spill (some checkpoint took more than one persist).
    pub spill_merged: bool,
    /// Whether the merger merged the hydrants (more than one, each under a quarter of
    /// `maxRowsPerSegment`); else it publishes each as its own segment.
    pub merged: bool,
}

impl TaskShape {
    /// A planned task of `rows` rows in one time chunk, persisting every `rows_per_persist`
    /// and checkpointing when one more persist could pass `rows_per_checkpoint`.
    pub fn planned(rows: f64, rows_per_persist: f64, rows_per_checkpoint: f64) -> Self {
        let rows_per_persist = rows_per_persist.max(1.0);
        let persists = (rows / rows_per_persist).ceil().max(1.0);
        let per_checkpoint = (rows_per_checkpoint / rows_per_persist).floor().max(1.0);
        let hydrants = (persists / per_checkpoint).ceil();
        Self::with(persists, hydrants, (per_checkpoint * rows_per_persist).min(rows))
    }

    /// A task as a report measured it: `persists` persists into `hydrants` hydrants.
    #[cfg(test)]
    pub fn measured(rows: f64, persists: f64, hydrants: f64) -> Self {
        let hydrants = hydrants.max(1.0);
        Self::with(persists.max(hydrants), hydrants, rows / hydrants)
    }

    /// A task that checkpointed `hydrants` hydrants, one per persist (real time).
    pub fn checkpointing_every_persist(rows: f64, hydrants: f64) -> Self {
        let hydrants = hydrants.max(1.0);
        Self::with(hydrants, hydrants, rows / hydrants)
    }

    /// A task's shape from its persists and hydrants, its hydrants (but the last) of
    /// `rows_per_hydrant` rows each.
    fn with(persists: f64, hydrants: f64, rows_per_hydrant: f64) -> Self {
        let small = rows_per_hydrant < (MAX_ROWS_PER_SEGMENT / MIN_SHARE_AS_PERSISTED as f64).ceil();
        TaskShape { persists, hydrants, spill_merged: persists > hydrants, merged: hydrants > 1.0 && small }
    }

    /// The indexer's and the merger's figures this shape adds to a task of `rows` rows that
    /// persisted and checkpointed once.
    pub fn added(&self, rows: f64, persists: &ExtraPersists, hydrants: &ExtraHydrants) -> (Figures, Figures) {
        let extra_hydrants = self.hydrants - 1.0;
        let mut indexer = hydrants.indexer.map(|x| x * extra_hydrants);
        if self.spill_merged {
            let as_sized = rows / persists.sized_rows_per_persist.max(1.0);
            indexer.secs += rows * persists.spilling_secs_per_row + persists.indexer_secs * (self.persists - as_sized);
        }
        let merger = if self.merged {
            let mut merger = hydrants.merger.map(|x| x * extra_hydrants);
            merger.secs += rows * hydrants.merge_secs_per_row;
            merger
        } else {
            hydrants.as_segments.map(|x| x * extra_hydrants)
        };
        (indexer, merger)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persists_cost_the_indexer_and_checkpointed_hydrants_both_merged_or_as_segments() {
        let persists =
            ExtraPersists { indexer_secs: 0.01, spilling_secs_per_row: 1e-6, sized_rows_per_persist: 109_000.0 };
        let hydrants = ExtraHydrants {
            indexer: Figures { secs: 0.02, write_units: 5.0, puts: 1.0, ..Default::default() },
            merger: Figures { gets: 1.0, ..Default::default() },
            merge_secs_per_row: 2e-6,
            as_segments: Figures { secs: 0.3, gets: 1.0, puts: 1.0, ..Default::default() },
        };
        // Druid's defaults at 1M rows/s: 37 persists, checkpoints of 33 (4.95M rows).
        let shape = TaskShape::planned(5_450_000.0, 150_000.0, MAX_ROWS_PER_SEGMENT);
        assert_eq!(shape, TaskShape { persists: 37.0, hydrants: 2.0, spill_merged: true, merged: false });
        let (indexer, merger) = shape.added(5_450_000.0, &persists, &hydrants);
        assert!((indexer.puts - 1.0).abs() < 1e-9 && (indexer.write_units - 5.0).abs() < 1e-9, "{indexer:?}");
        // A spilling task's persists and merge are in its per row (the sized run's), and each
        // persist beyond the sized run's rate costs its own: 37 persists where it made 50.
        assert!((indexer.secs - (0.02 + 5.45 - 13.0 * 0.01)).abs() < 1e-9, "{indexer:?}");
        let as_segment = (merger.gets, merger.puts, merger.secs);
        assert_eq!(as_segment, (1.0, 1.0, 0.3), "two hydrants of 4.95M and 0.5M rows, each a segment");
        // Checkpoints of 20,000 rows: 4 hydrants of an 80,000-row task, merged into one segment.
        let shape = TaskShape::planned(80_000.0, 10_000.0, 20_000.0);
        assert_eq!(shape, TaskShape { persists: 8.0, hydrants: 4.0, spill_merged: true, merged: true });
        let (_, merger) = shape.added(80_000.0, &persists, &hydrants);
        assert!((merger.secs - 0.16).abs() < 1e-9 && (merger.gets - 3.0).abs() < 1e-9, "{merger:?}");
        let one = TaskShape::planned(100.0, 150_000.0, MAX_ROWS_PER_SEGMENT);
        let (indexer, merger) = one.added(100.0, &persists, &hydrants);
        assert_eq!((indexer, merger), (Figures::default(), Figures::default()), "one persist adds nothing");
        let realtime = TaskShape::checkpointing_every_persist(1_000_000.0, 7.0);
        assert_eq!(realtime, TaskShape { persists: 7.0, hydrants: 7.0, spill_merged: false, merged: true });
        // Checkpoints at the spill's bound: a quarter of maxRowsPerSegment or more, not merged.
        let spill_bound = TaskShape::planned(4_600_000.0, 150_000.0, 2_070_000.0);
        assert_eq!(spill_bound, TaskShape { persists: 31.0, hydrants: 3.0, spill_merged: true, merged: false });
        let below = TaskShape::planned(4_600_000.0, 150_000.0, 1_200_000.0);
        assert!(below.merged, "checkpoints of 1.2M rows, under a quarter of 5M, are merged: {below:?}");
    }
}
