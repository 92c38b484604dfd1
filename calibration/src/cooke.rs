//! Cooke's classical model of structured expert judgement (R. M. Cooke, *Experts in
//! Uncertainty*, 1991; formulas as restated in calibration-digest A.1-A.4 from the TU Delft
//! lecture notes and anduryl 1.2.2, re-derived and implemented here independently).
//!
//! * Calibration: the chi-square p-value of `2 N I(s, p)` with `Q` degrees of freedom,
//!   where `s` are the empirical inter-quantile frequencies of the realisations, `p` the
//!   theoretical ones (0.05/0.45/0.45/0.05 for 5/50/95) and `N` the smallest number of seeds
//!   any expert answered. A realisation equal to a quantile counts in the lower bin.
//! * Information: relative information of the expert's minimum-information density (uniform
//!   between quantiles) against a uniform background on the intrinsic range `[L*, U*]`,
//!   the range of all answers and the realisation widened by the overshoot `k` (10%).
//!   On a `log` scale every value is replaced by its logarithm first.
//! * Weights `C · I · 1{C >= α}`; the decision maker pools the experts' piecewise-linear
//!   CDFs with the normalised weights; `α` can be optimised.
//!
//! Ranges can be *cohort* ranges (anduryl's rule: from every expert's answers, so adding an
//! expert moves everyone's information) or *frozen* ranges declared before scoring (the
//! exam's rule: an arbiter's information then depends on its own answers only; answers
//! outside the frozen range widen the support for that arbiter alone).

use serde::{Deserialize, Serialize};

use crate::chi_square::chi_square_sf;
use crate::error::{CalibrationError, ReferenceError, Result};

/// The standard 5/50/95 quantile levels.
pub const LEVELS_5_50_95: [f64; 3] = [0.05, 0.5, 0.95];

/// Cooke's default overshoot of the intrinsic range.
pub const DEFAULT_OVERSHOOT: f64 = 0.1;

/// Background measure of an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// Uniform background on the values themselves.
    Uni,
    /// Uniform background on the logarithms of the values (all values must be > 0).
    Log,
}

impl Scale {
    fn to_background(self, value: f64, what: impl FnOnce() -> String) -> Result<f64> {
        if !value.is_finite() {
            return Err(CalibrationError::NotFinite {
                what: what(),
                value,
            });
        }
        match self {
            Scale::Uni => Ok(value),
            Scale::Log if value > 0.0 => Ok(value.ln()),
            Scale::Log => Err(CalibrationError::NotPositiveOnLogScale {
                what: what(),
                value,
            }),
        }
    }

    fn to_natural(self, value: f64) -> f64 {
        match self {
            Scale::Uni => value,
            Scale::Log => value.exp(),
        }
    }
}

/// One question: a seed when the realisation is known, a target otherwise.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub id: String,
    pub realization: Option<f64>,
    pub scale: Scale,
    /// A range frozen before scoring, in natural units (before overshoot). `None` means
    /// the cohort range.
    pub frozen_range: Option<(f64, f64)>,
}

/// One expert's quantiles, one entry per item (`None` = not answered), natural units.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    pub id: String,
    pub values: Vec<Option<Vec<f64>>>,
}

/// Check quantile levels: strictly increasing, inside (0, 1).
pub fn validate_levels(levels: &[f64]) -> Result<()> {
    let ok = !levels.is_empty()
        && levels.iter().all(|&a| a > 0.0 && a < 1.0)
        && levels.windows(2).all(|w| w[0] < w[1]);
    if ok {
        Ok(())
    } else {
        Err(CalibrationError::BadQuantileLevels {
            levels: levels.to_vec(),
        })
    }
}

/// Theoretical inter-quantile probabilities `(a_1, a_2 - a_1, ..., 1 - a_Q)`.
pub fn bin_probabilities(levels: &[f64]) -> Vec<f64> {
    let mut p = Vec::with_capacity(levels.len() + 1);
    let mut prev = 0.0;
    for &a in levels {
        p.push(a - prev);
        prev = a;
    }
    p.push(1.0 - prev);
    p
}

/// Inter-quantile bin of a realisation: the number of quantiles strictly below it, so a
/// realisation equal to a quantile counts in the lower bin (as in anduryl).
pub fn bin_of(realization: f64, quantiles: &[f64]) -> usize {
    quantiles.iter().filter(|&&q| q < realization).count()
}

