//! A partial on the wire: what a query worker sends its broker. CBOR (doubles keep every bit,
//! infinities and NaN included; sketches travel as DataSketches' own serialized form),
//! versioned, and checked when read as any hostile input is: a size limit before decoding,
//! then every length, id and state against the query the broker compiled, so that a damaged or
//! forged partial fails the query naming its source instead of answering wrongly.
//!
//! ```text
//!  worker: Aggregated --to_bytes--> CBOR (version, groups, values, spans, states)
//!  broker: bytes --from_bytes(query's template)--> checked Aggregated --absorb--> merged
//! ```

use super::aggregator::{Accumulator, State};
use super::engine::{Aggregated, MAX_CELLS, MAX_GROUPS};
use super::exact_sum::ExactSum;
use super::grouping::{Groups, KeyValue};
use super::QueryError;
use datasketches::hll::{HllSketch, HllType};
use serde::{Deserialize, Serialize};
use serde_bytes::ByteBuf;
use sluice_format::aggregate::{AggOp, MetricCell, Scalar};
use sluice_format::sketches::{Quantiles, Theta};
use sluice_format::time::Interval;

/// The wire format's version.
const VERSION: u32 = 1;
/// Largest partial read: a worker's groupBy partial within the engine's limits fits well.
pub const MAX_PARTIAL_BYTES: usize = 256 << 20;
/// Most elements of all the lists a partial holds together, counted while it is decoded (a
/// byte can decode into an element tens of bytes long, so the byte limit alone bounds
/// nothing): every list of a partial within the engine's limits ([`MAX_CELLS`] aggregates)
/// fits.
pub const MAX_PARTIAL_ELEMENTS: usize = 4 * MAX_CELLS;

#[derive(Serialize, Deserialize)]
struct WirePartial {
    version: u32,
    dims: usize,
    buckets: Bounded<i64>,
    keys: Bounded<u32>,
    values: Bounded<Bounded<WireKey>>,
    spans: Bounded<Interval>,
    states: Bounded<WireState>,
}

#[derive(Serialize, Deserialize)]
enum WireKey {
    Null,
    Long(i64),
    Double(u64),
    Str(String),
}

#[derive(Serialize, Deserialize)]
enum WireState {
    Long {
        vals: Bounded<i64>,
        seen: Bounded<bool>,
    },
    Double {
        vals: Bounded<f64>,
        seen: Bounded<bool>,
        exact: Bounded<Bounded<f64>>,
    },
    Timed {
        cells: Bounded<Option<(i64, WireScalar)>>,
    },
    Sketch {
        unions: Bounded<Option<ByteBuf>>,
    },
    /// Theta or quantiles sketches, serialized.
    Cells {
        cells: Bounded<ByteBuf>,
    },
}

#[derive(Serialize, Deserialize)]
enum WireScalar {
    Long(i64),
    Double(f64),
    Str(String),
}

thread_local! {
    /// Elements the partial being decoded on this thread may still hold.
    static BUDGET: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A list whose elements count against [`MAX_PARTIAL_ELEMENTS`] as they are decoded.
struct Bounded<T>(Vec<T>);

impl<T: Serialize> Serialize for Bounded<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Bounded<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visitor<T> {
            type Value = Bounded<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Bounded<T>, A::Error> {
                let mut out = Vec::new();
                loop {
                    let left = BUDGET.with(|b| b.get());
                    if left == 0 {
                        return Err(serde::de::Error::custom(format!(
                            "more than {MAX_PARTIAL_ELEMENTS} elements in all"
                        )));
                    }
                    BUDGET.with(|b| b.set(left - 1));
                    match seq.next_element()? {
                        Some(x) => out.push(x),
                        None => return Ok(Bounded(out)),
                    }
                }
            }
        }
        d.deserialize_seq(Visitor(std::marker::PhantomData))
    }
}

impl<T> From<Vec<T>> for Bounded<T> {
    fn from(v: Vec<T>) -> Self {
        Bounded(v)
    }
}

impl Aggregated {
    /// The partial in the wire format.
    pub fn to_bytes(&self) -> Result<Vec<u8>, QueryError> {
        let g = &self.groups;
        let wire = WirePartial {
            version: VERSION,
            dims: g.dims,
            buckets: g.buckets.clone().into(),
            keys: g.keys.clone().into(),
            values: Bounded(g.interners.iter().map(|i| Bounded(i.values.iter().map(WireKey::of).collect())).collect()),
            spans: self.spans.clone().into(),
            states: Bounded(self.accumulators.iter().map(|a| WireState::of(&a.state)).collect()),
        };
        let mut out = Vec::new();
        ciborium::into_writer(&wire, &mut out).map_err(|e| QueryError::Source(format!("partial not written: {e}")))?;
        Ok(out)
    }

