//! The theta and quantiles sketches Druid's DataSketches extension offers, on Apache
//! DataSketches (the library the HLL sketches come from):
//!
//! - [`Theta`]: distinct counts with set operations (`thetaSketch`), hashed as Druid hashes
//!   values ([`Theta::update`]) with DataSketches' default seed (9001, Druid's), and stored in
//!   DataSketches' compact theta serialization.
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
    CompactThetaSketch, ThetaANotB, ThetaIntersection, ThetaSketch, ThetaSketchBuilder, ThetaUnion, ThetaUnionBuilder,
};

/// Druid's default theta sketch size (entries retained), `size`: 16,384.
pub const DEFAULT_THETA_SIZE: u32 = 16_384;
/// Druid's default quantiles `k`.
pub const DEFAULT_QUANTILES_K: u16 = 128;
/// DataSketches' default update seed, which Druid uses.
const SEED: u64 = 9001;

/// A theta sketch: the values added to it, the sketches read into it (a row's, from a
/// segment), and a union of what was merged into it. A merge feeds the other sketch's entries
/// to the union, so merging rows' sketches one by one costs their entries, not the size.
pub struct Theta {
    lg_k: u8,
    /// Made at the first value added: a row read from a segment holds only `read`.
    raw: Option<ThetaSketch>,
    read: Option<CompactThetaSketch>,
    union: Option<ThetaUnion>,
}

impl std::fmt::Debug for Theta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Theta(lg_k {}, estimate {})", self.lg_k, self.estimate())
    }
}

/// Why a sketch's size was refused or its bytes not read.
#[derive(Debug, thiserror::Error)]
pub enum SketchError {
    /// A theta `size` that is not a power of 2 from 32 to 2^26.
    #[error("size {size} must be a power of 2 from 32 to 67108864")]
    ThetaSize {
        /// The size given.
        size: u32,
    },
    /// A quantiles `k` that is not a power of 2 from 2 to 32,768.
    #[error("k {k} must be a power of 2 from 2 to 32768")]
    QuantilesK {
        /// The `k` given.
        k: u16,
    },
    /// Bytes that are not a sketch's serialization.
    #[error(transparent)]
    Bytes(#[from] datasketches::error::Error),
}

/// log2 of a theta `size` (a power of two, 32 to 2^26).
pub fn theta_lg_k(size: u32) -> Result<u8, SketchError> {
    if !size.is_power_of_two() || !(32..=1 << 26).contains(&size) {
        return Err(SketchError::ThetaSize { size });
    }
    Ok(size.trailing_zeros() as u8)
}

/// Checks a quantiles `k` as Druid does: a power of 2 from 2 to 32,768.
pub fn check_quantiles_k(k: u16) -> Result<(), SketchError> {
    if !k.is_power_of_two() || k < 2 {
        return Err(SketchError::QuantilesK { k });
    }
    Ok(())
}

impl Theta {
    /// An empty sketch retaining at most 2^`lg_k` entries.
    pub fn new(lg_k: u8) -> Self {
        Theta { lg_k, raw: None, read: None, union: None }
    }

    fn raw_mut(&mut self) -> &mut ThetaSketch {
        let lg_k = self.lg_k;
        self.raw.get_or_insert_with(|| {
            ThetaSketchBuilder::default()
                .lg_k(lg_k)
                .build()
                .unwrap_or_else(|_| ThetaSketchBuilder::default().build().expect("the default theta sketch"))
        })
    }

    /// The values added, when any were.
    fn added(&self) -> Option<&ThetaSketch> {
        self.raw.as_ref().filter(|r| !r.is_empty())
    }

    /// Its size as log2 of the entries retained.
    pub fn lg_k(&self) -> u8 {
        self.lg_k
    }

    /// Adds a value as Druid's theta aggregator hashes it: a string's UTF-8 bytes (empty
    /// strings are not counted), a long's eight little-endian bytes, a double's bits (-0.0 as
    /// 0.0, every NaN as one), each of a multi-value list's values as their text; nulls are
    /// not counted.
    pub fn update(&mut self, value: &Value) {
        match value {
            Value::Null => {}
            Value::String(s) => self.update_str(s),
            Value::Long(v) => self.raw_mut().update(raw_bytes::from_slice(&v.to_le_bytes())),
            Value::Double(v) => {
                let bits = if v.is_nan() {
                    0x7ff8_0000_0000_0000u64
                } else if *v == 0.0 {
                    0
                } else {
                    v.to_bits()
                };
                self.raw_mut().update(raw_bytes::from_slice(&bits.to_le_bytes()));
            }
            Value::Array(items) => {
                for item in items {
                    match item {
                        Value::Null | Value::Array(_) => {}
                        Value::String(s) => self.update_str(s),
                        Value::Long(v) => self.update_str(&v.to_string()),
                        Value::Double(v) => self.update_str(&crate::value::format_double(*v)),
                        json @ Value::Json(_) => self.update_str(&json.as_str().unwrap_or_default()),
                    }
                }
            }
            json @ Value::Json(_) => self.update_str(&json.as_str().unwrap_or_default()),
        }
    }

