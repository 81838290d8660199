//! `fixed + per_partition x partitions + per_group x groups` per supervisor pass, fitted by
//! least squares through runs with different partition and group counts.

/// One run's figure per pass: (partitions, groups, value per pass).
pub type PassObservation = (f64, f64, f64);

/// A figure of one supervisor pass, by the datasource's partitions and task groups.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PassFit {
    /// Per pass.
    pub fixed: f64,
    /// Per partition per pass.
    pub per_partition: f64,
    /// Per task group per pass.
    pub per_group: f64,
}

impl PassFit {
    /// Fits the three parts through `runs` by least squares. A part that comes out negative
    /// (measurement noise: a pass does not get cheaper with more partitions) is dropped and the
    /// others refitted; a part the runs cannot tell apart (every run with the same partitions,
    /// or the same groups) is dropped as well, so its cost shows in the fixed part.
    pub fn through(runs: &[PassObservation]) -> PassFit {
        let mut used = [true; 3];
        loop {
            let coefficients = least_squares(runs, used);
            match (0..3).find(|&k| used[k] && coefficients[k] < 0.0) {
                Some(k) => used[k] = false,
                None => {
                    let [fixed, per_partition, per_group] = coefficients;
                    return PassFit { fixed, per_partition, per_group };
                }
            }
        }
    }

    /// The figure of a pass over `partitions` partitions in `groups` groups.
    pub fn at(&self, partitions: f64, groups: f64) -> f64 {
        self.fixed + self.per_partition * partitions + self.per_group * groups
    }
}

/// Least squares of `value = c0 + c1 x partitions + c2 x groups` over the parts `used`
/// (the others are 0); a part whose column the runs leave singular is set to 0.
fn least_squares(runs: &[PassObservation], mut used: [bool; 3]) -> [f64; 3] {
    let row = |&(p, g, _): &PassObservation| [1.0, p, g];
    loop {
        let idx: Vec<usize> = (0..3).filter(|&k| used[k]).collect();
        let n = idx.len();
        if n == 0 {
            return [0.0; 3];
        }
        // Normal equations A^T A x = A^T b over the parts used, by Gaussian elimination.
        let mut m = vec![vec![0.0; n + 1]; n];
        for r in runs {
            let x = row(r);
            for (i, &a) in idx.iter().enumerate() {
                for (j, &b) in idx.iter().enumerate() {
                    m[i][j] += x[a] * x[b];
                }
                m[i][n] += x[a] * r.2;
            }
        }
        match solve(m) {
            Ok(x) => {
                let mut out = [0.0; 3];
                for (i, &k) in idx.iter().enumerate() {
                    out[k] = x[i];
                }
                return out;
            }
            // Singular: the runs do not tell this part from the ones before it; drop it.
            Err(col) => used[idx[col]] = false,
        }
    }
}

/// Solves an augmented `n x (n + 1)` system; when it is singular, the column found
/// dependent on the ones before it.
fn solve(mut m: Vec<Vec<f64>>) -> Result<Vec<f64>, usize> {
    let n = m.len();
    for col in 0..n {
        let pivot = (col..n).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs())).ok_or(col)?;
        let scale = m.iter().map(|r| r[col].abs()).fold(0.0, f64::max).max(1.0);
        if m[pivot][col].abs() <= 1e-9 * scale {
            return Err(col);
        }
        m.swap(col, pivot);
        let pivot_row = m[col].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (x, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    Ok((0..n).map(|i| m[i][n] / m[i][i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(f: impl Fn(f64, f64) -> f64) -> Vec<PassObservation> {
        [(4.0, 1.0), (16.0, 1.0), (16.0, 4.0)].iter().map(|&(p, g)| (p, g, f(p, g))).collect()
    }

    #[test]
    fn three_runs_recover_the_fixed_per_partition_and_per_group_parts() {
        let fit = PassFit::through(&runs(|p, g| 5.0 + 0.25 * p + 3.0 * g));
        assert!((fit.fixed - 5.0).abs() < 1e-9, "{fit:?}");
        assert!((fit.per_partition - 0.25).abs() < 1e-9, "{fit:?}");
        assert!((fit.per_group - 3.0).abs() < 1e-9, "{fit:?}");
        assert!((fit.at(1000.0, 14.0) - (5.0 + 250.0 + 42.0)).abs() < 1e-6);
    }

    #[test]
    fn a_negative_part_is_dropped_and_the_others_refitted() {
        // A pass measured cheaper with more partitions: no per-partition part.
        let fit = PassFit::through(&[(4.0, 1.0, 10.0), (16.0, 1.0, 9.0), (16.0, 4.0, 15.0)]);
        assert_eq!(fit.per_partition, 0.0, "{fit:?}");
        assert!(fit.per_group > 0.0 && fit.fixed > 0.0, "{fit:?}");
        // The refit is the least-squares line through the runs by groups alone.
        let expected = PassFit::through(&[(0.0, 1.0, 10.0), (0.0, 1.0, 9.0), (0.0, 4.0, 15.0)]);
        assert!((fit.fixed - expected.fixed).abs() < 1e-9 && (fit.per_group - expected.per_group).abs() < 1e-9);
    }

    #[test]
    fn a_part_the_runs_do_not_vary_goes_into_the_fixed_part() {
        // Every run has one group: the per-group part cannot be told from the fixed one.
        let fit = PassFit::through(&[(4.0, 1.0, 6.0), (16.0, 1.0, 9.0)]);
        assert_eq!(fit.per_group, 0.0, "{fit:?}");
        assert!((fit.per_partition - 0.25).abs() < 1e-9, "{fit:?}");
        assert!((fit.at(4.0, 1.0) - 6.0).abs() < 1e-9, "{fit:?}");
        // One run: its value per pass, whatever the counts.
        let fit = PassFit::through(&[(4.0, 1.0, 7.0)]);
        assert!((fit.at(1000.0, 14.0) - 7.0).abs() < 1e-9, "{fit:?}");
    }
}
