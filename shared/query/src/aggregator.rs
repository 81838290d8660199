//! Query-time aggregators: the ingest ones (read from any column: a metric, a dimension, a
//! virtual column or `__time`) plus `filtered` and `HLLSketchMerge`. Each keeps one state per
//! result group in flat vectors and is updated a batch of rows at a time.

use super::aggregator_spec::QueryAggregator;
use super::columns::Column;
use super::exact_sum::ExactSum;
use super::json::{cell_value, json_double, value_json};
use super::QueryError;
use datasketches::hll::HllUnion;
use serde_json::json;
use sluice_format::aggregate::{AggOp, Aggregator, MetricCell};
use sluice_format::filter::Filter;
use sluice_format::spec::{AggregatorSpec, MetricKind};
use sluice_format::value::Value;

/// Per-group states.
pub(crate) enum State {
    Long {
        op: AggOp,
        vals: Vec<i64>,
        seen: Vec<bool>,
    },
    /// `exact`: a sum's exact value per group once partials were merged into it (empty until
    /// then, and per group until then: `vals` is exact); `vals` holds it rounded.
    Double {
        op: AggOp,
        float: bool,
        vals: Vec<f64>,
        seen: Vec<bool>,
        exact: Vec<ExactSum>,
    },
    Timed {
        agg: Box<Aggregator>,
        cells: Vec<MetricCell>,
    },
    Sketch {
        lg_k: u8,
        round: bool,
        unions: Vec<Option<Box<HllUnion>>>,
    },
    /// Theta and quantiles sketches, one cell per group (`finalize`: the result is the
    /// estimate, or the count of values, rather than the sketch).
    Cells {
        agg: Box<Aggregator>,
        cells: Vec<MetricCell>,
        finalize: bool,
    },
}

/// A compiled aggregator with its states.
pub struct Accumulator {
    /// Output name.
    pub name: String,
    /// The column read (`None` for `count`).
    pub input: Option<String>,
    /// Only rows matching this filter are aggregated.
    pub filter: Option<Filter>,
    /// The column a first/last aggregator orders by (`timeColumn`), when it is not `__time`.
    pub time_input: Option<String>,
    pub(crate) state: State,
}

impl Accumulator {
    /// Compiles `agg`; a filtered aggregator's filter is kept beside the inner one.
    pub fn new(agg: &QueryAggregator, at: &str) -> Result<Self, QueryError> {
        match agg {
            QueryAggregator::Filtered { name, filter, aggregator } => {
                let mut inner = Accumulator::new(aggregator, at)?;
                inner.filter = Some(match inner.filter.take() {
                    None => filter.clone(),
                    Some(f) => Filter::And { fields: vec![filter.clone(), f] },
                });
                if let Some(n) = name {
                    inner.name = n.clone();
                }
                Ok(inner)
            }
            QueryAggregator::SketchMerge(s) => Ok(Accumulator {
                name: s.name.clone(),
                input: Some(s.field_name.clone()),
                filter: None,
                time_input: None,
                state: State::Sketch {
                    lg_k: s.lg_k.unwrap_or(12),
                    round: s.round.unwrap_or(false),
                    unions: Vec::new(),
                },
            }),
            QueryAggregator::Plain(spec) => {
                let input = match spec.field_name() {
                    Some(f) => Some(f.to_string()),
                    None if matches!(spec, AggregatorSpec::Count { .. }) => None,
                    None => {
                        return Err(QueryError::invalid(
                            at,
                            format!("{} {:?}: expected \"fieldName\" (\"expression\" inputs are not supported in queries; use a virtual column)", spec.type_name(), spec.name()),
                        ))
                    }
                };
                check_sketch_spec(spec, at)?;
                let compiled = Aggregator::new(spec);
                let state = match (compiled.op, compiled.kind) {
                    (AggOp::Hll { lg_k, .. }, _) => {
                        let round = match spec {
                            AggregatorSpec::HyperUnique(s) | AggregatorSpec::HllSketchBuild(s) => {
                                s.round.unwrap_or(false)
                            }
                            _ => false,
                        };
                        State::Sketch { lg_k, round, unions: Vec::new() }
                    }
                    (AggOp::First | AggOp::Last, _) => {
                        State::Timed { agg: Box::new(compiled.clone()), cells: Vec::new() }
                    }
                    (AggOp::Theta { .. } | AggOp::Quantiles { .. }, _) => {
                        let finalize = match spec {
                            AggregatorSpec::ThetaSketch(t) => t.should_finalize,
                            AggregatorSpec::QuantilesSketch(q) => q.should_finalize,
                            _ => None,
                        };
                        State::Cells {
                            agg: Box::new(compiled.clone()),
                            cells: Vec::new(),
                            finalize: finalize != Some(false),
                        }
                    }
                    (op, MetricKind::Long) => State::Long { op, vals: Vec::new(), seen: Vec::new() },
                    (op, kind) => {
                        let float = kind == MetricKind::Float;
                        State::Double { op, float, vals: Vec::new(), seen: Vec::new(), exact: Vec::new() }
                    }
                };
                let time_input = spec.time_column().filter(|c| *c != "__time").map(str::to_string);
                Ok(Accumulator { name: spec.name().to_string(), input, filter: None, time_input, state })
            }
        }
    }

