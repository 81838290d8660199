//! The fault plan behind [`FaultyStore`](crate::storage::FaultyStore) and
//! [`FaultyMeta`](crate::metadata::FaultyMeta), for the chaos test. Each step of the pipeline
//! (a supervisor pass, an indexer attempt, a merger) gets its own [`Faults`]: calls
//! may fail transiently, before the call or after it (applied, but the caller sees an
//! error: an unknown outcome), and the step may be killed after a number of calls: from then
//! on every call fails, before or after the call that killed it, as if the process died there.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

/// A small deterministic random source (xorshift), seeded per schedule.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A source from a seed (never zero).
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.below(1_000_000) as f64) < p * 1_000_000.0
    }
}

/// Faults injected so far, by kind, across steps.
pub type FaultCounts = Arc<Mutex<BTreeMap<&'static str, u64>>>;

/// The fault plan of one step.
#[derive(Debug)]
pub struct Faults {
    rng: Mutex<Rng>,
    transient: f64,
    kill_after: Mutex<Option<u64>>,
    dead: Mutex<bool>,
    counts: FaultCounts,
}

/// Where a call fails.
enum Fail {
    /// Before the call: nothing happened.
    Before,
    /// After the call: it happened, the caller does not know.
    After,
}

impl Faults {
    /// A step that fails calls transiently with probability `transient` and, if `kill_after`
    /// is set, dies at that call.
    pub fn new(seed: u64, transient: f64, kill_after: Option<u64>, counts: FaultCounts) -> Arc<Self> {
        Arc::new(Self {
            rng: Mutex::new(Rng::new(seed)),
            transient,
            kill_after: Mutex::new(kill_after),
            dead: Mutex::new(false),
            counts,
        })
    }

    fn count(&self, kind: &'static str) {
        *self.counts.lock().expect("counts").entry(kind).or_default() += 1;
    }

    /// Whether the step was killed.
    pub fn is_dead(&self) -> bool {
        *self.dead.lock().expect("dead")
    }

    /// Decides the fate of the next call of kind `what` (`meta` or `storage`).
    fn next(&self, what: &'static str) -> Option<Fail> {
        if self.is_dead() {
            return Some(Fail::Before);
        }
        let mut rng = self.rng.lock().expect("rng");
        let mut kill = self.kill_after.lock().expect("kill");
        if let Some(left) = kill.as_mut() {
            if *left == 0 {
                *self.dead.lock().expect("dead") = true;
                self.count("kill");
                return Some(if rng.chance(0.5) { Fail::Before } else { Fail::After });
            }
            *left -= 1;
        }
        if rng.chance(self.transient) {
            self.count(if what == "meta" { "transient metadata error" } else { "transient storage error" });
            return Some(if rng.chance(0.5) { Fail::Before } else { Fail::After });
        }
        None
    }
}

impl Faults {
    /// Runs `call` under the step's faults: an error (from `error`) before it, after it, or
    /// its own result.
    pub(crate) async fn around<T, E>(
        &self,
        what: &'static str,
        call: impl Future<Output = Result<T, E>>,
        error: impl Fn() -> E,
    ) -> Result<T, E> {
        match self.next(what) {
            None => call.await,
            Some(Fail::Before) => Err(error()),
            Some(Fail::After) => {
                let _ = call.await;
                Err(error())
            }
        }
    }
}
