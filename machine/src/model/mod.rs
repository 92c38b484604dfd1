//! The replicated state: every table the state machine holds and the rows in them.
//!
//! The machine lives in memory; its durable form is the Raft log plus snapshots
//! (docs/coordinator/storage.md, "What is durable when"), so a field added here needs
//! `#[serde(default)]` for snapshots and records written before it to load.

pub mod appeal_credits;
mod apply_ctx;
pub mod breakers;
pub mod checkpoint;
pub mod finality;
pub mod limits_state;
pub mod motion;
pub mod motion_table;
pub mod record_entry;
pub mod record_log;
pub mod reply_table;
pub mod sitting;
pub mod stored_reply;
pub use apply_ctx::{ApplyCtx, seed_of};
pub use motion::{
    Absent, EffectRefusal, Motion, MotionRound, MotionStatus, SeatCommitment, StoredReveal,
};
pub use record_entry::RecordEntry;
use record_entry::is_zero;
pub use stored_reply::{ReplyText, StoredReply};

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::command::ArbiterRegistration;
use crate::debates::DebateRecord;
use crate::rules::acceptance::Stance;

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
    /// The old key.
    pub public_key: crate::rules::hex_bytes::PublicKeyBytes,
    /// The key it was rotated to.
    pub rotated_to: crate::rules::hex_bytes::PublicKeyBytes,
    pub reason: String,
    pub issued_at_unix_ms: i64,
    /// Log index of the `RotateKey` entry.
    pub log_index: u64,
}

/// Whether the key `stored` is the key `key`.
fn same_key_bytes(stored: &crate::rules::hex_bytes::PublicKeyBytes, key: &[u8]) -> bool {
    stored.bytes().is_ok_and(|b| *b == *key)
}

impl Arbiter {
    /// Whether `public_key` (hex) is this arbiter's key now or was before a rotation,
    /// compared as text (the rule before [`KEYS_AS_BYTES`](crate::rules::KEYS_AS_BYTES)).
    pub fn holds_or_held(&self, public_key: &str) -> bool {
        self.registration.public_key.to_hex() == public_key
            || self
                .key_history
                .iter()
                .any(|h| h.public_key.to_hex() == public_key)
    }

    /// Whether `key` is this arbiter's key now, compared as key bytes (any case of hex
    /// names the same key).
    pub fn holds_key(&self, key: &[u8]) -> bool {
        same_key_bytes(&self.registration.public_key, key)
    }

    /// [`holds_key`](Self::holds_key), or a key it rotated away from.
    pub fn holds_or_held_key(&self, key: &[u8]) -> bool {
        self.holds_key(key)
            || self
                .key_history
                .iter()
                .any(|h| same_key_bytes(&h.public_key, key))
    }

    /// The stance panels count: the fitted camp once confirmed, else the declared one.
    pub fn seated_stance(&self) -> Stance {
        self.fitted_stance.unwrap_or(self.registration.stance)
    }
}

