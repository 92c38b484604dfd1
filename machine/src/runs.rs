//! Procedure runs inside the replicated state (docs/PROCEDURES.md): a crux mediation, a
//! falsification run or a decision dossier, held with its panel bookkeeping the way
//! `debates.rs` holds a Crucible document.
//!
//! The procedure itself is `panel_procedures::Run`, pure; this module only keeps which of
//! its questions are open as motions, turns a decided motion into the procedure's
//! [`Settlement`], and says what to open next. Every replica and an offline verifier
//! replay the same entries to the same run.

use std::collections::BTreeMap;

use panel_procedures::{
    AnswerShape, Expected, PanelOutcome, PanelQuestion, PanelRuling, Prior, Run, RunInput,
    RunStart, Settlement, presentation_order,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::rules::acceptance::{Acceptance, Decision, Policy, Seat, Stance};

/// What a procedure motion asks, carried on its [`crate::command::MotionSpec`] and put
/// into the signed motion (`ProcedureQuestion` in proto/panel.proto).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunMotion {
    pub run_id: String,
    pub key: String,
    pub shape: AnswerShape,
    pub shuffle_items: bool,
    /// Labels of the items, in the order the motion lists them.
    pub labels: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Expected>,
}

/// A client's request to start a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    pub start: RunStart,
    /// Seats per question and the minimum per stance group (as for debates).
    pub seats: usize,
    pub min_per_stance: usize,
    #[serde(default)]
    pub policy: Option<Policy>,
    /// Questions carry the scripted answers of the start document's simulation section.
    #[serde(default)]
    pub simulation: bool,
    /// Who asked for the run (rate limits count runs per convener).
    pub convener: String,
    /// A retry names the run it retries; the earlier run is never changed.
    #[serde(default)]
    pub retry_of: Option<String>,
    /// Every role the run will await, bound to the ed25519 key that alone may submit its
    /// input (`run_roles`); a run with roles is refused without them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub role_keys: BTreeMap<String, crate::rules::hex_bytes::PublicKeyBytes>,
    /// The convener's signature over this request (`run_convener`); required in a
    /// chartered group from rule set 9.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<crate::log::contributor_signature::ContributorSignature>,
}

/// A role's input to a running procedure, signed by the role's key (`run_roles`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunInputSubmission {
    pub run_id: String,
    pub input: RunInput,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<crate::log::contributor_signature::ContributorSignature>,
}

/// A question the panel answered, kept in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettledQuestion {
    pub key: String,
    pub motion_id: String,
    pub outcome: PanelOutcome,
}

/// A run and its panel bookkeeping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub run: Run,
    pub convener: String,
    pub started_at_ms: u64,
    pub started_log_index: u64,
    pub policy: Policy,
    pub seats: usize,
    pub min_per_stance: usize,
    pub simulation: bool,
    #[serde(default)]
    pub retry_of: Option<String>,
    /// Role → key bound at start; empty only for runs started before roles were bound
    /// (records of format v2), whose inputs stay open.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub role_keys: BTreeMap<String, crate::rules::hex_bytes::PublicKeyBytes>,
    /// The convener's signature the run was started with (`run_convener`), lower-case
    /// hex; a start is refused when its signature already started a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_signature: Option<crate::log::contributor_signature::ContributorSignature>,
    /// Question key -> open motion id.
    pub open: BTreeMap<String, String>,
    /// Motion id -> the question it asks.
    pub questions: BTreeMap<String, PanelQuestion>,
    pub settled: Vec<SettledQuestion>,
    /// Question key -> how many of its panel answers the procedure refused (a crux
    /// report it could not read, say); bounded by [`MAX_REFUSED_SETTLEMENTS`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub refused_settlements: BTreeMap<String, u32>,
    /// Questions no longer asked: their answers were refused [`MAX_REFUSED_SETTLEMENTS`]
    /// times and the procedure refused a deadlock for them too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub abandoned: Vec<String>,
}

/// How often a question's panel answer may be refused by the procedure before the
/// question is settled as deadlocked instead of asked again, so a question whose answers
/// a procedure cannot take never holds panels without end.
pub const MAX_REFUSED_SETTLEMENTS: u32 = 3;

/// Upper bound on questions a run may have open at once; a procedure asking for more is
/// asked again as motions close, so a run cannot hold unbounded replica memory.
pub const MAX_OPEN_QUESTIONS_PER_RUN: usize = 16;

