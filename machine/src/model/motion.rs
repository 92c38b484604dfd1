//! A motion as the state keeps it: its spec, the drawn seats, the logged round with its
//! commitments and reveals, and its status once decided (docs/coordinator/state-machine.md "The
//! commit-reveal round").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::command::MotionSpec;
use crate::model::record_entry::is_zero;
use crate::rules::acceptance::{Acceptance, RetrievalReceipt, RevealedRuling, Seat};
use crate::rules::ruling::WireRuling;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum MotionStatus {
    Open,
    Decided(Acceptance),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Motion {
    pub spec: MotionSpec,
    pub seats: Vec<Seat>,
    /// The seed the panel was drawn with (re-derive with `draw::draw`).
    pub draw_seed: u64,
    pub opened_at_ms: u64,
    pub opened_log_index: u64,
    pub status: MotionStatus,
    /// Every ruling submitted with the outcome, kept on the record (invariant 3).
    pub rulings: Vec<WireRuling>,
    /// Read from snapshots and records written before 2026-12-01 only, and no longer
    /// filled: the reveals are on the record already (the outcome's command, or the
    /// round's stored reveals), and a third copy of every signed ruling was most of a
    /// replica's memory per decision (BENCHMARKS.md, "Soak").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reveals: Vec<String>,
    pub decided_log_index: Option<u64>,
    /// The logged commit-reveal round (`LogCommitments`, `SubmitReveal`, `CloseMotion`):
    /// the signed motion, each seat's commitment and reveal. Absent on motions decided by
    /// a `RecordOutcome` (raw test motions, records from before rounds were logged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<MotionRound>,
    /// The supporters' measured independence the verdict was reached with, as its
    /// record entry gives it (`Decided::independence`), under a policy with `measured_n_eff`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub independence: Option<crate::rules::independence::SupportIndependence>,
    /// Why the engine refused the effect of an accepted outcome (a phase prerequisite
    /// that no longer holds, a version already decided): the outcome stands on record, its
    /// effect did not happen, and `panel ask --wait` and `panel motion show` say so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect_refused: Option<EffectRefusal>,
    /// How sure the panel is of its accepted outcome (`confidence`), as its record entry
    /// gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<crate::rules::confidence::OutcomeConfidence>,
    /// The outcome's status: provisional, final, appealed, overturned, not proven
    /// (`finality.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finality: Option<crate::model::finality::Finality>,
    /// The draw beacon it is (or was) seated by (`beacon.rs`); absent on motions drawn at
    /// their opening.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beacon: Option<BeaconDraw>,
    /// The final outcome this motion was answered by, with no panel (`precedent.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precedent: Option<Precedent>,
    /// The asker's reason for a fresh panel where a precedent would have answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_panel: Option<String>,
    /// The charter's authority's decision on a question the panels left not proven
    /// (`last_word.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_word: Option<LastWordRecord>,
}

/// A final outcome cited as the answer to a motion on the same content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Precedent {
    pub motion_id: String,
    pub debate_id: String,
    /// `precedent::digest` of the content both motions show.
    pub digest: crate::rules::hex_bytes::DigestBytes,
}

/// An accepted outcome's effect that the engine refused, with its refusal code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectRefusal {
    pub code: String,
    pub message: String,
}

/// One commit-reveal round as the log holds it (docs/coordinator/state-machine.md "The commit-reveal
/// round"): fixed when the commitments are logged, filled by reveals, decided from all of
/// them by the close.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MotionRound {
    /// Hex protobuf of the signed motion put to the seats.
    pub motion: crate::rules::signed_motion::WireMotion,
    /// Hex of its digest, which every counted ruling binds (envelope v2).
    pub motion_digest: crate::rules::hex_bytes::DigestBytes,
    /// Hex of the motion key that signed it (a verifier holds it against its policy).
    pub signer_key: crate::rules::hex_bytes::PublicKeyBytes,
    pub commit_deadline_ms: i64,
    pub reveal_deadline_ms: i64,
    /// Log index of the `LogCommitments` entry.
    pub logged_log_index: u64,
    /// The leader's stamped time of that entry (0 in rounds logged before it was kept):
    /// what a revocation's `effective_from_unix_ms` is compared with.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub logged_at_ms: u64,
    /// Seats that committed, by arbiter id.
    pub commitments: BTreeMap<String, SeatCommitment>,
    /// Filled by the close: who committed and did not reveal, who never committed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent: Option<Absent>,
}

impl MotionRound {
    /// The round's timing rule (`panel_proto::round`), from its signed deadlines.
    pub fn window(&self) -> panel_proto::round::Window {
        panel_proto::round::Window {
            commit_deadline_ms: self.commit_deadline_ms,
            reveal_deadline_ms: self.reveal_deadline_ms,
        }
    }
}

/// A seat's logged commitment and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeatCommitment {
    /// The protobuf `Commitment`, signed by the seat's registered key.
    pub commitment: crate::rules::hex_bytes::CommitmentBytes,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reveal: Option<StoredReveal>,
    /// A second, different ruling the seat signed for this motion after its reveal (hex
    /// `SignedRuling`): evidence of equivocation, never counted. Only the first is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivocation: Option<WireRuling>,
}

/// A reveal accepted into the round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredReveal {
    /// The protobuf `Reveal` (the signed ruling, the salt and the logged commitment) until
    /// the close: the close keeps each signed ruling once, in the motion's `rulings`, and
    /// drops this copy (the record holds the reveal as it was submitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reveal: Option<crate::rules::hex_bytes::RevealBytes>,
    /// Who submitted it (the driver's client id, or the node's own).
    pub submitted_by: String,
    pub log_index: u64,
    /// What the acceptance rule counts (`None` for an abstention), fixed when verified.
    pub counted: Option<RevealedRuling>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<RetrievalReceipt>,
}

/// The seats a close found missing, kept on the motion and in the close's reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Absent {
    /// Committed but never revealed inside the window.
    pub committed_not_revealed: Vec<String>,
    /// Drawn but no commitment was logged.
    pub not_committed: Vec<String>,
    /// Revoked by the close, so their reveals did not count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revoked: Vec<String>,
}

/// The route on record of a last word (`last_word.rs`): who had it, what it said and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastWordRecord {
    pub authority: String,
    pub answer: crucible::motion::Answer,
    pub reason: String,
    pub log_index: u64,
}

/// A motion's beacon (`beacon.rs`): the question key it is drawn for and, once seated,
/// the shares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BeaconDraw {
    /// The question key.
    pub question: crate::rules::hex_bytes::DigestBytes,
    /// Earlier beacon motions with the same content digest.
    pub attempt: u32,
    /// The replicas' proofs it was seated with; empty while the motion awaits its seats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shares: Vec<crate::log::seating::BeaconShare>,
    /// The admitted pool as the opening entry saw it, which the seating draws from (so
    /// what is admitted or declared before the seating does not change the panel);
    /// emptied once seated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pool: Vec<crate::rules::draw::Candidate>,
}

impl BeaconDraw {
    /// Whether the motion still awaits its `SeatMotion`.
    pub fn pending(&self) -> bool {
        self.shares.is_empty()
    }
}