/// Calibration score from inter-quantile hit counts: `1 - F_{χ²_Q}(2 N I(s, p) · power)`,
/// with `s = counts / Σ counts` and `N` the effective number of seeds (anduryl: the
/// smallest number any expert answered). `power` is anduryl's calibration power (1 =
/// standard).
pub fn calibration_score(counts: &[usize], levels: &[f64], n: f64, power: f64) -> Result<f64> {
    validate_levels(levels)?;
    if counts.len() != levels.len() + 1 {
        return Err(CalibrationError::LengthMismatch {
            left: "counts",
            left_len: counts.len(),
            right: "quantile bins (levels + 1)",
            right_len: levels.len() + 1,
        });
    }
    let total: usize = counts.iter().sum();
    if total == 0 {
        return Err(CalibrationError::Empty { what: "counts" });
    }
    if !(n.is_finite() && n > 0.0) {
        return Err(CalibrationError::InvalidParameter {
            what: "n",
            reason: format!("the number of seeds must be a positive number, got {n}"),
        });
    }
    if !(power.is_finite() && power > 0.0) {
        return Err(CalibrationError::InvalidParameter {
            what: "calibration power",
            reason: format!("must be a positive number, got {power}"),
        });
    }
    let p = bin_probabilities(levels);
    let relative_information: f64 = counts
        .iter()
        .zip(&p)
        .filter(|(c, _)| **c > 0)
        .map(|(&c, &pk)| {
            let s = c as f64 / total as f64;
            s * (s / pk).ln()
        })
        .sum();
    // Rounding can make I(s, p) a hair negative when s == p; the statistic is >= 0.
    let statistic = (2.0 * n * relative_information * power).max(0.0);
    Ok(chi_square_sf(statistic, levels.len() as f64))
}

/// Relative information of the minimum-information density through `quantiles` (background
/// units) with respect to the uniform density on `[lower, upper]`:
/// `ln(U* - L*) + Σ_k p_k ln(p_k / (b_{k+1} - b_k))`, `b = (L*, q_1, ..., q_Q, U*)`.
pub fn information(quantiles: &[f64], p: &[f64], lower: f64, upper: f64) -> f64 {
    let mut total = (upper - lower).ln();
    let mut prev = lower;
    for (k, &pk) in p.iter().enumerate() {
        let next = quantiles.get(k).copied().unwrap_or(upper);
        total += pk * (pk / (next - prev)).ln();
        prev = next;
    }
    total
}

/// Scores of one expert (or of the decision maker).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExpertScore {
    pub id: String,
    pub calibration: f64,
    /// Mean information over answered seed items (anduryl `info_real`); used for weights.
    pub information_seed: f64,
    /// Mean information over all answered items (anduryl `info_total`).
    pub information_all: f64,
    pub seeds_answered: usize,
    /// Realisations per inter-quantile bin.
    pub counts: Vec<usize>,
}

/// A validated model: items, experts' quantiles in background units, settings.
#[derive(Debug, Clone)]
pub struct CookeModel {
    levels: Vec<f64>,
    p: Vec<f64>,
    items: Vec<Item>,
    /// Realisations in background units.
    realizations: Vec<Option<f64>>,
    /// Frozen ranges in background units.
    frozen: Vec<Option<(f64, f64)>>,
    ids: Vec<String>,
    /// `values[e][j]`: expert e's quantiles for item j, background units.
    values: Vec<Vec<Option<Vec<f64>>>>,
    overshoot: f64,
    power: f64,
}

/// How the significance level `α` is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Alpha {
    /// Use this cut-off: experts with `C < α` get weight 0.
    Fixed(f64),
    /// Try every distinct expert calibration score and keep the one whose decision maker
    /// has the largest virtual weight `C_DM · I_DM · 1{C_DM >= α}`; ties go to the smaller α.
    Optimised,
}

/// Result of the classical model with global weights.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassicalResult {
    pub experts: Vec<ExpertScore>,
    /// Unnormalised weights `C · I_seed · 1{C >= α}`, one per expert.
    pub combined_scores: Vec<f64>,
    /// Normalised weights (sum 1): the decision maker's pooling weights.
    pub weights: Vec<f64>,
    pub dm: ExpertScore,
    /// The decision maker's quantiles per item in natural units (`None` if no weighted
    /// expert answered the item).
    pub dm_quantiles: Vec<Option<Vec<f64>>>,
    pub alpha: f64,
}

