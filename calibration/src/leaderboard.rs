//! A leaderboard of forecasters scored against resolved outcomes, with the baseline and
//! peer scores Metaculus publishes (docs/CALIBRATION.md, "The leaderboard").
//!
//! Both are log scores, so both are proper: no forecaster gains in expectation by
//! reporting anything but its belief.
//!
//! * **Baseline score** of one binary forecast: `100 · (1 + log2 p)`, with `p` the
//!   probability the forecaster gave the outcome that happened. Chance (0.5) scores 0,
//!   certainty on the right answer 100, and a confident miss goes far below zero. It needs
//!   no other forecaster, so every resolved forecast counts.
//! * **Peer score** on one question: `100 · (ln p_i − mean_{j≠i} ln p_j)`, the forecaster's
//!   log score against the mean of everyone else's on the same question. The peer scores
//!   of a question sum to zero, so a positive mean says "better than the others who
//!   answered the same questions", whatever the questions' difficulty. Only questions with
//!   at least two forecasters have one.
//!
//! Probabilities are clipped to [0.001, 0.999] before the logarithm (Metaculus clips at the
//! same bounds), so one forecast of exactly 0 or 1 cannot sink a standing to minus
//! infinity. A standing's scores are means over its forecasts, reported beside how many
//! resolved forecasts (and peer questions) they rest on: a mean over three items is not a
//! mean over three hundred. Pure: no I/O.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::{CalibrationError, Result};

/// The clip applied to probabilities before a logarithm.
pub const CLIP: (f64, f64) = (0.001, 0.999);

/// One resolved binary forecast.
#[derive(Debug, Clone, PartialEq)]
pub struct Forecast<'a> {
    /// Who forecast (an arbiter id).
    pub forecaster: &'a str,
    /// The group the forecaster belongs to (its organisation).
    pub group: &'a str,
    /// What was asked: forecasts with the same question are compared for the peer score.
    pub question: &'a str,
    /// The forecaster's probability of "yes", in [0, 1].
    pub probability: f64,
    /// The resolved truth.
    pub outcome: bool,
}

/// One row of the leaderboard: a forecaster or a group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Standing {
    pub name: String,
    /// Resolved forecasts the scores rest on.
    pub resolved: usize,
    /// Mean baseline score over `resolved` forecasts.
    pub baseline: f64,
    /// Mean peer score over `peer_questions` forecasts; `None` when no question of this
    /// standing had another forecaster.
    pub peer: Option<f64>,
    pub peer_questions: usize,
    /// Mean Brier score over `resolved` forecasts (lower is better), for readers used to it.
    pub brier: f64,
}

/// The leaderboard: forecasters and groups, best first (by mean peer score, then by
/// mean baseline score; rows without a peer score after those with one).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Leaderboard {
    pub forecasters: Vec<Standing>,
    pub groups: Vec<Standing>,
}

/// The probability a forecast gave the outcome that happened, clipped.
fn p_outcome(f: &Forecast<'_>) -> f64 {
    let p = if f.outcome {
        f.probability
    } else {
        1.0 - f.probability
    };
    p.clamp(CLIP.0, CLIP.1)
}

/// The baseline score of one forecast: `100 · (1 + log2 p)`.
pub fn baseline_score(f: &Forecast<'_>) -> f64 {
    100.0 * (1.0 + p_outcome(f).log2())
}

/// Sums toward one standing's means.
#[derive(Default)]
struct Tally {
    resolved: usize,
    baseline: f64,
    brier: f64,
    peer: f64,
    peer_questions: usize,
}

impl Tally {
    fn standing(&self, name: &str) -> Standing {
        let n = self.resolved as f64;
        Standing {
            name: name.to_owned(),
            resolved: self.resolved,
            baseline: self.baseline / n,
            peer: (self.peer_questions > 0).then(|| self.peer / self.peer_questions as f64),
            peer_questions: self.peer_questions,
            brier: self.brier / n,
        }
    }
}

