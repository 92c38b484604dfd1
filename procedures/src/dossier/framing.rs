//! The dossier's start document: the framing (question, owner, acceptance criteria,
//! evidence floor, declared biases, limits), the advocates and, for a retry, the run it
//! retries (`seeds/spellweaver-crucible.txt`, "The bounded casting" and "Refusal and
//! recovery"; docs/DOSSIER.md, "Framing").

use serde::{Deserialize, Serialize};

use crate::contract::{ContractError, decode};
use crate::falsify::script::Script;

/// Largest start document accepted, in bytes.
pub const MAX_START_BYTES: usize = 512 * 1024;
/// Longest free text (question, position, claim, rebuttal), in characters.
pub const MAX_TEXT: usize = 4000;
/// Longest id, in characters.
pub const MAX_ID: usize = 64;
/// Most advocates in one casting.
pub const MAX_ADVOCATES: usize = 8;
/// Most items in a framing list (criteria, evidence, biases, omissions, arbiters).
pub const MAX_LIST: usize = 64;
/// Ceilings on the limits a framing may set.
pub const MAX_CLAIMS_CEILING: u32 = 12;
pub const MAX_NOMINATED_CEILING: u32 = 5;
pub const MAX_CLAIM_CHARS_CEILING: u32 = 4000;
pub const MAX_PROJECTION_CEILING: u32 = 64_000;
pub const MAX_RETRIES_CEILING: u32 = 4;

/// One item of the common evidence floor every advocate receives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    pub id: String,
    pub summary: String,
    /// Where it comes from (a document, a dashboard, a ticket).
    pub source: String,
}

/// A declared bias: a Blade held at a declared angle, with what would defeat it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bias {
    /// An advocate id, or `owner`.
    pub holder: String,
    pub angle: String,
    #[serde(default)]
    pub defeat_condition: Option<String>,
}

/// The bounds every branch works within.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Claims per Clash I report.
    pub max_claims: u32,
    /// Strongest claims each advocate nominates at Temper.
    pub max_nominated: u32,
    /// Characters per claim or rebuttal.
    pub max_claim_chars: u32,
    /// Characters of the attributed projection an advocate sees at Clash II; it must
    /// hold every nominated claim, since compression may not drop one.
    pub max_projection_chars: u32,
    /// Re-asks of a deadlocked Quench question.
    #[serde(default = "default_retries")]
    pub deadlock_retries: u32,
}

fn default_retries() -> u32 {
    2
}

/// What the framing asks the dossier to be. Only an inert dossier is allowed: anything
/// that would bind, act or decide by vote would give the result authority by majority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestedResult {
    /// An attributed dossier the owner may act on.
    Dossier,
    BindingDecision,
    Action,
    MajorityVote,
}

/// The owner's question and its bounds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Framing {
    pub question: String,
    #[serde(default)]
    pub owner: Option<String>,
    /// What the decision starts from (the current state of affairs).
    #[serde(default)]
    pub base: Option<String>,
    pub acceptance_criteria: Vec<String>,
    pub evidence: Vec<Evidence>,
    /// What the evidence floor leaves out, declared.
    #[serde(default)]
    pub omissions: Vec<String>,
    pub biases: Vec<Bias>,
    pub limits: Limits,
    /// The arbiters (ids or model names) the framing seats as the Lead; none may be an
    /// advocate.
    #[serde(default)]
    pub arbiters: Vec<String>,
    pub requested: RequestedResult,
    /// Effects the framing asks for (deploy, spend, publish); the dossier has none.
    #[serde(default)]
    pub effects: Vec<String>,
}

/// What a branch may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    pub tokens: u64,
    pub seconds: u32,
    /// Characters of context the advocate's model can take; the evidence floor must fit.
    pub context_chars: u32,
}

/// One advocate: a posture, its position and the implementation that argues it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Advocate {
    pub id: String,
    pub posture: String,
    pub position: String,
    /// Who wrote the position: the advocate itself or `owner`. A position written by an
    /// opponent is a caricature.
    pub stated_by: String,
    pub model: String,
    pub provider: String,
    pub family: String,
    pub budget: Budget,
}

/// What changed since the retried run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryChange {
    Evidence,
    Postures,
    Models,
    Limits,
    Question,
}

/// A retry binds a new run to the earlier one; the earlier run is never rewritten.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryOf {
    pub run_id: String,
    pub changed: Vec<RetryChange>,
    pub reason: String,
}

/// What a client submits to start a dossier run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DossierStart {
    /// Boxed: the framing is the bulk of the document, and `RunStart` holds every kind.
    pub framing: Box<Framing>,
    pub advocates: Vec<Advocate>,
    #[serde(default)]
    pub retry_of: Option<RetryOf>,
    #[serde(default)]
    pub simulation: Option<Script>,
}

impl DossierStart {
    /// Decodes a start document, refusing oversized ones before parsing.
    pub fn from_json(bytes: &[u8]) -> Result<DossierStart, ContractError> {
        if bytes.len() > MAX_START_BYTES {
            return Err(ContractError::Rule {
                what: "dossier start",
                path: ".".into(),
                rule: format!(
                    "dossier.document_size: {} bytes, at most {MAX_START_BYTES}; move bulky evidence behind source references",
                    bytes.len()
                ),
            });
        }
        decode("dossier start", bytes)
    }

    /// Characters of the common evidence floor, as every advocate receives it.
    pub fn evidence_chars(&self) -> usize {
        self.framing
            .evidence
            .iter()
            .map(|e| e.id.chars().count() + e.summary.chars().count() + e.source.chars().count())
            .sum()
    }
}
