//! Proper scoring rules for binary probability forecasts: the Brier score with Murphy's
//! decomposition, the log score with explicit clipping, expected calibration error and the
//! data of a reliability diagram (calibration-digest B.1-B.3).
//!
//! Bin convention (documented once, used everywhere): with `M` equal-width bins, bin `k`
//! holds forecasts in `[k/M, (k+1)/M)`, and the last bin also holds 1.0. Edges are the
//! doubles `k as f64 / M as f64`. scikit-learn's `calibration_curve` uses right-closed
//! bins instead, so a forecast exactly on an edge (0.3, say) lands one bin higher here.

use serde::{Deserialize, Serialize};

use crate::error::{CalibrationError, Result};

/// Check a forecast vector against its outcomes: same length, non-empty, probabilities
/// in [0, 1].
pub fn validate_forecasts(forecasts: &[f64], outcomes: &[bool]) -> Result<()> {
    if forecasts.is_empty() {
        return Err(CalibrationError::Empty { what: "forecasts" });
    }
    if forecasts.len() != outcomes.len() {
        return Err(CalibrationError::LengthMismatch {
            left: "forecasts",
            left_len: forecasts.len(),
            right: "outcomes",
            right_len: outcomes.len(),
        });
    }
    for (index, &value) in forecasts.iter().enumerate() {
        if !(0.0..=1.0).contains(&value) {
            return Err(CalibrationError::ProbabilityOutOfRange {
                what: "forecasts",
                index,
                value,
            });
        }
    }
    Ok(())
}

fn as_f64(o: bool) -> f64 {
    if o { 1.0 } else { 0.0 }
}

/// Brier score `(1/N) Σ (p_i - o_i)²` on the 0-1 scale (Brier 1950 sums over both
/// categories, which doubles it; Good Judgment reports that 0-2 form).
pub fn brier_score(forecasts: &[f64], outcomes: &[bool]) -> Result<f64> {
    validate_forecasts(forecasts, outcomes)?;
    let sum: f64 = forecasts
        .iter()
        .zip(outcomes)
        .map(|(&p, &o)| (p - as_f64(o)).powi(2))
        .sum();
    Ok(sum / forecasts.len() as f64)
}

/// Brier score of the constant base-rate forecast, `ō(1 - ō)`: the bar a forecaster with
/// skill must beat. Equal to the Murphy uncertainty term.
pub fn base_rate_brier(outcomes: &[bool]) -> Result<f64> {
    if outcomes.is_empty() {
        return Err(CalibrationError::Empty { what: "outcomes" });
    }
    let base = outcomes.iter().filter(|&&o| o).count() as f64 / outcomes.len() as f64;
    Ok(base * (1.0 - base))
}

/// Murphy (1973) decomposition `BS = REL - RES + UNC`, exact when the groups are the
/// distinct forecast values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Murphy {
    /// `(1/N) Σ_k n_k (f̄_k - ō_k)²`, lower is better.
    pub reliability: f64,
    /// `(1/N) Σ_k n_k (ō_k - ō)²`, higher is better.
    pub resolution: f64,
    /// `ō (1 - ō)`.
    pub uncertainty: f64,
}

/// Murphy decomposition with fixed bins. Two within-bin terms make it an identity:
/// `BS = REL - RES + UNC + WBV - WBC` (Stephenson, Coelho and Jolliffe 2008; derived and
/// checked in calibration-digest B.1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MurphyBinned {
    pub reliability: f64,
    pub resolution: f64,
    pub uncertainty: f64,
    /// `(1/N) Σ_k Σ_{i∈k} (p_i - f̄_k)²`.
    pub within_bin_variance: f64,
    /// `(2/N) Σ_k Σ_{i∈k} (p_i - f̄_k)(o_i - ō_k)`: twice the within-bin covariance.
    pub within_bin_covariance: f64,
}

