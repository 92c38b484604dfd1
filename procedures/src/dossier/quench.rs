//! Quench by the panel: NOW / PREPARE / REJECT as three binary questions asked side by
//! side, a recommendation only when exactly one is accepted and the other two refused,
//! and the minority rulings kept whole as dissent (`seeds/spellweaver-crucible.txt`,
//! "Quench without crowning a winner"; docs/DOSSIER.md, "Quench").
//!
//! Side by side rather than in sequence: a sequence would ask NOW first and let its
//! refusal frame the rest; three independent questions give each option the same panel
//! footing, and a contradiction (two accepted) is a non-decision, not a tie-break.

use serde::{Deserialize, Serialize};

use crate::panel::{PanelOutcome, PanelRuling, Prior};

/// The synthesis vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Recommendation {
    Now,
    Prepare,
    Reject,
}

pub const OPTIONS: [Recommendation; 3] = [
    Recommendation::Now,
    Recommendation::Prepare,
    Recommendation::Reject,
];

impl Recommendation {
    pub fn name(self) -> &'static str {
        match self {
            Recommendation::Now => "NOW",
            Recommendation::Prepare => "PREPARE",
            Recommendation::Reject => "REJECT",
        }
    }

    pub fn key(self) -> &'static str {
        match self {
            Recommendation::Now => "quench/now",
            Recommendation::Prepare => "quench/prepare",
            Recommendation::Reject => "quench/reject",
        }
    }

    pub fn prompt(self) -> String {
        let meaning = match self {
            Recommendation::Now => "NOW: the owner should act on the question's proposal now",
            Recommendation::Prepare => {
                "PREPARE: not yet; the owner should prepare (close the named unknowns, meet the named conditions) and decide again"
            }
            Recommendation::Reject => "REJECT: the owner should not do it",
        };
        format!(
            "Should the recommendation be {meaning}, rather than either of the other two of NOW / PREPARE / REJECT? Judge the decision against the acceptance criteria and the evidence, not which position argued better; a missing branch is missing, not conceded. If you expect to be in the minority, end your rationale with 'would change if:' and the condition."
        )
    }
}

/// One settled attempt at an option's question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuenchAnswer {
    pub key: String,
    pub motion_id: String,
    pub attempt: u32,
    pub outcome: PanelOutcome,
    pub rulings: Vec<PanelRuling>,
}

/// An option's question: its attempts and, once settled, the final outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OptionState {
    pub option: Recommendation,
    pub attempt: u32,
    pub answers: Vec<QuenchAnswer>,
    pub settled: Option<PanelOutcome>,
}

/// What the Quench concluded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Synthesis {
    Recommend {
        option: Recommendation,
    },
    /// A valid outcome: no option reached cross-prior agreement alone.
    NonDecision {
        reason: String,
    },
}

/// One minority ruling, kept whole: never dropped by compression.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DissentRuling {
    pub key: String,
    pub option: Recommendation,
    pub arbiter_id: String,
    pub prior: Prior,
    pub organisation: String,
    pub model_family: Option<String>,
    pub yes: Option<bool>,
    pub probability_milli: u16,
    pub rationale: String,
}

impl OptionState {
    pub fn new(option: Recommendation) -> OptionState {
        OptionState {
            option,
            attempt: 1,
            answers: Vec::new(),
            settled: None,
        }
    }
}