    /// The same aggregator with no state.
    pub fn fresh(&self) -> Self {
        let state = match &self.state {
            State::Long { op, .. } => State::Long { op: *op, vals: Vec::new(), seen: Vec::new() },
            State::Double { op, float, .. } => {
                State::Double { op: *op, float: *float, vals: Vec::new(), seen: Vec::new(), exact: Vec::new() }
            }
            State::Timed { agg, .. } => State::Timed { agg: agg.clone(), cells: Vec::new() },
            State::Sketch { lg_k, round, .. } => State::Sketch { lg_k: *lg_k, round: *round, unions: Vec::new() },
            State::Cells { agg, finalize, .. } => {
                State::Cells { agg: agg.clone(), cells: Vec::new(), finalize: *finalize }
            }
        };
        Accumulator {
            name: self.name.clone(),
            input: self.input.clone(),
            filter: self.filter.clone(),
            time_input: self.time_input.clone(),
            state,
        }
    }

    /// Makes room for `n` groups.
    pub fn grow(&mut self, n: usize) {
        match &mut self.state {
            State::Long { op, vals, seen } => {
                vals.resize(n, 0);
                seen.resize(n, *op == AggOp::Count);
            }
            State::Double { vals, seen, .. } => {
                vals.resize(n, 0.0);
                seen.resize(n, false);
            }
            State::Timed { agg, cells } | State::Cells { agg, cells, .. } => cells.resize_with(n, || agg.empty()),
            State::Sketch { unions, .. } => unions.resize_with(n, || None),
        }
    }

    /// Returns true for a plain `count`: it reads no column and needs no row, only how many.
    pub fn counts_rows(&self) -> bool {
        self.filter.is_none() && matches!(self.state, State::Long { op: AggOp::Count, .. })
    }

    /// Returns true when updates read `__time` (first/last over a plain column).
    pub fn reads_times(&self) -> bool {
        matches!(self.state, State::Timed { .. })
    }

    /// Adds `n` rows to group `slot` of a plain `count`.
    pub fn add_rows(&mut self, slot: usize, n: u64) {
        if let State::Long { op: AggOp::Count, vals, .. } = &mut self.state {
            vals[slot] += n as i64;
        }
    }

    /// Returns true for a sketch (HLL, theta, quantiles): its answer may depend on how merges
    /// are grouped.
    pub fn is_sketch(&self) -> bool {
        matches!(self.state, State::Sketch { .. } | State::Cells { .. })
    }

    /// Whether rows folded straight into a partial that holds other segments leave the same
    /// states as the segment's own partial merged into it: integer aggregates and double
    /// min/max. Not double sums (a segment's rows are summed before the exact merge), `first`
    /// and `last`, nor sketches.
    pub fn folds_across_segments(&self) -> bool {
        match &self.state {
            State::Long { .. } => true,
            State::Double { op, .. } => matches!(op, AggOp::Min | AggOp::Max),
            State::Timed { .. } | State::Sketch { .. } | State::Cells { .. } => false,
        }
    }

