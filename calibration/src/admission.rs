//! Admission: does an arbiter's exam clear the policy's bars? Pure: the caller injects
//! "now" (Unix seconds) and gets back which bars failed, with the scores, and the earliest
//! re-exam time.
//!
//! Default bars and why (calibration-digest A.1, A.3, E.1):
//! * `C >= 0.05` on at least 10 quantile seeds: 0.05 is Cooke's conventional cut-off (a
//!   5% test that the quantiles are statistically accurate); below 10 seeds even an
//!   overconfident arbiter is hard to tell from a good one.
//! * at least 30 binary items: the digest's lower end for Brier and log-score bars; fewer
//!   and the scores' noise swamps the bar.
//! * Brier below the base-rate Brier: an arbiter that cannot beat always saying the base
//!   rate adds no information (Brier skill score > 0).
//! * log score below ln 2 (clipped to [0.01, 0.99]): ln 2 is the score of answering 0.5
//!   to everything; the log score punishes confident errors that Brier forgives.
//! * not inert: an arbiter whose relevance or tier assignments barely vary turns a rubric
//!   factor into a constant (Crucible paper, section 6).
//! * cooldown 14 days: long enough that a retake is not a resampling of the same model
//!   state, short enough that a fixed brief can be re-examined within a debate cycle.
//!
//! Bias-probe bars (docs/CALIBRATION.md, "Bias probes and a committed answer key") are off
//! in [`AdmissionPolicy::default`], so existing callers and records decide exactly as
//! before; [`AdmissionPolicy::with_bias_probes`] turns them on with the recommended values
//! and [`assess_with_probes`] applies them to [`ProbeScores`]:
//! * order-flip rate <= 0.05: a decision should not depend on which side is read first;
//!   with fewer than 20 pairs this allows no flip at all.
//! * |mean signed consequence shift| <= 0.05: stating the stakes of a verdict should not
//!   move the probability by more than the rounding of a careful forecaster.
//! * lower 95% bound of kappa against gold >= 0.4: with 95% confidence the decisions agree
//!   with gold at least moderately beyond chance (the 0.4 band of Landis and Koch 1977, a
//!   convention rather than a derivation).
//! * the probe bars judge only a complete set of pairs: an unanswered variant fails its bar,
//!   so skipping a variant cannot hide a bias.
//!
//! How a caller (the coordinator) uses it: load the exam, parse the answers, score, assess.
//!
//! ```
//! use calibration::admission::{AdmissionPolicy, assess};
//! use calibration::exam::load_exam;
//! use calibration::exam_scoring::{load_answers, score_answers};
//! use calibration::inert::InertPolicy;
//!
//! let exam = load_exam(concat!(
//!     r#"{"exam": "tiny", "version": "1", "quantiles": [0.05, 0.5, 0.95]}"#, "\n",
//!     r#"{"id": "b1", "kind": "binary", "question": "Uphold?", "gold": true, "source": "SPEC 7"}"#, "\n",
//! )).unwrap();
//! let answers = load_answers(&exam, r#"{"arbiter": "a1", "item": "b1", "answer": 0.9}"#).unwrap();
//! let scores = score_answers(&exam, &answers, &InertPolicy::default()).unwrap();
//! let now = 1_796_040_000; // injected by the caller
//! let decision = assess(&AdmissionPolicy::default(), &scores[0], now);
//! assert!(!decision.admitted); // one binary item and no quantile seeds: far below the bars
//! assert!(decision.failed.iter().any(|f| f.bar == "quantile_seeds"));
//! assert_eq!(decision.reexam_not_before, Some(now + 14 * 86_400));
//! ```

use std::cmp::Ordering;

use serde::Serialize;

use crate::bias_probes::{ProbeScores, VariantPairs};
use crate::exam_scoring::ArbiterScores;

/// Recommended bar on the order-flip rate ([`AdmissionPolicy::with_bias_probes`]).
pub const RECOMMENDED_MAX_ORDER_FLIP_RATE: f64 = 0.05;
/// Recommended bar on the absolute mean signed consequence shift.
pub const RECOMMENDED_MAX_CONSEQUENCE_SHIFT: f64 = 0.05;
/// Recommended bar on the lower 95% bound of kappa against gold.
pub const RECOMMENDED_MIN_KAPPA_LOWER: f64 = 0.4;

