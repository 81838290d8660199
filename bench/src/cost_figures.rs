//! A function's billed figures in the cost model (seconds, DynamoDB units, S3 requests), each
//! a number for one invocation or a fit that gives one.

use sluice_report::FunctionUse;

/// The five figures, each a `T`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Figures<T = f64> {
    pub(super) secs: T,
    pub(super) read_units: T,
    pub(super) write_units: T,
    pub(super) puts: T,
    pub(super) gets: T,
}

impl<T> Figures<T> {
    /// Each figure from `f`, given how that figure is read from a function's use.
    pub(super) fn from_use(f: impl Fn(fn(&FunctionUse) -> f64) -> T) -> Self {
        Figures {
            secs: f(|u| u.secs),
            read_units: f(|u| u.meters.read_units),
            write_units: f(|u| u.meters.write_units),
            puts: f(|u| u.meters.s3_puts as f64),
            gets: f(|u| u.meters.s3_gets as f64),
        }
    }

    /// Each figure mapped by `f`.
    pub(super) fn map<U>(self, f: impl Fn(T) -> U) -> Figures<U> {
        Figures {
            secs: f(self.secs),
            read_units: f(self.read_units),
            write_units: f(self.write_units),
            puts: f(self.puts),
            gets: f(self.gets),
        }
    }

    /// Each figure of `self` with `other`'s by `f`.
    pub(super) fn zip<U, V>(self, other: Figures<U>, f: impl Fn(T, U) -> V) -> Figures<V> {
        Figures {
            secs: f(self.secs, other.secs),
            read_units: f(self.read_units, other.read_units),
            write_units: f(self.write_units, other.write_units),
            puts: f(self.puts, other.puts),
            gets: f(self.gets, other.gets),
        }
    }
}

impl Figures {
    /// The figures of `u`, over `n` (invocations, rows, ...).
    pub(super) fn of(u: &FunctionUse, n: f64) -> Self {
        let n = n.max(1.0);
        Figures::from_use(|get| get(u) / n)
    }
}