    /// Whether [`Accumulator::update_range`] folds `column` in one pass: a count, or a sum of
    /// a long column without nulls.
    pub fn folds_ranges(&self, column: Option<&Column<'_>>) -> bool {
        match &self.state {
            State::Long { op: AggOp::Count, .. } => true,
            State::Long { op: AggOp::Sum, .. } => matches!(column, Some(Column::Long(_, nulls)) if nulls.is_empty()),
            _ => false,
        }
    }

    /// Folds the contiguous rows `rows`, all of group `slot`, when
    /// [`Accumulator::folds_ranges`] says it can (otherwise nothing is folded).
    pub fn update_range(&mut self, column: Option<&Column<'_>>, rows: std::ops::Range<u32>, slot: usize) {
        match (&mut self.state, column) {
            (State::Long { op: AggOp::Count, .. }, _) => self.add_rows(slot, rows.len() as u64),
            (State::Long { op: AggOp::Sum, vals, seen }, Some(Column::Long(v, nulls))) if nulls.is_empty() => {
                if let Some(values) = v.get(rows.start as usize..rows.end as usize).filter(|v| !v.is_empty()) {
                    vals[slot] = values.iter().fold(vals[slot], |a, &x| a.wrapping_add(x));
                    seen[slot] = true;
                }
            }
            _ => {}
        }
    }

    /// The group's aggregate as a number, for ranking (sketches: their estimate).
    pub fn number(&self, slot: usize) -> Option<f64> {
        match &self.state {
            State::Long { vals, seen, .. } => seen[slot].then(|| vals[slot] as f64),
            State::Double { vals, seen, .. } => seen[slot].then_some(vals[slot]),
            State::Timed { cells, .. } | State::Cells { cells, .. } => cell_value(&cells[slot]).as_double(),
            State::Sketch { unions, .. } => Some(unions[slot].as_ref().map_or(0.0, |u| u.estimate())),
        }
    }

    /// Folds rows `rows` into groups `slots` (pairwise), reading `column` (`times` is the
    /// segment's `__time`).
    pub fn update(&mut self, column: Option<&Column<'_>>, rows: &[u32], slots: &[u32], times: &[i64]) {
        match &mut self.state {
            State::Long { op: AggOp::Count, vals, .. } => {
                for &s in slots {
                    vals[s as usize] += 1;
                }
            }
            State::Long { op: AggOp::Sum, vals, seen } if matches!(column, Some(Column::Long(_, nulls)) if nulls.is_empty()) => {
                if let Some(Column::Long(v, _)) = column {
                    for (&r, &s) in rows.iter().zip(slots) {
                        let s = s as usize;
                        vals[s] = vals[s].wrapping_add(v[r as usize]);
                        seen[s] = true;
                    }
                }
            }
            State::Long { op, vals, seen } => {
                let op = *op;
                for_each_number(column, rows, slots, times, |s, v| {
                    let x = match v {
                        Num::L(x) => x,
                        Num::D(x) => x as i64,
                    };
                    let (acc, was) = (&mut vals[s], &mut seen[s]);
                    *acc = if !*was {
                        x
                    } else {
                        match op {
                            AggOp::Min => (*acc).min(x),
                            AggOp::Max => (*acc).max(x),
                            _ => acc.wrapping_add(x),
                        }
                    };
                    *was = true;
                });
            }
            State::Double { op, float, vals, seen, .. } => {
                let (op, float) = (*op, *float);
                for_each_number(column, rows, slots, times, |s, v| {
                    let mut x = match v {
                        Num::L(x) => x as f64,
                        Num::D(x) => x,
                    };
                    if float {
                        x = x as f32 as f64;
                    }
                    let (acc, was) = (&mut vals[s], &mut seen[s]);
                    *acc = if !*was {
                        x
                    } else {
                        match op {
                            AggOp::Min => acc.min(x),
                            AggOp::Max => acc.max(x),
                            _ => *acc + x,
                        }
                    };
                    if float {
                        *acc = *acc as f32 as f64;
                    }
                    *was = true;
                });
            }
            State::Timed { agg, cells } => {
                for (&r, &s) in rows.iter().zip(slots) {
                    let (r, s) = (r as usize, s as usize);
                    match column {
                        Some(Column::Cells(c, _)) => agg.combine(&mut cells[s], &c[r]),
                        // A row whose `timeColumn` is null is not taken (NO_TIME).
                        Some(_) if times[r] == NO_TIME => {}
                        Some(c) => agg.fold(&mut cells[s], &c.value(r, times), times[r]),
                        None => {}
                    }
                }
            }
            State::Sketch { lg_k, unions, .. } => update_sketch(*lg_k, unions, column, rows, slots, times),
            State::Cells { agg, cells, .. } => {
                for (&r, &s) in rows.iter().zip(slots) {
                    let (r, s) = (r as usize, s as usize);
                    match column {
                        Some(Column::Cells(c, _)) => agg.combine(&mut cells[s], &c[r]),
                        Some(c) => agg.fold(&mut cells[s], &c.value(r, times), times.get(r).copied().unwrap_or(0)),
                        None => {}
                    }
                }
            }
        }
    }

