//! The functions' reserved concurrency as the template passes it: a query's fan-out kept
//! within the query workers' reservation (`QueryWorkerReservedConcurrency`), so that one query
//! never asks for more workers than the reservation can run at once (each worker past it is
//! throttled and its query fails). Batch splits within the indexers' reservation are the
//! pipeline's ([`sluice_pipeline::batch::INDEXER_RESERVED_ENV`]).

use sluice_broker::batches::tree;
use sluice_broker::FanOut;

/// The query-worker function's reserved concurrency (unset or 0: none, no cap).
pub const QUERY_WORKER_RESERVED_ENV: &str = "SLUICE_QUERY_WORKER_RESERVED_CONCURRENCY";

/// Workers one query of `batches` batches runs at once at the most: its batches, and the nodes
/// of its invocation tree past `width` (each a worker waiting for its own). A late batch
/// invoked again runs only once half of them answered, and a failed one once it ended: neither
/// raises the peak.
pub fn peak_workers(batches: usize, width: usize) -> usize {
    let nodes = if batches > width.max(1) { tree(vec![Vec::new(); batches], width).len() } else { 0 };
    batches + nodes
}

/// The most batches of one query (at most `max_batches`) whose workers run within `reserved`.
pub fn batches_within(max_batches: usize, width: usize, reserved: usize) -> usize {
    (1..=max_batches).rev().find(|n| peak_workers(*n, width) <= reserved).unwrap_or(1)
}

/// The most batches of one query the fan-out asks for, `max_batches` within the query
/// workers' reservation as `reserved` ([`QUERY_WORKER_RESERVED_ENV`]'s value) says.
pub fn max_batches_within(max_batches: usize, width: usize, reserved: Option<&str>) -> usize {
    match reserved.and_then(|r| r.trim().parse::<usize>().ok()).filter(|r| *r > 0) {
        Some(reserved) => batches_within(max_batches, width, reserved),
        None => max_batches,
    }
}

/// `fanout` within the query workers' reservation the environment names, lowered (and
/// logged) when one query could ask for more workers than it runs at once.
pub fn fan_out_from_env(mut fanout: FanOut) -> FanOut {
    let reserved = std::env::var(QUERY_WORKER_RESERVED_ENV).ok();
    let within = max_batches_within(fanout.max_batches, fanout.width, reserved.as_deref());
    if within < fanout.max_batches {
        tracing::warn!(
            workers = fanout.max_batches,
            reserved,
            lowered = within,
            "the query fan-out asks for more workers than the query workers' reserved concurrency runs at once \
             ({QUERY_WORKER_RESERVED_ENV}): one query's batches are lowered to fit it"
        );
        fanout.max_batches = within;
    }
    fanout
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_querys_workers_fit_the_reservation() {
        assert_eq!(peak_workers(128, 128), 128, "no tree");
        assert_eq!(peak_workers(129, 128), 129 + 12, "ceil(sqrt(129)) nodes");
        assert_eq!(batches_within(10_000, 128, 200), 186, "the template's defaults");
        assert!(peak_workers(186, 128) <= 200 && peak_workers(187, 128) > 200);
        assert_eq!(max_batches_within(10_000, 128, Some("200")), 186);
        assert_eq!(max_batches_within(50, 128, Some("200")), 50, "the default fan-out fits");
        assert_eq!(max_batches_within(10_000, 128, Some("0")), 10_000, "0: no reservation");
        assert_eq!(max_batches_within(10_000, 128, None), 10_000);
        assert_eq!(max_batches_within(300, 128, Some("12")), 12);
    }
}
