//! Running a parsed query over its opened segments: whole ([`execute`], [`execute_within`]) or
//! as partials that merge in any grouping and order ([`Partial`], [`partial`],
//! [`partial_within`], [`finish`]), within a deadline and through the process's per-segment
//! partial cache when there is one. Each query type's own file aggregates and finishes it.

use super::{engine, groupby, metadata, partial_cache, scan, scope, search, timeseries, topn};
use super::{PartialCache, Query, QueryError, QuerySegment};
use std::sync::Arc;
use std::time::Instant;

/// Runs `query` over `segments` (the datasource's visible segments, in timeline order).
pub fn execute(query: &Query, segments: &[QuerySegment]) -> Result<serde_json::Value, QueryError> {
    scope::run(None, query.source().lookups.clone(), || run(query, segments))
}

/// [`execute`], stopped with [`QueryError::Timeout`] once `deadline` passes (checked each time
/// a segment is opened; `timeout_ms` is the timeout the error names), reading and filling
/// `partials`, the process's per-segment partial cache, when given.
pub fn execute_within(
    query: &Query,
    segments: &[QuerySegment],
    deadline: Instant,
    timeout_ms: u64,
    partials: Option<&Arc<PartialCache>>,
) -> Result<serde_json::Value, QueryError> {
    within(query, (deadline, timeout_ms), partials, || run(query, segments))
}

/// `work` in `query`'s scope with its deadline, through `partials` when given.
fn within<T>(
    query: &Query,
    deadline: (Instant, u64),
    partials: Option<&Arc<PartialCache>>,
    work: impl FnOnce() -> T,
) -> T {
    let scoped = || scope::run(Some(deadline), query.source().lookups.clone(), work);
    match partials {
        Some(p) => partial_cache::enter(p.clone(), scoped),
        None => scoped(),
    }
}

/// What part of a query's segments yields before the answer is finished: partials of the
/// same query over disjoint sets of its segments merge ([`Partial::absorb`]) in any grouping
/// and order into the partial of their union, and [`finish`] turns that into the answer.
pub enum Partial {
    /// Groups and aggregator states (timeseries, topN, groupBy).
    Aggregated(engine::Aggregated),
}

impl Partial {
    /// Merges `other` (the same query over other segments) into this one.
    pub fn absorb(&mut self, other: Partial) -> Result<(), QueryError> {
        match (self, other) {
            (Partial::Aggregated(a), Partial::Aggregated(b)) => a.absorb(b),
        }
    }

    /// The partial on the wire ([`wire`]).
    pub fn to_bytes(&self) -> Result<Vec<u8>, QueryError> {
        let Partial::Aggregated(a) = self;
        a.to_bytes()
    }

    /// Reads a partial of `query` from the wire, checked against what `query` compiles to;
    /// `source` (the worker or batch it came from) is named in every error.
    pub fn from_bytes(query: &Query, bytes: &[u8], source: &str) -> Result<Partial, QueryError> {
        let Some(Partial::Aggregated(template)) = partial(query, &[])? else {
            return Err(QueryError::Unsupported(format!("partials of a {} query", query.kind())));
        };
        Ok(Partial::Aggregated(engine::Aggregated::from_bytes(bytes, &template, source)?))
    }
}

/// The partial of `query` over `segments`, its segments run on every thread of the current
/// rayon pool; `None` for a query type answered whole ([`execute`]), not from partials.
pub fn partial(query: &Query, segments: &[QuerySegment]) -> Result<Option<Partial>, QueryError> {
    scope::run(None, query.source().lookups.clone(), || partial_in_scope(query, segments))
}

/// [`partial`], stopped with [`QueryError::Timeout`] once `deadline` passes (checked each time
/// a segment is opened; `timeout_ms` is the timeout the error names), reading and filling
/// `partials`, the process's per-segment partial cache, when given.
pub fn partial_within(
    query: &Query,
    segments: &[QuerySegment],
    deadline: Instant,
    timeout_ms: u64,
    partials: Option<&Arc<PartialCache>>,
) -> Result<Option<Partial>, QueryError> {
    within(query, (deadline, timeout_ms), partials, || partial_in_scope(query, segments))
}

fn partial_in_scope(query: &Query, segments: &[QuerySegment]) -> Result<Option<Partial>, QueryError> {
    Ok(Some(Partial::Aggregated(match query {
        Query::Timeseries(q) => timeseries::aggregate(q, segments)?,
        Query::TopN(q) => topn::aggregate(q, segments)?,
        Query::GroupBy(q) => groupby::aggregate(q, segments)?,
        _ => return Ok(None),
    })))
}

/// The answer of `query` from its merged partial.
pub fn finish(query: &Query, partial: Partial) -> Result<serde_json::Value, QueryError> {
    let Partial::Aggregated(agg) = partial;
    match query {
        Query::Timeseries(q) => timeseries::finish(q, agg),
        Query::TopN(q) => topn::finish(q, agg),
        Query::GroupBy(q) => groupby::finish(q, agg),
        other => Err(QueryError::Unsupported(format!("partials of a {} query", other.kind()))),
    }
}

fn run(query: &Query, segments: &[QuerySegment]) -> Result<serde_json::Value, QueryError> {
    match query {
        Query::Timeseries(q) => timeseries::finish(q, timeseries::aggregate(q, segments)?),
        Query::TopN(q) => topn::finish(q, topn::aggregate(q, segments)?),
        Query::GroupBy(q) => groupby::finish(q, groupby::aggregate(q, segments)?),
        Query::Scan(q) => scan::run(q, segments),
        Query::TimeBoundary(q) => metadata::time_boundary(q, segments),
        Query::SegmentMetadata(q) => metadata::segment_metadata(q, segments),
        Query::DataSourceMetadata(q) => metadata::datasource_metadata(q, segments),
        Query::Search(q) => search::run(q, segments),
    }
}