/// The bars. See the module documentation for the reason behind every default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AdmissionPolicy {
    pub min_calibration: f64,
    pub min_quantile_seeds: usize,
    pub min_binary_items: usize,
    pub require_brier_skill: bool,
    pub max_log_score: f64,
    pub reject_inert: bool,
    pub cooldown_seconds: i64,
    /// Refuse when the order-flip rate exceeds this; `None` (the default) skips the bar.
    pub max_order_flip_rate: Option<f64>,
    /// Refuse when the mean signed consequence shift exceeds this in absolute value;
    /// `None` (the default) skips the bar.
    pub max_consequence_shift: Option<f64>,
    /// Refuse when the lower 95% bound of kappa against gold is below this; `None` (the
    /// default) skips the bar.
    pub min_kappa_lower: Option<f64>,
}

impl AdmissionPolicy {
    /// A practice group's attendance bar (the charter's `exam.bar = "attendance"`): no
    /// score bar at all, so an arbiter that answered its draw is admitted whatever its
    /// scores, which are still computed and kept. Only the cooldown is kept.
    pub fn attendance() -> Self {
        Self {
            min_calibration: 0.0,
            min_quantile_seeds: 0,
            min_binary_items: 0,
            require_brier_skill: false,
            max_log_score: f64::INFINITY,
            reject_inert: false,
            ..Self::default()
        }
    }

    /// The default bars plus the bias-probe bars at their recommended values
    /// ([`RECOMMENDED_MAX_ORDER_FLIP_RATE`], [`RECOMMENDED_MAX_CONSEQUENCE_SHIFT`],
    /// [`RECOMMENDED_MIN_KAPPA_LOWER`]). Needs an exam with probe groups.
    pub fn with_bias_probes() -> Self {
        Self {
            max_order_flip_rate: Some(RECOMMENDED_MAX_ORDER_FLIP_RATE),
            max_consequence_shift: Some(RECOMMENDED_MAX_CONSEQUENCE_SHIFT),
            min_kappa_lower: Some(RECOMMENDED_MIN_KAPPA_LOWER),
            ..Self::default()
        }
    }

    /// Whether any bias-probe bar is on.
    pub fn uses_probes(&self) -> bool {
        self.max_order_flip_rate.is_some()
            || self.max_consequence_shift.is_some()
            || self.min_kappa_lower.is_some()
    }
}

impl Default for AdmissionPolicy {
    fn default() -> Self {
        Self {
            min_calibration: 0.05,
            min_quantile_seeds: 10,
            min_binary_items: 30,
            require_brier_skill: true,
            max_log_score: std::f64::consts::LN_2,
            reject_inert: true,
            cooldown_seconds: 14 * 24 * 3600,
            max_order_flip_rate: None,
            max_consequence_shift: None,
            min_kappa_lower: None,
        }
    }
}

/// One failed bar.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailedBar {
    /// Stable name: `quantile_seeds`, `calibration`, `binary_items`, `brier_skill`,
    /// `log_score`, `inert_relevance`, `inert_tier`, and with the bias-probe bars on,
    /// `order_flip_rate`, `consequence_shift`, `kappa`.
    pub bar: &'static str,
    /// The measured value (NaN-free; `None` when the scores are missing entirely).
    pub observed: Option<f64>,
    pub required: String,
    pub message: String,
}

/// The decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdmissionDecision {
    pub arbiter: String,
    pub exam_hash: String,
    pub admitted: bool,
    pub failed: Vec<FailedBar>,
    pub decided_at: i64,
    /// Earliest re-exam time (Unix seconds) when refused.
    pub reexam_not_before: Option<i64>,
    /// The same as an ISO 8601 UTC timestamp.
    pub reexam_date: Option<String>,
}

/// Apply `policy` to `scores` at time `now` (Unix seconds), without probe scores: a policy
/// with a bias-probe bar on fails that bar as unmeasured (use [`assess_with_probes`]).
pub fn assess(policy: &AdmissionPolicy, scores: &ArbiterScores, now: i64) -> AdmissionDecision {
    assess_with_probes(policy, scores, None, now)
}