impl CookeModel {
    /// Validate and convert to background units. `overshoot` is `k` (0.1 by default),
    /// `power` the calibration power (1 by default).
    pub fn new(
        levels: &[f64],
        items: Vec<Item>,
        experts: Vec<Assessment>,
        overshoot: f64,
        power: f64,
    ) -> Result<Self> {
        validate_levels(levels)?;
        if items.is_empty() {
            return Err(CalibrationError::Empty { what: "items" });
        }
        if experts.is_empty() {
            return Err(CalibrationError::Empty { what: "experts" });
        }
        if !(overshoot.is_finite() && overshoot >= 0.0) {
            return Err(CalibrationError::InvalidParameter {
                what: "overshoot",
                reason: format!("must be a finite number >= 0, got {overshoot}"),
            });
        }
        if !(power.is_finite() && power > 0.0) {
            return Err(CalibrationError::InvalidParameter {
                what: "calibration power",
                reason: format!("must be a positive number, got {power}"),
            });
        }
        let mut realizations = Vec::with_capacity(items.len());
        let mut frozen = Vec::with_capacity(items.len());
        for (j, item) in items.iter().enumerate() {
            if items[..j].iter().any(|other| other.id == item.id) {
                return Err(ReferenceError::DuplicateItem(item.id.clone()).into());
            }
            realizations.push(match item.realization {
                Some(x) => Some(
                    item.scale
                        .to_background(x, || format!("realization of item `{}`", item.id))?,
                ),
                None => None,
            });
            frozen.push(match item.frozen_range {
                Some((lo, hi)) => {
                    let what = || format!("frozen range of item `{}`", item.id);
                    let (lo, hi) = (
                        item.scale.to_background(lo, what)?,
                        item.scale.to_background(hi, what)?,
                    );
                    if lo >= hi {
                        return Err(CalibrationError::InvalidParameter {
                            what: "frozen range",
                            reason: format!(
                                "item `{}`: the lower bound must be below the upper bound",
                                item.id
                            ),
                        });
                    }
                    Some((lo, hi))
                }
                None => None,
            });
        }
        let mut ids = Vec::with_capacity(experts.len());
        let mut values = Vec::with_capacity(experts.len());
        for expert in experts {
            if ids.contains(&expert.id) {
                return Err(ReferenceError::DuplicateExpert(expert.id.clone()).into());
            }
            if expert.values.len() != items.len() {
                return Err(ReferenceError::AnswerSlots {
                    expert: expert.id.clone(),
                    slots: expert.values.len(),
                    items: items.len(),
                }
                .into());
            }
            let mut row = Vec::with_capacity(items.len());
            for (item, answer) in items.iter().zip(expert.values) {
                row.push(match answer {
                    None => None,
                    Some(q) => Some(to_background_quantiles(
                        &q,
                        levels.len(),
                        item.scale,
                        &format!("expert `{}` on item `{}`", expert.id, item.id),
                    )?),
                });
            }
            ids.push(expert.id);
            values.push(row);
        }
        Ok(Self {
            levels: levels.to_vec(),
            p: bin_probabilities(levels),
            items,
            realizations,
            frozen,
            ids,
            values,
            overshoot,
            power,
        })
    }

    pub fn expert_ids(&self) -> &[String] {
        &self.ids
    }

    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// `N`: the smallest number of seeds answered by any expert (anduryl's rule, so that
    /// experts with missing answers are compared on the same footing).
    pub fn effective_seed_count(&self) -> usize {
        self.values
            .iter()
            .map(|row| self.answered_seeds(row))
            .min()
            .unwrap_or(0)
    }

    fn answered_seeds(&self, row: &[Option<Vec<f64>>]) -> usize {
        row.iter()
            .zip(&self.realizations)
            .filter(|(q, r)| q.is_some() && r.is_some())
            .count()
    }

    /// The cohort extent of item `j` before overshoot: all experts' answers, the
    /// realisation and the frozen range if any.
    fn cohort_extent(&self, j: usize) -> Option<(f64, f64)> {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        let mut widen = |v: f64| {
            lo = lo.min(v);
            hi = hi.max(v);
        };
        if let Some((a, b)) = self.frozen[j] {
            widen(a);
            widen(b);
        }
        if let Some(x) = self.realizations[j] {
            widen(x);
        }
        for row in &self.values {
            if let Some(q) = &row[j] {
                q.iter().for_each(|&v| widen(v));
            }
        }
        (lo < hi).then_some((lo, hi))
    }

