//! Aggregators: the per-row state kept by the incremental index and combined by merge.
//!
//! Values follow Druid's SQL-compatible mode: aggregators ignore null inputs, and a
//! sum/min/max that saw no non-null input is null. First/last pick by timestamp; equal
//! timestamps are broken by value (smaller first, larger last) so that the result does not
//! depend on how rows were split across hydrants.

use crate::sketches::{theta_lg_k, Quantiles, Theta, DEFAULT_QUANTILES_K, DEFAULT_THETA_SIZE};
use crate::spec::{AggregatorSpec, MetricKind};
use crate::value::Value;
use datasketches::hll::{HllSketch, HllType, HllUnion};
use std::cmp::Ordering;

/// The operation an aggregator applies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AggOp {
    /// Row count.
    Count,
    /// Sum.
    Sum,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Value at the earliest time.
    First,
    /// Value at the latest time.
    Last,
    /// Distinct-count sketch.
    Hll {
        /// log2 of the register count.
        lg_k: u8,
        /// Register width.
        hll_type: HllKind,
    },
    /// Theta sketch (distinct counts with set operations).
    Theta {
        /// log2 of the entries retained.
        lg_k: u8,
    },
    /// Quantiles sketch.
    Quantiles {
        /// Druid's `k`.
        k: u16,
    },
}

/// Sketch register width, mirroring DataSketches' `HllType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HllKind {
    /// 4 bits per register.
    Hll4,
    /// 6 bits per register.
    Hll6,
    /// 8 bits per register.
    Hll8,
}

impl HllKind {
    fn sketch_type(self) -> HllType {
        match self {
            HllKind::Hll4 => HllType::Hll4,
            HllKind::Hll6 => HllType::Hll6,
            HllKind::Hll8 => HllType::Hll8,
        }
    }
}

/// A first/last value.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// A long.
    Long(i64),
    /// A double (floats are kept rounded to f32).
    Double(f64),
    /// A string.
    Str(String),
}

impl Scalar {
    fn cmp_value(&self, other: &Scalar) -> Ordering {
        match (self, other) {
            (Scalar::Long(a), Scalar::Long(b)) => a.cmp(b),
            (Scalar::Double(a), Scalar::Double(b)) => a.total_cmp(b),
            (Scalar::Str(a), Scalar::Str(b)) => a.cmp(b),
            _ => Ordering::Equal,
        }
    }
}

/// The aggregated state of one metric for one row.
#[derive(Debug, Clone, PartialEq)]
pub enum MetricCell {
    /// Long metrics (count, longSum/Min/Max); `None` when no input was seen.
    Long(Option<i64>),
    /// Double and float metrics; floats hold values rounded to f32.
    Double(Option<f64>),
    /// First/last: the time and the value chosen (`None` when no input was seen).
    Timed(Option<(i64, Scalar)>),
    /// A distinct-count sketch.
    Sketch(Box<HllSketch>),
    /// A theta sketch.
    Theta(Box<Theta>),
    /// A quantiles sketch.
    Quantiles(Box<Quantiles>),
}

/// An aggregator compiled from its spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregator {
    /// Output column name.
    pub name: String,
    /// The operation.
    pub op: AggOp,
    /// How values are stored.
    pub kind: MetricKind,
    /// Longest string kept by string first/last.
    pub max_string_bytes: usize,
    /// The spec it came from.
    pub spec: AggregatorSpec,
}

impl Aggregator {
    /// Compiles an aggregator spec.
    pub fn new(spec: &AggregatorSpec) -> Self {
        use AggregatorSpec::*;
        let op = match spec {
            Count { .. } => AggOp::Count,
            LongSum(_) | DoubleSum(_) | FloatSum(_) => AggOp::Sum,
            LongMin(_) | DoubleMin(_) | FloatMin(_) => AggOp::Min,
            LongMax(_) | DoubleMax(_) | FloatMax(_) => AggOp::Max,
            LongFirst(_) | DoubleFirst(_) | FloatFirst(_) | StringFirst(_) => AggOp::First,
            LongLast(_) | DoubleLast(_) | FloatLast(_) | StringLast(_) => AggOp::Last,
            HyperUnique(s) | HllSketchBuild(s) => AggOp::Hll {
                lg_k: s.lg_k.unwrap_or(12),
                hll_type: match s.tgt_hll_type.as_deref() {
                    Some("HLL_6") => HllKind::Hll6,
                    Some("HLL_8") => HllKind::Hll8,
                    _ => HllKind::Hll4,
                },
            },
            ThetaSketch(t) => AggOp::Theta { lg_k: theta_lg_k(t.size.unwrap_or(DEFAULT_THETA_SIZE)).unwrap_or(14) },
            QuantilesSketch(q) => AggOp::Quantiles { k: q.k.unwrap_or(DEFAULT_QUANTILES_K) },
        };
        let max_string_bytes = match spec {
            StringFirst(a) | StringLast(a) => a.max_string_bytes.unwrap_or(1024) as usize,
            _ => 1024,
        };
        Aggregator { name: spec.name().to_string(), op, kind: spec.metric_kind(), max_string_bytes, spec: spec.clone() }
    }

