//! The theta and quantiles sketches Druid's DataSketches extension offers, on Apache
//! DataSketches (the library the HLL sketches come from):
//!
//! - [`Theta`]: distinct counts with set operations (`thetaSketch`). Strings are hashed as their
//!   UTF-8 bytes, numbers as their text, with DataSketches' default seed (9001, Druid's), and
//!   stored in DataSketches' compact theta serialization.
//! - [`Quantiles`]: quantiles of a numeric column (`quantilesDoublesSketch`), kept as a KLL
//!   sketch of doubles in DataSketches' KLL serialization. Druid's `k` (default 128) sizes a
//!   classic quantiles sketch, whose normalized rank error at k=128 is about 1.7%; a KLL sketch
//!   reaches that error with fewer items, so a KLL sketch of twice Druid's `k` is kept (1.1%
//!   at 256), at most as large as Druid's.

use crate::value::Value;
use datasketches::common::SearchCriteria;
use datasketches::hash::value::raw_bytes;
use datasketches::kll::{KllFloat, KllSketch};
use datasketches::theta::{
    CompactThetaSketch, ThetaANotB, ThetaIntersection, ThetaSketch, ThetaSketchBuilder, ThetaUnionBuilder,
};

/// Druid's default theta sketch size (entries retained), `size`: 16,384.
pub const DEFAULT_THETA_SIZE: u32 = 16_384;
/// Druid's default quantiles `k`.
pub const DEFAULT_QUANTILES_K: u16 = 128;
/// DataSketches' default update seed, which Druid uses.
const SEED: u64 = 9001;

/// A theta sketch: values added since it was made or last merged, and what merges gave.
#[derive(Debug)]
pub struct Theta {
    lg_k: u8,
    raw: ThetaSketch,
    merged: Option<CompactThetaSketch>,
}

/// log2 of a theta `size` (a power of two, 32 to 2^26).
pub fn theta_lg_k(size: u32) -> Result<u8, String> {
    if !size.is_power_of_two() || !(32..=1 << 26).contains(&size) {
        return Err(format!("size {size} must be a power of 2 from 32 to 67108864"));
    }
    Ok(size.trailing_zeros() as u8)
}

/// Checks a quantiles `k` as Druid does: a power of 2 from 2 to 32,768.
pub fn check_quantiles_k(k: u16) -> Result<(), String> {
    if !k.is_power_of_two() || k < 2 {
        return Err(format!("k {k} must be a power of 2 from 2 to 32768"));
    }
    Ok(())
}

impl Theta {
    /// An empty sketch retaining at most 2^`lg_k` entries.
    pub fn new(lg_k: u8) -> Self {
        let raw = ThetaSketchBuilder::default()
            .lg_k(lg_k)
            .build()
            .unwrap_or_else(|_| ThetaSketchBuilder::default().build().expect("the default theta sketch"));
        Theta { lg_k, raw, merged: None }
    }

    /// Its size as log2 of the entries retained.
    pub fn lg_k(&self) -> u8 {
        self.lg_k
    }

    /// Adds a value as Druid's theta aggregator hashes it: a string's UTF-8 bytes (empty
    /// strings are not counted), a long's eight little-endian bytes, a double's bits (-0.0 as
    /// 0.0, every NaN as one), each of an array's values; nulls are not counted.
    pub fn update(&mut self, value: &Value) {
        match value {
            Value::Null => {}
            Value::String(s) => self.update_str(s),
            Value::Long(v) => self.raw.update(raw_bytes::from_slice(&v.to_le_bytes())),
            Value::Double(v) => {
                let bits = if v.is_nan() {
                    0x7ff8_0000_0000_0000u64
                } else if *v == 0.0 {
                    0
                } else {
                    v.to_bits()
                };
                self.raw.update(raw_bytes::from_slice(&bits.to_le_bytes()));
            }
            Value::Array(items) => items.iter().for_each(|v| self.update(v)),
        }
    }

    /// Adds a string (an empty one is not counted, as in Druid).
    pub fn update_str(&mut self, s: &str) {
        if !s.is_empty() {
            self.raw.update(raw_bytes::from_str(s));
        }
    }

    /// The sketch as one compact sketch.
    pub fn compact(&self) -> CompactThetaSketch {
        match &self.merged {
            None => self.raw.compact(true),
            Some(m) if self.raw.is_empty() => m.clone(),
            Some(m) => union_of(self.lg_k, [&self.raw.compact(true), m]),
        }
    }

    /// Adds `other`'s values.
    pub fn merge(&mut self, other: &Theta) {
        self.merge_compact(&other.compact());
    }

    /// Adds a compact sketch's values.
    pub fn merge_compact(&mut self, other: &CompactThetaSketch) {
        let merged = union_of(self.lg_k, [&self.compact(), other]);
        self.merged = Some(merged);
        self.raw = Theta::new(self.lg_k).raw;
    }

    /// The distinct count estimate.
    pub fn estimate(&self) -> f64 {
        self.compact().estimate()
    }

