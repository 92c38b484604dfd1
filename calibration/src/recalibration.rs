//! Recalibration from resolved outcomes: an arbiter's running track record after
//! admission, scored only on items whose truth was later established by something other
//! than the panel that ruled (docs/CALIBRATION.md "Recalibration from resolved outcomes").
//!
//! What counts as resolved is the coordinator's business (a later tier verification
//! carried by retrieval receipts from both stances, an appeal decision); this module only
//! keeps the items and applies the bars. One rule is enforced here too: an item cannot be
//! resolved by the motion it scores, because a panel's own acceptance is agreement with
//! the majority, not ground truth (Kleros and Community Notes score that, and it rewards
//! herding).
//!
//! Scores (calibration-digest B.1, B.2): the Brier score `(1/N) Σ (p_i - o_i)²`, the
//! base-rate Brier `ō(1 - ō)` on the same items, and the log score
//! `-(1/N) Σ ln(probability given to the realised outcome)` with forecasts clamped to
//! `[0.01, 0.99]` first, exactly as at admission (`exam_scoring::LOG_CLIP`).
//!
//! Bars (the admission bars, `admission::AdmissionPolicy`, applied to resolved items):
//! * at least `min_resolved` = 30 items in the current window before anything is judged.
//!   It is admission's `min_binary_items`, for the same reason: below about 30 items the
//!   bars measure noise. Worked number: an arbiter right 80% of the time that says 0.8
//!   (or 0.2) fails the log bar by bad luck with probability 0.12 on 10 items and 0.026
//!   on 30 (binomial tail, `P(X >= 11)` for `X ~ Bin(30, 0.2)`).
//! * Brier below the base-rate Brier. The base rate is the window's own frequency, so an
//!   arbiter that says the same number on every item never passes: the bar asks for
//!   discrimination, as at admission. When every resolved outcome is the same the base
//!   rate Brier is 0 and nothing short of certainty beats it, so the bar is not assessed
//!   then (reported as such), and the log bar alone decides.
//! * log score below ln 2, the score of answering 0.5 everywhere.
//!
//! A failed bar flags the arbiter. The flag is sticky until the next exam
//! ([`TrackRecord::restart_after_exam`]), which starts a new window; the history is kept.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::admission::AdmissionPolicy;
use crate::exam_scoring::LOG_CLIP;
use crate::scoring_rules::{LogClip, base_rate_brier, brier_score, log_score};

/// Why an item or a policy was refused. Each message names the field and the fix.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RecalibrationError {
    #[error("{field} is empty: name the motion")]
    EmptyMotionId { field: &'static str },
    #[error(
        "motion {motion_id}: probability {value} is not a probability; use the arbiter's signed credence in [0, 1]"
    )]
    ProbabilityOutOfRange { motion_id: String, value: f64 },
    #[error(
        "motion {motion_id} cannot resolve itself: a panel's own acceptance is agreement with the majority, not a resolved outcome"
    )]
    SelfResolution { motion_id: String },
    #[error("recalibration policy: {field} {reason}")]
    BadPolicy { field: &'static str, reason: String },
    #[error("internal scoring error: {0}")]
    Scoring(#[from] crate::error::CalibrationError),
}

/// What established the truth of an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResolutionKind {
    /// A later tier verification of the same citation, accepted with agreeing retrieval
    /// receipts from both stances.
    SourceVerified,
    /// A later decision (admitted or denied) on an appeal of the challenge's outcome.
    Appeal,
    /// An exam item held back from the admission score, resolved by the exam's revealed
    /// gold (`exam_hold_back`); `motion_id` names the sitting's key reveal.
    ExamHeldBack,
}

impl ResolutionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ResolutionKind::SourceVerified => "source-verified",
            ResolutionKind::Appeal => "appeal",
            ResolutionKind::ExamHeldBack => "exam-held-back",
        }
    }
}

/// The motion whose outcome resolved an item, and of what kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolution {
    pub motion_id: String,
    pub kind: ResolutionKind,
}

/// One scored item: the arbiter's stated probability for "yes" on a motion, and the
/// truth established later.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedItem {
    /// The motion the arbiter ruled on.
    pub motion_id: String,
    /// The arbiter's credence in "yes" (uphold, verified), as signed in its ruling.
    pub probability: f64,
    /// The resolved truth: `true` for "yes".
    pub outcome: bool,
    pub resolved_by: Resolution,
}