/// Murphy decomposition grouped by distinct forecast values (exact equality of doubles).
pub fn murphy_grouped(forecasts: &[f64], outcomes: &[bool]) -> Result<Murphy> {
    validate_forecasts(forecasts, outcomes)?;
    let n = forecasts.len() as f64;
    let mut pairs: Vec<(f64, bool)> = forecasts
        .iter()
        .copied()
        .zip(outcomes.iter().copied())
        .collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let base = outcomes.iter().filter(|&&o| o).count() as f64 / n;
    let (mut rel, mut res) = (0.0, 0.0);
    let mut start = 0;
    while start < pairs.len() {
        let value = pairs[start].0;
        let mut end = start;
        let mut hits = 0usize;
        while end < pairs.len() && pairs[end].0 == value {
            hits += usize::from(pairs[end].1);
            end += 1;
        }
        let count = (end - start) as f64;
        let freq = hits as f64 / count;
        rel += count * (value - freq).powi(2);
        res += count * (freq - base).powi(2);
        start = end;
    }
    Ok(Murphy {
        reliability: rel / n,
        resolution: res / n,
        uncertainty: base * (1.0 - base),
    })
}

/// Index of the bin holding probability `p` among `bins` equal-width bins, under the
/// module's `[k/M, (k+1)/M)` convention with 1.0 in the last bin.
pub fn bin_index(p: f64, bins: usize) -> usize {
    let m = bins as f64;
    let mut k = ((p * m).floor().max(0.0) as usize).min(bins - 1);
    // Correct the float product against the documented edges `k / M`.
    while k > 0 && p < k as f64 / m {
        k -= 1;
    }
    while k + 1 < bins && p >= (k + 1) as f64 / m {
        k += 1;
    }
    k
}

/// One row of a reliability diagram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReliabilityBin {
    pub bin: usize,
    /// Lower and upper edge of the bin (the upper one is open except for the last bin).
    pub lower: f64,
    pub upper: f64,
    pub count: usize,
    /// `None` for an empty bin.
    pub mean_forecast: Option<f64>,
    /// `None` for an empty bin.
    pub observed_frequency: Option<f64>,
}

#[derive(Clone, Copy, Default)]
struct BinSums {
    count: usize,
    sum_p: f64,
    hits: usize,
}

fn bin_sums(forecasts: &[f64], outcomes: &[bool], bins: usize) -> Vec<BinSums> {
    let mut sums = vec![BinSums::default(); bins];
    for (&p, &o) in forecasts.iter().zip(outcomes) {
        let s = &mut sums[bin_index(p, bins)];
        s.count += 1;
        s.sum_p += p;
        s.hits += usize::from(o);
    }
    sums
}

fn check_bins(bins: usize) -> Result<()> {
    if bins == 0 {
        return Err(CalibrationError::InvalidParameter {
            what: "bins",
            reason: "use at least one bin".into(),
        });
    }
    Ok(())
}

/// Murphy decomposition over `bins` equal-width bins, with the within-bin terms.
pub fn murphy_binned(forecasts: &[f64], outcomes: &[bool], bins: usize) -> Result<MurphyBinned> {
    validate_forecasts(forecasts, outcomes)?;
    check_bins(bins)?;
    let n = forecasts.len() as f64;
    let sums = bin_sums(forecasts, outcomes, bins);
    let base = outcomes.iter().filter(|&&o| o).count() as f64 / n;
    let means: Vec<(f64, f64)> = sums
        .iter()
        .map(|s| {
            if s.count == 0 {
                (0.0, 0.0)
            } else {
                (s.sum_p / s.count as f64, s.hits as f64 / s.count as f64)
            }
        })
        .collect();
    let (mut rel, mut res) = (0.0, 0.0);
    for (s, &(fbar, obar)) in sums.iter().zip(&means) {
        let c = s.count as f64;
        rel += c * (fbar - obar).powi(2);
        res += c * (obar - base).powi(2);
    }
    let (mut wbv, mut wbc) = (0.0, 0.0);
    for (&p, &o) in forecasts.iter().zip(outcomes) {
        let (fbar, obar) = means[bin_index(p, bins)];
        wbv += (p - fbar).powi(2);
        wbc += (p - fbar) * (as_f64(o) - obar);
    }
    Ok(MurphyBinned {
        reliability: rel / n,
        resolution: res / n,
        uncertainty: base * (1.0 - base),
        within_bin_variance: wbv / n,
        within_bin_covariance: 2.0 * wbc / n,
    })
}