    /// Merges `other`'s states (the same aggregator, over other segments of the query) into
    /// this one's: `other`'s group `i` is group `slots[i]` here. Every merge is associative and
    /// commutative (sums of doubles exactly so, see [`ExactSum`]; `first`/`last` break time
    /// ties by value) but for sketch unions: past their exact modes a union's estimate may differ by about a
    /// percent with how the merges were grouped (DataSketches switches estimators).
    pub fn absorb(&mut self, other: &Accumulator, slots: &[u32]) {
        let n = slots.iter().map(|&s| s as usize + 1).max().unwrap_or(0);
        if n > self.len() {
            self.grow(n);
        }
        match (&mut self.state, &other.state) {
            (State::Long { op, vals, seen }, State::Long { vals: theirs, seen: their_seen, .. }) => {
                for ((&t, &x), &was) in slots.iter().zip(theirs).zip(their_seen) {
                    let t = t as usize;
                    if !was {
                        continue;
                    }
                    vals[t] = if !seen[t] {
                        x
                    } else {
                        match op {
                            AggOp::Min => vals[t].min(x),
                            AggOp::Max => vals[t].max(x),
                            _ => vals[t].wrapping_add(x),
                        }
                    };
                    seen[t] = true;
                }
            }
            (
                State::Double { op, float, vals, seen, exact },
                State::Double { vals: theirs, seen: their_seen, exact: their_exact, .. },
            ) => {
                if matches!(op, AggOp::Sum) && exact.len() < vals.len() {
                    exact.resize_with(vals.len(), ExactSum::default);
                }
                for (i, (&t, &x)) in slots.iter().zip(theirs).enumerate() {
                    let t = t as usize;
                    if !their_seen[i] {
                        continue;
                    }
                    if !seen[t] && !matches!(op, AggOp::Sum) {
                        vals[t] = x;
                    } else {
                        match op {
                            AggOp::Min => vals[t] = vals[t].min(x),
                            AggOp::Max => vals[t] = vals[t].max(x),
                            _ => {
                                let sum = &mut exact[t];
                                if sum.is_empty() && seen[t] {
                                    sum.add(vals[t]);
                                }
                                match their_exact.get(i).filter(|e| !e.is_empty()) {
                                    Some(e) => sum.absorb(e),
                                    None => sum.add(x),
                                }
                                vals[t] = sum.value();
                                if *float {
                                    vals[t] = vals[t] as f32 as f64;
                                }
                            }
                        }
                    }
                    seen[t] = true;
                }
            }
            (State::Timed { agg, cells }, State::Timed { cells: theirs, .. })
            | (State::Cells { agg, cells, .. }, State::Cells { cells: theirs, .. }) => {
                for (&t, cell) in slots.iter().zip(theirs) {
                    agg.combine(&mut cells[t as usize], cell);
                }
            }
            (State::Sketch { lg_k, unions, .. }, State::Sketch { unions: theirs, .. }) => {
                for (&t, union) in slots.iter().zip(theirs) {
                    let Some(union) = union else { continue };
                    let mine = unions[t as usize].get_or_insert_with(|| new_union(*lg_k));
                    mine.update(&union.to_sketch(datasketches::hll::HllType::Hll8));
                }
            }
            _ => debug_assert!(false, "absorb: {} merged with another aggregator's states", self.name),
        }
    }

