//! The supervisor's pass in the cost model: each figure fitted as `fixed + per partition x P +
//! per group x G` by least squares through runs with different partition and group counts.

use super::cost_figures::Figures;
use sluice_report::{FunctionUse, PassFit, PassObservation, PipelineReport};

/// The supervisor's figures per pass, by partitions and task groups.
#[derive(Debug, Clone, Copy)]
pub struct SupervisorModel {
    pub(super) secs: PassFit,
    pub(super) read_units: PassFit,
    pub(super) write_units: PassFit,
    pub(super) puts: PassFit,
    pub(super) gets: PassFit,
}

impl SupervisorModel {
    /// Fits each figure's mean per pass (both phases of a run) through the runs.
    pub(super) fn fit(runs: &[&PipelineReport]) -> Self {
        let through = |f: fn(&FunctionUse) -> f64| {
            let obs: Vec<PassObservation> = runs
                .iter()
                .map(|r| {
                    let (t, s) = (&r.throughput.functions.supervisor, &r.steady.functions.supervisor);
                    let passes = (t.invocations + s.invocations).max(1) as f64;
                    (f64::from(r.partitions), f64::from(r.task_count), (f(t) + f(s)) / passes)
                })
                .collect();
            PassFit::through(&obs)
        };
        SupervisorModel {
            secs: through(|u| u.secs),
            read_units: through(|u| u.meters.read_units),
            write_units: through(|u| u.meters.write_units),
            puts: through(|u| u.meters.s3_puts as f64),
            gets: through(|u| u.meters.s3_gets as f64),
        }
    }

    /// One pass over `partitions` partitions in `groups` groups.
    pub fn pass(&self, partitions: f64, groups: f64) -> Figures {
        Figures {
            secs: self.secs.at(partitions, groups),
            read_units: self.read_units.at(partitions, groups),
            write_units: self.write_units.at(partitions, groups),
            puts: self.puts.at(partitions, groups),
            gets: self.gets.at(partitions, groups),
        }
    }
}
