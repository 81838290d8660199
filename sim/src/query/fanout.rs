//! How the broker spreads a query's segments: alone when they are few bytes, over workers it
//! invokes itself, or through an invocation tree (Lambada, SIGMOD 2020): the broker invokes
//! about sqrt(N) sub-brokers, each computes one of its share of the N batches and invokes a
//! worker for each of the others, and merges their partials (`sluice_broker::batches::tree`).
//!
//! ```text
//!   depth 0      depth 1               depth 2
//!   broker       broker                broker
//!               / | ... \            /   ...   \
//!              w  w      w        sub           sub       (~sqrt(N) sub-brokers)
//!                                / | \         / | \
//!                               w  w  w       w  w  w     (~sqrt(N) workers each)
//! ```
//!
//! One invoker issues its Invokes one after another (`invoke_issue` apart), so a flat fan-out
//! starts its last worker N issues late; the tree pays a second hop (and a second cold start)
//! to start it about 2 sqrt(N) issues late. As the broker does, the tree is taken past
//! [`BROKER_WIDTH`] batches.

use super::setup::QuerySetup;

/// Batches the broker invokes itself at most (the width of `sluice_broker::FanOut::new`):
/// more form a tree.
pub const BROKER_WIDTH: usize = 128;

/// The shape of one query's fan-out.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Fanout {
    /// Workers (0: the broker reads the segments itself).
    pub workers: usize,
    /// Sub-brokers between the broker and the workers, each computing one batch (0: none).
    pub sub_brokers: usize,
    /// Invocation levels below the broker: 0, 1 (flat) or 2 (tree).
    pub depth: usize,
    /// Batches of each invoker: one entry (the broker's) when flat, one per sub-broker in a
    /// tree (the sub-broker's own batch included).
    pub children: Vec<usize>,
}

impl Fanout {
    /// The fan-out for `bytes` to read from `segments` segments: batches of about
    /// `per_worker` bytes, at most one per segment, and within `max_workers` executions (the
    /// sub-brokers among them).
    pub fn plan(bytes: f64, segments: usize, per_worker: f64, s: &QuerySetup) -> Self {
        if bytes <= per_worker || segments <= 1 {
            return Fanout { workers: 0, sub_brokers: 0, depth: 0, children: Vec::new() };
        }
        let cap = s.max_workers.max(1.0) as usize;
        let wanted = ((bytes / per_worker).ceil() as usize).min(segments).min(cap);
        let f = if wanted > BROKER_WIDTH { Self::tree(wanted) } else { Self::flat(wanted) };
        debug_assert!(f.invocations() <= cap, "{f:?} over {cap}");
        f
    }

    /// Every worker invoked by the broker.
    pub fn flat(workers: usize) -> Self {
        Fanout { workers, sub_brokers: 0, depth: 1, children: vec![workers] }
    }

    /// About sqrt(workers) sub-brokers, the workers shared evenly among them.
    pub fn tree(workers: usize) -> Self {
        let k = sub_brokers_for(workers);
        let children = (0..k).map(|i| workers / k + usize::from(i < workers % k)).collect();
        Fanout { workers, sub_brokers: k, depth: 2, children }
    }

    #[cfg(test)]
    /// Seconds from the broker's first Invoke to the start of its last worker, with `start`
    /// seconds before a started function's handler runs (0 warm, its cold start cold).
    pub fn last_start(&self, s: &QuerySetup, start: f64) -> f64 {
        let hop = s.invoke_rtt / 2.0 + start;
        let widest = self.children.iter().copied().max().unwrap_or(0) as f64;
        match self.depth {
            0 => 0.0,
            1 => (widest - 1.0) * s.invoke_issue + hop,
            _ => (self.sub_brokers as f64 - 1.0) * s.invoke_issue + hop + (widest - 1.0) * s.invoke_issue + hop,
        }
    }

    /// Function invocations of the query beside the broker's: one per batch (a sub-broker
    /// computes one).
    pub fn invocations(&self) -> usize {
        self.workers
    }
}

/// Sub-brokers for `workers`: the ceiling of its square root.
fn sub_brokers_for(workers: usize) -> usize {
    ((workers as f64).sqrt().ceil() as usize).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PER: f64 = 128.0 * 1024.0 * 1024.0;

    #[test]
    fn few_bytes_stay_on_the_broker_and_more_are_split_into_batches() {
        let s = QuerySetup::default();
        assert_eq!(Fanout::plan(100.0e6, 10, PER, &s).depth, 0);
        let f = Fanout::plan(10.0 * PER, 100, PER, &s);
        assert_eq!((f.workers, f.depth, f.sub_brokers), (10, 1, 0), "{f:?}");
        assert_eq!(Fanout::plan(10.0 * PER, 4, PER, &s).workers, 4, "a segment is not split");
    }

    #[test]
    fn hundreds_of_workers_go_through_a_tree_of_about_sqrt_n_sub_brokers() {
        let s = QuerySetup::default();
        let f = Fanout::plan(625.0 * PER, 2000, PER, &s);
        assert_eq!((f.workers, f.depth, f.sub_brokers), (625, 2, 25), "{f:?}");
        assert_eq!(f.children.iter().sum::<usize>(), 625);
        assert!(f.children.iter().all(|&c| c == 25));
        assert_eq!(f.invocations(), 625, "a sub-broker computes one of its batches");
        let uneven = Fanout::tree(10);
        assert_eq!(uneven.children, vec![3, 3, 2, 2]);
        assert!(f.last_start(&s, 0.0) < Fanout::flat(625).last_start(&s, 0.0));
    }

    #[test]
    fn the_fan_out_stays_within_the_concurrency_sub_brokers_included() {
        let s = QuerySetup::default();
        let f = Fanout::plan(1e6 * PER, 1_000_000, PER, &s);
        assert_eq!(f.depth, 2);
        assert!(f.invocations() <= s.max_workers as usize, "{f:?}");
        assert!(f.workers >= 960, "{f:?}");
    }

    #[test]
    fn a_tree_starts_its_last_worker_about_two_sqrt_n_issues_late() {
        let s = QuerySetup { invoke_issue: 0.004, invoke_rtt: 0.0, ..QuerySetup::default() };
        let flat = Fanout::flat(400);
        let tree = Fanout::tree(400);
        assert!((flat.last_start(&s, 0.0) - 399.0 * 0.004).abs() < 1e-9);
        assert!((tree.last_start(&s, 0.0) - 38.0 * 0.004).abs() < 1e-9);
        assert!(tree.last_start(&s, 0.2) - tree.last_start(&s, 0.0) > 0.39, "two cold hops");
    }
}
