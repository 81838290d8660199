//! When a batch is late: the times its sibling batches took to answer, and the point past which
//! one still unanswered is invoked a second time (hedging, as Starling and Lambada answer
//! stragglers: a slow host or a slow GET holds up the whole query, and a second invocation on
//! another instance usually answers first). Half of the batches must have answered, so that
//! their median says what a batch takes; a query of one batch is never hedged.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The broker's default: a batch is invoked again at 1.5 times the median answered batch's time.
pub const DEFAULT_HEDGE: f64 = 1.5;

/// How often a waiting batch checks whether it is late.
pub const CHECK_EVERY: Duration = Duration::from_millis(20);

/// The answer times of one query's batches (first attempts that answered).
#[derive(Debug)]
pub struct Timings {
    batches: usize,
    answered: Mutex<Vec<Duration>>,
}

impl Timings {
    /// The timings of a query of `batches` batches, none answered yet.
    pub fn new(batches: usize) -> Self {
        Self { batches, answered: Mutex::new(Vec::with_capacity(batches)) }
    }

    /// Records a batch that answered after `took`.
    pub fn answered(&self, took: Duration) {
        self.answered.lock().unwrap_or_else(PoisonError::into_inner).push(took);
    }

    /// How long a batch may run before it is invoked again, at `factor` times the median
    /// answered batch's time: `None` until half of the batches answered (and always for one
    /// batch).
    pub fn late_after(&self, factor: f64) -> Option<Duration> {
        if self.batches < 2 {
            return None;
        }
        let mut answered = self.answered.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if answered.len() * 2 < self.batches {
            return None;
        }
        answered.sort_unstable();
        Some(answered[answered.len() / 2].mul_f64(factor.max(1.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_late_only_once_half_its_siblings_answered() {
        let t = Timings::new(4);
        assert_eq!(t.late_after(1.5), None);
        t.answered(Duration::from_millis(100));
        assert_eq!(t.late_after(1.5), None, "one of four answered");
        t.answered(Duration::from_millis(300));
        assert_eq!(t.late_after(1.5), Some(Duration::from_millis(450)), "the median of two: the later");
        t.answered(Duration::from_millis(200));
        assert_eq!(t.late_after(2.0), Some(Duration::from_millis(400)));
        assert_eq!(t.late_after(0.5), Some(Duration::from_millis(200)), "never before the median");
        let one = Timings::new(1);
        one.answered(Duration::from_millis(1));
        assert_eq!(one.late_after(1.5), None, "a query of one batch is never hedged");
    }
}
