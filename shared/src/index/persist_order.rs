//! The row order shared by persist and merge.

use std::cmp::Ordering;

/// Orders nullable doubles with nulls first, then by IEEE total order.
pub fn cmp_opt_f64(a: Option<f64>, b: Option<f64>) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (x, y) => x.is_some().cmp(&y.is_some()),
    }
}