    /// Reads a partial of the query `template` was compiled from ([`Aggregated::empty`]),
    /// checked against it; errors name `source`.
    pub fn from_bytes(bytes: &[u8], template: &Aggregated, source: &str) -> Result<Aggregated, QueryError> {
        let bad = |why: String| QueryError::Source(format!("partial from {source}: {why}"));
        if bytes.len() > MAX_PARTIAL_BYTES {
            return Err(bad(format!("{} bytes is over the limit of {MAX_PARTIAL_BYTES}", bytes.len())));
        }
        BUDGET.with(|b| b.set(MAX_PARTIAL_ELEMENTS));
        let wire: Result<WirePartial, _> = ciborium::from_reader(bytes);
        BUDGET.with(|b| b.set(0));
        let wire = wire.map_err(|e| bad(format!("not a partial: {e}")))?;
        let (buckets, keys, spans) = (wire.buckets.0, wire.keys.0, wire.spans.0);
        if wire.version != VERSION {
            return Err(bad(format!("version {} (expected {VERSION})", wire.version)));
        }
        let dims = template.groups.dims;
        let n = buckets.len();
        if wire.dims != dims || wire.values.0.len() != dims || keys.len() != n.saturating_mul(dims) {
            return Err(bad(format!("{} groups of {} dimensions do not fit the query's {dims}", n, wire.dims)));
        }
        if n > MAX_GROUPS || n.saturating_mul(template.accumulators.len()) > MAX_CELLS {
            return Err(bad(format!("{n} groups are over the query's limits")));
        }
        if wire.states.0.len() != template.accumulators.len() {
            return Err(bad(format!("{} aggregators (expected {})", wire.states.0.len(), template.accumulators.len())));
        }
        if let Some(s) = spans.iter().find(|s| s.start > s.end) {
            return Err(bad(format!("a span ends before it starts ({} > {})", s.start, s.end)));
        }
        let mut groups = Groups::new(dims);
        for (d, values) in wire.values.0.into_iter().enumerate() {
            let interner = &mut groups.interners[d];
            for v in values.0 {
                let id = interner.intern(&v.into_key());
                if id as usize + 1 != interner.values.len() {
                    return Err(bad(format!("dimension {d} lists a value twice")));
                }
            }
        }
        for slot in 0..n {
            let ids = &keys[slot * dims..(slot + 1) * dims];
            if let Some(d) = (0..dims).find(|&d| ids[d] as usize >= groups.interners[d].values.len()) {
                return Err(bad(format!("group {slot} names value {} of dimension {d}, which has none", ids[d])));
            }
            if groups.slot(buckets[slot], ids) as usize != slot {
                return Err(bad(format!("group {slot} repeats an earlier group")));
            }
        }
        let accumulators = template
            .accumulators
            .iter()
            .zip(wire.states.0)
            .map(|(t, w)| w.into_accumulator(t, n).map_err(|why| bad(format!("{}: {why}", t.name))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Aggregated { groups, accumulators, spans })
    }
}

impl WireKey {
    fn of(k: &KeyValue) -> Self {
        match k {
            KeyValue::Null => WireKey::Null,
            KeyValue::Long(x) => WireKey::Long(*x),
            KeyValue::Double(b) => WireKey::Double(*b),
            KeyValue::Str(s) => WireKey::Str(s.to_string()),
        }
    }

    fn into_key(self) -> KeyValue {
        match self {
            WireKey::Null => KeyValue::Null,
            WireKey::Long(x) => KeyValue::Long(x),
            // As the engine keys them: -0.0 is 0.0.
            WireKey::Double(b) if f64::from_bits(b) == 0.0 => KeyValue::Double(0f64.to_bits()),
            WireKey::Double(b) => KeyValue::Double(b),
            WireKey::Str(s) => KeyValue::Str(s.into()),
        }
    }
}

impl WireState {
    fn of(state: &State) -> Self {
        match state {
            State::Long { vals, seen, .. } => WireState::Long { vals: vals.clone().into(), seen: seen.clone().into() },
            State::Double { vals, seen, exact, .. } => WireState::Double {
                vals: vals.clone().into(),
                seen: seen.clone().into(),
                exact: Bounded(exact.iter().map(|e| Bounded(e.partials().to_vec())).collect()),
            },
            State::Timed { cells, .. } => WireState::Timed {
                cells: Bounded(
                    cells
                        .iter()
                        .map(|c| match c {
                            MetricCell::Timed(Some((t, v))) => Some((*t, WireScalar::of(v))),
                            _ => None,
                        })
                        .collect(),
                ),
            },
            State::Cells { cells, .. } => WireState::Cells {
                cells: Bounded(
                    cells
                        .iter()
                        .map(|c| match c {
                            MetricCell::Theta(t) => ByteBuf::from(t.to_bytes()),
                            MetricCell::Quantiles(q) => ByteBuf::from(q.to_bytes()),
                            _ => ByteBuf::new(),
                        })
                        .collect(),
                ),
            },
            State::Sketch { unions, .. } => WireState::Sketch {
                unions: Bounded(
                    unions
                        .iter()
                        .map(|u| u.as_ref().map(|u| ByteBuf::from(u.to_sketch(HllType::Hll8).serialize())))
                        .collect(),
                ),
            },
        }
    }

