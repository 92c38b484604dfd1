//! Scoring the bias probes: does an arbiter's answer to one binary question move when only
//! its presentation moves? Formulas and thresholds in docs/CALIBRATION.md, "Bias probes and
//! a committed answer key".
//!
//! A probe group ([`crate::exam::ProbeGroup`]) asks one question several ways: the base, the
//! two sides in the other order, with irrelevant padding, and with a sentence stating a
//! consequence of the verdict. The gold is the same for all of them, so an arbiter that
//! judges content answers them alike, and each difference measures one bias:
//!
//! * **order flips**: share of (base, order_swapped) pairs whose thresholded decisions
//!   differ (position bias, as in LLM-as-judge studies where swapping the candidates' order
//!   changes the verdict);
//! * **padding shift**: mean `|p_padded − p_base|` (verbosity: length that carries no
//!   argument moves the probability);
//! * **consequence shift**: mean `p_consequence − p_base`, signed, because the exam's
//!   consequence sentences all state a cost of answering yes (docs), so an arbiter swayed by
//!   stakes rather than content drifts one way and the mean does not cancel.
//!
//! Two measures of plain correctness sit beside them: accuracy on the objective subset and
//! Cohen's kappa between decisions and gold with a 95% interval
//! ([`crate::agreement::cohen_kappa_interval`], the large-sample standard error). Both are
//! over the exam's distinct questions (items without a probe and the base of each group):
//! the variants repeat a question, and counting them would narrow the interval without
//! adding information.
//!
//! Missing answers are never dropped silently: unanswered binary items are listed, and each
//! measure lists the groups whose pair it could not form. The admission bars
//! ([`crate::admission::assess_with_probes`]) refuse to judge a bias on an incomplete set of
//! pairs, so skipping a variant cannot hide a bias.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::agreement::{KappaEstimate, cohen_kappa_interval};
use crate::error::CalibrationError;
use crate::exam::{Exam, Gold, LineError, ProbeGroup, ProbeVariant};
use crate::exam_scoring::{Answer, AnswerValue};

/// A probability above this is a yes, below it a no; exactly this is no decision.
pub const DECISION_THRESHOLD: f64 = 0.5;

/// A binary answer thresholded at [`DECISION_THRESHOLD`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    No,
    Yes,
    /// Exactly 0.5, as in the prior check's votes (docs section 5). It never agrees with
    /// gold, and a pair of which one side is undecided and the other decided is a flip.
    Undecided,
}

impl Decision {
    pub fn of(p: f64) -> Self {
        if p > DECISION_THRESHOLD {
            Decision::Yes
        } else if p < DECISION_THRESHOLD {
            Decision::No
        } else {
            Decision::Undecided
        }
    }

    /// Category index for kappa: no 0, yes 1, undecided 2 (gold only uses 0 and 1).
    fn index(self) -> usize {
        match self {
            Decision::No => 0,
            Decision::Yes => 1,
            Decision::Undecided => 2,
        }
    }
}

/// The pairs of one variant with its group's base.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantPairs {
    pub variant: ProbeVariant,
    /// Asked groups that have this variant.
    pub groups: usize,
    /// Groups whose base and variant were both answered; every statistic below is over
    /// these.
    pub pairs: usize,
    /// Pairs whose decisions differ.
    pub flips: usize,
    /// `flips / pairs`; `None` without pairs.
    pub flip_rate: Option<f64>,
    /// Mean of `p_variant − p_base`.
    pub mean_signed_shift: Option<f64>,
    /// Mean of `|p_variant − p_base|`.
    pub mean_absolute_shift: Option<f64>,
    /// Groups whose base or variant has no answer, in exam order.
    pub unanswered: Vec<String>,
}

impl VariantPairs {
    fn new(variant: ProbeVariant) -> Self {
        Self {
            variant,
            groups: 0,
            pairs: 0,
            flips: 0,
            flip_rate: None,
            mean_signed_shift: None,
            mean_absolute_shift: None,
            unanswered: Vec::new(),
        }
    }
}

/// Accuracy on the objective subset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectiveAccuracy {
    /// Objective questions asked.
    pub asked: usize,
    /// Of those, answered.
    pub answered: usize,
    /// Answered with the gold's decision (an undecided answer is never correct).
    pub correct: usize,
    /// `correct / answered`; `None` when none was answered.
    pub accuracy: Option<f64>,
}

