//! The replicated state: every table the state machine holds and the rows in them.
//!
//! The machine lives in memory; its durable form is the Raft log plus snapshots
//! (docs/COORDINATOR.md, "What is durable when"), so a field added here needs
//! `#[serde(default)]` for snapshots and records written before it to load.

mod apply_ctx;
pub use apply_ctx::ApplyCtx;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::acceptance::{Acceptance, RetrievalReceipt, RevealedRuling, Seat, Stance};
use crate::command::{ArbiterRegistration, Command, ItemReply, MotionSpec};
use crate::debates::DebateRecord;
use crate::ruling::WireRuling;

/// An ordered string-keyed table. The state machine lives in memory; its durable form is
/// the Raft log plus snapshots (`raft::state_machine`), so tables need no row tracking.
/// Rows are shared between clones and copied on write, so the copy a snapshot or an export
/// takes between two applies costs the keys, not every row again (BENCHMARKS.md, "Soak").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
#[serde(bound(serialize = "V: Serialize", deserialize = "V: DeserializeOwned"))]
pub struct Table<V> {
    rows: BTreeMap<String, Arc<V>>,
}

impl<V> Default for Table<V> {
    fn default() -> Self {
        Self {
            rows: BTreeMap::new(),
        }
    }
}

impl<V: Clone> Table<V> {
    pub fn get(&self, key: &str) -> Option<&V> {
        self.rows.get(key).map(|v| &**v)
    }
    pub fn contains(&self, key: &str) -> bool {
        self.rows.contains_key(key)
    }
    pub fn insert(&mut self, key: String, value: V) {
        self.rows.insert(key, Arc::new(value));
    }
    /// The row to change; copied first if a clone of the table still shares it.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.rows.get_mut(key).map(Arc::make_mut)
    }
    pub fn remove(&mut self, key: &str) -> Option<V> {
        self.rows.remove(key).map(Arc::unwrap_or_clone)
    }
    pub fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.rows.iter().map(|(k, v)| (k, &**v))
    }
    pub fn len(&self) -> usize {
        self.rows.len()
    }
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
    /// Keeps the rows `keep` says yes to (it reads them: no shared row is copied).
    pub fn retain(&mut self, mut keep: impl FnMut(&String, &V) -> bool) {
        self.rows.retain(|k, v| keep(k, v));
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoteRecord {
    pub text: String,
    pub client_id: String,
    pub request_id: u64,
    pub log_index: u64,
    pub time_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arbiter {
    pub registration: ArbiterRegistration,
    pub admitted: bool,
    pub score_milli: u32,
    pub registered_at_ms: u64,
    /// The latest exam: scores and the admission decision with any failed bars.
    #[serde(default)]
    pub exam: Option<Value>,
    /// The latest prior-consistency finding over the ruling history.
    #[serde(default)]
    pub prior_check: Option<Value>,
    /// Set when the check confirmed behaviour of the other camp: panels seat the
    /// arbiter under this stance instead of the declared one.
    #[serde(default)]
    pub fitted_stance: Option<Stance>,
    /// Set by a signed revocation of the arbiter's key; a revoked arbiter is never drawn
    /// and its rulings are refused. Kept as JSON (a [`Revocation`]) so snapshots load
    /// unchanged.
    #[serde(default)]
    pub revoked: Option<Value>,
    /// Keys the arbiter held before signed rotations, oldest first, with the rotation's
    /// reason and log index; rulings recorded before a rotation stay verifiable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub key_history: Vec<RotatedKey>,
    /// Post-admission track record from resolved outcomes (`recalibration`); a flagged
    /// arbiter is not drawn until a re-exam.
    #[serde(
        default,
        skip_serializing_if = "calibration::recalibration::TrackRecord::is_empty"
    )]
    pub recalibration: calibration::recalibration::TrackRecord,
}

/// What a signed revocation leaves on the arbiter (`Arbiter::revoked`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Revocation {
    pub reason: String,
    pub effective_from_unix_ms: i64,
    /// Log index of the `RevokeKey` entry.
    pub log_index: u64,
    /// Decided motions that counted a ruling of this arbiter whose commitment was logged
    /// at or after `effective_from_unix_ms` (a revocation dated back to a compromise):
    /// their outcomes stand, and this list says which to review or appeal.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counted_after_revocation: Vec<String>,
}

impl Revocation {
    /// Whether a commitment logged at `logged_at_ms` was made under the revoked key
    /// after the revocation took effect (an unknown time, 0, counts as after).
    pub fn covers(&self, logged_at_ms: u64) -> bool {
        logged_at_ms == 0 || logged_at_ms as i64 >= self.effective_from_unix_ms
    }
}

/// A key an arbiter rotated away from, with the rotation that replaced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RotatedKey {
    /// Hex of the old key.
    pub public_key: String,
    /// Hex of the key it was rotated to.
    pub rotated_to: String,
    pub reason: String,
    pub issued_at_unix_ms: i64,
    /// Log index of the `RotateKey` entry.
    pub log_index: u64,
}