    /// Estimated bytes of its states.
    pub fn approx_bytes(&self) -> usize {
        match &self.state {
            State::Long { vals, .. } => vals.len() * 9,
            State::Double { vals, exact, .. } => {
                vals.len() * 9 + exact.iter().map(|e| std::mem::size_of::<ExactSum>() + e.len() * 8).sum::<usize>()
            }
            State::Timed { cells, .. } => cells.len() * 64,
            State::Cells { cells, .. } => cells.iter().map(|c| 16 + sluice_format::aggregate::cell_heap_bytes(c)).sum(),
            State::Sketch { unions, .. } => {
                unions.iter().map(|u| 8 + u.as_ref().map_or(0, |u| u.estimated_size())).sum()
            }
        }
    }

    /// Number of groups it holds states for.
    fn len(&self) -> usize {
        match &self.state {
            State::Long { seen, .. } | State::Double { seen, .. } => seen.len(),
            State::Timed { cells, .. } | State::Cells { cells, .. } => cells.len(),
            State::Sketch { unions, .. } => unions.len(),
        }
    }

    /// The finalized value of group `slot`, as Druid returns it.
    pub fn value(&self, slot: usize) -> serde_json::Value {
        match &self.state {
            State::Long { vals, seen, .. } => {
                if seen[slot] {
                    json!(vals[slot])
                } else {
                    serde_json::Value::Null
                }
            }
            State::Double { vals, seen, .. } => {
                if seen[slot] {
                    json_double(vals[slot])
                } else {
                    serde_json::Value::Null
                }
            }
            State::Timed { cells, .. } => value_json(&cell_value(&cells[slot])),
            State::Cells { cells, finalize: true, .. } => value_json(&cell_value(&cells[slot])),
            State::Cells { cells, .. } => sketch_json(&cells[slot]),
            State::Sketch { unions, round, .. } => {
                let estimate = unions[slot].as_ref().map(|u| u.estimate()).unwrap_or(0.0);
                if *round {
                    json!(estimate.round() as i64)
                } else {
                    json_double(estimate)
                }
            }
        }
    }
}

/// The time of a row whose `timeColumn` is null: such a row is not taken by first/last.
pub const NO_TIME: i64 = i64::MIN;

