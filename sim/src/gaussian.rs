//! Normal draws and the normal distribution function the judge model needs
//! (docs/SIMULATION.md "The judge model"). Randomness comes only from the scenario's seed,
//! through `calibration::seeded_rng::SplitMix64`.

use calibration::seeded_rng::SplitMix64;

/// A seeded source of uniform and standard normal draws.
#[derive(Debug, Clone)]
pub struct Rng {
    inner: SplitMix64,
    spare: Option<f64>,
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self {
            inner: SplitMix64::new(seed),
            spare: None,
        }
    }

    /// A generator for one purpose of one run: distinct `stream`s of one seed never share
    /// their draws, so adding a draw to one part of the model leaves the others unchanged.
    pub fn stream(seed: u64, stream: u64) -> Self {
        let mut mix = SplitMix64::new(seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F));
        Self::new(mix.next_u64())
    }

    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        self.inner.next_f64()
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.uniform() < p
    }

    /// Uniform index below `n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A standard normal draw (Box-Muller; the second value of each pair is kept).
    pub fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        let r = (-2.0 * u1.ln()).sqrt();
        let t = std::f64::consts::TAU * u2;
        self.spare = Some(r * t.sin());
        r * t.cos()
    }
}

/// The standard normal distribution function and its inverse: the judge model's, shared
/// with the node's `simulated` judge (`calibration::judge_model`).
pub use calibration::judge_model::{normal_cdf, normal_quantile};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_function_matches_tables() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.0) - 0.841_344_7).abs() < 1e-6);
        assert!((normal_cdf(-1.959_964) - 0.025).abs() < 1e-6);
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-5);
    }

    #[test]
    fn normal_draws_have_unit_variance() {
        let mut r = Rng::new(3);
        let xs: Vec<f64> = (0..20_000).map(|_| r.normal()).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        assert!(
            mean.abs() < 0.03 && (var - 1.0).abs() < 0.05,
            "{mean} {var}"
        );
    }
}