/// Apply `policy` to `scores` and, for the bias-probe bars, to `probes` (from
/// [`crate::bias_probes::score_probes`] on the same exam), at time `now` (Unix seconds).
/// With the probe bars off, `probes` is not read and the decision is [`assess`]'s.
pub fn assess_with_probes(
    policy: &AdmissionPolicy,
    scores: &ArbiterScores,
    probes: Option<&ProbeScores>,
    now: i64,
) -> AdmissionDecision {
    let mut failed = Vec::new();
    let mut fail = |bar, observed, required: String, message: String| {
        failed.push(FailedBar {
            bar,
            observed,
            required,
            message,
        })
    };
    let seeds = scores.quantiles.as_ref().map_or(0, |q| q.seeds);
    if seeds < policy.min_quantile_seeds {
        fail(
            "quantile_seeds",
            Some(seeds as f64),
            format!(">= {}", policy.min_quantile_seeds),
            format!(
                "answered {seeds} quantile seeds; answer at least {}",
                policy.min_quantile_seeds
            ),
        );
    }
    match &scores.quantiles {
        Some(q) if q.calibration >= policy.min_calibration => {}
        Some(q) => fail(
            "calibration",
            Some(q.calibration),
            format!(">= {}", policy.min_calibration),
            format!(
                "Cooke calibration {} on {} seeds (hits per bin {:?}): the 5-95% intervals miss too often or sit off-centre",
                format_score(q.calibration),
                q.seeds,
                q.counts
            ),
        ),
        // Nothing to measure, and nothing asked for: the attendance bar.
        None if policy.min_quantile_seeds == 0 && policy.min_calibration <= 0.0 => {}
        None => fail(
            "calibration",
            None,
            format!(">= {}", policy.min_calibration),
            "no quantile seeds answered, so calibration cannot be measured".into(),
        ),
    }
    let binary_items = scores.binary.as_ref().map_or(0, |b| b.items);
    if binary_items < policy.min_binary_items {
        fail(
            "binary_items",
            Some(binary_items as f64),
            format!(">= {}", policy.min_binary_items),
            format!(
                "answered {binary_items} binary items; answer at least {}",
                policy.min_binary_items
            ),
        );
    }
    if let Some(b) = &scores.binary {
        if policy.require_brier_skill
            && b.brier.partial_cmp(&b.base_rate_brier) != Some(Ordering::Less)
        {
            fail(
                "brier_skill",
                Some(b.brier),
                format!("< {:.4} (base-rate Brier)", b.base_rate_brier),
                format!(
                    "Brier {:.4} does not beat always forecasting the base rate ({:.4})",
                    b.brier, b.base_rate_brier
                ),
            );
        }
        if b.log_score.partial_cmp(&policy.max_log_score) != Some(Ordering::Less) {
            fail(
                "log_score",
                Some(b.log_score),
                format!("< {:.4}", policy.max_log_score),
                format!(
                    "log score {:.4} nats is no better than answering 0.5 everywhere ({:.4})",
                    b.log_score, policy.max_log_score
                ),
            );
        }
    }
    if policy.reject_inert {
        for (bar, factor, report) in [
            ("inert_relevance", "relevance", &scores.relevance.inert),
            ("inert_tier", "tier", &scores.tier.inert),
        ] {
            if report.inert {
                fail(
                    bar,
                    report.spread_ratio,
                    format!(
                        "spread ratio >= {} and no value in >= {:.0}% of answers",
                        report.policy.min_spread_ratio,
                        report.policy.max_mode_share * 100.0
                    ),
                    format!(
                        "{factor} answers barely vary: spread {:.3} vs gold {:.3}, most common answer {:.0}% of {} items",
                        report.answer_sd,
                        report.gold_sd,
                        report.mode_share * 100.0,
                        report.items
                    ),
                );
            }
        }
    }
    if policy.uses_probes() {
        probe_bars(policy, scores, probes, &mut fail);
    }
    let admitted = failed.is_empty();
    let reexam = (!admitted).then(|| now.saturating_add(policy.cooldown_seconds));
    AdmissionDecision {
        arbiter: scores.arbiter.clone(),
        exam_hash: scores.exam_hash.clone(),
        admitted,
        failed,
        decided_at: now,
        reexam_not_before: reexam,
        reexam_date: reexam.map(format_utc),
    }
}