impl ResolvedItem {
    fn validate(&self) -> Result<(), RecalibrationError> {
        if self.motion_id.trim().is_empty() {
            return Err(RecalibrationError::EmptyMotionId { field: "motion_id" });
        }
        if self.resolved_by.motion_id.trim().is_empty() {
            return Err(RecalibrationError::EmptyMotionId {
                field: "resolved_by.motion_id",
            });
        }
        if self.resolved_by.motion_id == self.motion_id {
            return Err(RecalibrationError::SelfResolution {
                motion_id: self.motion_id.clone(),
            });
        }
        if !(0.0..=1.0).contains(&self.probability) {
            return Err(RecalibrationError::ProbabilityOutOfRange {
                motion_id: self.motion_id.clone(),
                value: self.probability,
            });
        }
        Ok(())
    }
}

/// The bars. [`RecalibrationPolicy::default`] takes them from the default admission
/// policy; see the module documentation for the reason behind each number.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RecalibrationPolicy {
    /// Resolved items needed in the window before the bars are applied.
    pub min_resolved: usize,
    /// Flag an arbiter whose Brier does not beat the base-rate Brier.
    pub require_brier_skill: bool,
    /// Flag an arbiter whose clipped log score is not below this (nats).
    pub max_log_score: f64,
    /// Forecasts are clamped to `[log_clip, 1 - log_clip]` for the log score.
    pub log_clip: f64,
}

impl RecalibrationPolicy {
    /// The admission bars, applied to resolved items.
    pub fn from_admission(p: &AdmissionPolicy) -> Self {
        Self {
            min_resolved: p.min_binary_items,
            require_brier_skill: p.require_brier_skill,
            max_log_score: p.max_log_score,
            log_clip: LOG_CLIP,
        }
    }

    fn validate(&self) -> Result<(), RecalibrationError> {
        if self.min_resolved == 0 {
            return Err(RecalibrationError::BadPolicy {
                field: "min_resolved",
                reason: "must be at least 1; the bars need items to judge".into(),
            });
        }
        if !(self.max_log_score.is_finite() && self.max_log_score > 0.0) {
            return Err(RecalibrationError::BadPolicy {
                field: "max_log_score",
                reason: format!("{} must be a positive number of nats", self.max_log_score),
            });
        }
        if !(0.0..0.5).contains(&self.log_clip) {
            return Err(RecalibrationError::BadPolicy {
                field: "log_clip",
                reason: format!("{} must be in [0, 0.5)", self.log_clip),
            });
        }
        Ok(())
    }
}

impl Default for RecalibrationPolicy {
    fn default() -> Self {
        Self::from_admission(&AdmissionPolicy::default())
    }
}

/// Scores over a set of resolved items.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrackScores {
    pub count: usize,
    /// Items whose resolved truth was "yes".
    pub yes: usize,
    pub brier: f64,
    pub base_rate_brier: f64,
    /// Clipped log score in nats.
    pub log_score: f64,
}

/// Scores of `items`; `None` when there are none.
pub fn score(
    items: &[ResolvedItem],
    log_clip: f64,
) -> Result<Option<TrackScores>, RecalibrationError> {
    if items.is_empty() {
        return Ok(None);
    }
    for it in items {
        it.validate()?;
    }
    let forecasts: Vec<f64> = items.iter().map(|i| i.probability).collect();
    let outcomes: Vec<bool> = items.iter().map(|i| i.outcome).collect();
    let log = log_score(&forecasts, &outcomes, LogClip::Clamp(log_clip))?.ok_or_else(|| {
        RecalibrationError::BadPolicy {
            field: "log_clip",
            reason: "0 lets a certain, wrong forecast make the score infinite; use 0.01".into(),
        }
    })?;
    Ok(Some(TrackScores {
        count: items.len(),
        yes: outcomes.iter().filter(|&&o| o).count(),
        brier: brier_score(&forecasts, &outcomes)?,
        base_rate_brier: base_rate_brier(&outcomes)?,
        log_score: log,
    }))
}

/// One failed bar, with what was measured and what is required.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedBar {
    /// `brier_skill` or `log_score` (the admission bars' names).
    pub bar: String,
    pub observed: f64,
    pub required: String,
    pub message: String,
}

/// The bars applied to a window of resolved items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assessment {
    /// Items in the window.
    pub count: usize,
    pub scores: Option<TrackScores>,
    /// False below `min_resolved` items: nothing is judged yet.
    pub assessed: bool,
    /// False when every outcome in the window is the same, so no forecast short of
    /// certainty beats the base rate and the Brier bar says nothing.
    pub brier_bar_assessed: bool,
    pub failed: Vec<FailedBar>,
    pub flagged: bool,
}