    /// The estimate's lower and upper bounds at 1, 2 or 3 standard deviations.
    pub fn bounds(&self, std_devs: u8) -> (f64, f64) {
        use datasketches::common::NumStdDev;
        let n = match std_devs {
            1 => NumStdDev::One,
            2 => NumStdDev::Two,
            _ => NumStdDev::Three,
        };
        let c = self.compact();
        (c.lower_bound(n), c.upper_bound(n))
    }

    /// DataSketches' compact serialization.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.compact().serialize()
    }

    /// A sketch read from its serialization (of any size: it keeps `lg_k` for later unions).
    pub fn from_bytes(bytes: &[u8], lg_k: u8) -> Result<Self, String> {
        let compact = CompactThetaSketch::deserialize_with_seed(bytes, SEED).map_err(|e| e.to_string())?;
        let mut t = Theta::new(lg_k);
        t.merged = Some(compact);
        Ok(t)
    }

    /// Bytes it holds, roughly.
    pub fn approx_bytes(&self) -> usize {
        self.raw.estimated_size() + self.merged.as_ref().map_or(0, |m| m.estimated_size())
    }
}

impl Clone for Theta {
    fn clone(&self) -> Self {
        Theta { lg_k: self.lg_k, raw: Theta::new(self.lg_k).raw, merged: Some(self.compact()) }
    }
}

impl PartialEq for Theta {
    fn eq(&self, other: &Self) -> bool {
        self.to_bytes() == other.to_bytes()
    }
}

fn union_of<'a>(lg_k: u8, sketches: impl IntoIterator<Item = &'a CompactThetaSketch>) -> CompactThetaSketch {
    let mut union = ThetaUnionBuilder::default()
        .lg_k(lg_k)
        .build()
        .unwrap_or_else(|_| ThetaUnionBuilder::default().build().expect("the default theta union"));
    for s in sketches {
        // Same seed everywhere: a union of two of these cannot fail.
        let _ = union.update(s);
    }
    union.to_sketch(true)
}

/// Druid's `thetaSketchSetOp` functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    /// Values in any.
    Union,
    /// Values in all.
    Intersect,
    /// Values in the first and none of the others.
    Not,
}

impl SetOp {
    /// Druid's name (`UNION`, `INTERSECT`, `NOT`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "UNION" => Some(SetOp::Union),
            "INTERSECT" => Some(SetOp::Intersect),
            "NOT" => Some(SetOp::Not),
            _ => None,
        }
    }

    /// `op` over `sketches`, as a sketch of at most 2^`lg_k` entries.
    pub fn apply(self, lg_k: u8, sketches: &[Theta]) -> Theta {
        let compacts: Vec<CompactThetaSketch> = sketches.iter().map(Theta::compact).collect();
        let result = match self {
            SetOp::Union => Some(union_of(lg_k, compacts.iter())),
            SetOp::Intersect => {
                let mut i = ThetaIntersection::with_seed(SEED).ok();
                for c in &compacts {
                    if let Some(i) = i.as_mut() {
                        let _ = i.update(c);
                    }
                }
                i.and_then(|i| i.to_sketch(true))
            }
            SetOp::Not => {
                let mut rest = compacts.iter();
                let first = rest.next().cloned();
                let a_not_b = ThetaANotB::with_seed(SEED).ok();
                match (first, a_not_b) {
                    (Some(mut acc), Some(op)) => {
                        for c in rest {
                            if let Ok(r) = op.compute(&acc, c, true) {
                                acc = r;
                            }
                        }
                        Some(acc)
                    }
                    _ => None,
                }
            }
        };
        let mut out = Theta::new(lg_k);
        if let Some(r) = result {
            out.merged = Some(r);
        }
        out
    }
}

/// A quantiles sketch of doubles.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantiles {
    sketch: KllSketch<KllFloat<f64>>,
}

impl Quantiles {
    /// An empty sketch for Druid's `k`.
    pub fn new(druid_k: u16) -> Self {
        let k = druid_k.saturating_mul(2).max(8);
        let sketch = KllSketch::new(k).unwrap_or_else(|_| KllSketch::new(256).expect("k 256 is valid"));
        Quantiles { sketch }
    }

    /// Adds a number (each of an array's; nulls, text that is not a number and NaN are not
    /// counted).
    pub fn update(&mut self, value: &Value) {
        match value {
            Value::Array(items) => items.iter().for_each(|v| self.update(v)),
            v => {
                if let Some(x) = v.as_double().and_then(|x| KllFloat::<f64>::new(x).ok()) {
                    self.sketch.update(x);
                }
            }
        }
    }

    /// Adds `other`'s values.
    pub fn merge(&mut self, other: &Quantiles) {
        // Two sketches of doubles always merge (a smaller k only lowers the accuracy).
        let _ = self.sketch.merge(&other.sketch);
    }

    /// Values counted.
    pub fn n(&self) -> u64 {
        self.sketch.n()
    }