/// The synthesis once every option is settled.
pub fn synthesis(options: &[OptionState]) -> Option<Synthesis> {
    if options.iter().any(|o| o.settled.is_none()) {
        return None;
    }
    let accepted: Vec<Recommendation> = options
        .iter()
        .filter(|o| o.settled == Some(PanelOutcome::Yes))
        .map(|o| o.option)
        .collect();
    let deadlocked: Vec<&str> = options
        .iter()
        .filter(|o| o.settled == Some(PanelOutcome::Deadlocked))
        .map(|o| o.option.name())
        .collect();
    Some(match (accepted.as_slice(), deadlocked.is_empty()) {
        ([one], true) => Synthesis::Recommend { option: *one },
        (_, false) => Synthesis::NonDecision {
            reason: format!(
                "the panel reached no cross-prior agreement on {} after every re-ask",
                deadlocked.join(", ")
            ),
        },
        ([], true) => Synthesis::NonDecision {
            reason: "the panel refused all three options".into(),
        },
        (many, true) => Synthesis::NonDecision {
            reason: format!(
                "the panel accepted {} together; they exclude each other, so nothing is recommended",
                many.iter()
                    .map(|o| o.name())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        },
    })
}

/// Every ruling against what the Quench settled (the seed's preserved dissent): a "no"
/// on an option the panel accepted, or a "yes" on one it refused, from any attempt at its
/// question. An option that ended deadlocked settled nothing to dissent from, and an
/// abstention takes no side; a ruling that agreed with the final answer in an attempt that
/// deadlocked is agreement, not dissent.
pub fn dissent(options: &[OptionState]) -> Vec<DissentRuling> {
    let mut out = Vec::new();
    for o in options {
        let settled = match o.settled {
            Some(PanelOutcome::Yes) => true,
            Some(PanelOutcome::No) => false,
            Some(PanelOutcome::Deadlocked) | None => continue,
        };
        for a in &o.answers {
            for r in &a.rulings {
                let against = r.yes == Some(!settled);
                if against {
                    out.push(DissentRuling {
                        key: a.key.clone(),
                        option: o.option,
                        arbiter_id: r.arbiter_id.clone(),
                        prior: r.prior,
                        organisation: r.organisation.clone(),
                        model_family: r.model_family.clone(),
                        yes: r.yes,
                        probability_milli: r.probability_milli,
                        rationale: r.rationale.clone(),
                    });
                }
            }
        }
    }
    out
}

/// The strongest surviving dissent: the minority ruling most confident against its
/// question's outcome, preferring the recommended option's question; ties by arbiter id.
pub fn strongest(
    dissent: &[DissentRuling],
    synthesis: Option<&Synthesis>,
) -> Option<DissentRuling> {
    let chosen = match synthesis {
        Some(Synthesis::Recommend { option }) => Some(*option),
        _ => None,
    };
    dissent
        .iter()
        .max_by(|a, b| {
            let rank = |d: &DissentRuling| {
                let confidence = match d.yes {
                    Some(true) => d.probability_milli,
                    Some(false) => 1000u16.saturating_sub(d.probability_milli),
                    None => 0,
                };
                (Some(d.option) == chosen, confidence)
            };
            rank(a)
                .cmp(&rank(b))
                .then_with(|| b.arbiter_id.cmp(&a.arbiter_id))
        })
        .cloned()
}

/// Conditions that would change the recommendation, as the dissenters stated them: the
/// text after "would change if" in a dissenting ruling. A dissent that states no condition
/// gives none (its reasons are shown with the dissent itself), so a supporter's rationale
/// can never pass as a condition.
pub fn conditions(dissent: &[DissentRuling]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for d in dissent.iter().filter(|d| d.yes.is_some()) {
        // ASCII lowering keeps byte offsets, so the index is valid in the original.
        let lower = d.rationale.to_ascii_lowercase();
        let Some(i) = lower.find("would change if") else {
            continue;
        };
        let c = d.rationale[i + "would change if".len()..]
            .trim_start_matches([':', ' '])
            .trim()
            .to_string();
        let line = format!(
            "{} ({} on {}): {c}",
            d.arbiter_id,
            prior(d.prior),
            d.option.name()
        );
        if !c.is_empty() && !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

fn prior(p: Prior) -> &'static str {
    match p {
        Prior::A => "prior A",
        Prior::B => "prior B",
        Prior::None => "no prior",
    }
}