    /// Adds a string (an empty one is not counted, as in Druid).
    pub fn update_str(&mut self, s: &str) {
        if !s.is_empty() {
            self.raw_mut().update(raw_bytes::from_str(s));
        }
    }

    fn union_mut(&mut self) -> &mut ThetaUnion {
        let lg_k = self.lg_k;
        self.union.get_or_insert_with(|| new_union(lg_k))
    }

    /// The sketch as one compact sketch.
    pub fn compact(&self) -> CompactThetaSketch {
        match (self.added(), &self.read, &self.union) {
            (None, None, None) => Theta::empty(self.lg_k),
            (Some(raw), None, None) => raw.compact(true),
            (None, Some(r), None) => r.clone(),
            (raw, read, union) => {
                let mut all = new_union(self.lg_k);
                if let Some(raw) = raw {
                    let _ = all.update(raw);
                }
                if let Some(r) = read {
                    let _ = all.update(r);
                }
                if let Some(u) = union {
                    let _ = all.update(&u.to_sketch(false));
                }
                all.to_sketch(true)
            }
        }
    }

    /// The compact sketch of no value.
    fn empty(lg_k: u8) -> CompactThetaSketch {
        new_union(lg_k).to_sketch(true)
    }

    /// Adds `other`'s values.
    pub fn merge(&mut self, other: &Theta) {
        // Same seed everywhere: these updates cannot fail.
        if let Some(raw) = other.added() {
            let _ = self.union_mut().update(raw);
        }
        if let Some(r) = &other.read {
            let _ = self.union_mut().update(r);
        }
        if let Some(u) = &other.union {
            let sketch = u.to_sketch(false);
            let _ = self.union_mut().update(&sketch);
        }
    }

    /// Adds a compact sketch's values.
    pub fn merge_compact(&mut self, other: &CompactThetaSketch) {
        let _ = self.union_mut().update(other);
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
    pub fn from_bytes(bytes: &[u8], lg_k: u8) -> Result<Self, SketchError> {
        let compact = CompactThetaSketch::deserialize_with_seed(bytes, SEED)?;
        Ok(Theta::of_compact(compact, lg_k))
    }

    fn of_compact(compact: CompactThetaSketch, lg_k: u8) -> Self {
        let mut t = Theta::new(lg_k);
        t.read = Some(compact);
        t
    }

    /// Bytes it holds, roughly.
    pub fn approx_bytes(&self) -> usize {
        self.raw.as_ref().map_or(0, |r| r.estimated_size())
            + self.read.as_ref().map_or(0, |m| m.estimated_size())
            + self.union.as_ref().map_or(0, |u| u.estimated_size())
    }
}

impl Clone for Theta {
    fn clone(&self) -> Self {
        Theta::of_compact(self.compact(), self.lg_k)
    }
}

impl PartialEq for Theta {
    fn eq(&self, other: &Self) -> bool {
        self.to_bytes() == other.to_bytes()
    }
}

fn new_union(lg_k: u8) -> ThetaUnion {
    ThetaUnionBuilder::default()
        .lg_k(lg_k)
        .build()
        .unwrap_or_else(|_| ThetaUnionBuilder::default().build().expect("the default theta union"))
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

    /// `op` over `sketches` (in order: `NOT` keeps the first's values that none of the
    /// others hold), as a sketch of at most 2^`lg_k` entries; each operand is folded in as it
    /// comes, so none is held beside the result.
    pub fn apply(self, lg_k: u8, sketches: impl IntoIterator<Item = Theta>) -> Theta {
        let mut operands = sketches.into_iter().map(|t| t.compact());
        let result = match self {
            SetOp::Union => {
                let mut union = new_union(lg_k);
                for c in operands {
                    let _ = union.update(&c);
                }
                Some(union.to_sketch(true))
            }
            SetOp::Intersect => {
                let mut i = ThetaIntersection::with_seed(SEED).ok();
                for c in operands {
                    if let Some(i) = i.as_mut() {
                        let _ = i.update(&c);
                    }
                }
                i.and_then(|i| i.to_sketch(true))
            }
            SetOp::Not => match (operands.next(), ThetaANotB::with_seed(SEED).ok()) {
                (Some(mut acc), Some(op)) => {
                    for c in operands {
                        if let Ok(r) = op.compute(&acc, &c, true) {
                            acc = r;
                        }
                    }
                    Some(acc)
                }
                _ => None,
            },
        };
        match result {
            Some(r) => Theta::of_compact(r, lg_k),
            None => Theta::new(lg_k),
        }
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
        self.quantiles(&[fraction])?.first().copied()
    }

    /// The values at `fractions` of the ranks, sorting the sketch once; `None` when empty or
    /// a fraction is out of range.
    pub fn quantiles(&self, fractions: &[f64]) -> Option<Vec<f64>> {
        let values = self.sketch.quantiles(fractions, SearchCriteria::Inclusive).ok().flatten()?;
        Some(values.into_iter().map(KllFloat::into_inner).collect())
    }

    /// The fraction of values at or below `value` (DataSketches' inclusive rank, Druid's).
    pub fn rank(&self, value: f64) -> Option<f64> {
        KllFloat::<f64>::new(value).ok().and_then(|v| self.sketch.rank(&v, SearchCriteria::Inclusive))
    }

    /// The smallest and largest values.
    pub fn min_max(&self) -> Option<(f64, f64)> {
        Some((self.sketch.min_item()?.into_inner(), self.sketch.max_item()?.into_inner()))
    }

    /// Druid's `ToCDF` (the fraction of values at or below each split point, then 1) when
    /// `cumulative`, else its `ToHistogram` (the count of values in each interval the split
    /// points make); `None` when empty or the points are not finite and increasing.
    pub fn split(&self, points: &[f64], cumulative: bool) -> Option<Vec<f64>> {
        let points: Vec<KllFloat<f64>> = points.iter().map(|&p| KllFloat::<f64>::new(p).ok()).collect::<Option<_>>()?;
        if cumulative {
            return self.sketch.cdf(&points, SearchCriteria::Inclusive).ok().flatten();
        }
        let n = self.n() as f64;
        let masses = self.sketch.pmf(&points, SearchCriteria::Inclusive).ok().flatten()?;
        Some(masses.into_iter().map(|m| m * n).collect())
    }

    /// Druid's `ToHistogram` with `bins` equal bins from the smallest value to the largest
    /// (every value in the first bin when they are all equal, as in Druid).
    pub fn histogram(&self, bins: u32) -> Option<Vec<f64>> {
        let (min, max) = self.min_max()?;
        let bins = bins.max(2);
        if max <= min || !min.is_finite() || !max.is_finite() {
            let mut out = vec![0.0; bins as usize];
            out[0] = self.n() as f64;
            return Some(out);
        }
        let width = (max - min) / f64::from(bins);
        let points: Vec<f64> = (1..bins).map(|i| min + width * f64::from(i)).collect();
        self.split(&points, false)
    }

    /// DataSketches' KLL serialization.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.sketch.serialize()
    }