/// SHA-256 of the run's JSON: what a procedure motion's rulings bind, as a debate
/// motion's bind the document's hash. A run that cannot be encoded has no hash (an error,
/// never the hash of empty bytes, which every such run would share).
pub fn state_hash(run: &Run) -> Result<crate::rules::hex_bytes::DigestBytes, serde_json::Error> {
    let bytes = serde_json::to_vec(run)?;
    Ok(crate::rules::hex_bytes::DigestBytes::new(
        Sha256::digest(&bytes).to_vec(),
    ))
}

impl RunRecord {
    /// A just-started run's record with the bookkeeping empty (tests build runs so).
    #[cfg(test)]
    pub(crate) fn started(run: Run, convener: &str) -> RunRecord {
        RunRecord {
            run,
            convener: convener.into(),
            started_at_ms: 0,
            started_log_index: 0,
            policy: Default::default(),
            seats: 4,
            min_per_stance: 1,
            simulation: true,
            retry_of: None,
            role_keys: Default::default(),
            start_signature: None,
            open: Default::default(),
            questions: Default::default(),
            settled: Vec::new(),
            refused_settlements: Default::default(),
            abandoned: Vec::new(),
        }
    }

    /// Questions to open now: pending in the procedure and not yet open, at most
    /// [`MAX_OPEN_QUESTIONS_PER_RUN`] open in all.
    pub fn to_open(&self) -> Vec<PanelQuestion> {
        let room = MAX_OPEN_QUESTIONS_PER_RUN.saturating_sub(self.open.len());
        self.run
            .pending()
            .into_iter()
            .filter(|q| !self.open.contains_key(&q.key) && !self.abandoned.contains(&q.key))
            .take(room)
            .collect()
    }
}

/// The item labels `arbiter_key_hex` was shown, in order: the procedure's item order, or
/// the arbiter's own order for shuffled questions (what the node computes, docs/PROCEDURES.md
/// "Presentation order").
pub fn presented(m: &RunMotion, presentation_seed: u64, arbiter_key_hex: &str) -> Vec<String> {
    if !m.shuffle_items {
        return m.labels.clone();
    }
    presentation_order(presentation_seed, &m.key, arbiter_key_hex, m.labels.len())
        .into_iter()
        .filter_map(|i| m.labels.get(i).cloned())
        .collect()
}

/// The procedure's view of a decided motion.
pub fn outcome_of(verdict: &Acceptance) -> PanelOutcome {
    match verdict {
        Acceptance::Accepted { outcome, .. } => match outcome {
            crate::rules::acceptance::Outcome::Decided(Decision::Yes) => PanelOutcome::Yes,
            crate::rules::acceptance::Outcome::Decided(Decision::No) => PanelOutcome::No,
            _ => PanelOutcome::Deadlocked,
        },
        Acceptance::Deadlocked(_) => PanelOutcome::Deadlocked,
    }
}

/// A seat's declared stance as the procedure's prior.
pub fn prior_of(seat: &Seat) -> Prior {
    match seat.stance {
        Stance::A => Prior::A,
        Stance::B => Prior::B,
        Stance::None => Prior::None,
    }
}

/// One counted ruling as the procedure sees it.
pub struct RulingView<'a> {
    pub seat: &'a Seat,
    pub arbiter_key: crate::rules::hex_bytes::PublicKeyBytes,
    pub model_family: Option<String>,
    pub decision: panel_proto::pb::Decision,
    pub probability: f64,
    pub rationale: String,
}

/// The settlement a decided procedure motion hands back to its run.
pub fn settlement(
    m: &RunMotion,
    motion_id: &str,
    presentation_seed: u64,
    verdict: &Acceptance,
    rulings: &[RulingView<'_>],
) -> Settlement {
    use panel_proto::pb::Decision as D;
    Settlement {
        key: m.key.clone(),
        motion_id: motion_id.to_owned(),
        outcome: outcome_of(verdict),
        rulings: rulings
            .iter()
            .map(|r| PanelRuling {
                arbiter_id: r.seat.arbiter_id.clone(),
                prior: prior_of(r.seat),
                organisation: r.seat.organisation.clone(),
                model_family: r.model_family.clone(),
                yes: match r.decision {
                    D::Accept => Some(true),
                    D::Reject => Some(false),
                    _ => None,
                },
                probability_milli: (r.probability.clamp(0.0, 1.0) * 1000.0).round() as u16,
                rationale: r.rationale.clone(),
                presented: presented(m, presentation_seed, &r.arbiter_key.to_hex()),
            })
            .collect(),
    }
}
