//! The aggregation path shared by timeseries, topN and groupBy: for every segment overlapping
//! the query intervals, the rows inside the intervals that pass the filter (a bitmap), mapped
//! to groups a batch at a time and folded into each aggregator's states.

use super::aggregator::Accumulator;
use super::bitmap_filter;
use super::columns::SegmentColumns;
use super::grouping::{Groups, KeyValue, SegmentGrouper};
use super::model::{Common, DimensionSpec};
use super::partial_cache;
use super::{scope, QueryError, QuerySegment};
use rayon::prelude::*;
use roaring::RoaringBitmap;
use sluice_format::filter::Filter;
use sluice_format::time::Interval;
use std::sync::{Arc, Mutex, PoisonError};

/// Rows per batch handed to the aggregators.
pub const BATCH: usize = 4096;
/// Most groups (time bucket and dimension values) one query may build, checked after each
/// batch: Druid's groupBy refuses a query past its merging limits likewise.
pub const MAX_GROUPS: usize = 2_000_000;
/// Most aggregates (groups times aggregators) one query may build.
pub const MAX_CELLS: usize = 5_000_000;

/// Groups and their aggregates.
pub struct Aggregated {
    /// The groups.
    pub groups: Groups,
    /// One accumulator per aggregator, in query order.
    pub accumulators: Vec<Accumulator>,
    /// Per segment with rows in the intervals: the data's time span clipped to each interval
    /// (Druid's cursor span: bucket filling and the `all` bucket's timestamp follow it).
    pub spans: Vec<Interval>,
}

/// The segments overlapping `intervals`.
pub fn overlapping<'a>(
    segments: &'a [QuerySegment],
    intervals: &'a [Interval],
) -> impl Iterator<Item = &'a QuerySegment> {
    segments.iter().filter(move |s| intervals.iter().any(|i| i.start < s.interval.end && s.interval.start < i.end))
}

/// The rows a query reads in one segment: row ranges (no filter) or a bitmap.
#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    /// Half-open row ranges, ascending.
    Ranges(Vec<(u32, u32)>),
    /// Any rows.
    Bitmap(RoaringBitmap),
}

impl Selection {
    /// Number of rows.
    pub fn len(&self) -> u64 {
        match self {
            Selection::Ranges(r) => r.iter().map(|(a, b)| u64::from(b - a)).sum(),
            Selection::Bitmap(b) => b.len(),
        }
    }

    /// Returns true when no row is selected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows, ascending.
    pub fn rows(&self) -> Box<dyn Iterator<Item = u32> + '_> {
        match self {
            Selection::Ranges(r) => Box::new(r.iter().flat_map(|&(a, b)| a..b)),
            Selection::Bitmap(b) => Box::new(b.iter()),
        }
    }

    /// The first and last row.
    pub fn first_last(&self) -> Option<(u32, u32)> {
        match self {
            Selection::Ranges(r) => r
                .iter()
                .find(|(a, b)| a < b)
                .map(|(a, _)| *a)
                .zip(r.iter().rev().find(|(a, b)| a < b).map(|(_, b)| b - 1)),
            Selection::Bitmap(b) => b.min().zip(b.max()),
        }
    }

    /// Calls `f` with the rows in ascending batches of at most [`BATCH`].
    pub fn for_each_batch(&self, mut f: impl FnMut(&[u32]) -> Result<(), QueryError>) -> Result<(), QueryError> {
        let mut batch = Vec::with_capacity(BATCH);
        match self {
            Selection::Ranges(ranges) => {
                for &(a, b) in ranges {
                    let mut at = a;
                    while at < b {
                        let end = b.min(at + BATCH as u32);
                        batch.clear();
                        batch.extend(at..end);
                        f(&batch)?;
                        at = end;
                    }
                }
            }
            Selection::Bitmap(bitmap) => {
                let mut iter = bitmap.iter().peekable();
                while iter.peek().is_some() {
                    batch.clear();
                    batch.extend(iter.by_ref().take(BATCH));
                    f(&batch)?;
                }
            }
        }
        Ok(())
    }

    fn to_bitmap(&self) -> RoaringBitmap {
        match self {
            Selection::Ranges(ranges) => {
                let mut b = RoaringBitmap::new();
                for &(a, e) in ranges {
                    b.insert_range(a..e);
                }
                b
            }
            Selection::Bitmap(b) => b.clone(),
        }
    }
}