    /// A sketch read from its serialization.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SketchError> {
        Ok(Quantiles { sketch: KllSketch::deserialize(bytes)? })
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
        let both = || [a.clone(), b.clone()];
        assert_eq!(SetOp::Union.apply(14, both()).estimate(), 1_500.0);
        assert_eq!(SetOp::Intersect.apply(14, both()).estimate(), 500.0);
        assert_eq!(SetOp::Not.apply(14, both()).estimate(), 500.0);
        assert_eq!(SetOp::Not.apply(14, [b.clone(), a.clone()]).estimate(), 500.0, "b's values a lacks");
        let mut merged = a.clone();
        merged.merge(&b);
        merged.update(&Value::Long(5_000));
        assert_eq!(merged.estimate(), 1_501.0, "updates after a merge still count");
        let back = Theta::from_bytes(&merged.to_bytes(), 14).expect("reads back");
        assert_eq!(back.estimate(), 1_501.0);
        assert!(Theta::from_bytes(b"nonsense", 14).is_err());
        let empty = Theta::new(14);
        assert_eq!(Theta::from_bytes(&empty.to_bytes(), 14).expect("reads back").estimate(), 0.0);
        let mut read = Theta::from_bytes(&b.to_bytes(), 14).expect("reads back");
        read.update(&Value::Long(-1));
        assert_eq!(read.estimate(), 1_001.0, "a value added to a sketch read from bytes counts");
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
        assert!((cdf[0] - 0.5).abs() < 0.017, "{cdf:?}");
        let hist = q.split(&[25_000.0, 75_000.0], false).expect("histogram");
        assert!((hist[1] - 50_000.0).abs() < 0.017 * 100_000.0, "{hist:?}");
        assert_eq!(q.split(&[2.0, 1.0], true), None, "split points must increase");
        let mut same = Quantiles::new(DEFAULT_QUANTILES_K);
        (0..10).for_each(|_| same.update(&Value::Long(7)));
        assert_eq!(same.histogram(4), Some(vec![10.0, 0.0, 0.0, 0.0]), "all in the first bin, as in Druid");
        assert_eq!(q.quantiles(&[0.0, 1.0]), Some(vec![0.0, 99_999.0]));
    }
}