impl Arbiter {
    /// Whether `public_key` (hex) is this arbiter's key now or was before a rotation.
    pub fn holds_or_held(&self, public_key: &str) -> bool {
        self.registration.public_key == public_key
            || self.key_history.iter().any(|h| h.public_key == public_key)
    }

    /// The stance panels count: the fitted camp once confirmed, else the declared one.
    pub fn seated_stance(&self) -> Stance {
        self.fitted_stance.unwrap_or(self.registration.stance)
    }
}

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
    pub round: Option<Round>,
    /// The supporters' measured independence the verdict was reached with, as its
    /// record entry gives it (`Decided::independence`), under a policy with `measured_n_eff`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub independence: Option<crate::independence::SupportIndependence>,
    /// Why the engine refused the effect of an accepted outcome (a phase prerequisite
    /// that no longer holds, a version already decided): the outcome stands on record, its
    /// effect did not happen, and `panel ask --wait` and `panel motion show` say so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect_refused: Option<EffectRefusal>,
    /// How sure the panel is of its accepted outcome (`confidence`), as its record entry
    /// gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<crate::confidence::OutcomeConfidence>,
    /// The outcome's status: provisional, final, appealed, overturned, not proven
    /// (`finality.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finality: Option<crate::finality::Finality>,
}

/// An accepted outcome's effect that the engine refused, with its refusal code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectRefusal {
    pub code: String,
    pub message: String,
}

/// One commit-reveal round as the log holds it (docs/COORDINATOR.md "The commit-reveal
/// round"): fixed when the commitments are logged, filled by reveals, decided from all of
/// them by the close.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// Hex protobuf of the signed motion put to the seats.
    pub motion: crate::signed_motion::WireMotion,
    /// Hex of its digest, which every counted ruling binds (envelope v2).
    pub motion_digest: String,
    /// Hex of the motion key that signed it (a verifier holds it against its policy).
    pub signer_key: String,
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

impl Round {
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
    /// Hex protobuf `Commitment`, signed by the seat's registered key.
    pub commitment: String,
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
    /// Hex protobuf `Reveal`: the signed ruling, the salt and the logged commitment.
    pub reveal: String,
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

/// The stored reply of a deduplicated request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredReply {
    pub reply: ReplyText,
    pub log_index: u64,
    /// Batch time the reply was stored at; 0 in snapshots from before dedup entries were
    /// pruned (such entries get a fresh lease at the next prune).
    #[serde(default)]
    pub stored_at_ms: u64,
}

/// A stored reply kept as its JSON text, which serialises exactly as the [`ItemReply`]
/// did. The decoded value tree took eight times the memory of its text, and a replica
/// keeps a day of replies (BENCHMARKS.md, "Soak"); only a retry decodes one.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ReplyText(Box<serde_json::value::RawValue>);

impl ReplyText {
    pub fn of(reply: &ItemReply) -> Self {
        use serde_json::value::{RawValue, to_raw_value};
        Self(to_raw_value(reply).unwrap_or_else(|_| RawValue::NULL.to_owned()))
    }

    /// The reply, decoded (a stored text that does not decode, which apply never writes,
    /// reads as a refusal naming it).
    pub fn reply(&self) -> ItemReply {
        serde_json::from_str(self.0.get()).unwrap_or_else(|e| ItemReply::Refused {
            code: "stored_reply".into(),
            message: format!(
                "the stored reply of this request does not decode: {e}; this replica's state \
                 is damaged: restore it from a backup (`panel coordinator backup`, then \
                 `panel coordinator run --restore FILE`) or from a peer's snapshot"
            ),
        })
    }
}