/// How the log score treats forecasts of exactly 0 or 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LogClip {
    /// Exact: a realised outcome given probability 0 makes the score infinite (`None`).
    Exact,
    /// Clamp every forecast to `[eps, 1 - eps]` first (the digest's admission default is
    /// 0.01). scikit-learn's `log_loss` clips silently at machine epsilon instead.
    Clamp(f64),
}

/// Log score `-(1/N) Σ ln(probability given to the realised outcome)`, in nats.
/// `Ok(None)` means infinite (only possible with [`LogClip::Exact`]).
pub fn log_score(forecasts: &[f64], outcomes: &[bool], clip: LogClip) -> Result<Option<f64>> {
    validate_forecasts(forecasts, outcomes)?;
    let eps = match clip {
        LogClip::Exact => 0.0,
        LogClip::Clamp(eps) => {
            if !(0.0..0.5).contains(&eps) {
                return Err(CalibrationError::InvalidParameter {
                    what: "log score clip",
                    reason: format!("eps = {eps} must be in [0, 0.5)"),
                });
            }
            eps
        }
    };
    let mut sum = 0.0;
    for (&p, &o) in forecasts.iter().zip(outcomes) {
        let p = p.clamp(eps, 1.0 - eps);
        let given = if o { p } else { 1.0 - p };
        if given <= 0.0 {
            return Ok(None);
        }
        sum -= given.ln();
    }
    Ok(Some(sum / forecasts.len() as f64))
}

/// Reliability-diagram rows for `bins` equal-width bins (empty bins included, with `None`
/// means).
pub fn reliability_table(
    forecasts: &[f64],
    outcomes: &[bool],
    bins: usize,
) -> Result<Vec<ReliabilityBin>> {
    validate_forecasts(forecasts, outcomes)?;
    check_bins(bins)?;
    let m = bins as f64;
    Ok(bin_sums(forecasts, outcomes, bins)
        .into_iter()
        .enumerate()
        .map(|(bin, s)| ReliabilityBin {
            bin,
            lower: bin as f64 / m,
            upper: (bin + 1) as f64 / m,
            count: s.count,
            mean_forecast: (s.count > 0).then(|| s.sum_p / s.count as f64),
            observed_frequency: (s.count > 0).then(|| s.hits as f64 / s.count as f64),
        })
        .collect())
}

/// Expected calibration error `Σ_k (n_k/N) |ō_k - f̄_k|` over non-empty bins (Guo et al.
/// 2017 use the top-label form; this is the binary, positive-class form). Not a proper
/// score: a diagnostic next to Brier and log score, never a bar on its own.
pub fn expected_calibration_error(
    forecasts: &[f64],
    outcomes: &[bool],
    bins: usize,
) -> Result<f64> {
    let table = reliability_table(forecasts, outcomes, bins)?;
    let n = forecasts.len() as f64;
    Ok(table
        .iter()
        .filter_map(|b| {
            let (f, o) = (b.mean_forecast?, b.observed_frequency?);
            Some(b.count as f64 / n * (o - f).abs())
        })
        .sum())
}

/// Everything the `binary` request of `panel calibrate --jsonl` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BinaryReport {
    pub brier: f64,
    /// Exact log score in nats; `None` if a realised outcome got probability 0.
    pub log_loss: Option<f64>,
    pub murphy: Murphy,
    pub murphy_binned: MurphyBinned,
    pub ece: f64,
    pub reliability_table: Vec<ReliabilityBin>,
}