/// The rows of a segment inside `intervals` and, with `spans`, each interval's clipped span.
/// A segment whose time chunk lies inside an interval is taken whole without reading `__time`.
pub fn rows_in(
    cols: &SegmentColumns<'_>,
    intervals: &[Interval],
    spans: Option<&mut Vec<Interval>>,
) -> Result<Selection, QueryError> {
    let n = cols.num_rows() as u32;
    let chunk = cols.segment.directory().interval;
    let mut found = Vec::new();
    let ranges = if let Some(i) = intervals.iter().find(|i| i.start <= chunk.start && chunk.end <= i.end) {
        if spans.is_some() {
            if let Some((first, last)) = cols.time_range()? {
                found.push(Interval::new(i.start.max(first), i.end.min(last + 1)));
            }
        }
        vec![(0, n)]
    } else {
        let times = cols.times()?;
        let mut ranges = Vec::new();
        for i in intervals {
            let lo = times.partition_point(|&t| t < i.start);
            let hi = times.partition_point(|&t| t < i.end);
            if hi > lo {
                ranges.push((lo as u32, hi as u32));
                found.push(Interval::new(i.start.max(times[lo]), i.end.min(times[hi - 1] + 1)));
            }
        }
        ranges.sort_unstable();
        // Overlapping query intervals must not select a row twice.
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
        for (a, b) in ranges {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        merged
    };
    if let Some(spans) = spans {
        spans.extend(found);
    }
    Ok(Selection::Ranges(ranges))
}

/// The rows of a segment selected by `intervals` and `filter`.
pub fn select(
    cols: &mut SegmentColumns<'_>,
    intervals: &[Interval],
    filter: Option<&Filter>,
    spans: Option<&mut Vec<Interval>>,
) -> Result<Selection, QueryError> {
    let rows = rows_in(cols, intervals, spans)?;
    match (filter, rows.is_empty()) {
        (Some(f), false) => Ok(Selection::Bitmap(rows.to_bitmap() & bitmap_filter::evaluate(f, cols)?.yes)),
        _ => Ok(rows),
    }
}

/// Aggregates the query's rows grouped by time bucket and `dims`: each segment on its own,
/// on every thread of the current rayon pool, its partial merged into the others'. Merges
/// are associative and commutative (see [`Accumulator::absorb`]), so the answer does not
/// depend on the number of threads nor on how segments are split between them. Inside a
/// query scope with a [`PartialCache`](partial_cache::PartialCache), a segment whose partial is cached is not read.
pub fn aggregate(common: &Common, dims: &[DimensionSpec], segments: &[QuerySegment]) -> Result<Aggregated, QueryError> {
    let template = Aggregated::empty(common, dims.len())?;
    let overlapping: Vec<&QuerySegment> = overlapping(segments, &common.intervals.0).collect();
    let scope = scope::current();
    let cache = partial_cache::current::<Aggregated>();
    let shape = cache.as_ref().map(|_| shape(common, dims));
    // Without a cache to keep each segment's partial, rows fold straight into the task's
    // partial where that gives the same states as merging the segment's own partial.
    let direct = cache.is_none() && template.accumulators.iter().all(Accumulator::folds_across_segments);
    let part = |seg: &QuerySegment| -> Result<Part, QueryError> {
        let (Some(cache), Some(shape)) = (&cache, &shape) else {
            return aggregate_segment(common, dims, seg, &template).map(Part::Owned);
        };
        let key =
            partial_cache::key(seg.segment.object(), seg.segment.size(), seg.interval, &common.intervals.0, shape);
        if let Some(hit) = cache.get(&key) {
            return Ok(Part::Shared(hit));
        }
        let computed = Arc::new(aggregate_segment(common, dims, seg, &template)?);
        cache.put(key, computed.clone());
        Ok(Part::Shared(computed))
    };
    let merge = |mut a: Aggregated, b: Part| -> Result<Aggregated, QueryError> {
        match b {
            Part::Owned(b) => a.absorb(b)?,
            Part::Shared(b) => a.absorb_ref(&b)?,
        }
        Ok(a)
    };
    let fold = |mut acc: Aggregated, seg: &QuerySegment| {
        scope::enter(scope.clone(), || match direct {
            true => aggregate_into(common, dims, seg, &mut acc).map(|()| acc),
            false => merge(acc, part(seg)?),
        })
    };
    let mut merged = if template.accumulators.iter().any(Accumulator::is_sketch) {
        // Sketch unions past their exact modes estimate a little differently with how merges
        // are grouped: one segment per task and a tree of merges that depends only on the
        // segments.
        overlapping
            .par_iter()
            .with_max_len(1)
            .try_fold(|| template.fresh(), |acc, seg| fold(acc, seg))
            .try_reduce(|| template.fresh(), |a, b| merge(a, Part::Owned(b)))?
    } else {
        // Every other merge is exact in any grouping: one segment per task keeps the threads
        // evenly busy, and each thread folds its tasks into its own partial, so that only as
        // many partials as threads are merged (a tree of every segment's partial merges the
        // values of a large dimension again at each of its levels).
        let threads = rayon::current_num_threads().max(1);
        let per_thread: Vec<Mutex<Option<Aggregated>>> = (0..threads).map(|_| Mutex::new(None)).collect();
        let slot = || &per_thread[rayon::current_thread_index().unwrap_or(0) % threads];
        let take = |m: &Mutex<Option<Aggregated>>| m.lock().unwrap_or_else(PoisonError::into_inner).take();
        overlapping.par_iter().with_max_len(1).try_for_each(|seg| {
            // Taken out while the segment runs: no lock is held across the engine.
            let mut acc = fold(take(slot()).unwrap_or_else(|| template.fresh()), seg)?;
            let mut guard = slot().lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(other) = guard.take() {
                acc.absorb(other)?;
            }
            *guard = Some(acc);
            Ok::<_, QueryError>(())
        })?;
        let mut merged = template.fresh();
        for partial in per_thread.into_iter().filter_map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner)) {
            merged.absorb(partial)?;
        }
        merged
    };
    let n = merged.groups.len();
    for acc in &mut merged.accumulators {
        acc.grow(n);
    }
    Ok(merged)
}

