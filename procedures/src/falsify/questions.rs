//! The panel questions a claim asks, worded so yes and no are the two answers, with only
//! refuters and forbidding content shown (persuasiveness creep never reaches a panel;
//! `seeds/truth-seeking-debate.txt`, "Anti-patterns").

use crate::panel::{AnswerShape, PanelQuestion, ShownItem};

use super::claim::{AttackRound, ClaimRun, Step};
use super::input::Role;
use super::script::{Script, attempt_key};

/// Seats added per escalation round and per deadlock retry.
pub const SEATS_PER_STEP: u32 = 2;

/// The question `claim` is asking now, if any.
pub fn question(claim: &ClaimRun, script: Option<&Script>) -> Option<PanelQuestion> {
    let (step, attempt, base) = claim.asking()?;
    let key = attempt_key(&base, attempt);
    let round = claim.rounds.len() as u32;
    let escalation = if step == Step::Form {
        0
    } else {
        round.saturating_sub(1)
    };
    Some(PanelQuestion {
        prompt: prompt(step).into(),
        items: items(claim, step),
        shape: AnswerShape::YesNo,
        extra_seats: SEATS_PER_STEP * (escalation + attempt - 1),
        exclude: if step == Step::Form {
            Vec::new()
        } else {
            earlier_panels(claim, round)
        },
        shuffle_items: false,
        expected: script.map(|s| s.expected(&key, &base)),
        key,
    })
}

/// Arbiters who judged an earlier round's attack too weak (its severity question): an
/// escalated round is judged by others, so the panel that found the attack weak does not
/// grade the stronger one. Only those seats are excluded, not every earlier seat, so a
/// small pool can still seat the wider panel (the machine falls back to the base size
/// when it cannot).
fn earlier_panels(claim: &ClaimRun, round: u32) -> Vec<String> {
    let mut ids: Vec<String> = claim
        .answers
        .iter()
        .filter(|a| a.round >= 1 && a.round < round && a.step == Step::Severe)
        .flat_map(|a| a.rulings.iter().map(|r| r.arbiter_id.clone()))
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

fn prompt(step: Step) -> &'static str {
    match step {
        Step::Form => {
            "Does the form below forbid something an observation or computation could contradict, while staying faithful to the claim as stated? Judge forbidding content only, not how well anything is argued."
        }
        Step::Retreat => {
            "Under cross-examination, did the defender change the meaning of a term in the form, or retreat to a weaker claim, to escape the attack? Yes means a definitional retreat."
        }
        Step::Shield => {
            "Did the defender deflect the refuter with \"it's only a model\" (or \"of course it's idealized\") while the refuter targets a load-bearing idealization of the form? Yes means a model-shield."
        }
        Step::Refuter => {
            "Is the critic's refuter, of the type it committed to before arguing, valid against the form? Only the refuter and the forbidding content count; ignore rhetoric."
        }
        Step::Severe => {
            "The form survived this attack. If the claim were false, would this attack probably have caught it? Yes means the attack was severe; no means it was weak and a more severe round is needed."
        }
    }
}

fn items(claim: &ClaimRun, step: Step) -> Vec<ShownItem> {
    let mut out = vec![item("claim", &claim.text)];
    if let Some((statement, forbids)) = claim.forbidding() {
        out.push(item("form", statement));
        out.push(item("forbidden set", &bullets(forbids)));
    }
    let Some(round) = claim.current_round() else {
        return out;
    };
    if step == Step::Form {
        return out;
    }
    out.push(item(
        "refuter",
        &format!(
            "{} (committed before arguing): {}",
            round.refuter.label(),
            round.attack.as_ref().map_or("", |a| a.case.as_str())
        ),
    ));
    out.push(item(
        "critic cross-examination",
        &transcript(&claim.probes_for(Role::Critic), &round.critic_answers),
    ));
    out.push(defender_item(claim, round, step));
    if step == Step::Severe {
        out.push(item("earlier rounds", &earlier_rounds(claim)));
    }
    out
}

/// The defender's answers, struck from the refuter question after a model-shield.
fn defender_item(claim: &ClaimRun, round: &AttackRound, step: Step) -> ShownItem {
    if step == Step::Refuter && round.shield {
        return item(
            "defender cross-examination",
            "struck: the panel found a model-shield; the idealization is the claim under test, so the deflection does not save the form",
        );
    }
    let mut text = transcript(&claim.probes_for(Role::Defender), &round.defender_answers);
    if let Some(r) = &round.restated_claim {
        text.push_str(&format!("\n\nRestated claim offered: {r}"));
    }
    item("defender cross-examination", &text)
}

fn earlier_rounds(claim: &ClaimRun) -> String {
    let n = claim.rounds.len();
    if n <= 1 {
        return "none: this is the first attack".into();
    }
    claim.rounds[..n - 1]
        .iter()
        .map(|r| {
            format!(
                "round {}: {} by {}, rated {}",
                r.number,
                r.refuter.label(),
                r.critic,
                r.severity.label()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn transcript(probes: &[String], answers: &[String]) -> String {
    probes
        .iter()
        .zip(answers)
        .map(|(q, a)| format!("Q: {q}\nA: {a}"))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn bullets(list: &[String]) -> String {
    list.iter()
        .map(|f| format!("- {f}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn item(label: &str, text: &str) -> ShownItem {
    ShownItem {
        label: label.into(),
        text: text.into(),
    }
}
