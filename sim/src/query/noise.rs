//! The simulation's random draws (lognormal latencies, stragglers, failures), seeded so that a
//! run repeats; switched off, every draw is its median and nothing straggles or fails, which is
//! what the model's unit tests reason about.

/// A source of draws.
pub struct Noise {
    rng: fastrand::Rng,
    on: bool,
}

impl Noise {
    /// Draws from a generator seeded with `seed`.
    pub fn seeded(seed: u64) -> Self {
        Noise { rng: fastrand::Rng::with_seed(seed), on: true }
    }

    /// No variability: medians, no stragglers, no failures.
    pub fn off() -> Self {
        Noise { rng: fastrand::Rng::with_seed(0), on: false }
    }

    /// A lognormal draw of median `median` and shape `sigma`.
    pub fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        if !self.on || sigma <= 0.0 {
            return median;
        }
        // Box-Muller; 1 - f64() lies in (0, 1], so the logarithm is finite.
        let (u1, u2) = (1.0 - self.rng.f64(), self.rng.f64());
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        median * (sigma * z).exp()
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.on && self.rng.f64() < p
    }

    /// A uniform draw in [0, 1) (one half when off).
    pub fn uniform(&mut self) -> f64 {
        if self.on {
            self.rng.f64()
        } else {
            0.5
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Noise;

    #[test]
    fn lognormal_draws_centre_on_their_median() {
        let mut n = Noise::seeded(7);
        let mut xs: Vec<f64> = (0..20_001).map(|_| n.lognormal(0.03, 0.5)).collect();
        xs.sort_by(f64::total_cmp);
        assert!((xs[10_000] / 0.03 - 1.0).abs() < 0.05, "{}", xs[10_000]);
        assert!(xs[19_800] > 0.03 * 2.5, "a tail: p99 {}", xs[19_800]);
        let mut off = Noise::off();
        assert_eq!(off.lognormal(0.03, 0.5), 0.03);
        assert!(!off.chance(1.0));
    }
}
