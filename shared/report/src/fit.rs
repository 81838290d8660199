//! `fixed x invocations + per_row x rows`, fitted through two observations.

/// One observation of a figure: (invocations, rows, value).
pub type Observation = (f64, f64, f64);

/// `fixed + per_row x rows` of one figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// Per invocation.
    pub fixed: f64,
    /// Per row.
    pub per_row: f64,
}

impl Fit {
    /// Fits `value = fixed x invocations + per_row x rows` through two observations; a
    /// negative part is dropped and the other refitted over both.
    pub fn through(a: Observation, b: Observation) -> Fit {
        let ((na, ra, va), (nb, rb, vb)) = (a, b);
        let det = na * rb - nb * ra;
        if det.abs() > f64::EPSILON {
            let fixed = (va * rb - vb * ra) / det;
            let per_row = (na * vb - nb * va) / det;
            if fixed >= 0.0 && per_row >= 0.0 {
                return Fit { fixed, per_row };
            }
        }
        Fit { fixed: 0.0, per_row: (va + vb) / (ra + rb).max(1.0) }
    }

    /// The figure for `rows` rows in one invocation.
    pub fn at(&self, rows: f64) -> f64 {
        self.fixed + self.per_row * rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fit_through_two_points_recovers_fixed_and_per_row_parts() {
        let fit = Fit::through((2.0, 1000.0, 2.0 * 0.5 + 1000.0 * 0.01), (20.0, 1000.0, 20.0 * 0.5 + 1000.0 * 0.01));
        assert!((fit.fixed - 0.5).abs() < 1e-9 && (fit.per_row - 0.01).abs() < 1e-9, "{fit:?}");
        // A negative part is dropped.
        let fit = Fit::through((1.0, 100.0, 10.0), (10.0, 100.0, 1.0));
        assert_eq!(fit, Fit { fixed: 0.0, per_row: 11.0 / 200.0 });
    }
}