/// A theta or quantiles aggregator's settings, checked as at ingestion.
fn check_sketch_spec(spec: &AggregatorSpec, at: &str) -> Result<(), QueryError> {
    let bad = |field: &str, why: String| Err(QueryError::invalid(format!("{at}.{field}"), why));
    match spec {
        AggregatorSpec::ThetaSketch(t) => {
            if let Some(size) = t.size {
                if let Err(e) = sluice_format::sketches::theta_lg_k(size) {
                    return bad("size", e.to_string());
                }
            }
            if t.error_bounds_std_dev.is_some() {
                return bad(
                    "errorBoundsStdDev",
                    "not supported on the aggregator: use thetaSketchEstimate's errorBoundsStdDev".into(),
                );
            }
        }
        AggregatorSpec::QuantilesSketch(q) => {
            if let Some(k) = q.k {
                if let Err(e) = sluice_format::sketches::check_quantiles_k(k) {
                    return bad("k", e.to_string());
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// A theta or quantiles sketch as Druid's JSON shows one not finalized: its serialization in
/// base64.
pub fn sketch_json(cell: &MetricCell) -> serde_json::Value {
    use base64::Engine;
    let bytes = match cell {
        MetricCell::Theta(t) => t.to_bytes(),
        MetricCell::Quantiles(q) => q.to_bytes(),
        _ => return serde_json::Value::Null,
    };
    json!(base64::engine::general_purpose::STANDARD.encode(bytes))
}

impl Accumulator {
    /// Refuses a sketch column of another kind than the sketch aggregator reading it (a
    /// theta sketch over a quantiles column would otherwise count nothing).
    pub fn check_input(&self, column: Option<&Column<'_>>) -> Result<(), QueryError> {
        let Some(Column::Cells(_, kind)) = column else { return Ok(()) };
        let expected = match &self.state {
            State::Cells { agg, .. } => agg.kind,
            State::Sketch { .. } => sluice_format::spec::MetricKind::HllSketch,
            _ => return Ok(()),
        };
        if *kind != expected {
            return Err(QueryError::invalid(
                "aggregations",
                format!(
                    "{:?} reads column {:?}, a {kind:?} column: expected values or a {expected:?} column",
                    self.name,
                    self.input.as_deref().unwrap_or("")
                ),
            ));
        }
        Ok(())
    }

    /// Group `slot`'s theta or quantiles sketch, for the post-aggregators that read one.
    pub fn sketch(&self, slot: usize) -> Option<&MetricCell> {
        match &self.state {
            State::Cells { cells, .. } => cells.get(slot),
            _ => None,
        }
    }
}

/// A number read from a column.
#[derive(Clone, Copy)]
enum Num {
    L(i64),
    D(f64),
}

/// Calls `f(slot, number)` for every non-null numeric input of the pairs.
/// Adds each row's value (a sketch, or the values hashed) to its group's union.
fn update_sketch(
    lg_k: u8,
    unions: &mut [Option<Box<HllUnion>>],
    column: Option<&Column<'_>>,
    rows: &[u32],
    slots: &[u32],
    times: &[i64],
) {
    for (&r, &s) in rows.iter().zip(slots) {
        let (r, s) = (r as usize, s as usize);
        let union = unions[s].get_or_insert_with(|| new_union(lg_k));
        match column {
            Some(Column::Cells(c, _)) => {
                if let MetricCell::Sketch(sk) = &c[r] {
                    union.update(sk);
                }
            }
            Some(Column::String(d)) => {
                for &id in d.row_ids(r) {
                    if let Some(v) = d.dictionary.get(id) {
                        union.update_value(v);
                    }
                }
            }
            Some(c) => match c.value(r, times) {
                Value::Null => {}
                Value::String(v) => union.update_value(v.as_str()),
                Value::Long(v) => union.update_value(v.to_string().as_str()),
                Value::Double(v) => union.update_value(sluice_format::value::format_double(v).as_str()),
                json @ Value::Json(_) => union.update_value(json.as_str().unwrap_or_default().as_ref()),
                Value::Array(items) => {
                    for i in items {
                        if let Some(v) = i.as_str() {
                            union.update_value(v.as_ref());
                        }
                    }
                }
            },
            None => {}
        }
    }
}

/// A union of `lg_k` (12 where `lg_k` is out of range, as the engine builds them).
pub(crate) fn new_union(lg_k: u8) -> Box<HllUnion> {
    Box::new(HllUnion::new(lg_k).unwrap_or_else(|_| HllUnion::new(12).expect("lg_k 12 is valid")))
}

fn for_each_number(
    column: Option<&Column<'_>>,
    rows: &[u32],
    slots: &[u32],
    times: &[i64],
    mut f: impl FnMut(usize, Num),
) {
    let Some(column) = column else { return };
    match column {
        Column::Long(v, nulls) if nulls.is_empty() => {
            for (&r, &s) in rows.iter().zip(slots) {
                f(s as usize, Num::L(v[r as usize]));
            }
        }
        Column::Double(v, nulls) if nulls.is_empty() => {
            for (&r, &s) in rows.iter().zip(slots) {
                f(s as usize, Num::D(v[r as usize]));
            }
        }
        Column::Time => {
            for (&r, &s) in rows.iter().zip(slots) {
                f(s as usize, Num::L(times[r as usize]));
            }
        }
        Column::Absent => {}
        other => {
            for (&r, &s) in rows.iter().zip(slots) {
                match other.value(r as usize, times) {
                    Value::Long(x) => f(s as usize, Num::L(x)),
                    Value::Double(x) => f(s as usize, Num::D(x)),
                    Value::String(t) => {
                        if let Some(x) = sluice_format::value::parse_long(&t) {
                            f(s as usize, Num::L(x))
                        } else if let Ok(x) = t.parse::<f64>() {
                            f(s as usize, Num::D(x))
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}
