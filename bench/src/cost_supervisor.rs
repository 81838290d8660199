//! The supervisor's pass in the cost model: each figure fitted as `fixed + per partition x P +
//! per group x G` by least squares through runs with different partition and group counts.

use super::cost_figures::Figures;
use sluice_report::{PassFit, PassObservation, PipelineReport};

/// The supervisor's figures per pass, by partitions and task groups.
pub type SupervisorModel = Figures<PassFit>;

impl SupervisorModel {
    /// Fits each figure's mean per pass (both phases of a run) through the runs.
    pub(super) fn fit(runs: &[&PipelineReport]) -> Self {
        Figures::from_use(|get| {
            let obs: Vec<PassObservation> = runs
                .iter()
                .map(|r| {
                    let (t, s) = (&r.throughput.functions.supervisor, &r.steady.functions.supervisor);
                    let passes = (t.invocations + s.invocations).max(1) as f64;
                    (f64::from(r.partitions), f64::from(r.task_count), (get(t) + get(s)) / passes)
                })
                .collect();
            PassFit::through(&obs)
        })
    }

    /// One pass over `partitions` partitions in `groups` groups.
    pub fn pass(&self, partitions: f64, groups: f64) -> Figures {
        self.map(|f| f.at(partitions, groups))
    }
}