    /// The states of `template`'s aggregator for `n` groups, or why they cannot be.
    fn into_accumulator(self, template: &Accumulator, n: usize) -> Result<Accumulator, StateError> {
        let mut acc = template.fresh();
        let count = |len: usize, what: &'static str| {
            if len == n {
                Ok(())
            } else {
                Err(StateError::Count { len, what, groups: n })
            }
        };
        match (&mut acc.state, self) {
            (State::Long { op, vals, seen }, WireState::Long { vals: v, seen: s }) => {
                count(v.0.len(), "values")?;
                count(s.0.len(), "flags")?;
                if *op == sluice_format::aggregate::AggOp::Count && s.0.contains(&false) {
                    return Err(StateError::CountWithoutValue);
                }
                (*vals, *seen) = (v.0, s.0);
            }
            (State::Double { float, vals, seen, exact, .. }, WireState::Double { vals: v, seen: s, exact: e }) => {
                count(v.0.len(), "values")?;
                count(s.0.len(), "flags")?;
                if !e.0.is_empty() {
                    count(e.0.len(), "exact sums")?;
                }
                if e.0.iter().any(|x| x.0.len() > ExactSum::MAX_PARTIALS) {
                    return Err(StateError::ExactSumTooLong);
                }
                let e: Vec<ExactSum> = e.0.into_iter().map(|x| ExactSum::from_partials(x.0)).collect();
                // A sum's rounded value is its exact one's: the one read depends on no merge.
                for (i, x) in e.iter().enumerate().filter(|(_, x)| !x.is_empty()) {
                    let rounded = if *float { x.value() as f32 as f64 } else { x.value() };
                    if rounded.to_bits() != v.0[i].to_bits() && !(rounded.is_nan() && v.0[i].is_nan()) {
                        return Err(StateError::InexactSum { group: i, sum: v.0[i], exact: rounded });
                    }
                }
                (*vals, *seen, *exact) = (v.0, s.0, e);
            }
            (State::Timed { cells, .. }, WireState::Timed { cells: c }) => {
                let c = c.0;
                count(c.len(), "values")?;
                *cells = c.into_iter().map(|c| MetricCell::Timed(c.map(|(t, v)| (t, v.into_scalar())))).collect();
            }
            (State::Sketch { lg_k, unions, .. }, WireState::Sketch { unions: u }) => {
                count(u.0.len(), "sketches")?;
                let lg_k = *lg_k;
                *unions =
                    u.0.into_iter()
                        .map(|b| {
                            b.map(|b| {
                                let sketch = HllSketch::deserialize(&b).map_err(StateError::Hll)?;
                                let mut union = super::aggregator::new_union(lg_k);
                                union.update(&sketch);
                                Ok::<_, StateError>(union)
                            })
                            .transpose()
                        })
                        .collect::<Result<_, _>>()?;
            }
            (State::Cells { agg, cells, .. }, WireState::Cells { cells: c }) => {
                count(c.0.len(), "sketches")?;
                let read = |b: &[u8]| -> Result<MetricCell, StateError> {
                    match agg.op {
                        AggOp::Theta { lg_k } => Theta::from_bytes(b, lg_k).map(|t| MetricCell::Theta(Box::new(t))),
                        _ => Quantiles::from_bytes(b).map(|q| MetricCell::Quantiles(Box::new(q))),
                    }
                    .map_err(StateError::Sketch)
                };
                *cells = c.0.iter().map(|b| read(b)).collect::<Result<_, _>>()?;
            }
            _ => return Err(StateError::OtherKind),
        }
        Ok(acc)
    }
}

/// Why an aggregator's states in a partial do not fit the query's aggregator.
#[derive(Debug, thiserror::Error)]
enum StateError {
    /// Not one state per group.
    #[error("{len} {what} for {groups} groups")]
    Count { len: usize, what: &'static str, groups: usize },
    /// A count's group without a value.
    #[error("a count without a value")]
    CountWithoutValue,
    /// An exact sum longer than any sum of doubles can be.
    #[error("an exact sum holds more partials than a double's range allows")]
    ExactSumTooLong,
    /// A rounded sum that is not its exact sum's.
    #[error("group {group}: a sum of {sum} whose exact value is {exact}")]
    InexactSum { group: usize, sum: f64, exact: f64 },
    /// An HLL sketch that does not read.
    #[error("a damaged sketch: {0}")]
    Hll(datasketches::error::Error),
    /// A theta or quantiles sketch that does not read.
    #[error("a damaged sketch: {0}")]
    Sketch(sluice_format::sketches::SketchError),
    /// States of another aggregator than the query's.
    #[error("states of another kind of aggregator")]
    OtherKind,
}

impl WireScalar {
    fn of(v: &Scalar) -> Self {
        match v {
            Scalar::Long(x) => WireScalar::Long(*x),
            Scalar::Double(x) => WireScalar::Double(*x),
            Scalar::Str(s) => WireScalar::Str(s.clone()),
        }
    }

    fn into_scalar(self) -> Scalar {
        match self {
            WireScalar::Long(x) => Scalar::Long(x),
            WireScalar::Double(x) => Scalar::Double(x),
            WireScalar::Str(s) => Scalar::Str(s),
        }
    }
}