    /// The value at `fraction` of the ranks (0 to 1); `None` when empty or out of range.
    pub fn quantile(&self, fraction: f64) -> Option<f64> {
        if !(0.0..=1.0).contains(&fraction) {
            return None;
        }
        self.sketch.quantile(fraction, SearchCriteria::Inclusive).ok().flatten().map(KllFloat::into_inner)
    }

    /// The fraction of values below `value`.
    pub fn rank(&self, value: f64) -> Option<f64> {
        KllFloat::<f64>::new(value).ok().and_then(|v| self.sketch.rank(&v, SearchCriteria::Exclusive))
    }

    /// The smallest and largest values.
    pub fn min_max(&self) -> Option<(f64, f64)> {
        Some((self.sketch.min_item()?.into_inner(), self.sketch.max_item()?.into_inner()))
    }

    /// Fractions of the values below each split point, then at or above the last: Druid's
    /// `ToCDF` (cumulative) when `cumulative`, else its histogram's masses times n.
    pub fn split(&self, points: &[f64], cumulative: bool) -> Option<Vec<f64>> {
        if self.sketch.is_empty() {
            return None;
        }
        let mut ranks: Vec<f64> = points.iter().map(|&p| self.rank(p).unwrap_or(0.0)).collect();
        ranks.push(1.0);
        if cumulative {
            return Some(ranks);
        }
        let n = self.n() as f64;
        let mut last = 0.0;
        Some(
            ranks
                .into_iter()
                .map(|r| {
                    let mass = (r - last) * n;
                    last = r;
                    mass
                })
                .collect(),
        )
    }

    /// DataSketches' KLL serialization.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.sketch.serialize()
    }

    /// A sketch read from its serialization.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        Ok(Quantiles { sketch: KllSketch::deserialize(bytes).map_err(|e| e.to_string())? })
    }

    /// Bytes it holds, roughly.
    pub fn approx_bytes(&self) -> usize {
        64 + self.sketch.num_retained() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn theta_counts_unions_intersections_and_differences() {
        let (mut a, mut b) = (Theta::new(14), Theta::new(14));
        for i in 0..1_000 {
            a.update(&Value::Long(i));
        }
        for i in 500..1_500 {
            b.update(&Value::Long(i));
        }
        assert_eq!(a.estimate(), 1_000.0, "exact below the sketch size");
        let both = [a.clone(), b.clone()];
        assert_eq!(SetOp::Union.apply(14, &both).estimate(), 1_500.0);
        assert_eq!(SetOp::Intersect.apply(14, &both).estimate(), 500.0);
        assert_eq!(SetOp::Not.apply(14, &both).estimate(), 500.0);
        let mut merged = a.clone();
        merged.merge(&b);
        merged.update(&Value::Long(5_000));
        assert_eq!(merged.estimate(), 1_501.0, "updates after a merge still count");
        let back = Theta::from_bytes(&merged.to_bytes(), 14).expect("reads back");
        assert_eq!(back.estimate(), 1_501.0);
        assert!(Theta::from_bytes(b"nonsense", 14).is_err());
    }

    #[test]
    fn theta_sketches_hash_as_druids_do_and_read_druids_bytes() {
        use base64::Engine;
        // Druid's ThetaSketchSqlAggregatorTest: the sketches of {"abc"} and of {"a"}.
        for (values, druid) in
            [(&["abc", ""][..], "AQMDAAA6zJOQxkPsNomrZQ=="), (&["a"][..], "AQMDAAA6zJMXwR1ShQcBew==")]
        {
            let mut ours = Theta::new(14);
            values.iter().for_each(|v| ours.update(&Value::String(v.to_string())));
            let bytes = base64::engine::general_purpose::STANDARD.decode(druid).expect("base64");
            let theirs = Theta::from_bytes(&bytes, 14).expect("Druid's sketch reads");
            let hashes = |t: &Theta| t.compact().iter().map(|e| e.hash()).collect::<Vec<_>>();
            assert_eq!(hashes(&ours), hashes(&theirs), "{values:?}");
            assert_eq!(theirs.estimate(), 1.0);
        }
    }

    #[test]
    fn quantiles_are_within_the_rank_error() {
        let mut q = Quantiles::new(DEFAULT_QUANTILES_K);
        for i in 0..100_000 {
            q.update(&Value::Long(i));
        }
        q.update(&Value::Null);
        q.update(&Value::String("x".into()));
        assert_eq!(q.n(), 100_000);
        let p95 = q.quantile(0.95).expect("p95");
        assert!((p95 / 100_000.0 - 0.95).abs() < 0.017, "p95 {p95}");
        assert_eq!(q.min_max(), Some((0.0, 99_999.0)));
        let back = Quantiles::from_bytes(&q.to_bytes()).expect("reads back");
        assert_eq!(back.quantile(0.5), q.quantile(0.5));
        assert_eq!(q.quantile(1.5), None);
        let cdf = q.split(&[50_000.0], true).expect("cdf");
        assert!((cdf[0] - 0.5).abs() < 0.017 && cdf[1] == 1.0, "{cdf:?}");
    }
}