/// Apply the bars to `items` (the current window).
pub fn assess(
    policy: &RecalibrationPolicy,
    items: &[ResolvedItem],
) -> Result<Assessment, RecalibrationError> {
    policy.validate()?;
    let scores = score(items, policy.log_clip)?;
    let mut failed = Vec::new();
    let assessed = items.len() >= policy.min_resolved;
    let mut brier_bar_assessed = false;
    if let (true, Some(s)) = (assessed, scores) {
        brier_bar_assessed = policy.require_brier_skill && s.yes > 0 && s.yes < s.count;
        if brier_bar_assessed && s.brier.partial_cmp(&s.base_rate_brier) != Some(Ordering::Less) {
            failed.push(FailedBar {
                bar: "brier_skill".into(),
                observed: s.brier,
                required: format!("< {:.4} (base-rate Brier)", s.base_rate_brier),
                message: format!(
                    "Brier {:.4} on {} resolved items does not beat always forecasting their base rate ({:.4})",
                    s.brier, s.count, s.base_rate_brier
                ),
            });
        }
        if s.log_score.partial_cmp(&policy.max_log_score) != Some(Ordering::Less) {
            failed.push(FailedBar {
                bar: "log_score".into(),
                observed: s.log_score,
                required: format!("< {:.4}", policy.max_log_score),
                message: format!(
                    "log score {:.4} nats on {} resolved items is no better than answering 0.5 everywhere ({:.4})",
                    s.log_score, s.count, policy.max_log_score
                ),
            });
        }
    }
    Ok(Assessment {
        count: items.len(),
        scores,
        assessed,
        brier_bar_assessed,
        flagged: !failed.is_empty(),
        failed,
    })
}

/// Why and when an arbiter was flagged for re-examination.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flag {
    /// The resolution whose item tipped the window over a bar.
    pub resolved_by: Resolution,
    pub assessment: Assessment,
}

/// An arbiter's post-admission track record: every resolved item (history is never
/// dropped), where the current window starts, the latest assessment and the flag.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrackRecord {
    pub items: Vec<ResolvedItem>,
    /// Index of the first item of the current window (items after the latest exam).
    #[serde(default)]
    pub window_start: usize,
    /// The bars applied to the current window after the latest change.
    #[serde(default)]
    pub assessment: Option<Assessment>,
    /// Set when a bar failed; cleared only by a re-exam.
    #[serde(default)]
    pub flag: Option<Flag>,
}

impl TrackRecord {
    /// Nothing recorded (lets an arbiter row without a track record serialise as before).
    pub fn is_empty(&self) -> bool {
        self.items.is_empty() && self.window_start == 0 && self.flag.is_none()
    }

    pub fn is_flagged(&self) -> bool {
        self.flag.is_some()
    }

    /// Items after the latest exam.
    pub fn window(&self) -> &[ResolvedItem] {
        self.items.get(self.window_start..).unwrap_or(&[])
    }

    /// Adds an item. Returns `Ok(false)` and changes nothing when the motion was already
    /// scored: its first resolution stands, as a verdict does (SPEC 3.7: later events add
    /// to the history, they never rewrite it).
    pub fn record(&mut self, item: ResolvedItem) -> Result<bool, RecalibrationError> {
        item.validate()?;
        if self.items.iter().any(|i| i.motion_id == item.motion_id) {
            return Ok(false);
        }
        self.items.push(item);
        Ok(true)
    }

    /// Re-applies the bars to the window. Returns `true` when this call raised the flag.
    /// An already flagged record stays flagged whatever the new items say.
    pub fn reassess(
        &mut self,
        policy: &RecalibrationPolicy,
        by: &Resolution,
    ) -> Result<bool, RecalibrationError> {
        let a = assess(policy, self.window())?;
        let raise = a.flagged && self.flag.is_none();
        if raise {
            self.flag = Some(Flag {
                resolved_by: by.clone(),
                assessment: a.clone(),
            });
        }
        self.assessment = Some(a);
        Ok(raise)
    }

