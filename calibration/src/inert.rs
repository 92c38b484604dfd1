//! Inert-factor detection: an arbiter whose relevance or tier assignments barely vary.
//!
//! The Crucible paper (section 6, "A published factor can be inert") found an arbiter that
//! gave full relevance to eight claims out of eight, so a four-factor rubric silently ran
//! on three factors. On an exam the gold answers have a known spread; an arbiter whose
//! answers on the same items spread much less (or who gives one value almost always) is
//! flagged.

use serde::Serialize;

use crate::error::{CalibrationError, Result};

/// Thresholds of the inert-factor screen.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct InertPolicy {
    /// Fewer answered items than this: not assessed (too little data to call it).
    /// Default 5: the paper's case had 8 items.
    pub min_items: usize,
    /// Flag when `sd(answers) / sd(gold) < min_spread_ratio`. Default 0.25: a quarter of
    /// the gold spread is far below what an arbiter that reads the claims produces (the
    /// paper's repaired brief gave 1, 0.75, 1, 0.75, a ratio near 0.45 against a gold spread
    /// of one step either side).
    pub min_spread_ratio: f64,
    /// Flag when one value takes at least this share of the answers while the gold's most
    /// common value takes less. Default 0.9 (8 of 8 is 1.0).
    pub max_mode_share: f64,
}

impl Default for InertPolicy {
    fn default() -> Self {
        Self {
            min_items: 5,
            min_spread_ratio: 0.25,
            max_mode_share: 0.9,
        }
    }
}

/// Outcome of the screen for one factor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InertReport {
    pub items: usize,
    pub answer_sd: f64,
    pub gold_sd: f64,
    /// `answer_sd / gold_sd`, `None` when the gold does not vary.
    pub spread_ratio: Option<f64>,
    /// Share of the most common answer.
    pub mode_share: f64,
    /// Share of the most common gold value.
    pub gold_mode_share: f64,
    /// `false` when there were fewer than `min_items` items or the gold does not vary.
    pub assessed: bool,
    pub inert: bool,
    /// The thresholds applied.
    pub policy: InertPolicy,
}

fn sd(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt()
}

fn mode_share(xs: &[f64]) -> f64 {
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut best = 0usize;
    let mut start = 0usize;
    while start < sorted.len() {
        let end = sorted[start..].partition_point(|&x| x == sorted[start]) + start;
        best = best.max(end - start);
        start = end;
    }
    best as f64 / xs.len() as f64
}

/// Screen one factor: `answers[i]` and `gold[i]` are the arbiter's and the gold value on
/// the same item (relevance in {0.25, 0.5, 0.75, 1}, or tier weight 1-5).
pub fn detect_inert(answers: &[f64], gold: &[f64], policy: &InertPolicy) -> Result<InertReport> {
    if answers.len() != gold.len() {
        return Err(CalibrationError::LengthMismatch {
            left: "answers",
            left_len: answers.len(),
            right: "gold",
            right_len: gold.len(),
        });
    }
    if let Some(&value) = answers.iter().chain(gold).find(|v| !v.is_finite()) {
        return Err(CalibrationError::NotFinite {
            what: "ordinal answer".into(),
            value,
        });
    }
    if answers.is_empty() {
        return Ok(InertReport {
            items: 0,
            answer_sd: 0.0,
            gold_sd: 0.0,
            spread_ratio: None,
            mode_share: 0.0,
            gold_mode_share: 0.0,
            assessed: false,
            inert: false,
            policy: *policy,
        });
    }
    let (answer_sd, gold_sd) = (sd(answers), sd(gold));
    let spread_ratio = (gold_sd > 0.0).then(|| answer_sd / gold_sd);
    let (share, gold_share) = (mode_share(answers), mode_share(gold));
    let assessed = answers.len() >= policy.min_items && gold_sd > 0.0;
    let inert = assessed
        && (spread_ratio.is_some_and(|r| r < policy.min_spread_ratio)
            || (share >= policy.max_mode_share && gold_share < policy.max_mode_share));
    Ok(InertReport {
        items: answers.len(),
        answer_sd,
        gold_sd,
        spread_ratio,
        mode_share: share,
        gold_mode_share: gold_share,
        assessed,
        inert,
        policy: *policy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_of_eight_full_relevance_is_inert() {
        let gold = [1.0, 0.75, 0.5, 0.25, 1.0, 0.5, 0.75, 0.25];
        let r = detect_inert(&[1.0; 8], &gold, &InertPolicy::default()).unwrap();
        assert!(r.assessed && r.inert);
        assert_eq!(r.spread_ratio, Some(0.0));
    }

    #[test]
    fn a_reading_arbiter_is_not_inert() {
        let gold = [1.0, 0.75, 0.5, 0.25, 1.0, 0.5, 0.75, 0.25];
        let answers = [1.0, 0.75, 0.75, 0.5, 1.0, 0.5, 0.75, 0.25];
        let r = detect_inert(&answers, &gold, &InertPolicy::default()).unwrap();
        assert!(r.assessed && !r.inert, "{r:?}");
    }

    #[test]
    fn too_few_items_is_not_assessed() {
        let r = detect_inert(&[1.0; 3], &[0.25, 0.5, 1.0], &InertPolicy::default()).unwrap();
        assert!(!r.assessed && !r.inert);
    }
}
