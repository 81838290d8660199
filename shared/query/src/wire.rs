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
use datasketches::hll::{HllSketch, HllType, HllUnion};
use serde::{Deserialize, Serialize};
use sluice_format::aggregate::{MetricCell, Scalar};
use sluice_format::time::Interval;

/// The wire format's version.
const VERSION: u32 = 1;
/// Largest partial read: a worker's groupBy partial within the engine's limits fits well.
pub const MAX_PARTIAL_BYTES: usize = 512 << 20;

#[derive(Serialize, Deserialize)]
struct WirePartial {
    version: u32,
    dims: usize,
    buckets: Vec<i64>,
    keys: Vec<u32>,
    values: Vec<Vec<WireKey>>,
    spans: Vec<Interval>,
    states: Vec<WireState>,
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
    Long { vals: Vec<i64>, seen: Vec<bool> },
    Double { vals: Vec<f64>, seen: Vec<bool>, exact: Vec<ExactSum> },
    Timed { cells: Vec<Option<(i64, WireScalar)>> },
    Sketch { unions: Vec<Option<serde_bytes_vec::Bytes>> },
}

#[derive(Serialize, Deserialize)]
enum WireScalar {
    Long(i64),
    Double(f64),
    Str(String),
}

/// Serialized sketches as CBOR byte strings rather than arrays of numbers.
mod serde_bytes_vec {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Bytes serialized as one byte string.
    pub struct Bytes(pub Vec<u8>);

    impl Serialize for Bytes {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(&self.0)
        }
    }

    impl<'de> Deserialize<'de> for Bytes {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visitor;
            impl<'de> serde::de::Visitor<'de> for Visitor {
                type Value = Bytes;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a byte string")
                }
                fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
                    Ok(Bytes(v.to_vec()))
                }
                fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Bytes, E> {
                    Ok(Bytes(v))
                }
            }
            d.deserialize_bytes(Visitor)
        }
    }
}

impl Aggregated {
    /// The partial in the wire format.
    pub fn to_bytes(&self) -> Result<Vec<u8>, QueryError> {
        let g = &self.groups;
        let wire = WirePartial {
            version: VERSION,
            dims: g.dims,
            buckets: g.buckets.clone(),
            keys: g.keys.clone(),
            values: g.interners.iter().map(|i| i.values.iter().map(WireKey::of).collect()).collect(),
            spans: self.spans.clone(),
            states: self.accumulators.iter().map(|a| WireState::of(&a.state)).collect(),
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
        let wire: WirePartial = ciborium::from_reader(bytes).map_err(|e| bad(format!("not a partial: {e}")))?;
        if wire.version != VERSION {
            return Err(bad(format!("version {} (expected {VERSION})", wire.version)));
        }
        let dims = template.groups.dims;
        let n = wire.buckets.len();
        if wire.dims != dims || wire.values.len() != dims || wire.keys.len() != n.saturating_mul(dims) {
            return Err(bad(format!("{} groups of {} dimensions do not fit the query's {dims}", n, wire.dims)));
        }
        if n > MAX_GROUPS || n.saturating_mul(template.accumulators.len()) > MAX_CELLS {
            return Err(bad(format!("{n} groups are over the query's limits")));
        }
        if wire.states.len() != template.accumulators.len() {
            return Err(bad(format!("{} aggregators (expected {})", wire.states.len(), template.accumulators.len())));
        }
        let mut groups = Groups::new(dims);
        for (d, values) in wire.values.into_iter().enumerate() {
            let interner = &mut groups.interners[d];
            for v in values {
                let id = interner.intern(&v.into_key());
                if id as usize + 1 != interner.values.len() {
                    return Err(bad(format!("dimension {d} lists a value twice")));
                }
            }
        }
        for slot in 0..n {
            let ids = &wire.keys[slot * dims..(slot + 1) * dims];
            if let Some(d) = (0..dims).find(|&d| ids[d] as usize >= groups.interners[d].values.len()) {
                return Err(bad(format!("group {slot} names value {} of dimension {d}, which has none", ids[d])));
            }
            if groups.slot(wire.buckets[slot], ids) as usize != slot {
                return Err(bad(format!("group {slot} repeats an earlier group")));
            }
        }
        let accumulators = template
            .accumulators
            .iter()
            .zip(wire.states)
            .map(|(t, w)| w.into_accumulator(t, n).map_err(|why| bad(format!("{}: {why}", t.name))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Aggregated { groups, accumulators, spans: wire.spans })
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
            WireKey::Double(b) => KeyValue::Double(b),
            WireKey::Str(s) => KeyValue::Str(s.into()),
        }
    }
}

impl WireState {
    fn of(state: &State) -> Self {
        match state {
            State::Long { vals, seen, .. } => WireState::Long { vals: vals.clone(), seen: seen.clone() },
            State::Double { vals, seen, exact, .. } => {
                WireState::Double { vals: vals.clone(), seen: seen.clone(), exact: exact.clone() }
            }
            State::Timed { cells, .. } => WireState::Timed {
                cells: cells
                    .iter()
                    .map(|c| match c {
                        MetricCell::Timed(Some((t, v))) => Some((*t, WireScalar::of(v))),
                        _ => None,
                    })
                    .collect(),
            },
            State::Sketch { unions, .. } => WireState::Sketch {
                unions: unions
                    .iter()
                    .map(|u| u.as_ref().map(|u| serde_bytes_vec::Bytes(u.to_sketch(HllType::Hll8).serialize())))
                    .collect(),
            },
        }
    }

    /// The states of `template`'s aggregator for `n` groups, or why they cannot be.
    fn into_accumulator(self, template: &Accumulator, n: usize) -> Result<Accumulator, String> {
        let mut acc = template.fresh();
        let count = |len: usize, what: &str| {
            if len == n {
                Ok(())
            } else {
                Err(format!("{len} {what} for {n} groups"))
            }
        };
        match (&mut acc.state, self) {
            (State::Long { vals, seen, .. }, WireState::Long { vals: v, seen: s }) => {
                count(v.len(), "values")?;
                count(s.len(), "flags")?;
                (*vals, *seen) = (v, s);
            }
            (State::Double { vals, seen, exact, .. }, WireState::Double { vals: v, seen: s, exact: e }) => {
                count(v.len(), "values")?;
                count(s.len(), "flags")?;
                if !e.is_empty() {
                    count(e.len(), "exact sums")?;
                }
                if e.iter().any(|x| x.len() > ExactSum::MAX_PARTIALS) {
                    return Err("an exact sum holds more partials than a double's range allows".into());
                }
                (*vals, *seen, *exact) = (v, s, e);
            }
            (State::Timed { cells, .. }, WireState::Timed { cells: c }) => {
                count(c.len(), "values")?;
                *cells = c.into_iter().map(|c| MetricCell::Timed(c.map(|(t, v)| (t, v.into_scalar())))).collect();
            }
            (State::Sketch { lg_k, unions, .. }, WireState::Sketch { unions: u }) => {
                count(u.len(), "sketches")?;
                let lg_k = *lg_k;
                *unions = u
                    .into_iter()
                    .map(|b| {
                        b.map(|b| {
                            let sketch = HllSketch::deserialize(&b.0).map_err(|e| format!("a damaged sketch: {e}"))?;
                            let mut union = Box::new(HllUnion::new(lg_k).map_err(|e| e.to_string())?);
                            union.update(&sketch);
                            Ok::<_, String>(union)
                        })
                        .transpose()
                    })
                    .collect::<Result<_, _>>()?;
            }
            _ => return Err("states of another kind of aggregator".into()),
        }
        Ok(acc)
    }
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