    /// Intrinsic range `[L*, U*]` of item `j` for the given quantiles. With a frozen range
    /// it depends only on that range, these quantiles and the realisation; otherwise it is
    /// the cohort range.
    fn support(&self, j: usize, quantiles: &[f64]) -> (f64, f64) {
        let (lo, hi) = match self.frozen[j] {
            Some((a, b)) => {
                let mut lo = a.min(quantiles[0]);
                let mut hi = b.max(quantiles[quantiles.len() - 1]);
                if let Some(x) = self.realizations[j] {
                    lo = lo.min(x);
                    hi = hi.max(x);
                }
                (lo, hi)
            }
            None => self
                .cohort_extent(j)
                .unwrap_or((quantiles[0], quantiles[quantiles.len() - 1])),
        };
        let width = hi - lo;
        (lo - self.overshoot * width, hi + self.overshoot * width)
    }

    fn score_row(&self, id: &str, row: &[Option<Vec<f64>>], n_eff: usize) -> Result<ExpertScore> {
        let mut counts = vec![0usize; self.levels.len() + 1];
        let (mut info_seed, mut n_seed, mut info_all, mut n_all) = (0.0, 0usize, 0.0, 0usize);
        for (j, answer) in row.iter().enumerate() {
            let Some(q) = answer else { continue };
            let (lower, upper) = self.support(j, q);
            let info = information(q, &self.p, lower, upper);
            info_all += info;
            n_all += 1;
            if let Some(x) = self.realizations[j] {
                counts[bin_of(x, q)] += 1;
                info_seed += info;
                n_seed += 1;
            }
        }
        if n_seed == 0 {
            return Err(CalibrationError::Degenerate {
                what: "calibration",
                reason: format!("`{id}` answered no seed item (an item with a realization)"),
            });
        }
        let calibration = calibration_score(&counts, &self.levels, n_eff as f64, self.power)?;
        Ok(ExpertScore {
            id: id.to_string(),
            calibration,
            information_seed: info_seed / n_seed as f64,
            information_all: info_all / n_all as f64,
            seeds_answered: n_seed,
            counts,
        })
    }

    /// Calibration and information of every expert.
    pub fn score_experts(&self) -> Result<Vec<ExpertScore>> {
        let n_eff = self.effective_seed_count();
        if n_eff == 0 {
            let id = self
                .ids
                .iter()
                .zip(&self.values)
                .find(|(_, row)| self.answered_seeds(row) == 0)
                .map_or("?", |(id, _)| id.as_str());
            return Err(CalibrationError::Degenerate {
                what: "calibration",
                reason: format!(
                    "expert `{id}` answered no seed item (an item with a realization); every \
                     expert needs at least one"
                ),
            });
        }
        self.ids
            .iter()
            .zip(&self.values)
            .map(|(id, row)| self.score_row(id, row, n_eff))
            .collect()
    }

    /// Quantiles (background units) of the linear pool of the experts' piecewise-linear
    /// CDFs with `weights` (renormalised per item over the experts who answered it).
    fn pool(&self, weights: &[f64]) -> Vec<Option<Vec<f64>>> {
        (0..self.items.len())
            .map(|j| {
                let answered: Vec<(&Vec<f64>, f64)> = self
                    .values
                    .iter()
                    .zip(weights)
                    .filter_map(|(row, &w)| row[j].as_ref().map(|q| (q, w)))
                    .collect();
                let total: f64 = answered.iter().map(|(_, w)| w).sum();
                if total.is_nan() || total <= 0.0 {
                    return None;
                }
                let (lower, upper) = self.cohort_extent(j).map(|(lo, hi)| {
                    let w = hi - lo;
                    (lo - self.overshoot * w, hi + self.overshoot * w)
                })?;
                // Breakpoints: the range ends and every answered quantile of the item.
                let mut points: Vec<f64> = vec![lower, upper];
                for (q, _) in &answered {
                    points.extend_from_slice(q);
                }
                points.sort_by(f64::total_cmp);
                points.dedup();
                let mut cdf = vec![0.0; points.len()];
                for (q, w) in &answered {
                    let w = w / total;
                    if w == 0.0 {
                        continue;
                    }
                    for (c, &x) in cdf.iter_mut().zip(&points) {
                        *c += w * expert_cdf(x, q, &self.levels, lower, upper);
                    }
                }
                Some(
                    self.levels
                        .iter()
                        .map(|&a| inverse_interpolate(a, &cdf, &points))
                        .collect(),
                )
            })
            .collect()
    }