/// Everything the probes measure for one arbiter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeScores {
    /// The content hash of the exam the probes came from.
    pub exam_hash: String,
    /// Binary items asked, variants included.
    pub asked_binary: usize,
    pub answered_binary: usize,
    /// Asked binary items without a probability answer, in exam order.
    pub missing: Vec<String>,
    /// Answers to items that were not asked (a caller passing the wrong draw), in the
    /// order given. They are not scored.
    pub not_asked: Vec<String>,
    pub order_swapped: VariantPairs,
    pub padded: VariantPairs,
    pub consequence: VariantPairs,
    pub objective: ObjectiveAccuracy,
    /// Decisions against gold over the answered distinct questions; `None` when none was
    /// answered.
    pub kappa: Option<KappaEstimate>,
}

impl ProbeScores {
    /// The order-flip rate (pairs of base and order_swapped).
    pub fn order_flip_rate(&self) -> Option<f64> {
        self.order_swapped.flip_rate
    }

    /// Mean absolute padding shift.
    pub fn padding_shift(&self) -> Option<f64> {
        self.padded.mean_absolute_shift
    }

    /// Mean signed consequence shift.
    pub fn consequence_shift(&self) -> Option<f64> {
        self.consequence.mean_signed_shift
    }
}

/// Why probe scoring refused its input.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ProbeError {
    #[error("asked item `{0}` is not in the exam: ask only the exam's items")]
    UnknownItem(String),
    #[error(
        "probe group `{group}` was asked in part (`{left_out}` was not): ask all of a group's variants or none"
    )]
    SplitGroup { group: String, left_out: String },
    #[error("the answer to `{item}` is {value}, not a probability: use a number in [0, 1]")]
    NotAProbability { item: String, value: f64 },
    #[error("the exam's probe groups do not check: {0}")]
    Exam(#[from] LineError),
    #[error("internal scoring error: {0}")]
    Scoring(#[from] CalibrationError),
}

/// Score the probes of `exam` from one arbiter's `answers`.
///
/// `asked` is the arbiter's draw ([`crate::exam_draw::draw_items`]); `None` means every
/// item of the exam was asked. A draw must hold each probe group whole. Only probability
/// answers count; an answer of another type to a binary item counts as missing, as in
/// [`crate::exam_scoring::score_arbiter`]. A probability outside [0, 1] (NaN included) is
/// refused, so no statistic is NaN.
pub fn score_probes(
    exam: &Exam,
    asked: Option<&[String]>,
    answers: &[&Answer],
) -> Result<ProbeScores, ProbeError> {
    let groups = exam.probe_groups()?;
    let asked: Option<HashSet<&str>> = match asked {
        None => None,
        Some(ids) => {
            if let Some(unknown) = ids.iter().find(|id| exam.item(id).is_none()) {
                return Err(ProbeError::UnknownItem(unknown.clone()));
            }
            Some(ids.iter().map(String::as_str).collect())
        }
    };
    let is_asked = |id: &str| asked.as_ref().is_none_or(|set| set.contains(id));
    let asked_groups = whole_asked_groups(&groups, &is_asked)?;

    let mut probability: HashMap<&str, f64> = HashMap::new();
    let mut not_asked = Vec::new();
    for a in answers {
        if !is_asked(&a.item) {
            not_asked.push(a.item.clone());
            continue;
        }
        if let AnswerValue::Probability(p) = a.value {
            if !(0.0..=1.0).contains(&p) {
                return Err(ProbeError::NotAProbability {
                    item: a.item.clone(),
                    value: p,
                });
            }
            // The first answer stands, as in exam_scoring.
            probability.entry(a.item.as_str()).or_insert(p);
        }
    }

    let mut asked_binary = 0;
    let mut missing = Vec::new();
    let mut objective = ObjectiveAccuracy {
        asked: 0,
        answered: 0,
        correct: 0,
        accuracy: None,
    };
    let (mut decisions, mut golds) = (Vec::new(), Vec::new());
    for item in &exam.items {
        let Gold::Binary(gold) = item.gold else {
            continue;
        };
        if !is_asked(&item.id) {
            continue;
        }
        asked_binary += 1;
        let answer = probability.get(item.id.as_str()).copied();
        if answer.is_none() {
            missing.push(item.id.clone());
        }
        let distinct = item
            .probe
            .as_ref()
            .is_none_or(|p| p.variant == ProbeVariant::Base);
        if !distinct {
            continue;
        }
        if item.objective {
            objective.asked += 1;
        }
        let Some(p) = answer else {
            continue;
        };
        let decision = Decision::of(p);
        let gold_decision = if gold { Decision::Yes } else { Decision::No };
        decisions.push(decision.index());
        golds.push(gold_decision.index());
        if item.objective {
            objective.answered += 1;
            objective.correct += usize::from(decision == gold_decision);
        }
    }
    objective.accuracy =
        (objective.answered > 0).then(|| objective.correct as f64 / objective.answered as f64);
    let kappa = if decisions.is_empty() {
        None
    } else {
        Some(cohen_kappa_interval(&decisions, &golds, 3)?)
    };

    let pairs = |variant| variant_pairs(variant, &asked_groups, &probability);
    Ok(ProbeScores {
        exam_hash: exam.content_hash.clone(),
        asked_binary,
        answered_binary: asked_binary - missing.len(),
        missing,
        not_asked,
        order_swapped: pairs(ProbeVariant::OrderSwapped),
        padded: pairs(ProbeVariant::Padded),
        consequence: pairs(ProbeVariant::Consequence),
        objective,
        kappa,
    })
}

/// The groups that were asked, refusing a group asked in part.
fn whole_asked_groups<'a>(
    groups: &'a [ProbeGroup],
    is_asked: &dyn Fn(&str) -> bool,
) -> Result<Vec<&'a ProbeGroup>, ProbeError> {
    let mut whole = Vec::new();
    for g in groups {
        let (inside, outside): (Vec<&str>, Vec<&str>) = g.members().partition(|id| is_asked(id));
        match (inside.is_empty(), outside.first()) {
            (true, _) => {}
            (false, None) => whole.push(g),
            (false, Some(left_out)) => {
                return Err(ProbeError::SplitGroup {
                    group: g.id.clone(),
                    left_out: (*left_out).to_string(),
                });
            }
        }
    }
    Ok(whole)
}