/// Everything the state machine holds. Adding a table: a field (with `#[serde(default)]`
/// so snapshots and records written before it still load).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct State {
    pub kv: Table<String>,
    pub notes: Table<Vec<NoteRecord>>,
    pub arbiters: Table<Arbiter>,
    pub motions: crate::model::motion_table::MotionTable,
    /// Replies by `client_id#request_id`, so a retried write applies at most once; a
    /// replica retires them to disk with its snapshots (`reply_table.rs`).
    pub requests: crate::model::reply_table::ReplyTable,
    /// Debates by id (the Crucible document and its panel bookkeeping).
    pub debates: Table<DebateRecord>,
    /// The record: every applied registration, debate write and outcome, in order.
    /// `panel verify` replays it. A replica hands each new entry to its store after apply
    /// (`record_log`), so this holds the count and the entries not yet stored.
    pub record: crate::model::record_log::RecordLog,
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
    /// Organisations removed by entry (`RemoveOrganisation`), founders or admitted, in
    /// order: none of them counts as a member again, and their identities are never
    /// admitted again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed_organisations: Vec<panel_federation::Organisation>,
    /// Batch time of the last prune of expired deduplication entries.
    #[serde(default)]
    pub requests_pruned_at_ms: u64,
    /// Log index of that prune; 0 in snapshots from before it was kept (the entry window
    /// then keeps every retired reply until the next prune, as it kept every held one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub requests_pruned_at_index: u64,
    /// Write limits per identity and organisation (`limits.rs`, docs/SECURITY.md "What is enforced").
    #[serde(default)]
    pub limits: crate::model::limits_state::LimitsState,
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
    pub checkpoints: Vec<crate::model::checkpoint::IssuedCheckpoint>,
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
    /// `charter_rules::motion_key_at`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub motion_keys: Vec<MotionKeyChange>,
    /// Member organisations' roster keys rotated to after their entries, in order
    /// (`RotateRosterKey`, `features::roster_keys`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roster_keys: Vec<RosterKeyChange>,
    /// The leader's stamped time of the batch being applied (ms since the Unix epoch), for
    /// the rules that end at a time (a rotated roster key's overlap).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub batch_time_ms: u64,
    /// Arbiter id -> its standing stance for debates created after it
    /// (`declared_priors::STANDING`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub standing_stances: std::collections::BTreeMap<String, crate::debates::DeclaredStance>,
    /// Voter sets authorised by member organisations, in order (`AuthoriseMembership`,
    /// `charter_rules::check_membership`); the last is the one `Admin.ChangeMembership` may
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
        skip_serializing_if = "crate::rules::independence::ErrorHistory::is_empty"
    )]
    pub error_history: crate::rules::independence::ErrorHistory,
    /// Sealed exam sittings, in order (`exam_sitting.rs`); the last may be open.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exam_sittings: Vec<crate::model::sitting::Sitting>,
    /// Circuit breakers: pauses in force, the automatic breaker and its window
    /// (`breakers.rs`, `SetBreaker`).
    #[serde(
        default,
        skip_serializing_if = "crate::model::breakers::Breakers::is_empty"
    )]
    pub breakers: crate::model::breakers::Breakers,
    /// Appeal windows due and outcomes held by appeals (`finality.rs`).
    #[serde(
        default,
        skip_serializing_if = "crate::model::finality::FinalityBook::is_empty"
    )]
    pub finality: crate::model::finality::FinalityBook,
    /// Beacon motions opened per content digest (hex), so a re-ask of the same content
    /// gets a fresh question key (`beacon.rs`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub beacon_attempts: std::collections::BTreeMap<String, u32>,
    /// Appeal credits: each organisation's balance, the deposits appeals hold, and the
    /// organisation of each registered contributor (`appeal_credits.rs`, rule set 19).
    #[serde(
        default,
        skip_serializing_if = "crate::model::appeal_credits::AppealCreditBook::is_empty"
    )]
    pub appeal_credits: crate::model::appeal_credits::AppealCreditBook,
}

/// One motion-key rotation on the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MotionKeyChange {
    pub seq: u64,
    /// The key in force from this rotation on.
    pub key: crate::rules::hex_bytes::PublicKeyBytes,
    /// The log index of the entry that rotated it: motions opened at or after it are
    /// signed with this key.
    pub log_index: u64,
}

/// One roster-key rotation of a member organisation on the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RosterKeyChange {
    pub organisation: String,
    /// 1 for the organisation's first rotation, then one more each time.
    pub seq: u64,
    /// The key in force from this rotation on.
    pub key: crate::rules::hex_bytes::PublicKeyBytes,
    /// The key it replaced, still counted until `overlap_until_ms`.
    pub previous: crate::rules::hex_bytes::PublicKeyBytes,
    pub log_index: u64,
    pub overlap_until_ms: u64,
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
