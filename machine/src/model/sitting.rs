//! Exam sittings as the state keeps them: the sealed pool, the answers held until the
//! reveal, and where an exam record came from (`exam_sitting` moves them).

use std::collections::BTreeMap;

use calibration::exam_scoring::Answer;
use calibration::public_pool::PublicPool;
use serde::{Deserialize, Serialize};

/// One sitting, as the state keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sitting {
    pub number: u32,
    /// [`PublicPool::id`] of the sealed pool.
    pub pool_id: String,
    pub public: PublicPool,
    pub key_commitment: crate::rules::hex_bytes::DigestBytes,
    pub sealed_log_index: u64,
    /// The earlier sitting whose reveal made this pool's answers public.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_from: Option<u32>,
    /// Checked answers by arbiter, held until the key is revealed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub held: BTreeMap<String, HeldExam>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revealed: Option<Revealed>,
    /// Sealed under rule set 14 with a pool large enough: each arbiter is asked
    /// [`HELD_BACK_EXTRA`] items beyond [`DRAW`], which the reveal holds back for the
    /// track record.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub holds_back: bool,
    /// Sealed under rule set 15: items are asked under opaque ids, in the wording the
    /// draw picks (`opaque_exam`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub opaque: bool,
    /// Sealed under rule set 21 from this organisation's pool (`org_pools`): its arbiters
    /// do not sit here, and opaque ids are keyed by the commitment, not the salt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organisation: Option<String>,
    /// The `CloseExamSitting` entry after which no answers are taken here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_log_index: Option<u64>,
}

/// One arbiter's checked answers in a sitting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldExam {
    /// The draw's seed, from the key the arbiter held when it answered.
    pub seed: u64,
    /// The items asked, in asking order (the draw).
    pub asked: Vec<String>,
    pub answers: Vec<Answer>,
    pub submitted_log_index: u64,
    pub submitted_at_ms: u64,
    /// In an opaque sitting: the motion id each answered item was asked under, by item
    /// id, checked against the tokens at the reveal.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub motions: BTreeMap<String, String>,
}

/// What the reveal left on a sitting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Revealed {
    pub log_index: u64,
    /// The revealed exam's content hash.
    pub exam_hash: crate::rules::hex_bytes::DigestBytes,
    /// Arbiters scored at the reveal, in id order.
    pub examined: Vec<String>,
}

/// Where an exam record came from: the sitting, the draw seed and what was asked, in
/// order (kept on the arbiter's exam record beside the scores).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SittingRef {
    pub number: u32,
    pub pool_id: String,
    pub seed: u64,
    pub asked: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_from: Option<u32>,
}

/// The open sitting among `sittings` (the state's, in order): the newest, until its reveal.
pub fn open(sittings: &[Sitting]) -> Option<&Sitting> {
    sittings.last().filter(|s| s.revealed.is_none())
}

/// The number the next sealed sitting takes: one past the newest, from 1.
pub fn next_number(sittings: &[Sitting]) -> u32 {
    sittings.last().map_or(1, |s| s.number + 1)
}