/// A segment's partial: computed for this query alone, or shared with the partial cache.
enum Part {
    Owned(Aggregated),
    Shared(Arc<Aggregated>),
}

/// What a segment's partial depends on besides the segment and the intervals: the filter,
/// granularity, virtual columns, aggregators and dimensions (not the post-aggregators,
/// `having`, ordering, limit nor context, which apply after the merge).
fn shape(common: &Common, dims: &[DimensionSpec]) -> String {
    format!(
        "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
        common.data_source, common.filter, common.granularity, common.virtual_columns, common.aggregations, dims
    )
}

/// One segment's groups and aggregates.
fn aggregate_segment(
    common: &Common,
    dims: &[DimensionSpec],
    seg: &QuerySegment,
    template: &Aggregated,
) -> Result<Aggregated, QueryError> {
    let mut partial = template.fresh();
    aggregate_into(common, dims, seg, &mut partial)?;
    Ok(partial)
}

/// Folds one segment's rows into `partial` (fresh, or holding other segments when every
/// accumulator [folds across segments](Accumulator::folds_across_segments)).
fn aggregate_into(
    common: &Common,
    dims: &[DimensionSpec],
    seg: &QuerySegment,
    partial: &mut Aggregated,
) -> Result<(), QueryError> {
    let Aggregated { groups, accumulators, spans } = partial;
    let intervals = &common.intervals.0;
    // One group for everything: no dimension, granularity `all`.
    let single = dims.is_empty() && common.granularity == sluice_format::granularity::Granularity::All;
    let counts_only = single && accumulators.iter().all(|a| a.counts_rows());
    let mut cols = SegmentColumns::open(&seg.segment, &common.virtual_columns)?;
    let rows = select(&mut cols, intervals, common.filter.as_ref(), Some(spans))?;
    if rows.is_empty() {
        return Ok(());
    }
    if counts_only {
        let slot = groups.slot(sluice_format::time::ETERNITY_START, &[]);
        for acc in accumulators.iter_mut() {
            acc.grow(groups.len());
            acc.add_rows(slot as usize, rows.len());
        }
        return Ok(());
    }
    let mut inputs = Vec::with_capacity(accumulators.len());
    for acc in accumulators.iter() {
        let column = acc.input.as_deref().map(|n| cols.column(n)).transpose()?;
        acc.check_input(column.as_deref())?;
        let only = acc.filter.as_ref().map(|f| bitmap_filter::evaluate(f, &mut cols)).transpose()?.map(|m| m.yes);
        inputs.push((column, only));
    }
    // No dimension, time buckets, counts and sums: a segment whose rows all fall in one bucket
    // (they ascend by time, so its first and last row say) folds its selected rows without
    // decoding `__time`, as a segment of an hour chunk does for an hourly or coarser query.
    if let (true, false, Selection::Ranges(ranges)) = (dims.is_empty(), single, &rows) {
        let folds =
            accumulators.iter().zip(&inputs).all(|(a, (c, only))| only.is_none() && a.folds_ranges(c.as_deref()));
        let granularity = common.granularity;
        let bucket = match cols.time_range()? {
            Some((first, last)) if folds && granularity.floor(first) == granularity.floor(last) => {
                Some(granularity.floor(first))
            }
            _ => None,
        };
        if let Some(start) = bucket {
            let slot = groups.slot(start, &[]) as usize;
            for (acc, (column, _)) in accumulators.iter_mut().zip(&inputs) {
                acc.grow(groups.len());
                for &(a, b) in ranges {
                    acc.update_range(column.as_deref(), a..b, slot);
                }
            }
            return check_size(groups, accumulators.len());
        }
    }
    let need_times = common.granularity != sluice_format::granularity::Granularity::All
        || accumulators.iter().any(Accumulator::reads_times)
        || inputs.iter().any(|(c, _)| matches!(c.as_deref(), Some(super::columns::Column::Time)));
    let times = if need_times { cols.times()? } else { Default::default() };
    // First/last ordered by another column (`timeColumn`): that column's times, row by row.
    let mut own_times: Vec<Option<Vec<i64>>> = Vec::with_capacity(accumulators.len());
    for acc in accumulators.iter() {
        own_times.push(match &acc.time_input {
            Some(name) => Some(column_times(&*cols.column(name)?, &times, cols.num_rows())),
            None => None,
        });
    }
    // No dimension, time buckets: counts and sums fold each bucket's run of rows in one pass.
    if let (true, false, Selection::Ranges(ranges)) = (dims.is_empty(), single, &rows) {
        let folds =
            accumulators.iter().zip(&inputs).all(|(a, (c, only))| only.is_none() && a.folds_ranges(c.as_deref()));
        if let Some(runs) = folds.then(|| time_runs(common.granularity, ranges, &times)).flatten() {
            for (start, run) in runs {
                let slot = groups.slot(start, &[]) as usize;
                for (acc, (column, _)) in accumulators.iter_mut().zip(&inputs) {
                    acc.grow(groups.len());
                    acc.update_range(column.as_deref(), run.clone(), slot);
                }
            }
            return check_size(groups, accumulators.len());
        }
    }
    let mut grouper = if single { None } else { Some(SegmentGrouper::new(&mut cols, common.granularity, dims)?) };
    if let Some(g) = &mut grouper {
        match &rows {
            Selection::Ranges(r) => g.prime(r.iter().flat_map(|&(a, b)| a..b), groups),
            Selection::Bitmap(b) => g.prime(b.iter(), groups),
        }
    }
    let single_slot = if single { Some(groups.slot(sluice_format::time::ETERNITY_START, &[])) } else { None };
    // One group and whole row ranges: counts and sums fold each range in one pass.
    let mut ranged = vec![false; accumulators.len()];
    if let (Some(slot), Selection::Ranges(ranges)) = (single_slot, &rows) {
        for ((acc, (column, only)), ranged) in accumulators.iter_mut().zip(&inputs).zip(&mut ranged) {
            *ranged = only.is_none() && acc.folds_ranges(column.as_deref());
            if *ranged {
                acc.grow(groups.len());
                for &(a, b) in ranges {
                    acc.update_range(column.as_deref(), a..b, slot as usize);
                }
            }
        }
    }
    if grouper.is_none() && ranged.iter().all(|&r| r) {
        return Ok(());
    }
    let (mut pair_rows, mut pair_slots) = (Vec::new(), Vec::new());
    let (mut sub_rows, mut sub_slots) = (Vec::new(), Vec::new());
    rows.for_each_batch(|batch| {
        pair_rows.clear();
        pair_slots.clear();
        match (&mut grouper, single_slot) {
            (Some(g), _) => g.assign(batch, &times, groups, &mut pair_rows, &mut pair_slots),
            (None, slot) => {
                pair_rows.extend_from_slice(batch);
                pair_slots.resize(batch.len(), slot.unwrap_or(0));
            }
        }
        check_size(groups, accumulators.len())?;
        let pending = accumulators.iter_mut().zip(&inputs).zip(&own_times).zip(&ranged).filter(|(_, &r)| !r);
        for (((acc, (column, only)), own), _) in pending {
            acc.grow(groups.len());
            let times = own.as_deref().unwrap_or(&times);
            match only {
                None => acc.update(column.as_deref(), &pair_rows, &pair_slots, times),
                Some(bitmap) => {
                    sub_rows.clear();
                    sub_slots.clear();
                    for (&r, &s) in pair_rows.iter().zip(&pair_slots) {
                        if bitmap.contains(r) {
                            sub_rows.push(r);
                            sub_slots.push(s);
                        }
                    }
                    acc.update(column.as_deref(), &sub_rows, &sub_slots, times);
                }
            }
        }
        Ok(())
    })?;
    for acc in accumulators.iter_mut() {
        acc.grow(groups.len());
    }
    Ok(())
}

