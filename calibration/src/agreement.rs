//! Agreement statistics: Cohen's kappa (unweighted, linear, quadratic) and Krippendorff's
//! alpha (nominal, ordinal, interval, ratio).
//!
//! Cohen (1960) and Cohen (1968) for the weighted form; the weights are functions of the
//! category *indices* `|i - j|` or `(i - j)²`, as in scikit-learn's `cohen_kappa_score` when
//! it is given the full label list. Krippendorff's alpha follows K. Krippendorff,
//! "Computing Krippendorff's Alpha-Reliability" (2011): coincidence matrix over pairable
//! values, `α = 1 - D_o / D_e`.
//!
//! The unweighted kappa also comes with a 95% interval ([`cohen_kappa_interval`]) from the
//! large-sample standard error of Fleiss, Cohen and Everitt (1969), "Large sample standard
//! errors of kappa and weighted kappa", Psychological Bulletin 72(5):323-327; the bias
//! probes use it for agreement with gold (docs/CALIBRATION.md, "Bias probes").

use serde::{Deserialize, Serialize};

use crate::error::{CalibrationError, Result};

/// Disagreement weights of Cohen's kappa.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KappaWeights {
    /// Every disagreement costs 1 (Cohen 1960).
    Unweighted,
    /// `|i - j|`.
    Linear,
    /// `(i - j)²`.
    Quadratic,
}

/// Cohen's kappa between two raters over `categories` ordered categories (values are
/// category indices). Defined as `1 - Σ w O / Σ w E`; when the raters never disagree the
/// result is 1 (also in the degenerate case where both use a single category, where the
/// ratio form is 0/0).
pub fn cohen_kappa(
    a: &[usize],
    b: &[usize],
    categories: usize,
    weights: KappaWeights,
) -> Result<f64> {
    if a.is_empty() {
        return Err(CalibrationError::Empty { what: "ratings" });
    }
    if a.len() != b.len() {
        return Err(CalibrationError::LengthMismatch {
            left: "first rater",
            left_len: a.len(),
            right: "second rater",
            right_len: b.len(),
        });
    }
    for (what, r) in [("first rater", a), ("second rater", b)] {
        if let Some((index, &value)) = r.iter().enumerate().find(|(_, v)| **v >= categories) {
            return Err(CalibrationError::CategoryOutOfRange {
                what,
                index,
                value,
                categories,
            });
        }
    }
    let k = categories;
    let mut observed = vec![0.0f64; k * k];
    let mut rows = vec![0.0f64; k];
    let mut cols = vec![0.0f64; k];
    for (&i, &j) in a.iter().zip(b) {
        observed[i * k + j] += 1.0;
        rows[i] += 1.0;
        cols[j] += 1.0;
    }
    let n = a.len() as f64;
    let weight = |i: usize, j: usize| -> f64 {
        let d = i.abs_diff(j) as f64;
        match weights {
            KappaWeights::Unweighted => f64::from(u8::from(i != j)),
            KappaWeights::Linear => d,
            KappaWeights::Quadratic => d * d,
        }
    };
    let (mut d_obs, mut d_exp) = (0.0, 0.0);
    for i in 0..k {
        for j in 0..k {
            let w = weight(i, j);
            d_obs += w * observed[i * k + j];
            d_exp += w * rows[i] * cols[j] / n;
        }
    }
    if d_obs == 0.0 {
        return Ok(1.0);
    }
    Ok(1.0 - d_obs / d_exp)
}

/// `Φ⁻¹(0.975)`, the normal quantile of a two-sided 95% interval.
pub const Z_95: f64 = 1.959_963_984_540_054;

/// Unweighted Cohen's kappa with its large-sample standard error and 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KappaEstimate {
    /// Paired ratings the estimate is over.
    pub items: usize,
    pub kappa: f64,
    /// Fleiss, Cohen and Everitt's (1969) standard error; `None` when both raters used one
    /// and the same category throughout (chance agreement is then 1 and the error 0/0).
    pub standard_error: Option<f64>,
    /// `kappa - Z_95 * standard_error` (a Wald bound, not clamped to [-1, 1]).
    pub lower: Option<f64>,
    /// `kappa + Z_95 * standard_error`.
    pub upper: Option<f64>,
}