    /// A new exam: the flag is cleared and a new window starts; the items stay.
    pub fn restart_after_exam(&mut self) {
        self.window_start = self.items.len();
        self.flag = None;
        self.assessment = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(n: usize, p: f64, o: bool) -> ResolvedItem {
        ResolvedItem {
            motion_id: format!("m{n}"),
            probability: p,
            outcome: o,
            resolved_by: Resolution {
                motion_id: format!("r{n}"),
                kind: ResolutionKind::SourceVerified,
            },
        }
    }

    fn by() -> Resolution {
        Resolution {
            motion_id: "r".into(),
            kind: ResolutionKind::Appeal,
        }
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }

    #[test]
    fn scores_by_hand() {
        // p = 0.9, 0.2, 0.6 on outcomes yes, no, no.
        // Brier = (0.01 + 0.04 + 0.36) / 3 = 0.1366..; base rate 1/3: (1/3)(2/3) = 2/9;
        // log = -(ln 0.9 + ln 0.8 + ln 0.4) / 3.
        let items = [item(1, 0.9, true), item(2, 0.2, false), item(3, 0.6, false)];
        let s = score(&items, 0.01).unwrap().unwrap();
        assert_eq!((s.count, s.yes), (3, 1));
        close(s.brier, 0.41 / 3.0);
        close(s.base_rate_brier, 2.0 / 9.0);
        close(
            s.log_score,
            -(0.9f64.ln() + 0.8f64.ln() + 0.4f64.ln()) / 3.0,
        );
        // Clipping: a certain, wrong forecast costs ln(100), not infinity.
        let s = score(&[item(1, 0.0, true)], 0.01).unwrap().unwrap();
        close(s.log_score, 100f64.ln());
        assert_eq!(score(&[], 0.01).unwrap(), None);
    }

    fn policy(min: usize) -> RecalibrationPolicy {
        RecalibrationPolicy {
            min_resolved: min,
            ..RecalibrationPolicy::default()
        }
    }

    #[test]
    fn default_policy_is_the_admission_bars() {
        let p = RecalibrationPolicy::default();
        assert_eq!(p.min_resolved, 30);
        assert!(p.require_brier_skill);
        close(p.max_log_score, std::f64::consts::LN_2);
        close(p.log_clip, 0.01);
    }

    #[test]
    fn nothing_is_judged_below_the_minimum() {
        // Three confident misses: terrible, but three items are noise.
        let items: Vec<_> = (0..3).map(|n| item(n, 0.95, n == 0)).collect();
        let a = assess(&policy(4), &items).unwrap();
        assert!(!a.assessed && !a.flagged && a.failed.is_empty());
        assert_eq!(a.count, 3);
    }

    #[test]
    fn overconfident_arbiter_fails_both_bars() {
        // 0.9 on four items, two yes and two no: Brier (2*0.01 + 2*0.81)/4 = 0.41 >= 0.25;
        // log = -(2 ln 0.9 + 2 ln 0.1)/4 = 1.2040 >= ln 2.
        let items = [
            item(1, 0.9, true),
            item(2, 0.9, true),
            item(3, 0.9, false),
            item(4, 0.9, false),
        ];
        let a = assess(&policy(4), &items).unwrap();
        assert!(a.assessed && a.brier_bar_assessed && a.flagged);
        let bars: Vec<_> = a.failed.iter().map(|f| f.bar.as_str()).collect();
        assert_eq!(bars, ["brier_skill", "log_score"]);
        close(a.failed[0].observed, 0.41);
        close(a.failed[1].observed, -(0.9f64.ln() + 0.1f64.ln()) / 2.0);
    }

    #[test]
    fn discriminating_arbiter_passes() {
        // 0.8 on yes items and 0.3 on no items: Brier (2*0.04 + 2*0.09)/4 = 0.065 < 0.25;
        // log = -(2 ln 0.8 + 2 ln 0.7)/4 = 0.2899 < ln 2.
        let items = [
            item(1, 0.8, true),
            item(2, 0.8, true),
            item(3, 0.3, false),
            item(4, 0.3, false),
        ];
        let a = assess(&policy(4), &items).unwrap();
        assert!(a.assessed && !a.flagged, "{a:?}");
        close(a.scores.unwrap().brier, 0.065);
    }

    #[test]
    fn constant_forecast_never_beats_the_base_rate() {
        // Always 0.5 on two yes and two no: Brier 0.25 = base rate, log = ln 2 exactly.
        let items: Vec<_> = (0..4).map(|n| item(n, 0.5, n % 2 == 0)).collect();
        let a = assess(&policy(4), &items).unwrap();
        let bars: Vec<_> = a.failed.iter().map(|f| f.bar.as_str()).collect();
        assert_eq!(bars, ["brier_skill", "log_score"]);
    }

    #[test]
    fn brier_bar_is_not_assessed_when_every_outcome_agrees() {
        // All yes at 0.8: base-rate Brier 0 cannot be beaten; the log bar (0.2231) passes.
        let items: Vec<_> = (0..4).map(|n| item(n, 0.8, true)).collect();
        let a = assess(&policy(4), &items).unwrap();
        assert!(a.assessed && !a.brier_bar_assessed && !a.flagged, "{a:?}");
        // The same window at 0.3 fails the log bar alone: -ln 0.3 = 1.2040.
        let items: Vec<_> = (0..4).map(|n| item(n, 0.3, true)).collect();
        let a = assess(&policy(4), &items).unwrap();
        assert_eq!(a.failed.len(), 1);
        assert_eq!(a.failed[0].bar, "log_score");
        close(a.failed[0].observed, -(0.3f64.ln()));
    }

    #[test]
    fn bad_items_and_policies_are_refused_with_the_fix() {
        let mut r = TrackRecord::default();
        let e = r.record(item(1, 1.2, true)).unwrap_err();
        assert!(matches!(
            e,
            RecalibrationError::ProbabilityOutOfRange { .. }
        ));
        assert!(e.to_string().contains("[0, 1]"));
        assert!(r.record(item(1, f64::NAN, true)).is_err());
        let mut own = item(1, 0.7, true);
        own.resolved_by.motion_id = own.motion_id.clone();
        let e = r.record(own).unwrap_err();
        assert!(
            matches!(e, RecalibrationError::SelfResolution { .. }),
            "{e}"
        );
        assert!(e.to_string().contains("not a resolved outcome"));
        let mut unnamed = item(1, 0.7, true);
        unnamed.motion_id = " ".into();
        assert!(matches!(
            r.record(unnamed),
            Err(RecalibrationError::EmptyMotionId { field: "motion_id" })
        ));
        assert!(r.items.is_empty(), "refused items change nothing");
        for bad in [
            policy(0),
            RecalibrationPolicy {
                max_log_score: f64::NAN,
                ..policy(1)
            },
            RecalibrationPolicy {
                log_clip: 0.5,
                ..policy(1)
            },
        ] {
            assert!(matches!(
                assess(&bad, &[item(1, 0.5, true)]),
                Err(RecalibrationError::BadPolicy { .. })
            ));
        }
    }

    #[test]
    fn a_motion_is_scored_once_and_its_first_resolution_stands() {
        let mut r = TrackRecord::default();
        assert!(r.record(item(1, 0.7, true)).unwrap());
        assert!(!r.record(item(1, 0.7, false)).unwrap());
        assert_eq!(r.items.len(), 1);
        assert!(r.items[0].outcome);
    }

    #[test]
    fn flag_is_sticky_until_a_reexam_which_keeps_the_history() {
        let p = policy(4);
        let mut r = TrackRecord::default();
        for n in 0..3 {
            r.record(item(n, 0.9, n % 2 == 0)).unwrap();
            assert!(!r.reassess(&p, &by()).unwrap());
        }
        r.record(item(3, 0.9, false)).unwrap();
        assert!(
            r.reassess(&p, &by()).unwrap(),
            "the fourth item crosses the bar"
        );
        assert!(r.is_flagged());
        assert_eq!(r.flag.as_ref().unwrap().resolved_by, by());
        // Good items afterwards do not lift it, and raising it again reports nothing new.
        for n in 4..20 {
            r.record(item(n, if n % 2 == 0 { 0.99 } else { 0.01 }, n % 2 == 0))
                .unwrap();
            assert!(!r.reassess(&p, &by()).unwrap());
        }
        assert!(r.is_flagged());
        r.restart_after_exam();
        assert!(!r.is_flagged());
        assert_eq!(r.items.len(), 20, "history is kept");
        assert!(r.window().is_empty());
        r.record(item(20, 0.8, true)).unwrap();
        assert_eq!(r.window().len(), 1);
        assert!(!r.reassess(&p, &by()).unwrap());
    }

    #[test]
    fn serde_round_trip_and_empty_default() {
        let mut r = TrackRecord::default();
        assert!(r.is_empty());
        r.record(item(1, 0.25, false)).unwrap();
        r.reassess(&policy(1), &by()).unwrap();
        let back: TrackRecord = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        // An old row without the newer fields still loads.
        let old: TrackRecord = serde_json::from_str(r#"{"items": []}"#).unwrap();
        assert!(old.is_empty());
    }
}