/// Number of bins of the standard report.
pub const REPORT_BINS: usize = 10;

/// Brier, exact log score, both Murphy decompositions, ECE and the reliability table with
/// 10 bins.
pub fn binary_report(forecasts: &[f64], outcomes: &[bool]) -> Result<BinaryReport> {
    Ok(BinaryReport {
        brier: brier_score(forecasts, outcomes)?,
        log_loss: log_score(forecasts, outcomes, LogClip::Exact)?,
        murphy: murphy_grouped(forecasts, outcomes)?,
        murphy_binned: murphy_binned(forecasts, outcomes, REPORT_BINS)?,
        ece: expected_calibration_error(forecasts, outcomes, REPORT_BINS)?,
        reliability_table: reliability_table(forecasts, outcomes, REPORT_BINS)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_follow_the_documented_convention() {
        assert_eq!(bin_index(0.0, 10), 0);
        assert_eq!(bin_index(0.1, 10), 1);
        assert_eq!(bin_index(0.3, 10), 3);
        assert_eq!(bin_index(0.7, 10), 7);
        assert_eq!(bin_index(0.29999999999999993, 10), 2);
        assert_eq!(bin_index(0.999, 10), 9);
        assert_eq!(bin_index(1.0, 10), 9);
        for k in 0..10 {
            assert_eq!(bin_index(k as f64 / 10.0, 10), k);
        }
    }

    #[test]
    fn coin_flip_scores() {
        let f = [0.5; 4];
        let o = [true, false, true, false];
        assert_eq!(brier_score(&f, &o).unwrap(), 0.25);
        let ll = log_score(&f, &o, LogClip::Exact).unwrap().unwrap();
        assert!((ll - std::f64::consts::LN_2).abs() < 1e-15);
    }

    #[test]
    fn certain_wrong_forecast_is_infinite_unless_clipped() {
        let f = [0.0, 0.9];
        let o = [true, true];
        assert_eq!(log_score(&f, &o, LogClip::Exact).unwrap(), None);
        let clipped = log_score(&f, &o, LogClip::Clamp(0.01)).unwrap().unwrap();
        let expect = -(0.01f64.ln() + 0.9f64.ln()) / 2.0;
        assert!((clipped - expect).abs() < 1e-15);
        assert!(log_score(&f, &o, LogClip::Clamp(0.7)).is_err());
    }

    #[test]
    fn bad_inputs_are_named() {
        assert_eq!(
            brier_score(&[], &[]),
            Err(CalibrationError::Empty { what: "forecasts" })
        );
        assert!(matches!(
            brier_score(&[0.2, 1.2], &[true, false]),
            Err(CalibrationError::ProbabilityOutOfRange { index: 1, .. })
        ));
        assert!(matches!(
            brier_score(&[f64::NAN], &[true]),
            Err(CalibrationError::ProbabilityOutOfRange { index: 0, .. })
        ));
        assert!(matches!(
            brier_score(&[0.2], &[true, false]),
            Err(CalibrationError::LengthMismatch { .. })
        ));
    }

    #[test]
    fn binned_identity_holds_with_edge_values() {
        let f = [
            0.0, 0.1, 0.15, 0.3, 0.35, 0.5, 0.72, 0.7, 0.99, 1.0, 1.0, 0.05,
        ];
        let o = [
            false, false, true, false, true, true, true, false, true, true, false, false,
        ];
        let b = murphy_binned(&f, &o, 10).unwrap();
        let bs = brier_score(&f, &o).unwrap();
        let rebuilt = b.reliability - b.resolution + b.uncertainty + b.within_bin_variance
            - b.within_bin_covariance;
        assert!((bs - rebuilt).abs() < 1e-15);
        let g = murphy_grouped(&f, &o).unwrap();
        assert!((bs - (g.reliability - g.resolution + g.uncertainty)).abs() < 1e-15);
    }
}