    /// The decision maker for given (unnormalised, non-negative) weights, scored like an
    /// expert with the same `N` and ranges.
    pub fn decision_maker(
        &self,
        id: &str,
        weights: &[f64],
    ) -> Result<(ExpertScore, Vec<Option<Vec<f64>>>)> {
        if weights.len() != self.ids.len() {
            return Err(CalibrationError::LengthMismatch {
                left: "weights",
                left_len: weights.len(),
                right: "experts",
                right_len: self.ids.len(),
            });
        }
        if weights.iter().any(|w| !(w.is_finite() && *w >= 0.0))
            || weights.iter().sum::<f64>() <= 0.0
        {
            return Err(CalibrationError::InvalidParameter {
                what: "weights",
                reason: "weights must be finite, non-negative and not all zero".into(),
            });
        }
        let row = self.pool(weights);
        let score = self.score_row(id, &row, self.effective_seed_count())?;
        let natural = row
            .iter()
            .zip(&self.items)
            .map(|(q, item)| {
                q.as_ref()
                    .map(|q| q.iter().map(|&v| item.scale.to_natural(v)).collect())
            })
            .collect();
        Ok((score, natural))
    }

    /// The classical model with global weights and a fixed or optimised `α`.
    pub fn solve(&self, alpha: Alpha) -> Result<ClassicalResult> {
        let experts = self.score_experts()?;
        let combined = |a: f64| -> Vec<f64> {
            experts
                .iter()
                .map(|e| {
                    if e.calibration >= a {
                        (e.calibration * e.information_seed).max(0.0)
                    } else {
                        0.0
                    }
                })
                .collect()
        };
        let max_c = experts
            .iter()
            .map(|e| e.calibration)
            .fold(f64::NEG_INFINITY, f64::max);
        let chosen = match alpha {
            Alpha::Fixed(a) => {
                if !(a.is_finite() && a >= 0.0) {
                    return Err(CalibrationError::InvalidParameter {
                        what: "alpha",
                        reason: format!("must be a number >= 0 or null, got {a}"),
                    });
                }
                if a > max_c {
                    return Err(CalibrationError::InvalidParameter {
                        what: "alpha",
                        reason: format!(
                            "{a} exceeds the best calibration score {max_c}, so every expert \
                             would be excluded: lower alpha or pass null to optimise it"
                        ),
                    });
                }
                a
            }
            Alpha::Optimised => {
                let mut candidates: Vec<f64> = experts.iter().map(|e| e.calibration).collect();
                candidates.sort_by(f64::total_cmp);
                candidates.dedup();
                let mut best: Option<(f64, f64)> = None;
                for &a in &candidates {
                    let w = combined(a);
                    if w.iter().sum::<f64>() <= 0.0 {
                        continue;
                    }
                    let (dm, _) = self.decision_maker("DM", &w)?;
                    let virtual_weight = if dm.calibration >= a {
                        dm.calibration * dm.information_seed
                    } else {
                        0.0
                    };
                    if best.is_none_or(|(_, v)| virtual_weight > v) {
                        best = Some((a, virtual_weight));
                    }
                }
                best.map(|(a, _)| a)
                    .ok_or_else(|| CalibrationError::Degenerate {
                        what: "alpha",
                        reason: "no expert has a positive combined score C x I".into(),
                    })?
            }
        };
        let combined_scores = combined(chosen);
        let total: f64 = combined_scores.iter().sum();
        if total.is_nan() || total <= 0.0 {
            return Err(CalibrationError::Degenerate {
                what: "weights",
                reason: "every expert has zero weight C x I at this alpha".into(),
            });
        }
        let weights = combined_scores.iter().map(|w| w / total).collect();
        let (dm, dm_quantiles) = self.decision_maker("DM", &combined_scores)?;
        Ok(ClassicalResult {
            experts,
            combined_scores,
            weights,
            dm,
            dm_quantiles,
            alpha: chosen,
        })
    }
}

fn to_background_quantiles(
    q: &[f64],
    n_levels: usize,
    scale: Scale,
    owner: &str,
) -> Result<Vec<f64>> {
    if q.len() != n_levels {
        return Err(ReferenceError::QuantileCount {
            owner: owner.to_owned(),
            values: q.len(),
            levels: n_levels,
        }
        .into());
    }
    let mut out = Vec::with_capacity(q.len());
    for &v in q {
        out.push(scale.to_background(v, || format!("quantile of {owner}"))?);
    }
    if !out.windows(2).all(|w| w[0] < w[1]) {
        return Err(CalibrationError::NonMonotoneQuantiles {
            owner: owner.to_string(),
            values: q.to_vec(),
        });
    }
    Ok(out)
}

