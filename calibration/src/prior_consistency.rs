//! Prior-consistency check: does an arbiter's ruling history fit the camp it declared?
//! (calibration-digest E.3.)
//!
//! * Screen: fit the bridging model; flag an arbiter whose fitted factor `f_u` is nearer the
//!   leave-one-out mean factor of the other declared camp than that of its own camp. Fast
//!   but noisy below about 50 co-rated rulings.
//! * Confirmation: on contested rulings (the two camps' majorities, computed without the
//!   arbiter, differ) a one-sided exact binomial test of "agrees with its own camp's majority
//!   at a rate <= 1/2": p = P(X <= k | n, 1/2). Conservative; needs about 15-20 contested
//!   rulings.
//! * Act only when both agree: `flagged = screen && confirmed`.
//!
//! A rating above 0.5 is an approval, below 0.5 a rejection, exactly 0.5 no vote.

use serde::{Deserialize, Serialize};

use crate::bridging::BridgingFit;
use crate::chi_square::ln_gamma;
use crate::error::{CalibrationError, Result};
pub use crate::prior_consistency_v2::{PriorCheckPolicyV2, PriorCheckV2, check_priors_v2};

/// A declared camp (stance on the resolution).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Camp {
    A,
    B,
}

impl Camp {
    fn other(self) -> Self {
        match self {
            Camp::A => Camp::B,
            Camp::B => Camp::A,
        }
    }
}

/// Thresholds of the check.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PriorCheckPolicy {
    /// Significance of the binomial confirmation (default 0.05).
    pub significance: f64,
}

impl Default for PriorCheckPolicy {
    fn default() -> Self {
        Self { significance: 0.05 }
    }
}

/// The check for one arbiter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PriorCheck {
    pub arbiter: usize,
    pub declared: Option<Camp>,
    pub factor: f64,
    /// Leave-one-out mean factor of the declared camp (`None` if the arbiter is alone).
    pub own_camp_factor: Option<f64>,
    pub other_camp_factor: Option<f64>,
    /// Screen: fitted factor nearer the other camp.
    pub screen: bool,
    pub contested: usize,
    pub agreements: usize,
    /// `P(X <= agreements | contested, 1/2)`; 1 when there is no contested ruling.
    pub p_value: f64,
    pub confirmed: bool,
    /// Both the screen and the confirmation fire.
    pub flagged: bool,
    /// The evidence of version 2 (`check_priors_v2`); absent from version-1 results, whose
    /// serialisation is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v2: Option<PriorCheckV2>,
}

/// `P(X <= k)` for `X ~ Binomial(n, 1/2)`, exact, summed in log space.
pub fn binomial_half_cdf(k: usize, n: usize) -> f64 {
    if k >= n {
        return 1.0;
    }
    let ln_n1 = ln_gamma(n as f64 + 1.0);
    let ln_half = -(n as f64) * std::f64::consts::LN_2;
    let terms: Vec<f64> = (0..=k)
        .map(|i| ln_n1 - ln_gamma(i as f64 + 1.0) - ln_gamma((n - i) as f64 + 1.0) + ln_half)
        .collect();
    let max = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = terms.iter().map(|t| (t - max).exp()).sum();
    (max + sum.ln()).exp().min(1.0)
}

fn vote(v: f64) -> Option<bool> {
    if v > 0.5 {
        Some(true)
    } else if v < 0.5 {
        Some(false)
    } else {
        None
    }
}

/// Majority of `camp` on `item`, without `skip`: `None` when tied or no votes.
fn camp_majority(
    ratings: &[Vec<Option<f64>>],
    camps: &[Option<Camp>],
    camp: Camp,
    item: usize,
    skip: usize,
) -> Option<bool> {
    let (mut yes, mut no) = (0usize, 0usize);
    for (u, row) in ratings.iter().enumerate() {
        if u == skip || camps[u] != Some(camp) {
            continue;
        }
        match row[item].and_then(vote) {
            Some(true) => yes += 1,
            Some(false) => no += 1,
            None => {}
        }
    }
    match yes.cmp(&no) {
        std::cmp::Ordering::Greater => Some(true),
        std::cmp::Ordering::Less => Some(false),
        std::cmp::Ordering::Equal => None,
    }
}