fn variant_pairs(
    variant: ProbeVariant,
    groups: &[&ProbeGroup],
    probability: &HashMap<&str, f64>,
) -> VariantPairs {
    let mut out = VariantPairs::new(variant);
    let (mut signed, mut absolute) = (0.0, 0.0);
    for g in groups {
        let Some(member) = g.member(variant) else {
            continue;
        };
        out.groups += 1;
        let (Some(&base), Some(&other)) =
            (probability.get(g.base.as_str()), probability.get(member))
        else {
            out.unanswered.push(g.id.clone());
            continue;
        };
        out.pairs += 1;
        out.flips += usize::from(Decision::of(base) != Decision::of(other));
        signed += other - base;
        absolute += (other - base).abs();
    }
    if out.pairs > 0 {
        let n = out.pairs as f64;
        out.flip_rate = Some(out.flips as f64 / n);
        out.mean_signed_shift = Some(signed / n);
        out.mean_absolute_shift = Some(absolute / n);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exam::load_exam;

    /// Two groups (one yes, one no) with all four variants, one plain objective item and
    /// one plain judgement item.
    fn exam() -> Exam {
        let mut text = String::from(r#"{"exam":"t","version":"1","quantiles":[0.05,0.5,0.95]}"#);
        for (group, gold) in [("g1", true), ("g2", false)] {
            for variant in ["base", "order_swapped", "padded", "consequence"] {
                let objective = if variant == "base" {
                    r#","objective":true"#
                } else {
                    ""
                };
                text.push_str(&format!(
                    "\n{{\"id\":\"{group}-{variant}\",\"kind\":\"binary\",\"question\":\"q\",\"gold\":{gold},\"source\":\"s\",\"probe\":{{\"group\":\"{group}\",\"variant\":\"{variant}\"}}{objective}}}"
                ));
            }
        }
        text.push_str(
            "\n{\"id\":\"plain-yes\",\"kind\":\"binary\",\"question\":\"q\",\"gold\":true,\"source\":\"s\",\"objective\":true}",
        );
        text.push_str(
            "\n{\"id\":\"plain-no\",\"kind\":\"binary\",\"question\":\"q\",\"gold\":false,\"source\":\"s\"}",
        );
        load_exam(&text).unwrap()
    }

    fn answers(exam: &Exam, p: impl Fn(&str) -> Option<f64>) -> Vec<Answer> {
        exam.items
            .iter()
            .filter_map(|i| {
                p(&i.id).map(|x| Answer {
                    arbiter: "a".into(),
                    item: i.id.clone(),
                    value: AnswerValue::Probability(x),
                    line: i.line,
                })
            })
            .collect()
    }

    fn score(exam: &Exam, answers: &[Answer]) -> ProbeScores {
        let refs: Vec<&Answer> = answers.iter().collect();
        score_probes(exam, None, &refs).unwrap()
    }

    #[test]
    fn shifts_are_measured_against_the_base() {
        let exam = exam();
        // g1 (gold yes): base 0.8, swapped 0.4 (a flip), padded 0.9, consequence 0.6.
        // g2 (gold no): base 0.2, swapped 0.7 (a flip), padded 0.1, consequence 0.1.
        let given = answers(&exam, |id| {
            Some(match id {
                "g1-base" => 0.8,
                "g1-order_swapped" => 0.4,
                "g1-padded" => 0.9,
                "g1-consequence" => 0.6,
                "g2-base" => 0.2,
                "g2-order_swapped" => 0.7,
                "g2-padded" => 0.1,
                "g2-consequence" => 0.1,
                "plain-yes" => 0.7,
                _ => 0.4,
            })
        });
        let s = score(&exam, &given);
        assert_eq!((s.asked_binary, s.answered_binary), (10, 10));
        assert!(s.missing.is_empty());
        assert_eq!((s.order_swapped.pairs, s.order_swapped.flips), (2, 2));
        assert_eq!(s.order_flip_rate(), Some(1.0));
        assert_eq!((s.padded.flips, s.consequence.flips), (0, 0));
        // ((0.4 - 0.8) + (0.7 - 0.2)) / 2 = 0.05
        assert!((s.order_swapped.mean_signed_shift.unwrap() - 0.05).abs() < 1e-12);
        assert!((s.padding_shift().unwrap() - 0.1).abs() < 1e-12);
        // ((0.6 - 0.8) + (0.1 - 0.2)) / 2 = -0.15
        assert!((s.consequence_shift().unwrap() + 0.15).abs() < 1e-12);
        assert!((s.consequence.mean_absolute_shift.unwrap() - 0.15).abs() < 1e-12);
        // Objective: g1 (yes, 0.8 right), g2 (no, 0.2 right), plain-yes (0.7 right).
        assert_eq!(
            (s.objective.asked, s.objective.correct, s.objective.accuracy),
            (3, 3, Some(1.0))
        );
        // Kappa over the 4 distinct questions, all decided right.
        let k = s.kappa.unwrap();
        assert_eq!((k.items, k.kappa), (4, 1.0));
    }

    #[test]
    fn missing_answers_are_listed_and_break_pairs() {
        let exam = exam();
        let given = answers(&exam, |id| {
            (id != "g1-base" && id != "g2-padded").then_some(if id.starts_with("g2") {
                0.1
            } else {
                0.9
            })
        });
        let s = score(&exam, &given);
        assert_eq!(s.missing, ["g1-base", "g2-padded"]);
        assert_eq!(s.answered_binary, 8);
        // g1 has no base answer, so none of its pairs forms.
        assert_eq!(s.order_swapped.unanswered, ["g1"]);
        assert_eq!(s.order_swapped.pairs, 1);
        assert_eq!(s.padded.unanswered, ["g1", "g2"]);
        assert_eq!((s.padded.pairs, s.padded.mean_absolute_shift), (0, None));
        assert_eq!((s.objective.asked, s.objective.answered), (3, 2));
        assert_eq!(s.kappa.unwrap().items, 3);
    }

    #[test]
    fn an_undecided_answer_flips_against_a_decision_and_never_agrees() {
        let exam = exam();
        let given = answers(&exam, |id| match id {
            "g1-base" => Some(0.5),
            "g1-order_swapped" => Some(0.9),
            "g2-base" | "g2-order_swapped" => Some(0.5),
            _ => None,
        });
        let s = score(&exam, &given);
        assert_eq!((s.order_swapped.pairs, s.order_swapped.flips), (2, 1));
        assert_eq!(s.objective.correct, 0);
    }

    #[test]
    fn a_draw_must_hold_groups_whole() {
        let exam = exam();
        let given = answers(&exam, |_| Some(0.9));
        let refs: Vec<&Answer> = given.iter().collect();
        let asked: Vec<String> = ["g1-base", "g1-padded", "plain-no"]
            .map(String::from)
            .to_vec();
        assert!(matches!(
            score_probes(&exam, Some(&asked), &refs),
            Err(ProbeError::SplitGroup { ref group, ref left_out })
                if group == "g1" && left_out == "g1-order_swapped"
        ));
        let mut bad = given.clone();
        bad[0].value = AnswerValue::Probability(f64::NAN);
        let bad_refs: Vec<&Answer> = bad.iter().collect();
        assert!(matches!(
            score_probes(&exam, None, &bad_refs),
            Err(ProbeError::NotAProbability { .. })
        ));
        let asked = vec!["nope".to_string()];
        assert!(matches!(
            score_probes(&exam, Some(&asked), &refs),
            Err(ProbeError::UnknownItem(ref id)) if id == "nope"
        ));
        let asked: Vec<String> = [
            "g2-base",
            "g2-order_swapped",
            "g2-padded",
            "g2-consequence",
            "plain-no",
        ]
        .map(String::from)
        .to_vec();
        let s = score_probes(&exam, Some(&asked), &refs).unwrap();
        assert_eq!((s.asked_binary, s.order_swapped.groups), (5, 1));
        assert_eq!(s.not_asked.len(), 5);
    }
}
