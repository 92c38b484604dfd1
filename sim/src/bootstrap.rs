//! 95% percentile-bootstrap intervals over motions (Efron and Tibshirani 1993, ch. 13):
//! resample the motions with replacement, recompute every figure on each resample, and
//! report the 2.5% and 97.5% quantiles. All figures of one table share the resamples, so
//! their intervals are consistent with each other (docs/SIMULATION.md "Intervals").

use serde::Serialize;

use crate::gaussian::Rng;

/// A figure with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
}

impl Interval {
    /// `0.873 [0.869, 0.877]`.
    pub fn show(&self) -> String {
        if self.estimate.is_nan() {
            return "n/a".into();
        }
        format!("{:.3} [{:.3}, {:.3}]", self.estimate, self.low, self.high)
    }
}

/// Per-motion columns, and figures that are ratios of two column sums
/// (a mean is a ratio over a column of ones).
#[derive(Debug, Clone, Default)]
pub struct Table {
    columns: Vec<Vec<f64>>,
    ratios: Vec<(usize, usize)>,
}

impl Table {
    /// Add a column; `values` has one entry per motion.
    pub fn column(&mut self, values: Vec<f64>) -> usize {
        self.columns.push(values);
        self.columns.len() - 1
    }

    /// Add the figure `Σ numerator / Σ denominator`; returns its index in [`Table::intervals`].
    pub fn ratio(&mut self, numerator: usize, denominator: usize) -> usize {
        self.ratios.push((numerator, denominator));
        self.ratios.len() - 1
    }

    fn figures(&self, sums: &[f64]) -> Vec<f64> {
        self.ratios
            .iter()
            .map(|&(n, d)| {
                if sums[d] > 0.0 {
                    sums[n] / sums[d]
                } else {
                    f64::NAN
                }
            })
            .collect()
    }

    /// Every figure with its interval from `resamples` resamples drawn from `seed`.
    pub fn intervals(&self, resamples: usize, seed: u64) -> Vec<Interval> {
        let n = self.columns.first().map_or(0, Vec::len);
        let full: Vec<f64> = self.columns.iter().map(|c| c.iter().sum()).collect();
        let estimates = self.figures(&full);
        if n == 0 {
            return estimates
                .into_iter()
                .map(|e| Interval {
                    estimate: e,
                    low: e,
                    high: e,
                })
                .collect();
        }
        let mut rng = Rng::new(seed);
        let mut draws: Vec<Vec<f64>> = vec![Vec::with_capacity(resamples); self.ratios.len()];
        let mut sums = vec![0.0; self.columns.len()];
        for _ in 0..resamples {
            sums.iter_mut().for_each(|s| *s = 0.0);
            for _ in 0..n {
                let k = rng.below(n);
                for (s, c) in sums.iter_mut().zip(&self.columns) {
                    *s += c[k];
                }
            }
            for (d, f) in draws.iter_mut().zip(self.figures(&sums)) {
                if !f.is_nan() {
                    d.push(f);
                }
            }
        }
        estimates
            .into_iter()
            .zip(draws)
            .map(|(estimate, mut d)| {
                d.sort_by(f64::total_cmp);
                let q = |p: f64| {
                    if d.is_empty() {
                        estimate
                    } else {
                        d[((d.len() - 1) as f64 * p).round() as usize]
                    }
                };
                Interval {
                    estimate,
                    low: q(0.025),
                    high: q(0.975),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mean_interval_covers_the_mean_and_narrows_with_data() {
        let mut small = Table::default();
        let ones = small.column(vec![1.0; 100]);
        let x = small.column((0..100).map(|i| f64::from(i % 2)).collect());
        small.ratio(x, ones);
        let i = small.intervals(200, 1)[0];
        assert_eq!(i.estimate, 0.5);
        assert!(
            i.low < 0.5 && i.high > 0.5 && i.high - i.low < 0.25,
            "{i:?}"
        );
        let mut big = Table::default();
        let ones = big.column(vec![1.0; 10_000]);
        let x = big.column((0..10_000).map(|i| f64::from(i % 2)).collect());
        big.ratio(x, ones);
        let j = big.intervals(200, 1)[0];
        assert!(j.high - j.low < (i.high - i.low) / 5.0, "{j:?}");
    }
}