/// Scores `forecasts` into a leaderboard. Refuses a probability outside [0, 1] or not a
/// number, naming the forecaster and question, and a forecaster that answered one question
/// twice (its two forecasts would count twice in everyone's peer score).
pub fn leaderboard(forecasts: &[Forecast<'_>]) -> Result<Leaderboard> {
    let mut by_question: BTreeMap<&str, Vec<&Forecast<'_>>> = BTreeMap::new();
    for f in forecasts {
        if !(0.0..=1.0).contains(&f.probability) {
            return Err(CalibrationError::InvalidParameter {
                what: "leaderboard forecast",
                reason: format!(
                    "{}'s forecast on {} is {}; a probability is in [0, 1]",
                    f.forecaster, f.question, f.probability
                ),
            });
        }
        let same = by_question.entry(f.question).or_default();
        if same.iter().any(|g| g.forecaster == f.forecaster) {
            return Err(CalibrationError::InvalidParameter {
                what: "leaderboard forecast",
                reason: format!(
                    "{} forecast {} twice; a leaderboard counts one forecast per forecaster and question",
                    f.forecaster, f.question
                ),
            });
        }
        same.push(f);
    }
    let mut forecasters: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut groups: BTreeMap<&str, Tally> = BTreeMap::new();
    for same in by_question.values() {
        let logs: Vec<f64> = same.iter().map(|f| p_outcome(f).ln()).collect();
        let total: f64 = logs.iter().sum();
        for (f, own) in same.iter().zip(&logs) {
            let peer =
                (same.len() > 1).then(|| 100.0 * (own - (total - own) / (same.len() - 1) as f64));
            let brier = (f.probability - if f.outcome { 1.0 } else { 0.0 }).powi(2);
            for t in [
                forecasters.entry(f.forecaster).or_default(),
                groups.entry(f.group).or_default(),
            ] {
                t.resolved += 1;
                t.baseline += baseline_score(f);
                t.brier += brier;
                if let Some(p) = peer {
                    t.peer += p;
                    t.peer_questions += 1;
                }
            }
        }
    }
    Ok(Leaderboard {
        forecasters: ranked(&forecasters),
        groups: ranked(&groups),
    })
}

fn ranked(tallies: &BTreeMap<&str, Tally>) -> Vec<Standing> {
    let mut rows: Vec<Standing> = tallies.iter().map(|(n, t)| t.standing(n)).collect();
    rows.sort_by(|a, b| {
        let key = |s: &Standing| (s.peer.is_some(), s.peer.unwrap_or(0.0), s.baseline);
        let (ka, kb) = (key(a), key(b));
        kb.0.cmp(&ka.0)
            .then(kb.1.total_cmp(&ka.1))
            .then(kb.2.total_cmp(&ka.2))
            .then(a.name.cmp(&b.name))
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f<'a>(who: &'a str, org: &'a str, q: &'a str, p: f64, o: bool) -> Forecast<'a> {
        Forecast {
            forecaster: who,
            group: org,
            question: q,
            probability: p,
            outcome: o,
        }
    }

    #[test]
    fn chance_scores_zero_and_certainty_one_hundred() {
        assert_eq!(baseline_score(&f("a", "o", "q", 0.5, true)), 0.0);
        assert!(
            (baseline_score(&f("a", "o", "q", 1.0, true)) - 100.0 * (1.0 + 0.999f64.log2())).abs()
                < 1e-12
        );
        // A confident miss is clipped, not minus infinity.
        let miss = baseline_score(&f("a", "o", "q", 1.0, false));
        assert!(miss.is_finite() && miss < -800.0, "{miss}");
    }

    #[test]
    fn peer_scores_of_a_question_sum_to_zero_and_rank_the_better_forecaster_first() {
        let fs = [
            f("good", "north", "q1", 0.9, true),
            f("poor", "south", "q1", 0.4, true),
            f("mid", "south", "q1", 0.7, true),
            f("good", "north", "q2", 0.2, false),
            f("poor", "south", "q2", 0.6, false),
            // Alone on q3: a baseline score, no peer score.
            f("poor", "south", "q3", 0.9, true),
        ];
        let b = leaderboard(&fs).unwrap();
        let names: Vec<&str> = b.forecasters.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["good", "mid", "poor"]);
        let poor = &b.forecasters[2];
        assert_eq!((poor.resolved, poor.peer_questions), (3, 2));
        // The peer scores on q1 sum to zero.
        let q1: Vec<f64> = [0.9f64, 0.4, 0.7].iter().map(|p| p.ln()).collect();
        let sum: f64 = (0..3)
            .map(|i| q1[i] - (q1.iter().sum::<f64>() - q1[i]) / 2.0)
            .sum();
        assert!(sum.abs() < 1e-12);
        // Groups pool their members' forecasts.
        let north = b.groups.iter().find(|g| g.name == "north").unwrap();
        assert_eq!(north.resolved, 2);
        assert_eq!(b.groups[0].name, "north");
    }

    #[test]
    fn a_forecast_out_of_range_or_twice_on_one_question_is_refused_by_name() {
        let e = leaderboard(&[f("a", "o", "q", 1.5, true)]).unwrap_err();
        assert!(e.to_string().contains("a's forecast on q is 1.5"), "{e}");
        let e =
            leaderboard(&[f("a", "o", "q", 0.5, true), f("a", "o", "q", 0.6, true)]).unwrap_err();
        assert!(e.to_string().contains("a forecast q twice"), "{e}");
        let e = leaderboard(&[f("a", "o", "q", f64::NAN, true)]).unwrap_err();
        assert!(e.to_string().contains("NaN"), "{e}");
    }
}
