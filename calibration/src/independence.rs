//! Measured independence: how correlated two arbiters' errors are, and how many
//! independent votes a set of correlated arbiters is worth (docs/CALIBRATION.md; used by
//! the machine's measured-n_eff rule, docs/coordinator/acceptance.md "Measured
//! independence").
//!
//! * The error correlation of two arbiters is the phi coefficient of their error
//!   indicators (1 when a ruling is wrong) over the motions both ruled on.
//! * Kish's effective number (Kish 1965, the design effect of equally weighted, correlated
//!   observations) is `n_eff = n² / Σ_i Σ_j ρ_ij` with `ρ_ii = 1`. With one common
//!   correlation ρ it is `n / (1 + (n - 1) ρ)`: nine judges with ρ = 0.45 are two votes.
//!   Negative correlations are counted as 0, so `1 <= n_eff <= n`.

use serde::{Deserialize, Serialize};

/// Running counts of two arbiters' errors on the motions both ruled on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCoincidence {
    pub motions: u64,
    pub first_wrong: u64,
    pub second_wrong: u64,
    pub both_wrong: u64,
}

impl ErrorCoincidence {
    /// Count one motion both ruled on.
    pub fn add(&mut self, first_wrong: bool, second_wrong: bool) {
        self.motions += 1;
        self.first_wrong += u64::from(first_wrong);
        self.second_wrong += u64::from(second_wrong);
        self.both_wrong += u64::from(first_wrong && second_wrong);
    }

    /// The phi coefficient of the two error indicators; `None` without motions or when
    /// either arbiter never (or always) erred, where it is undefined.
    pub fn correlation(&self) -> Option<f64> {
        let n = self.motions as f64;
        let (a, b, ab) = (
            self.first_wrong as f64,
            self.second_wrong as f64,
            self.both_wrong as f64,
        );
        let var = a * (n - a) * b * (n - b);
        (var > 0.0).then(|| (n * ab - a * b) / var.sqrt())
    }
}

/// Kish's effective number of `n` equally weighted members whose pairwise correlations are
/// `rho(i, j)` (`i != j`); see the module docs.
pub fn kish_n_eff(n: usize, rho: impl Fn(usize, usize) -> f64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let mut total = n as f64;
    for i in 0..n {
        for j in 0..n {
            if i != j {
                total += rho(i, j).clamp(0.0, 1.0);
            }
        }
    }
    (n * n) as f64 / total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kish_matches_the_common_correlation_form() {
        assert!((kish_n_eff(9, |_, _| 0.0) - 9.0).abs() < 1e-12);
        assert!((kish_n_eff(9, |_, _| 1.0) - 1.0).abs() < 1e-12);
        let rho = 0.45;
        let want = 9.0 / (1.0 + 8.0 * rho);
        assert!((kish_n_eff(9, |_, _| rho) - want).abs() < 1e-12);
        // Three families of three, perfectly correlated inside, independent across: 3.
        assert!((kish_n_eff(9, |i, j| f64::from(u8::from(i / 3 == j / 3))) - 3.0).abs() < 1e-12);
    }

    #[test]
    fn phi_of_identical_and_disjoint_errors() {
        let mut same = ErrorCoincidence::default();
        let mut apart = ErrorCoincidence::default();
        for k in 0..100 {
            let w = k % 4 == 0;
            same.add(w, w);
            apart.add(w, k % 4 == 1);
        }
        assert!((same.correlation().unwrap() - 1.0).abs() < 1e-12);
        assert!(apart.correlation().unwrap() < 0.0);
        assert_eq!(ErrorCoincidence::default().correlation(), None);
    }
}
