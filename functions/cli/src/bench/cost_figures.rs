//! A function's figures in the cost model (seconds, DynamoDB units, S3 requests) for one
//! invocation, as measured or fitted.

use sluice_report::FunctionUse;

/// A function's figures for one invocation (a task, a pass).
#[derive(Debug, Clone, Copy, Default)]
pub struct Figures {
    pub(super) secs: f64,
    pub(super) read_units: f64,
    pub(super) write_units: f64,
    pub(super) puts: f64,
    pub(super) gets: f64,
}

impl Figures {
    /// The figures of `u`, over `n` (invocations, rows, ...).
    pub(super) fn of(u: &FunctionUse, n: f64) -> Self {
        let n = n.max(1.0);
        Figures {
            secs: u.secs / n,
            read_units: u.meters.read_units / n,
            write_units: u.meters.write_units / n,
            puts: u.meters.s3_puts as f64 / n,
            gets: u.meters.s3_gets as f64 / n,
        }
    }

    /// Each figure mapped by `f`.
    pub(super) fn map(self, f: impl Fn(f64) -> f64) -> Self {
        Figures {
            secs: f(self.secs),
            read_units: f(self.read_units),
            write_units: f(self.write_units),
            puts: f(self.puts),
            gets: f(self.gets),
        }
    }

    /// Each figure of `self` with `other`'s by `f`.
    pub(super) fn zip(self, other: Self, f: impl Fn(f64, f64) -> f64) -> Self {
        Figures {
            secs: f(self.secs, other.secs),
            read_units: f(self.read_units, other.read_units),
            write_units: f(self.write_units, other.write_units),
            puts: f(self.puts, other.puts),
            gets: f(self.gets, other.gets),
        }
    }
}
