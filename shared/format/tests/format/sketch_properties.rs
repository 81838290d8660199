//! Theta and quantiles sketches merged in any order and over any split of their rows stay
//! within their documented bounds: a theta count is exact below its size and within three
//! relative standard errors (1/sqrt(size)) past it; a quantile's rank is within the 1.7% a
//! k=128 sketch promises (DataSketches' normalized rank error, 99% confidence).

use proptest::prelude::*;
use sluice_format::sketches::{Quantiles, SetOp, Theta, DEFAULT_QUANTILES_K};
use sluice_format::value::Value;

/// `values` split at `cuts` into parts, each sketched by `make`, merged in `order`.
fn merged<S: Clone>(
    values: &[i64],
    cuts: &[usize],
    order: &[usize],
    make: impl Fn(&[i64]) -> S,
    merge: impl Fn(&mut S, &S),
) -> S {
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (values.len() + 1)).collect();
    bounds.extend([0, values.len()]);
    bounds.sort_unstable();
    let parts: Vec<S> = bounds.windows(2).map(|w| make(&values[w[0]..w[1]])).collect();
    let mut order: Vec<usize> = order.iter().map(|o| o % parts.len()).collect();
    order.extend(0..parts.len());
    let mut seen = vec![false; parts.len()];
    let mut out: Option<S> = None;
    for i in order {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        match out.as_mut() {
            None => out = Some(parts[i].clone()),
            Some(o) => merge(o, &parts[i]),
        }
    }
    out.expect("a part")
}

/// 0..n in a scrambled order (a multiplier coprime to n).
fn scrambled(n: usize) -> Vec<i64> {
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let step = [7_919, 7_907, 7_901].into_iter().find(|p| gcd(*p, n) == 1).unwrap_or(1);
    (0..n).map(|i| (i * step % n) as i64).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn theta_counts_hold_their_bounds_over_any_split_and_order(
        n in 1usize..40_000,
        lg_k in 9u8..=14,
        cuts in prop::collection::vec(any::<usize>(), 0..6),
        order in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let values = scrambled(n);
        let sketch = |part: &[i64]| {
            let mut t = Theta::new(lg_k);
            part.iter().for_each(|v| t.update(&Value::Long(*v)));
            t
        };
        let t = merged(&values, &cuts, &order, sketch, |a, b| a.merge(b));
        let estimate = t.estimate();
        if n < (1 << lg_k) {
            prop_assert_eq!(estimate, n as f64);
        } else {
            let rse = 1.0 / f64::from(1u32 << lg_k).sqrt();
            prop_assert!((estimate / n as f64 - 1.0).abs() <= 3.0 * rse, "{} of {}", estimate, n);
        }
        // An intersection with itself is itself; a difference with itself is empty.
        prop_assert_eq!(SetOp::Intersect.apply(lg_k, [t.clone(), t.clone()]).estimate(), estimate);
        prop_assert_eq!(SetOp::Not.apply(lg_k, [t.clone(), t.clone()]).estimate(), 0.0);
    }

    #[test]
    fn quantiles_hold_their_rank_error_over_any_split_and_order(
        n in 1usize..30_000,
        cuts in prop::collection::vec(any::<usize>(), 0..6),
        order in prop::collection::vec(any::<usize>(), 0..6),
        fraction in 0.0f64..=1.0,
    ) {
        let values = scrambled(n);
        let sketch = |part: &[i64]| {
            let mut q = Quantiles::new(DEFAULT_QUANTILES_K);
            part.iter().for_each(|v| q.update(&Value::Long(*v)));
            q
        };
        let q = merged(&values, &cuts, &order, sketch, |a, b| a.merge(b));
        prop_assert_eq!(q.n(), n as u64);
        let got = q.quantile(fraction).expect("a quantile");
        // Values are 0..n once each: the rank of `got` is (got + 1) / n.
        let rank = (got + 1.0) / n as f64;
        prop_assert!(rank + 0.017 >= fraction && rank - 1.0 / n as f64 - 0.017 <= fraction, "p{} = {} of {}", fraction, got, n);
    }
}