    fn is_float(&self) -> bool {
        matches!(self.kind, MetricKind::Float | MetricKind::FloatFirstLast)
    }

    /// The state of a row that has seen no input yet.
    pub fn empty(&self) -> MetricCell {
        match (self.op, self.kind) {
            (AggOp::Count, _) => MetricCell::Long(Some(0)),
            (AggOp::Hll { lg_k, hll_type }, _) => MetricCell::Sketch(Box::new(new_sketch(lg_k, hll_type))),
            (AggOp::Theta { lg_k }, _) => MetricCell::Theta(Box::new(Theta::new(lg_k))),
            (AggOp::Quantiles { k }, _) => MetricCell::Quantiles(Box::new(Quantiles::new(k))),
            (AggOp::First | AggOp::Last, _) => MetricCell::Timed(None),
            (_, MetricKind::Long) => MetricCell::Long(None),
            _ => MetricCell::Double(None),
        }
    }

    /// The state of a new row from its first input.
    pub fn init(&self, input: &Value, time: i64) -> MetricCell {
        let mut cell = self.empty();
        self.fold(&mut cell, input, time);
        cell
    }

    /// Folds one input row into the state.
    pub fn fold(&self, cell: &mut MetricCell, input: &Value, time: i64) {
        match (self.op, cell) {
            (AggOp::Count, MetricCell::Long(Some(c))) => *c += 1,
            (AggOp::Hll { .. }, MetricCell::Sketch(sketch)) => update_sketch(sketch, input),
            (AggOp::Theta { .. }, MetricCell::Theta(sketch)) => sketch.update(input),
            (AggOp::Quantiles { .. }, MetricCell::Quantiles(sketch)) => sketch.update(input),
            (AggOp::First | AggOp::Last, MetricCell::Timed(slot)) => {
                if let Some(v) = self.scalar(input) {
                    self.pick(slot, time, v);
                }
            }
            (op, MetricCell::Long(acc)) => {
                if let Some(v) = input.as_long() {
                    *acc = Some(match *acc {
                        None => v,
                        Some(a) => long_op(op, a, v),
                    });
                }
            }
            (op, MetricCell::Double(acc)) => {
                if let Some(v) = input.as_double() {
                    let v = if self.is_float() { v as f32 as f64 } else { v };
                    *acc = Some(match *acc {
                        None => v,
                        Some(a) => self.double_op(op, a, v),
                    });
                }
            }
            _ => debug_assert!(false, "metric cell does not match aggregator {}", self.name),
        }
    }

    /// Combines two states of the same metric (rollup across hydrants).
    pub fn combine(&self, cell: &mut MetricCell, other: &MetricCell) {
        match (self.op, cell, other) {
            (AggOp::Count, MetricCell::Long(Some(a)), MetricCell::Long(Some(b))) => *a += b,
            (AggOp::Hll { lg_k, hll_type }, MetricCell::Sketch(a), MetricCell::Sketch(b)) => {
                let mut union = HllUnion::new(lg_k).unwrap_or_else(|_| HllUnion::new(12).expect("lg_k 12 is valid"));
                union.update(a);
                union.update(b);
                **a = union.to_sketch(hll_type.sketch_type());
            }
            (AggOp::Theta { .. }, MetricCell::Theta(a), MetricCell::Theta(b)) => a.merge(b),
            (AggOp::Quantiles { .. }, MetricCell::Quantiles(a), MetricCell::Quantiles(b)) => a.merge(b),
            (AggOp::First | AggOp::Last, MetricCell::Timed(slot), MetricCell::Timed(Some((t, v)))) => {
                self.pick(slot, *t, v.clone())
            }
            (op, MetricCell::Long(a), MetricCell::Long(b)) => {
                *a = match (*a, *b) {
                    (Some(x), Some(y)) => Some(long_op(op, x, y)),
                    (x, y) => x.or(y),
                }
            }
            (op, MetricCell::Double(a), MetricCell::Double(b)) => {
                *a = match (*a, *b) {
                    (Some(x), Some(y)) => Some(self.double_op(op, x, y)),
                    (x, y) => x.or(y),
                }
            }
            _ => {}
        }
    }

    fn double_op(&self, op: AggOp, a: f64, b: f64) -> f64 {
        let r = match op {
            AggOp::Sum => a + b,
            AggOp::Min => a.min(b),
            AggOp::Max => a.max(b),
            _ => a,
        };
        if self.is_float() {
            r as f32 as f64
        } else {
            r
        }
    }

    fn scalar(&self, input: &Value) -> Option<Scalar> {
        match self.kind {
            MetricKind::LongFirstLast => input.as_long().map(Scalar::Long),
            MetricKind::DoubleFirstLast => input.as_double().map(Scalar::Double),
            MetricKind::FloatFirstLast => input.as_double().map(|v| Scalar::Double(v as f32 as f64)),
            MetricKind::StringFirstLast => input.as_str().map(|s| Scalar::Str(truncate(&s, self.max_string_bytes))),
            _ => None,
        }
    }