/// Unweighted Cohen's kappa between `a` and `b` over `categories` categories, with the
/// large-sample standard error of Fleiss, Cohen and Everitt (1969) and the Wald interval
/// `κ ± Z_95 · SE`. With `p_ij` the share of items rated `i` by `a` and `j` by `b`, `r_i`,
/// `c_j` the row and column shares, `p_e = Σ r_i c_i`:
///
/// `Var κ = [Σ_i p_ii (1 − (r_i + c_i)(1 − κ))² + (1 − κ)² Σ_{i≠j} p_ij (c_i + r_j)²
///          − (κ − p_e (1 − κ))²] / (n (1 − p_e)²)`.
///
/// This is the error without assuming κ = 0 (the null-hypothesis form differs), so it
/// suits an interval around an observed κ. It is an asymptotic formula: below about 30
/// items the interval is only indicative.
pub fn cohen_kappa_interval(a: &[usize], b: &[usize], categories: usize) -> Result<KappaEstimate> {
    let kappa = cohen_kappa(a, b, categories, KappaWeights::Unweighted)?;
    let k = categories;
    let n = a.len() as f64;
    let mut p = vec![0.0f64; k * k];
    for (&i, &j) in a.iter().zip(b) {
        p[i * k + j] += 1.0 / n;
    }
    let rows: Vec<f64> = (0..k).map(|i| (0..k).map(|j| p[i * k + j]).sum()).collect();
    let cols: Vec<f64> = (0..k).map(|j| (0..k).map(|i| p[i * k + j]).sum()).collect();
    let chance: f64 = (0..k).map(|i| rows[i] * cols[i]).sum();
    let room = 1.0 - chance;
    let standard_error = (room > 0.0).then(|| {
        let off = 1.0 - kappa;
        let mut diagonal = 0.0;
        let mut off_diagonal = 0.0;
        for i in 0..k {
            for j in 0..k {
                let pij = p[i * k + j];
                if i == j {
                    diagonal += pij * (1.0 - (rows[i] + cols[i]) * off).powi(2);
                } else {
                    off_diagonal += pij * (cols[i] + rows[j]).powi(2);
                }
            }
        }
        let numerator = diagonal + off * off * off_diagonal - (kappa - chance * off).powi(2);
        // Rounding can push an exact 0 (perfect agreement) a hair below it.
        (numerator.max(0.0) / (n * room * room)).sqrt()
    });
    Ok(KappaEstimate {
        items: a.len(),
        kappa,
        standard_error,
        lower: standard_error.map(|se| kappa - Z_95 * se),
        upper: standard_error.map(|se| kappa + Z_95 * se),
    })
}

/// Level of measurement of Krippendorff's alpha, which fixes the difference function δ².
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlphaMetric {
    Nominal,
    Ordinal,
    Interval,
    Ratio,
}