impl PartialEq for ReplyText {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

/// Everything the state machine holds. Adding a table: a field (with `#[serde(default)]`
/// so snapshots and records written before it still load).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct State {
    pub kv: Table<String>,
    pub notes: Table<Vec<NoteRecord>>,
    pub arbiters: Table<Arbiter>,
    pub motions: crate::motion_table::MotionTable,
    /// Replies by `client_id#request_id`, so a retried write applies at most once; a
    /// replica retires them to disk with its snapshots (`reply_table.rs`).
    pub requests: crate::reply_table::ReplyTable,
    /// Debates by id (the Crucible document and its panel bookkeeping).
    pub debates: Table<DebateRecord>,
    /// The record: every applied registration, debate write and outcome, in order.
    /// `panel verify` replays it. A replica hands each new entry to its store after apply
    /// (`record_log`), so this holds the count and the entries not yet stored.
    pub record: crate::record_log::RecordLog,
    /// Author names bound to a contributor key by their first signed write.
    #[serde(default)]
    pub contributors: Table<crate::authorship::AuthorKey>,
    /// The federation charter, once adopted (the first record entry); `None` in an
    /// unchartered debug group (`--insecure-loopback` without `--charter`).
    #[serde(default)]
    pub charter: Option<panel_federation::Charter>,
    /// Organisations admitted after the charter (`AdmitOrganisation`), in order.
    #[serde(default)]
    pub admitted_organisations: Vec<panel_federation::Organisation>,
    /// Batch time of the last prune of expired deduplication entries.
    #[serde(default)]
    pub requests_pruned_at_ms: u64,
    /// Log index of that prune; 0 in snapshots from before it was kept (the entry window
    /// then keeps every retired reply until the next prune, as it kept every held one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub requests_pruned_at_index: u64,
    /// Write limits per identity and organisation (`limits.rs`, docs/SECURITY.md "Floods").
    #[serde(default)]
    pub limits: crate::limits::LimitsState,
    /// Set by the first logged round (`LogCommitments`): from then on a debate motion is
    /// decided only by `CloseMotion` from its stored reveals, never by a `RecordOutcome`
    /// carrying reveals a driver chose. Records from before rounds were logged never set
    /// it, so they replay unchanged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rounds_logged: bool,
    /// The RFC 6962 tree over the record's entries (`checkpoints.rs`); derived from
    /// `record`, so not serialised: rebuilt by `checkpoints::sync_tree` after a load.
    #[serde(skip)]
    pub tree: panel_tlog::Log,
    /// Every checkpoint issued, in order of size, with the cosignatures received.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<crate::checkpoints::IssuedCheckpoint>,
    /// Procedure runs by id (`runs.rs`, docs/PROCEDURES.md).
    #[serde(default, skip_serializing_if = "Table::is_empty")]
    pub runs: Table<crate::runs::RunRecord>,
    /// Set only by `panel verify` for records of format v1 and v2: their entries replay
    /// under the rules they were applied with: a run's start without role keys is taken
    /// as it was, re-asks and appeals draw from the whole pool (no fresh panels), and a
    /// refused procedure answer is re-asked without bound. Never set on a replica, never
    /// serialized.
    #[serde(skip)]
    pub v2_rules: bool,
    /// Motion keys rotated to after the charter's, in order (`RotateMotionKey`,
    /// `charter::motion_key_at`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub motion_keys: Vec<MotionKeyChange>,
    /// Arbiter id -> its standing stance for debates created after it
    /// (`declared_priors::STANDING`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub standing_stances: std::collections::BTreeMap<String, crate::debates::DeclaredStance>,
    /// Voter sets authorised by member organisations, in order (`AuthoriseMembership`,
    /// `charter::check_membership`); the last is the one `Admin.ChangeMembership` may
    /// execute.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub membership: Vec<MembershipChange>,
    /// The highest rule set a batch was stamped with (`rules.rs`); 0 before stamping.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rules: u32,
    /// Pairwise error history of accepted yes/no outcomes, counted from rule set
    /// `MEASURED_ERRORS` on (`independence::ErrorHistory`).
    #[serde(
        default,
        skip_serializing_if = "crate::independence::ErrorHistory::is_empty"
    )]
    pub error_history: crate::independence::ErrorHistory,
    /// Sealed exam sittings, in order (`exam_sitting.rs`); the last may be open.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exam_sittings: Vec<crate::exam_sitting::Sitting>,
    /// Circuit breakers: pauses in force, the automatic breaker and its window
    /// (`breakers.rs`, `SetBreaker`).
    #[serde(default, skip_serializing_if = "crate::breakers::Breakers::is_empty")]
    pub breakers: crate::breakers::Breakers,
    /// Appeal windows due and outcomes held by appeals (`finality.rs`).
    #[serde(
        default,
        skip_serializing_if = "crate::finality::FinalityBook::is_empty"
    )]
    pub finality: crate::finality::FinalityBook,
}

/// One motion-key rotation on the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MotionKeyChange {
    pub seq: u64,
    /// Hex of the key in force from this rotation on.
    pub key: String,
    /// The log index of the entry that rotated it: motions opened at or after it are
    /// signed with this key.
    pub log_index: u64,
}

/// One authorised change of voters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MembershipChange {
    pub seq: u64,
    pub voters: Vec<u64>,
    /// The organisations whose endorsements authorised it.
    pub endorsed_by: Vec<String>,
    /// The log index of the authorising entry.
    pub log_index: u64,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// One applied command on the record, with everything needed to re-apply it offline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordEntry {
    pub seq: u64,
    pub log_index: u64,
    pub item_index: u32,
    pub time_ms: u64,
    pub seed: u64,
    pub client_id: String,
    pub request_id: u64,
    pub command: Command,
    pub reply: ItemReply,
    /// The rule set in force when the entry applied (`rules.rs`); absent (0) in entries
    /// applied before rule sets were stamped, so their leaf bytes are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<u32>,
}

impl RecordEntry {
    /// The bytes hashed into the transparency log.
    pub fn leaf_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}
