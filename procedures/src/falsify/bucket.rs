//! The classification a claim ends in and the seed's per-claim record
//! (`seeds/truth-seeking-debate.txt`, "Judge" and "Output").

use serde::{Deserialize, Serialize};

use crate::panel::{Finding, PanelOutcome, Prior, Tally, tallies};

use super::claim::{ClaimRun, Step};
use super::input::{FormReport, RefuterKind};

/// Where a claim ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Bucket {
    /// No forbidding form, or a valid empty-forbidden-set refuter.
    Unfalsifiable,
    /// A valid refuter, or a definitional retreat.
    Broken,
    /// Survived an attack the panel rated severe.
    Corroborated,
    /// Survived only attacks the panel rated weak, up to the ladder's top.
    Untested,
    /// A question stayed without cross-prior agreement after every retry.
    Deadlocked,
}

impl Bucket {
    pub fn name(self) -> &'static str {
        match self {
            Bucket::Unfalsifiable => "UNFALSIFIABLE",
            Bucket::Broken => "BROKEN",
            Bucket::Corroborated => "CORROBORATED",
            Bucket::Untested => "UNTESTED",
            Bucket::Deadlocked => "DEADLOCKED",
        }
    }
}

/// The panel's rating of an attack (Mayo's severity, as the seed states it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The attack never reached the severity question (refuted, retreated, pending).
    NotRated,
    Severe,
    Weak,
    /// The severity question deadlocked on every attempt.
    Undetermined,
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Severity::NotRated => "not rated",
            Severity::Severe => "severe",
            Severity::Weak => "weak",
            Severity::Undetermined => "undetermined (deadlocked)",
        }
    }
}

/// A claim's bucket, the rule that put it there and what is recorded with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub bucket: Bucket,
    pub rule: String,
    /// The refutation, the forbidden content that held, or why there is neither.
    pub record: String,
    /// The new claim a definitional retreat split off.
    pub successor: Option<String>,
}

/// The critic's commitment in one round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Committed {
    pub round: u32,
    pub critic: String,
    pub refuter: RefuterKind,
    pub severity: Severity,
}

/// One settled question's per-stance tallies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionTally {
    pub key: String,
    /// The motion that asked it, to look up why it deadlocked; left out of the JSON an
    /// advocate is shown.
    #[serde(skip)]
    pub motion_id: String,
    pub outcome: PanelOutcome,
    pub tallies: Vec<(Prior, Tally)>,
    /// Rulings against the outcome (all of them when deadlocked): arbiter, prior and
    /// rationale.
    pub dissent: Vec<Dissent>,
}

/// One dissenting ruling, kept whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dissent {
    pub arbiter_id: String,
    pub prior: Prior,
    pub yes: Option<bool>,
    pub rationale: String,
}

/// The seed's DebateBucketing record for one claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DebateBucketing {
    pub claim: String,
    pub text: String,
    pub split_from: Option<String>,
    /// The most-falsifiable form, or "none — UNFALSIFIABLE".
    pub form: String,
    pub forbids: Vec<String>,
    pub committed_refuters: Vec<Committed>,
    pub cross_exam_findings: Vec<Finding>,
    /// The last round's severity.
    pub severity: Severity,
    /// `None` while the claim is still in play.
    pub bucket: Option<Bucket>,
    pub rule: Option<String>,
    pub recorded: Option<String>,
    pub questions: Vec<QuestionTally>,
}

impl DebateBucketing {
    pub fn of(c: &ClaimRun) -> DebateBucketing {
        let (form, forbids) = match &c.form {
            Some(FormReport::Forbidding { statement, forbids }) => {
                (statement.clone(), forbids.clone())
            }
            Some(FormReport::None { .. }) => ("none — UNFALSIFIABLE".into(), Vec::new()),
            None => ("(not yet given)".into(), Vec::new()),
        };
        DebateBucketing {
            claim: c.id.clone(),
            text: c.text.clone(),
            split_from: c.split_from.clone(),
            form,
            forbids,
            committed_refuters: c
                .rounds
                .iter()
                .map(|r| Committed {
                    round: r.number,
                    critic: r.critic.clone(),
                    refuter: r.refuter,
                    severity: r.severity,
                })
                .collect(),
            cross_exam_findings: cross_exam_findings(c),
            severity: c.rounds.last().map_or(Severity::NotRated, |r| r.severity),
            bucket: c.outcome.as_ref().map(|o| o.bucket),
            rule: c.outcome.as_ref().map(|o| o.rule.clone()),
            recorded: c.outcome.as_ref().map(|o| o.record.clone()),
            questions: c.answers.iter().map(question_tally).collect(),
        }
    }
}

/// The panel's cross-examination answers as findings, plus every rule the claim's
/// inputs and settlements triggered.
fn cross_exam_findings(c: &ClaimRun) -> Vec<Finding> {
    let mut out: Vec<Finding> = c
        .answers
        .iter()
        .filter(|a| matches!(a.step, Step::Retreat | Step::Shield) && a.outcome == PanelOutcome::No)
        .map(|a| Finding {
            rule: match a.step {
                Step::Retreat => "falsify.no_retreat".into(),
                _ => "falsify.no_model_shield".into(),
            },
            at: format!("claim {} round {}", c.id, a.round),
            reason: match a.step {
                Step::Retreat => "the panel found no redefined term and no weaker claim".into(),
                _ => "the panel found no \"it's only a model\" deflection".into(),
            },
        })
        .collect();
    out.extend(c.findings.iter().cloned());
    out
}

fn question_tally(a: &super::claim::Answer) -> QuestionTally {
    let against = |yes: Option<bool>| match a.outcome {
        PanelOutcome::Yes => yes != Some(true),
        PanelOutcome::No => yes != Some(false),
        PanelOutcome::Deadlocked => true,
    };
    QuestionTally {
        key: a.key.clone(),
        motion_id: a.motion_id.clone(),
        outcome: a.outcome,
        tallies: tallies(&a.rulings),
        dissent: a
            .rulings
            .iter()
            .filter(|r| against(r.yes))
            .map(|r| Dissent {
                arbiter_id: r.arbiter_id.clone(),
                prior: r.prior,
                yes: r.yes,
                rationale: r.rationale.clone(),
            })
            .collect(),
    }
}