/// Krippendorff's alpha for `data[coder][unit]` (`None` = missing). Units with fewer than
/// two values are not pairable and are skipped.
pub fn krippendorff_alpha(data: &[Vec<Option<f64>>], metric: AlphaMetric) -> Result<f64> {
    if data.is_empty() {
        return Err(CalibrationError::Empty { what: "coders" });
    }
    let units = data[0].len();
    if let Some(row) = data.iter().find(|r| r.len() != units) {
        return Err(CalibrationError::LengthMismatch {
            left: "first coder's units",
            left_len: units,
            right: "another coder's units",
            right_len: row.len(),
        });
    }
    let mut values: Vec<f64> = Vec::new();
    for row in data {
        for v in row.iter().flatten() {
            if !v.is_finite() {
                return Err(CalibrationError::NotFinite {
                    what: "rating".into(),
                    value: *v,
                });
            }
            values.push(*v);
        }
    }
    values.sort_by(f64::total_cmp);
    values.dedup();
    let k = values.len();
    let index = |v: f64| values.partition_point(|&x| x < v);
    let mut coincidence = vec![0.0f64; k * k];
    let mut unit_values: Vec<usize> = Vec::new();
    for u in 0..units {
        unit_values.clear();
        unit_values.extend(data.iter().filter_map(|row| row[u]).map(index));
        let m = unit_values.len();
        if m < 2 {
            continue;
        }
        let share = 1.0 / (m as f64 - 1.0);
        for (x, &c) in unit_values.iter().enumerate() {
            for (y, &d) in unit_values.iter().enumerate() {
                if x != y {
                    coincidence[c * k + d] += share;
                }
            }
        }
    }
    let marginals: Vec<f64> = (0..k)
        .map(|c| coincidence[c * k..(c + 1) * k].iter().sum())
        .collect();
    let n: f64 = marginals.iter().sum();
    if n < 2.0 {
        return Err(CalibrationError::Degenerate {
            what: "Krippendorff's alpha",
            reason: "no unit has two or more values: give at least two ratings of one unit".into(),
        });
    }
    let delta2 = |c: usize, d: usize| -> f64 {
        if c == d {
            return 0.0;
        }
        let (vc, vd) = (values[c], values[d]);
        match metric {
            AlphaMetric::Nominal => 1.0,
            AlphaMetric::Interval => (vc - vd).powi(2),
            AlphaMetric::Ratio => ((vc - vd) / (vc + vd)).powi(2),
            AlphaMetric::Ordinal => {
                let (lo, hi) = (c.min(d), c.max(d));
                let between: f64 = marginals[lo..=hi].iter().sum();
                (between - (marginals[c] + marginals[d]) / 2.0).powi(2)
            }
        }
    };
    let (mut d_obs, mut d_exp) = (0.0, 0.0);
    for c in 0..k {
        for d in 0..k {
            let w = delta2(c, d);
            d_obs += coincidence[c * k + d] * w;
            d_exp += marginals[c] * marginals[d] * w;
        }
    }
    d_obs /= n;
    d_exp /= n * (n - 1.0);
    if d_exp == 0.0 {
        return Err(CalibrationError::Degenerate {
            what: "Krippendorff's alpha",
            reason: "every pairable value is the same, so agreement beyond chance is undefined"
                .into(),
        });
    }
    Ok(1.0 - d_obs / d_exp)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Krippendorff (2011), section C: 4 coders, 12 units, nominal alpha = 0.743.
    #[test]
    fn krippendorff_published_example() {
        let n = None;
        let s = |v: f64| Some(v);
        let data = vec![
            vec![
                s(1.),
                s(2.),
                s(3.),
                s(3.),
                s(2.),
                s(1.),
                s(4.),
                s(1.),
                s(2.),
                n,
                n,
                n,
            ],
            vec![
                s(1.),
                s(2.),
                s(3.),
                s(3.),
                s(2.),
                s(2.),
                s(4.),
                s(1.),
                s(2.),
                s(5.),
                n,
                s(3.),
            ],
            vec![
                n,
                s(3.),
                s(3.),
                s(3.),
                s(2.),
                s(3.),
                s(4.),
                s(2.),
                s(2.),
                s(5.),
                s(1.),
                n,
            ],
            vec![
                s(1.),
                s(2.),
                s(3.),
                s(3.),
                s(2.),
                s(4.),
                s(4.),
                s(1.),
                s(2.),
                s(5.),
                s(1.),
                n,
            ],
        ];
        let nominal = krippendorff_alpha(&data, AlphaMetric::Nominal).unwrap();
        assert!((nominal - 0.743).abs() < 5e-4, "{nominal}");
        let interval = krippendorff_alpha(&data, AlphaMetric::Interval).unwrap();
        assert!((interval - 0.849).abs() < 5e-4, "{interval}");
        let ordinal = krippendorff_alpha(&data, AlphaMetric::Ordinal).unwrap();
        assert!((ordinal - 0.815).abs() < 5e-4, "{ordinal}");
    }

    /// Hand computation, 20 items, rows = first rater, columns = second, categories
    /// (0, 1): counts [[6, 4], [2, 8]]. p = [[0.3, 0.2], [0.1, 0.4]], rows (0.5, 0.5),
    /// columns (0.4, 0.6); p_o = 0.7, p_e = 0.5, κ = 0.4, 1 − κ = 0.6.
    /// Diagonal: 0.3 (1 − 0.9·0.6)² + 0.4 (1 − 1.1·0.6)² = 0.06348 + 0.04624 = 0.10972.
    /// Off-diagonal: 0.36 [0.2 (0.4 + 0.5)² + 0.1 (0.6 + 0.5)²] = 0.36 · 0.283 = 0.10188.
    /// Last term: (0.4 − 0.5·0.6)² = 0.01. Var = 0.2016 / (20 · 0.25) = 0.04032, so
    /// SE = 0.2007984 and the interval is 0.4 ± 0.3935578 = [0.0064424, 0.7935576].
    /// (Cohen's simpler p_o(1 − p_o)/(n(1 − p_e)²) would give 0.042: the test tells
    /// the two apart.)
    #[test]
    fn kappa_interval_hand_computed() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        for (i, j, count) in [(0, 0, 6), (0, 1, 4), (1, 0, 2), (1, 1, 8)] {
            for _ in 0..count {
                a.push(i);
                b.push(j);
            }
        }
        let e = cohen_kappa_interval(&a, &b, 2).unwrap();
        assert_eq!(e.items, 20);
        assert!((e.kappa - 0.4).abs() < 1e-12, "{e:?}");
        let se = e.standard_error.unwrap();
        assert!((se * se - 0.04032).abs() < 1e-12, "{se}");
        assert!((e.lower.unwrap() - 0.006_442_355_365_332_6).abs() < 1e-9);
        assert!((e.upper.unwrap() - 0.793_557_644_634_667_5).abs() < 1e-9);
    }

    #[test]
    fn kappa_interval_edges() {
        // Perfect agreement with both categories used: κ = 1 and no spread.
        let e = cohen_kappa_interval(&[0, 1, 1, 0], &[0, 1, 1, 0], 2).unwrap();
        assert_eq!(e.kappa, 1.0);
        assert!(e.standard_error.unwrap().abs() < 1e-12);
        // One category throughout: κ is 1 by convention and its error is undefined.
        let e = cohen_kappa_interval(&[1, 1, 1], &[1, 1, 1], 2).unwrap();
        assert_eq!((e.kappa, e.standard_error, e.lower), (1.0, None, None));
        // A third category that only one rater uses never counts as agreement:
        // p_o = 0.5, p_e = 0.25 · 0.5 + 0.25 · 0.5 = 0.25, κ = 0.25 / 0.75.
        let e = cohen_kappa_interval(&[0, 1, 2, 2], &[0, 1, 0, 1], 3).unwrap();
        assert!((e.kappa - 1.0 / 3.0).abs() < 1e-12, "{e:?}");
        assert!(cohen_kappa_interval(&[], &[], 2).is_err());
    }

    #[test]
    fn kappa_edge_cases() {
        assert_eq!(
            cohen_kappa(&[1, 1], &[1, 1], 3, KappaWeights::Linear).unwrap(),
            1.0
        );
        let k = cohen_kappa(&[0, 1, 0, 1], &[1, 0, 1, 0], 2, KappaWeights::Unweighted).unwrap();
        assert_eq!(k, -1.0);
        assert!(matches!(
            cohen_kappa(&[0, 3], &[0, 1], 3, KappaWeights::Unweighted),
            Err(CalibrationError::CategoryOutOfRange {
                index: 1,
                value: 3,
                ..
            })
        ));
    }
}
