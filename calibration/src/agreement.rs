//! Agreement statistics: Cohen's kappa (unweighted, linear, quadratic) and Krippendorff's
//! alpha (nominal, ordinal, interval, ratio).
//!
//! Cohen (1960) and Cohen (1968) for the weighted form; the weights are functions of the
//! category *indices* `|i - j|` or `(i - j)²`, as in scikit-learn's `cohen_kappa_score` when
//! it is given the full label list. Krippendorff's alpha follows K. Krippendorff,
//! "Computing Krippendorff's Alpha-Reliability" (2011): coincidence matrix over pairable
//! values, `α = 1 - D_o / D_e`.

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