/// Piecewise-linear CDF through `(lower, 0), (q_1, a_1), ..., (q_Q, a_Q), (upper, 1)`.
fn expert_cdf(x: f64, q: &[f64], levels: &[f64], lower: f64, upper: f64) -> f64 {
    if x <= lower {
        return 0.0;
    }
    if x >= upper {
        return 1.0;
    }
    let (mut x0, mut f0) = (lower, 0.0);
    for (&qk, &ak) in q.iter().zip(levels).chain(std::iter::once((&upper, &1.0))) {
        if x <= qk {
            return f0 + (x - x0) * (ak - f0) / (qk - x0);
        }
        x0 = qk;
        f0 = ak;
    }
    1.0
}

/// The point where the non-decreasing piecewise-linear `cdf` (over `points`) reaches `a`,
/// taking the last breakpoint at or below `a` as the segment start (numpy `interp`'s rule).
fn inverse_interpolate(a: f64, cdf: &[f64], points: &[f64]) -> f64 {
    let last = cdf.len() - 1;
    let j = cdf[..last].partition_point(|&c| c <= a).saturating_sub(1);
    let (f0, f1) = (cdf[j], cdf[j + 1]);
    if f1 <= f0 {
        return points[j];
    }
    points[j] + (a - f0) * (points[j + 1] - points[j]) / (f1 - f0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// calibration-digest A.1 reference table (df = 3).
    #[test]
    fn reference_points() {
        let l = LEVELS_5_50_95;
        let c = |counts: [usize; 4]| {
            let n: usize = counts.iter().sum();
            calibration_score(&counts, &l, n as f64, 1.0).unwrap()
        };
        assert!((c([1, 9, 9, 1]) - 1.0).abs() < 1e-12);
        assert!((c([0, 5, 5, 0]) - 0.5505).abs() < 1e-4);
        assert!((c([2, 3, 3, 2]) - 0.1012).abs() < 1e-4);
        assert!((c([0, 10, 0, 0]) - 0.00115).abs() < 1e-5);
        assert!((c([5, 0, 0, 5]) / 5.5e-10 - 1.0).abs() < 0.02);
    }

    #[test]
    fn ties_count_in_the_lower_bin() {
        let q = [1.0, 2.0, 3.0];
        assert_eq!(bin_of(1.0, &q), 0);
        assert_eq!(bin_of(1.5, &q), 1);
        assert_eq!(bin_of(2.0, &q), 1);
        assert_eq!(bin_of(3.0, &q), 2);
        assert_eq!(bin_of(3.1, &q), 3);
    }

    #[test]
    fn non_monotone_quantiles_are_rejected() {
        let items = vec![Item {
            id: "x".into(),
            realization: Some(1.0),
            scale: Scale::Uni,
            frozen_range: None,
        }];
        let experts = vec![Assessment {
            id: "e".into(),
            values: vec![Some(vec![1.0, 3.0, 2.0])],
        }];
        let err = CookeModel::new(&LEVELS_5_50_95, items, experts, 0.1, 1.0).unwrap_err();
        assert!(matches!(err, CalibrationError::NonMonotoneQuantiles { .. }));
    }

    #[test]
    fn frozen_range_isolates_experts() {
        let item = |id: &str, x: f64| Item {
            id: id.into(),
            realization: Some(x),
            scale: Scale::Uni,
            frozen_range: Some((0.0, 100.0)),
        };
        let items = vec![item("a", 10.0), item("b", 50.0)];
        let alone = vec![Assessment {
            id: "e1".into(),
            values: vec![Some(vec![5.0, 10.5, 20.0]), Some(vec![30.0, 45.0, 60.0])],
        }];
        let mut with_wild = alone.clone();
        with_wild.push(Assessment {
            id: "wild".into(),
            values: vec![Some(vec![-900.0, 0.0, 900.0]), Some(vec![-1e4, 1.0, 1e4])],
        });
        let a = CookeModel::new(&LEVELS_5_50_95, items.clone(), alone, 0.1, 1.0)
            .unwrap()
            .score_experts()
            .unwrap();
        let b = CookeModel::new(&LEVELS_5_50_95, items, with_wild, 0.1, 1.0)
            .unwrap()
            .score_experts()
            .unwrap();
        assert_eq!(a[0].information_seed, b[0].information_seed);
        assert!(b[1].information_seed < b[0].information_seed);
    }
}
