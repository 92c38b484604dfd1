//! The falsification start document (the debate-architect's brief): the claims, the
//! escalation ladder and, for simulation runs, the scripted answers
//! (docs/FALSIFY.md, "Start"; `seeds/truth-seeking-debate.txt`, "Execution").

use serde::{Deserialize, Serialize};

use crate::contract::{ContractError, decode};
use crate::panel::{Finding, ProcedureError, StartContext};

use super::script::Script;

/// Largest start document accepted, in bytes.
pub const MAX_START_BYTES: usize = 256 * 1024;
/// Most claims a start document may bring.
pub const MAX_CLAIMS: usize = 16;
/// Most claims a run may hold, counting those split off by definitional retreat.
pub const MAX_RUN_CLAIMS: usize = 32;
/// Longest text field (claim, form, attack, answer), in characters.
pub const MAX_TEXT: usize = 4000;
/// Longest id, in characters.
pub const MAX_ID: usize = 64;
/// Most extra cross-examination probes per role per claim.
pub const MAX_PROBES: usize = 8;
/// The ladder's ceiling: no run may allow more severe rounds than this per claim.
pub const MAX_ROUNDS_CEILING: u32 = 5;
/// The ceiling on re-asking a deadlocked question.
pub const MAX_RETRIES_CEILING: u32 = 4;

/// One claim to classify.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimSpec {
    pub id: String,
    /// The claim as first stated, before the defender sharpens it.
    pub text: String,
    /// Cross-examination probes beyond the standard ones (docs/FALSIFY.md).
    #[serde(default)]
    pub probes: Probes,
}

/// Extra cross-examination questions put to each role.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probes {
    #[serde(default)]
    pub defender: Vec<String>,
    #[serde(default)]
    pub critic: Vec<String>,
}

/// The escalation ladder: how many rounds a claim may take before it stays untested,
/// and how often a deadlocked question is re-asked with a wider panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ladder {
    #[serde(default = "default_rounds")]
    pub max_rounds: u32,
    #[serde(default = "default_retries")]
    pub deadlock_retries: u32,
}

fn default_rounds() -> u32 {
    3
}
fn default_retries() -> u32 {
    2
}

impl Default for Ladder {
    fn default() -> Self {
        Ladder {
            max_rounds: default_rounds(),
            deadlock_retries: default_retries(),
        }
    }
}

/// What a client submits to start a falsification run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FalsifyStart {
    pub claims: Vec<ClaimSpec>,
    #[serde(default)]
    pub escalation: Ladder,
    /// Scripted answers; required in simulation runs, ignored otherwise.
    #[serde(default)]
    pub simulation: Option<Script>,
}

impl FalsifyStart {
    /// Decodes a start document, refusing oversized ones before parsing.
    pub fn from_json(bytes: &[u8]) -> Result<FalsifyStart, ContractError> {
        if bytes.len() > MAX_START_BYTES {
            return Err(ContractError::Rule {
                what: "falsify start",
                path: ".".into(),
                rule: format!(
                    "falsify.document_size: {} bytes, at most {MAX_START_BYTES}; split the claims over several runs",
                    bytes.len()
                ),
            });
        }
        decode("falsify start", bytes)
    }

    /// Every deterministic rule the start document breaks, all at once.
    pub fn check(&self, ctx: &StartContext) -> Result<(), ProcedureError> {
        let mut out = Vec::new();
        if self.claims.is_empty() {
            out.push(finding(
                "falsify.claims",
                "claims",
                "no claims; list at least one",
            ));
        }
        if self.claims.len() > MAX_CLAIMS {
            out.push(finding(
                "falsify.claims",
                "claims",
                &format!(
                    "{} claims, at most {MAX_CLAIMS}; split them over runs",
                    self.claims.len()
                ),
            ));
        }
        for (i, c) in self.claims.iter().enumerate() {
            check_claim(c, i, &self.claims[..i], &mut out);
        }
        check_ladder(&self.escalation, &mut out);
        match (&self.simulation, ctx.simulation) {
            (None, true) => out.push(finding(
                "falsify.simulation_required",
                "simulation",
                "a simulation run needs a simulation section scripting the judges' answers",
            )),
            (Some(s), _) => out.extend(s.check("falsify.simulation", "simulation", MAX_TEXT)),
            (None, false) => {}
        }
        if out.is_empty() {
            Ok(())
        } else {
            Err(ProcedureError::Refused(out))
        }
    }
}

fn check_claim(c: &ClaimSpec, i: usize, earlier: &[ClaimSpec], out: &mut Vec<Finding>) {
    let at = format!("claims[{i}]");
    if let Some(f) = id_problem(&c.id, &format!("{at}.id")) {
        out.push(f);
    }
    if earlier.iter().any(|e| e.id == c.id) {
        out.push(finding(
            "falsify.claim_id_unique",
            &format!("{at}.id"),
            &format!(
                "claim id {} is used twice; give each claim its own id",
                c.id
            ),
        ));
    }
    if let Some(f) = text_problem(&c.text, &format!("{at}.text")) {
        out.push(f);
    }
    for (role, list) in [
        ("defender", &c.probes.defender),
        ("critic", &c.probes.critic),
    ] {
        if list.len() > MAX_PROBES {
            out.push(finding(
                "falsify.probes",
                &format!("{at}.probes.{role}"),
                &format!("{} probes, at most {MAX_PROBES}", list.len()),
            ));
        }
        for (j, p) in list.iter().enumerate() {
            if let Some(f) = text_problem(p, &format!("{at}.probes.{role}[{j}]")) {
                out.push(f);
            }
        }
    }
}

fn check_ladder(l: &Ladder, out: &mut Vec<Finding>) {
    if l.max_rounds == 0 || l.max_rounds > MAX_ROUNDS_CEILING {
        out.push(finding(
            "falsify.ladder",
            "escalation.max_rounds",
            &format!("{} rounds; allow 1 to {MAX_ROUNDS_CEILING}", l.max_rounds),
        ));
    }
    if l.deadlock_retries > MAX_RETRIES_CEILING {
        out.push(finding(
            "falsify.ladder",
            "escalation.deadlock_retries",
            &format!(
                "{} retries; allow 0 to {MAX_RETRIES_CEILING}",
                l.deadlock_retries
            ),
        ));
    }
}

pub(crate) fn finding(rule: &str, at: &str, reason: &str) -> Finding {
    Finding {
        rule: rule.into(),
        at: at.into(),
        reason: reason.into(),
    }
}

/// An id is 1 to [`MAX_ID`] characters of `a-z A-Z 0-9 - _ .`, so it fits a question key.
pub(crate) fn id_problem(id: &str, at: &str) -> Option<Finding> {
    let ok = !id.is_empty()
        && id.chars().count() <= MAX_ID
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    (!ok).then(|| {
        finding(
            "falsify.id",
            at,
            &format!(
                "id {id:?} must be 1 to {MAX_ID} characters of letters, digits, '-', '_' or '.'"
            ),
        )
    })
}

/// A text is non-blank and at most [`MAX_TEXT`] characters.
pub(crate) fn text_problem(text: &str, at: &str) -> Option<Finding> {
    if text.trim().is_empty() {
        Some(finding("falsify.text", at, "empty text; write it out"))
    } else if text.chars().count() > MAX_TEXT {
        Some(finding(
            "falsify.text",
            at,
            &format!("longer than {MAX_TEXT} characters; shorten it"),
        ))
    } else {
        None
    }
}
