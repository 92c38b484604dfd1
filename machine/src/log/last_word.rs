//! `LastWord` as the log carries it: the charter's authority's signed decision on a debate
//! question the panels could not answer (docs/PANEL.md "The last word"; the signed layout
//! and the rules are `last_word.rs`).

use crucible::motion::Answer;
use serde::{Deserialize, Serialize};

/// The authority's decision on the question `motion_id` (its last, not-proven motion)
/// asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LastWordDecision {
    pub debate_id: String,
    pub motion_id: String,
    pub answer: Answer,
    /// Why, in the authority's words; on the record with the decision.
    pub reason: String,
    /// Ed25519 signature of the charter's `last_word.key` over
    /// `last_word::signed_bytes`.
    pub signature: crate::rules::hex_bytes::SignatureBytes,
}