/// The rows of `ranges` as runs of one time bucket each (bucket start, rows), when `times`
/// ascends within every range, as a segment's rows do (`docs/segment-format.md`); `None`
/// otherwise, and for a bucket whose rows its floor and next do not bracket.
fn time_runs(
    granularity: sluice_format::granularity::Granularity,
    ranges: &[(u32, u32)],
    times: &[i64],
) -> Option<Vec<(i64, std::ops::Range<u32>)>> {
    let mut runs = Vec::new();
    for &(a, b) in ranges {
        let range = times.get(a as usize..b as usize)?;
        if !range.windows(2).all(|w| w[0] <= w[1]) {
            return None;
        }
        let mut i = 0;
        while i < range.len() {
            let start = granularity.floor(range[i]);
            let end = granularity.next(start);
            let len = range[i..].partition_point(|&t| t < end);
            if len == 0 || start > range[i] {
                return None;
            }
            runs.push((start, a + i as u32..a + (i + len) as u32));
            i += len;
        }
    }
    Some(runs)
}

/// [`QueryError::Invalid`] once `groups` hold more than [`MAX_GROUPS`] groups or
/// [`MAX_CELLS`] aggregates.
fn check_size(groups: &Groups, num_aggregators: usize) -> Result<(), QueryError> {
    if groups.len() > MAX_GROUPS || groups.len().saturating_mul(num_aggregators) > MAX_CELLS {
        return Err(QueryError::invalid(
            "dimensions",
            format!(
                "more than {MAX_GROUPS} groups or {MAX_CELLS} aggregates (groups times aggregators): group by \
                 fewer dimensions, with fewer aggregators, a coarser granularity or a narrower filter"
            ),
        ));
    }
    Ok(())
}