/// Both versions' inputs: one camp and one fitted factor per rater.
pub(crate) fn check_raters(
    ratings: &[Vec<Option<f64>>],
    camps: &[Option<Camp>],
    fit: &BridgingFit,
) -> Result<()> {
    if ratings.len() != camps.len() || ratings.len() != fit.rater_factors.len() {
        return Err(CalibrationError::LengthMismatch {
            left: "ratings (raters)",
            left_len: ratings.len(),
            right: "camps / fitted raters",
            right_len: camps.len().min(fit.rater_factors.len()),
        });
    }
    Ok(())
}

/// Run the screen and the confirmation for every arbiter with a declared camp.
pub fn check_priors(
    ratings: &[Vec<Option<f64>>],
    camps: &[Option<Camp>],
    fit: &BridgingFit,
    policy: &PriorCheckPolicy,
) -> Result<Vec<PriorCheck>> {
    check_raters(ratings, camps, fit)?;
    let n_items = ratings.first().map_or(0, Vec::len);
    let mean_factor = |camp: Camp, skip: usize| -> Option<f64> {
        let xs: Vec<f64> = (0..camps.len())
            .filter(|&u| u != skip && camps[u] == Some(camp))
            .map(|u| fit.rater_factors[u])
            .collect();
        (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
    };
    let mut out = Vec::new();
    for (u, declared) in camps.iter().enumerate() {
        let Some(camp) = *declared else {
            out.push(PriorCheck {
                arbiter: u,
                declared: None,
                factor: fit.rater_factors[u],
                own_camp_factor: None,
                other_camp_factor: None,
                screen: false,
                contested: 0,
                agreements: 0,
                p_value: 1.0,
                confirmed: false,
                flagged: false,
                v2: None,
            });
            continue;
        };
        let f = fit.rater_factors[u];
        let own = mean_factor(camp, u);
        let other = mean_factor(camp.other(), u);
        let screen = match (own, other) {
            (Some(o), Some(t)) => (f - t).abs() < (f - o).abs(),
            _ => false,
        };
        let (mut contested, mut agreements) = (0usize, 0usize);
        for item in 0..n_items {
            let Some(mine) = ratings[u][item].and_then(vote) else {
                continue;
            };
            let own_major = camp_majority(ratings, camps, camp, item, u);
            let other_major = camp_majority(ratings, camps, camp.other(), item, u);
            if let (Some(o), Some(t)) = (own_major, other_major)
                && o != t
            {
                contested += 1;
                agreements += usize::from(mine == o);
            }
        }
        let p_value = if contested == 0 {
            1.0
        } else {
            binomial_half_cdf(agreements, contested)
        };
        let confirmed = p_value < policy.significance;
        out.push(PriorCheck {
            arbiter: u,
            declared: Some(camp),
            factor: f,
            own_camp_factor: own,
            other_camp_factor: other,
            screen,
            contested,
            agreements,
            p_value,
            confirmed,
            flagged: screen && confirmed,
            v2: None,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridging::{BridgingConfig, fit_matrix};

    #[test]
    fn binomial_tail_is_exact() {
        assert!((binomial_half_cdf(0, 5) - 1.0 / 32.0).abs() < 1e-15);
        assert!((binomial_half_cdf(2, 5) - 0.5).abs() < 1e-14);
        assert_eq!(binomial_half_cdf(5, 5), 1.0);
    }

    /// Arbiter 0 declares camp A but votes with camp B on every contested ruling.
    #[test]
    fn a_false_declaration_is_flagged_and_honest_ones_are_not() {
        let mut ratings = Vec::new();
        let mut camps = Vec::new();
        for u in 0..10 {
            let votes_as_a = (1..5).contains(&u);
            camps.push(Some(if u < 5 { Camp::A } else { Camp::B }));
            let row: Vec<Option<f64>> = (0..30)
                .map(|m| {
                    let partisan = m % 3 != 0;
                    let approves = !partisan || (m % 2 == 0) == votes_as_a;
                    let v = if approves { 1.0 } else { 0.0 };
                    Some(v)
                })
                .collect();
            ratings.push(row);
        }
        let fit = fit_matrix(&ratings, &BridgingConfig::default()).unwrap();
        let checks = check_priors(&ratings, &camps, &fit, &PriorCheckPolicy::default()).unwrap();
        assert!(
            checks[0].screen && checks[0].confirmed && checks[0].flagged,
            "{:?}",
            checks[0]
        );
        assert_eq!(checks[0].agreements, 0);
        assert_eq!(checks[0].contested, 20);
        for c in &checks[1..] {
            assert!(!c.flagged, "{c:?}");
        }
    }

    /// Version 1's output, serialised, byte for byte as before `PriorCheck` gained the
    /// optional `v2` evidence (captured from the code before that change): records on the
    /// record replay identically.
    #[test]
    fn version_1_serialisation_is_unchanged() {
        let mut ratings = Vec::new();
        let mut camps = Vec::new();
        for u in 0..10 {
            let votes_as_a = (1..5).contains(&u);
            camps.push(if u == 9 {
                None
            } else {
                Some(if u < 5 { Camp::A } else { Camp::B })
            });
            let row: Vec<Option<f64>> = (0..30)
                .map(|m| {
                    if (m + u) % 7 == 0 {
                        return None;
                    }
                    let partisan = m % 3 != 0;
                    let approves = !partisan || (m % 2 == 0) == votes_as_a;
                    Some(if approves { 0.9 } else { 0.1 })
                })
                .collect();
            ratings.push(row);
        }
        let fit = BridgingFit {
            loss: 0.0,
            mu: 0.0,
            rater_intercepts: vec![0.0; 10],
            rater_factors: vec![-0.7, 0.8, 0.75, 0.5, 0.9, -0.6, -0.8, 0.1, -0.75, 0.0],
            item_intercepts: vec![0.0; 30],
            item_factors: vec![0.0; 30],
            sweeps: 0,
            converged: true,
            gradient_norm: 0.0,
        };
        let checks = check_priors(&ratings, &camps, &fit, &PriorCheckPolicy::default()).unwrap();
        assert_eq!(serde_json::to_string(&checks).unwrap(), GOLDEN_V1);
        assert_eq!(
            serde_json::to_string(&PriorCheckPolicy::default()).unwrap(),
            r#"{"significance":0.05}"#
        );
    }

    const GOLDEN_V1: &str = r#"[{"arbiter":0,"declared":"A","factor":-0.7,"own_camp_factor":0.7374999999999999,"other_camp_factor":-0.5125,"screen":true,"contested":17,"agreements":0,"p_value":7.629394531250002e-6,"confirmed":true,"flagged":true},{"arbiter":1,"declared":"A","factor":0.8,"own_camp_factor":0.36250000000000004,"other_camp_factor":-0.5125,"screen":false,"contested":18,"agreements":18,"p_value":1.0,"confirmed":false,"flagged":false},{"arbiter":2,"declared":"A","factor":0.75,"own_camp_factor":0.375,"other_camp_factor":-0.5125,"screen":false,"contested":17,"agreements":17,"p_value":1.0,"confirmed":false,"flagged":false},{"arbiter":3,"declared":"A","factor":0.5,"own_camp_factor":0.4375,"other_camp_factor":-0.5125,"screen":false,"contested":17,"agreements":17,"p_value":1.0,"confirmed":false,"flagged":false},{"arbiter":4,"declared":"A","factor":0.9,"own_camp_factor":0.3375,"other_camp_factor":-0.5125,"screen":false,"contested":18,"agreements":18,"p_value":1.0,"confirmed":false,"flagged":false},{"arbiter":5,"declared":"B","factor":-0.6,"own_camp_factor":-0.4833333333333334,"other_camp_factor":0.45,"screen":false,"contested":17,"agreements":17,"p_value":1.0,"confirmed":false,"flagged":false},{"arbiter":6,"declared":"B","factor":-0.8,"own_camp_factor":-0.4166666666666667,"other_camp_factor":0.45,"screen":false,"contested":16,"agreements":16,"p_value":1.0,"confirmed":false,"flagged":false},{"arbiter":7,"declared":"B","factor":0.1,"own_camp_factor":-0.7166666666666667,"other_camp_factor":0.45,"screen":true,"contested":17,"agreements":17,"p_value":1.0,"confirmed":false,"flagged":false},{"arbiter":8,"declared":"B","factor":-0.75,"own_camp_factor":-0.4333333333333333,"other_camp_factor":0.45,"screen":false,"contested":18,"agreements":18,"p_value":1.0,"confirmed":false,"flagged":false},{"arbiter":9,"declared":null,"factor":0.0,"own_camp_factor":null,"other_camp_factor":null,"screen":false,"contested":0,"agreements":0,"p_value":1.0,"confirmed":false,"flagged":false}]"#;
}