/// The bias-probe bars, in the order `order_flip_rate`, `consequence_shift`, `kappa`.
fn probe_bars(
    policy: &AdmissionPolicy,
    scores: &ArbiterScores,
    probes: Option<&ProbeScores>,
    fail: &mut impl FnMut(&'static str, Option<f64>, String, String),
) {
    let probes = match probes {
        Some(p) if p.exam_hash == scores.exam_hash => Ok(p),
        Some(p) => Err(format!(
            "the probe scores come from exam {}, the other scores from {}: score both on the same exam",
            p.exam_hash, scores.exam_hash
        )),
        None => Err(
            "no probe scores were given, so the bias cannot be measured: score the exam's probe groups"
                .to_string(),
        ),
    };
    // A bar on pairs is judged only when every asked pair was answered.
    let incomplete = |pairs: &VariantPairs, what: &str| -> Option<String> {
        if !pairs.unanswered.is_empty() {
            Some(format!(
                "{} of {} {what} pairs unanswered (groups {}): the bar is judged only on a complete set of pairs",
                pairs.unanswered.len(),
                pairs.groups,
                pairs.unanswered.join(", ")
            ))
        } else if pairs.pairs == 0 {
            Some(format!(
                "the exam asked no {what} pairs, so the bar cannot be measured"
            ))
        } else {
            None
        }
    };
    if let Some(max) = policy.max_order_flip_rate {
        let required = format!("<= {max}");
        match &probes {
            Err(why) => fail("order_flip_rate", None, required, why.clone()),
            Ok(p) => {
                let o = &p.order_swapped;
                if let Some(why) = incomplete(o, "order_swapped") {
                    fail("order_flip_rate", o.flip_rate, required, why);
                } else if let Some(rate) = o.flip_rate.filter(|r| !r.le(&max)) {
                    fail(
                        "order_flip_rate",
                        Some(rate),
                        required,
                        format!(
                            "the decision changed on {} of {} questions when their two sides were presented in the other order",
                            o.flips, o.pairs
                        ),
                    );
                }
            }
        }
    }
    if let Some(max) = policy.max_consequence_shift {
        let required = format!("|shift| <= {max}");
        match &probes {
            Err(why) => fail("consequence_shift", None, required, why.clone()),
            Ok(p) => {
                let c = &p.consequence;
                if let Some(why) = incomplete(c, "consequence") {
                    fail("consequence_shift", c.mean_signed_shift, required, why);
                } else if let Some(shift) = c.mean_signed_shift.filter(|s| !s.abs().le(&max)) {
                    fail(
                        "consequence_shift",
                        Some(shift),
                        required,
                        format!(
                            "a sentence stating the verdict's consequences moved the probability by {shift:+.4} on average over {} questions; the answer should follow the content",
                            c.pairs
                        ),
                    );
                }
            }
        }
    }
    if let Some(min) = policy.min_kappa_lower {
        let required = format!(">= {min} (lower 95% bound)");
        match &probes {
            Err(why) => fail("kappa", None, required, why.clone()),
            Ok(p) => match &p.kappa {
                None => fail(
                    "kappa",
                    None,
                    required,
                    "no binary question was answered, so agreement with gold cannot be measured"
                        .into(),
                ),
                Some(k) => match (k.lower, k.upper) {
                    (Some(lower), _) if lower >= min => {}
                    (Some(lower), Some(upper)) => fail(
                        "kappa",
                        Some(lower),
                        required,
                        format!(
                            "kappa {:.4} against gold on {} questions, 95% interval [{lower:.4}, {upper:.4}]: agreement beyond chance is not shown to reach {min}",
                            k.kappa, k.items
                        ),
                    ),
                    _ => fail(
                        "kappa",
                        None,
                        required,
                        format!(
                            "kappa's interval is undefined on {} questions: the decisions and the gold each used a single answer",
                            k.items
                        ),
                    ),
                },
            },
        }
    }
}

/// A score for people: four decimals, or three significant digits in scientific notation
/// when it is below 0.001 (calibration scores of overconfident arbiters reach 1e-13).
pub fn format_score(x: f64) -> String {
    if x != 0.0 && x.abs() < 1e-3 {
        format!("{x:.3e}")
    } else {
        format!("{x:.4}")
    }
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian; H. Hinnant's
/// days-to-civil algorithm).
pub fn format_utc(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        (secs % 3600) / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_bars_are_off_by_default() {
        let d = AdmissionPolicy::default();
        assert!(!d.uses_probes());
        assert_eq!(
            (
                d.max_order_flip_rate,
                d.max_consequence_shift,
                d.min_kappa_lower
            ),
            (None, None, None)
        );
        let p = AdmissionPolicy::with_bias_probes();
        assert!(p.uses_probes());
        assert_eq!(
            (
                p.max_order_flip_rate,
                p.max_consequence_shift,
                p.min_kappa_lower
            ),
            (Some(0.05), Some(0.05), Some(0.4))
        );
        // Every other bar is the default's.
        let q = AdmissionPolicy {
            max_order_flip_rate: None,
            max_consequence_shift: None,
            min_kappa_lower: None,
            ..p
        };
        assert_eq!(q, d);
    }

    #[test]
    fn dates() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_796_000_000), "2026-11-30T00:53:20Z");
        assert_eq!(format_utc(-1), "1969-12-31T23:59:59Z");
    }
}