impl Aggregated {
    /// No group yet, with the query's aggregators compiled.
    pub fn empty(common: &Common, dims: usize) -> Result<Self, QueryError> {
        let accumulators = common
            .aggregations
            .iter()
            .enumerate()
            .map(|(i, a)| Accumulator::new(a, &format!("aggregations[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Aggregated { groups: Groups::new(dims), accumulators, spans: Vec::new() })
    }

    /// The same aggregators and dimensions, with no group.
    pub fn fresh(&self) -> Self {
        Aggregated {
            groups: Groups::new(self.groups.dims),
            accumulators: self.accumulators.iter().map(Accumulator::fresh).collect(),
            spans: Vec::new(),
        }
    }

    /// Merges `other` (the same query over other segments) into this one, within the
    /// query's limits on groups.
    pub fn absorb(&mut self, other: Aggregated) -> Result<(), QueryError> {
        if self.groups.is_empty() && self.spans.is_empty() {
            *self = other;
            return Ok(());
        }
        self.absorb_ref(&other)
    }

    /// [`Aggregated::absorb`] of a partial kept elsewhere (a cached one).
    pub fn absorb_ref(&mut self, other: &Aggregated) -> Result<(), QueryError> {
        let slots = self.groups.absorb(&other.groups);
        check_size(&self.groups, self.accumulators.len())?;
        for (mine, theirs) in self.accumulators.iter_mut().zip(&other.accumulators) {
            mine.absorb(theirs, &slots);
        }
        self.spans.extend_from_slice(&other.spans);
        Ok(())
    }
}

impl partial_cache::Weighed for Aggregated {
    fn approx_bytes(&self) -> usize {
        let values: usize = self
            .groups
            .interners
            .iter()
            .flat_map(|i| &i.values)
            .map(|v| 2 * std::mem::size_of::<KeyValue>() + 16 + if let KeyValue::Str(s) = v { 2 * s.len() } else { 0 })
            .sum();
        let groups = self.groups.len() * (8 + 8 + 4 * self.groups.dims);
        let states: usize = self.accumulators.iter().map(Accumulator::approx_bytes).sum();
        std::mem::size_of::<Self>() + values + groups + states + self.spans.len() * 16
    }
}

impl Aggregated {
    /// The finalized aggregates of group `slot`, in query order, keyed by name.
    pub fn row(&self, slot: usize) -> serde_json::Map<String, serde_json::Value> {
        self.accumulators.iter().map(|a| (a.name.clone(), a.value(slot))).collect()
    }

    /// Group `slot`'s sketch of aggregator `name` (theta and quantiles), for post-aggregators.
    pub fn sketch(&self, slot: usize, name: &str) -> Option<sluice_format::aggregate::MetricCell> {
        self.accumulators.iter().find(|a| a.name == name).and_then(|a| a.sketch(slot)).cloned()
    }

    /// The timestamp Druid gives the `all` bucket: the earliest clipped span start.
    pub fn all_bucket_start(&self) -> Option<i64> {
        self.spans.iter().map(|s| s.start).min()
    }
}

/// Each row's time from `column` (a `timeColumn`): longs as milliseconds, doubles truncated,
/// text as ISO 8601 or milliseconds; [`NO_TIME`](super::aggregator::NO_TIME) where there is none.
fn column_times(column: &super::columns::Column<'_>, times: &[i64], rows: usize) -> Vec<i64> {
    use sluice_format::value::Value;
    (0..rows)
        .map(|r| match column.value(r, times) {
            Value::Long(t) => t,
            Value::Double(t) if t.is_finite() => t as i64,
            Value::String(s) => sluice_format::value::parse_long(&s)
                .or_else(|| sluice_format::time::parse_iso_instant(&s).ok())
                .unwrap_or(super::aggregator::NO_TIME),
            _ => super::aggregator::NO_TIME,
        })
        .collect()
}