    fn pick(&self, slot: &mut Option<(i64, Scalar)>, time: i64, v: Scalar) {
        let replace = match slot {
            None => true,
            Some((t, cur)) => {
                let by_time = time.cmp(t);
                let by_value = v.cmp_value(cur);
                match self.op {
                    AggOp::First => by_time.then(by_value) == Ordering::Less,
                    _ => by_time.then(by_value) == Ordering::Greater,
                }
            }
        };
        if replace {
            *slot = Some((time, v));
        }
    }
}

fn long_op(op: AggOp, a: i64, b: i64) -> i64 {
    match op {
        AggOp::Sum => a.wrapping_add(b),
        AggOp::Min => a.min(b),
        AggOp::Max => a.max(b),
        _ => a,
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// A new empty sketch; `lg_k` was validated by the spec loader.
pub fn new_sketch(lg_k: u8, kind: HllKind) -> HllSketch {
    HllSketch::new(lg_k, kind.sketch_type())
        .unwrap_or_else(|_| HllSketch::new(12, kind.sketch_type()).expect("lg_k 12 is valid"))
}

fn update_sketch(sketch: &mut HllSketch, input: &Value) {
    match input {
        Value::Null => {}
        Value::String(s) => sketch.update(s.as_str()),
        Value::Long(v) => sketch.update(v.to_string().as_str()),
        Value::Double(v) => sketch.update(crate::value::format_double(*v).as_str()),
        Value::Array(items) => items.iter().for_each(|i| update_sketch(sketch, i)),
        json @ Value::Json(_) => sketch.update(json.as_str().unwrap_or_default().as_ref()),
    }
}

/// Approximate heap bytes held by one cell beyond its inline size.
pub fn cell_heap_bytes(cell: &MetricCell) -> usize {
    match cell {
        MetricCell::Timed(Some((_, Scalar::Str(s)))) => s.capacity(),
        MetricCell::Sketch(s) => s.estimated_size() + 64,
        MetricCell::Theta(s) => s.approx_bytes() + 64,
        MetricCell::Quantiles(s) => s.approx_bytes(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agg(json: &str) -> Aggregator {
        Aggregator::new(&serde_json::from_str(json).expect("aggregator json"))
    }

    #[test]
    fn sums_ignore_nulls_and_stay_null_without_input() {
        let a = agg(r#"{"type":"longSum","name":"s","fieldName":"x"}"#);
        let mut c = a.init(&Value::Null, 0);
        assert_eq!(c, MetricCell::Long(None));
        a.fold(&mut c, &Value::Long(3), 0);
        a.fold(&mut c, &Value::Null, 0);
        a.fold(&mut c, &Value::String("4".into()), 0);
        assert_eq!(c, MetricCell::Long(Some(7)));
        a.combine(&mut c, &MetricCell::Long(None));
        assert_eq!(c, MetricCell::Long(Some(7)));
    }

    #[test]
    fn float_metrics_round_to_f32() {
        let a = agg(r#"{"type":"floatSum","name":"s","fieldName":"x"}"#);
        let c = a.init(&Value::Double(0.1), 0);
        assert_eq!(c, MetricCell::Double(Some(0.1f32 as f64)));
    }

    #[test]
    fn first_and_last_are_order_independent() {
        let first = agg(r#"{"type":"stringFirst","name":"f","fieldName":"x"}"#);
        let last = agg(r#"{"type":"longLast","name":"l","fieldName":"x"}"#);
        let inputs = [(5, "b", 2), (1, "z", 9), (1, "a", 1), (9, "q", 7), (9, "q", 8)];
        for order in [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [2, 0, 4, 1, 3]] {
            let mut f = first.empty();
            let mut l = last.empty();
            for i in order {
                let (t, s, v) = inputs[i];
                first.fold(&mut f, &Value::String(s.into()), t);
                last.fold(&mut l, &Value::Long(v), t);
            }
            assert_eq!(f, MetricCell::Timed(Some((1, Scalar::Str("a".into())))));
            assert_eq!(l, MetricCell::Timed(Some((9, Scalar::Long(8)))));
        }
    }

    #[test]
    fn sketches_merge_to_the_union() {
        let a = agg(r#"{"type":"HLLSketchBuild","name":"u","fieldName":"x","lgK":12}"#);
        let mut left = a.empty();
        let mut right = a.empty();
        for i in 0..300 {
            a.fold(&mut left, &Value::Long(i), 0);
            a.fold(&mut right, &Value::Long(i + 200), 0);
        }
        a.combine(&mut left, &right);
        let MetricCell::Sketch(s) = left else { panic!("sketch") };
        let estimate = s.estimate();
        assert!((estimate - 500.0).abs() < 500.0 * 0.05, "{estimate}");
    }
}
