//! The exact sum of doubles, rounded once when read: what makes a double `sum` aggregate the
//! same bits however the segments are split between threads and workers.
//!
//! A segment's rows are summed in row order, as before; partial sums of segments (and of
//! batches of segments) are then added exactly, as Shewchuk's non-overlapping partials
//! ("Adaptive Precision Floating-Point Arithmetic and Fast Robust Geometric Predicates",
//! 1997; the algorithm of CPython's `math.fsum`), and rounded to the nearest double only when
//! read. The correctly rounded value of an exact sum does not depend on the order of its terms
//! nor on how they were grouped, so merging partials is associative and commutative.
//!
//! The `fsum` crate implements the same algorithm but neither exposes its partials (needed to
//! add one exact sum to another, and to send one to a broker) nor handles infinities and NaN;
//! it serves as the oracle of this module's tests.

use serde::{Deserialize, Serialize};

/// An exact sum of doubles: non-overlapping partials in increasing magnitude, or a single
/// non-finite value once an infinity, a NaN or an overflow was added.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ExactSum {
    partials: Vec<f64>,
}

impl ExactSum {
    /// Most partials an exact sum can hold: non-overlapping doubles each hold at least one
    /// of the 2,098 bit positions from the largest exponent to the smallest subnormal.
    pub const MAX_PARTIALS: usize = 2_098;

    /// The exact sum holding `x`.
    pub fn of(x: f64) -> Self {
        Self { partials: vec![x] }
    }

    /// The exact sum of `partials`, as [`ExactSum::partials`] gave them (a sum read back).
    pub fn from_partials(partials: Vec<f64>) -> Self {
        Self { partials }
    }

    /// The non-overlapping partials, in increasing magnitude.
    pub fn partials(&self) -> &[f64] {
        &self.partials
    }

    /// Number of partials held.
    pub fn len(&self) -> usize {
        self.partials.len()
    }

    /// Returns true when nothing was added.
    pub fn is_empty(&self) -> bool {
        self.partials.is_empty()
    }

    /// Adds `x` exactly.
    pub fn add(&mut self, mut x: f64) {
        if let [s] = self.partials[..] {
            if !s.is_finite() {
                // inf + finite = inf; inf + -inf and NaN give NaN, in any order.
                self.partials[0] = s + x;
                return;
            }
        }
        if !x.is_finite() {
            self.partials = vec![x];
            return;
        }
        let mut kept = 0;
        for i in 0..self.partials.len() {
            let mut y = self.partials[i];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            if !hi.is_finite() {
                // An overflow: the sum is infinite from here on (the only order-dependent case).
                self.partials = vec![hi];
                return;
            }
            let lo = y - (hi - x);
            if lo != 0.0 {
                self.partials[kept] = lo;
                kept += 1;
            }
            x = hi;
        }
        self.partials.truncate(kept);
        self.partials.push(x);
    }

    /// Adds `other` exactly.
    pub fn absorb(&mut self, other: &ExactSum) {
        for &x in &other.partials {
            self.add(x);
        }
    }

    /// The sum rounded to the nearest double (ties to even across partials, as `math.fsum`).
    pub fn value(&self) -> f64 {
        let p = &self.partials;
        let Some(mut n) = p.len().checked_sub(1) else { return 0.0 };
        let mut total = p[n];
        while n > 0 {
            let old = total;
            n -= 1;
            let x = p[n];
            total = old + x;
            let error = x - (total - old);
            if error != 0.0 {
                // Half-way cases: the partials below decide which way to round.
                if n > 0 && ((error < 0.0 && p[n - 1] < 0.0) || (error > 0.0 && p[n - 1] > 0.0)) {
                    let y = error * 2.0;
                    let up = total + y;
                    if y == up - total {
                        return up;
                    }
                }
                return total;
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sum_of(values: &[f64]) -> ExactSum {
        let mut s = ExactSum::default();
        for &v in values {
            s.add(v);
        }
        s
    }

    #[test]
    fn cancellation_and_half_way_cases_round_as_fsum_does() {
        assert_eq!(sum_of(&[1e100, 1.0, -1e100]).value(), 1.0);
        assert_eq!(sum_of(&[0.1; 10]).value(), 1.0);
        assert_eq!(sum_of(&[1e-16, 1.0, 1e16]).value(), 1.000_000_000_000_000_2e16);
        assert_eq!(ExactSum::default().value(), 0.0);
    }

    #[test]
    fn non_finite_values_sum_as_plain_addition() {
        assert_eq!(sum_of(&[1.0, f64::INFINITY, 2.0]).value(), f64::INFINITY);
        assert!(sum_of(&[f64::INFINITY, 1.0, f64::NEG_INFINITY]).value().is_nan());
        assert!(sum_of(&[f64::NAN, 1.0]).value().is_nan());
        assert_eq!(sum_of(&[f64::MAX, f64::MAX]).value(), f64::INFINITY, "an overflow");
    }

    fn finite() -> impl Strategy<Value = f64> {
        prop_oneof![
            (-1e6f64..1e6),
            (-1e300f64..1e300),
            any::<i32>().prop_map(|x| f64::from(x) * 1e-9),
            Just(0.1),
            Just(-0.1),
        ]
    }

    proptest! {
        #[test]
        fn the_value_is_fsums_however_the_terms_are_grouped(
            values in prop::collection::vec(finite(), 0..60),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let oracle = fsum::FSum::with_all(&values).value();
            prop_assert_eq!(sum_of(&values).value().to_bits(), oracle.to_bits());
            // Split into runs, sum each, add the runs in reverse: the same bits.
            let mut at: Vec<usize> = cuts.iter().map(|c| c.index(values.len() + 1)).collect();
            at.extend([0, values.len()]);
            at.sort_unstable();
            let mut merged = ExactSum::default();
            for w in at.windows(2).rev() {
                merged.absorb(&sum_of(&values[w[0]..w[1]]));
            }
            prop_assert_eq!(merged.value().to_bits(), oracle.to_bits());
        }
    }
}
