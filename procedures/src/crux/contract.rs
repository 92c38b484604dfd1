//! The crux handoff contracts (docs/CRUX.md, "Contracts"; seed `crux.txt`, "Contracts"):
//! the evidence pack both advocates read, the position each writes, the crux report a
//! mediator returns, and the start document that brings them to the panel.
//!
//! Schemas: `docs/schemas/crux/*.schema.json`. Decoding refuses unknown fields so a typo
//! in a field name is an error naming its path, not a silently ignored value.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::contract::{ContractError, decode};

/// Bytes a start document may have; beyond it the document is refused before parsing
/// (rule `crux.size`).
pub const MAX_START_BYTES: usize = 1 << 20;

/// Which case an advocate builds: for the decision or against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Optimist,
    Pessimist,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Optimist => "optimist",
            Side::Pessimist => "pessimist",
        }
    }

    /// The label a position carries when shown to the panel (a role, never an author).
    pub fn label(self) -> String {
        format!("position: {}", self.name())
    }
}

/// One piece of evidence, as both advocates saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceItem {
    pub id: String,
    /// Where it comes from (a document, a quote, a measurement), for the reader.
    pub source: String,
    pub text: String,
}

/// The evidence both advocates get, byte for byte (seed, "Parallel isolation").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidencePack {
    pub items: Vec<EvidenceItem>,
}

impl EvidencePack {
    /// SHA-256 (hex) over the pack's fields, each length-prefixed, under a domain tag:
    /// independent of JSON formatting, so any client can recompute it (docs/CRUX.md,
    /// "Pack hash").
    pub fn content_hash(&self) -> String {
        let mut h = Sha256::new();
        h.update(b"crucible-panel/crux/pack/v1\0");
        h.update((self.items.len() as u64).to_be_bytes());
        for item in &self.items {
            for field in [&item.id, &item.source, &item.text] {
                h.update((field.len() as u64).to_be_bytes());
                h.update(field.as_bytes());
            }
        }
        hex::encode(h.finalize())
    }

    pub fn item(&self, id: &str) -> Option<&EvidenceItem> {
        self.items.iter().find(|i| i.id == id)
    }
}

/// How far a claim goes beyond what its evidence says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InferenceType {
    /// The claim says what the quoted span says.
    DirectRead,
    /// The claim combines or interprets evidence.
    Inference,
    /// The claim projects beyond the evidence (future, other settings).
    Extrapolation,
}

impl InferenceType {
    pub fn name(self) -> &'static str {
        match self {
            InferenceType::DirectRead => "direct_read",
            InferenceType::Inference => "inference",
            InferenceType::Extrapolation => "extrapolation",
        }
    }
}

/// A claim's pointer into the pack: the item and the exact span it relies on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceRef {
    pub item: String,
    /// Must occur verbatim in the item's text (whitespace runs compare equal).
    pub quote: String,
}

/// One claim of a position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub id: String,
    pub text: String,
    pub evidence: Vec<EvidenceRef>,
    pub inference: InferenceType,
    /// The advocate's credence in the claim, 0 to 1. Self-reported; checked against the
    /// inference type and the span's hedges (rule `crux.overconfident`).
    pub confidence: f64,
}

/// One advocate's case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Position {
    pub side: Side,
    /// The [`EvidencePack::content_hash`] of the pack the advocate was given.
    pub pack_hash: String,
    pub thesis: String,
    pub claims: Vec<Claim>,
    /// The advocate's own word count: kept for the record, never used (the budget is
    /// recomputed, seed "Symmetry enforcement").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub word_count: Option<u32>,
}

/// A mediator's answer to the report question (the rationale of an
/// [`crate::AnswerShape::CruxReport`] ruling).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CruxReport {
    /// The single concrete, checkable unknown that would end the disagreement.
    pub primary_crux: String,
    /// Why each position stands or falls with it.
    pub why_both_depend: String,
    /// What observation, measurement or document would settle it.
    pub resolved_by: String,
    /// Is a verdict warranted before the crux is resolved? Must equal the ruling's yes.
    pub verdict_warranted: bool,
    /// Which side the mediator leans to, if any; informative only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaning: Option<Side>,
}

/// Who wrote a position, so the machine can keep that model family off the panel
/// (seed: the mediator is "on a different model family than the debaters").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Advocate {
    pub side: Side,
    pub model: String,
    #[serde(default)]
    pub provider: String,
    pub family: String,
}

/// What scripted judges answer in a simulation run (the demo, tests, the eval).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Simulation {
    /// Every scripted mediator returns this report to the report question.
    pub report: CruxReport,
    /// The answer to "is this the single unknown both positions depend on?"
    #[serde(default = "yes")]
    pub crux_confirmed: bool,
    /// The answer to the verdict question; the report's `verdict_warranted` if absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_warranted: Option<bool>,
}

fn yes() -> bool {
    true
}

/// A crux run's start document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CruxStart {
    /// The decision under debate, phrased as a question.
    pub decision: String,
    pub pack: EvidencePack,
    /// Exactly two: one optimist, one pessimist.
    pub positions: Vec<Position>,
    /// Words each position may use (the same for both).
    pub word_budget: u32,
    /// Both advocates' model families (rule `crux.advocates`).
    #[serde(default)]
    pub advocates: Vec<Advocate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulation: Option<Simulation>,
}

/// Role input after the start. Positions are submitted with the start document (the
/// CLI calls the advocates first), so there is nothing to submit; the type exists so
/// the machine's input enum stays uniform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CruxInput {}

/// Decodes a start document, refusing oversized bytes before parsing.
pub fn decode_start(bytes: &[u8]) -> Result<CruxStart, ContractError> {
    if bytes.len() > MAX_START_BYTES {
        return Err(ContractError::Rule {
            what: "crux start",
            path: ".".into(),
            rule: format!(
                "crux.size: the document has {} bytes, more than {MAX_START_BYTES}; shorten the pack",
                bytes.len()
            ),
        });
    }
    decode("crux start", bytes)
}

/// Decodes a mediator's crux report (a ruling's rationale).
pub fn decode_report(text: &str) -> Result<CruxReport, ContractError> {
    decode("crux report", text.as_bytes())
}
