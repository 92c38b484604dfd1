//! The replicated state and the pure, deterministic `apply`.
//!
//! `apply` reads only the state, the command and the [`ApplyCtx`] (log index, the leader's
//! stamped time and seed), so every replica and any offline reader of the log reaches the
//! same state (ARCHITECTURE.md, "Apply is deterministic"). Each command validates fully
//! before it mutates, so a refused command changes nothing.
//!
//! Storage: every table is a [`Table`], an ordered map that remembers which keys changed;
//! the Raft adapter writes exactly those rows to redb after each applied batch.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::acceptance::{self, Seat, Stance, Verdict};
use crate::command::{
    ArbiterRegistration, Batch, BatchReply, Command, ContributionSubmission, DebateSpec,
    ItemOutcome, ItemReply, MotionSpec, OutcomeSubmission, PanelRequest, Query,
};
use crate::debates::{self, DebateError, DebateRecord, ToOpen};
use crate::draw::{self, Candidate, DrawError, DrawSpec};
use crate::ruling::{self, Binding, RulingError, WireRuling};

/// Deterministic context of one applied item: no clock, no randomness beyond this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApplyCtx {
    pub log_index: u64,
    pub item_index: u32,
    /// The leader's stamped time for the batch (ms since the Unix epoch).
    pub time_ms: u64,
    /// The leader's stamped seed for the batch.
    pub seed: u64,
}

impl ApplyCtx {
    /// A seed for one purpose (e.g. the draw of one motion): SHA-256 over the batch seed,
    /// the item's position and the label, first 8 bytes big-endian. Re-derivable offline.
    pub fn derive_seed(&self, label: &str) -> u64 {
        let mut h = Sha256::new();
        h.update(self.seed.to_be_bytes());
        h.update(self.log_index.to_be_bytes());
        h.update(self.item_index.to_be_bytes());
        h.update(label.as_bytes());
        let d = h.finalize();
        let mut b = [0u8; 8];
        b.copy_from_slice(&d[..8]);
        u64::from_be_bytes(b)
    }

    /// A unique, deterministic id for something this item creates (`n` distinguishes
    /// several ids made by one item). This is the id generator the engine gets injected.
    pub fn new_id(&self, prefix: &str, n: u32) -> String {
        format!("{prefix}-{}-{}-{n}", self.log_index, self.item_index)
    }
}

/// Why `apply` refused a command. Stable `code()`s are returned to clients.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ApplyError {
    #[error("{field} is empty; give a non-empty value")]
    Empty { field: &'static str },
    #[error("arbiter {0} is already registered; register a new id to rotate keys")]
    ArbiterExists(String),
    #[error("arbiter {0} is not registered; register it first")]
    UnknownArbiter(String),
    #[error("motion {0} already exists; use a fresh motion id")]
    MotionExists(String),
    #[error("motion {0} does not exist; open it first")]
    UnknownMotion(String),
    #[error("motion {0} is already decided; rulings are counted once")]
    MotionClosed(String),
    #[error("arbiter {0} submitted two rulings on one motion; each arbiter counts once")]
    DuplicateRuling(String),
    #[error("{0}")]
    Ruling(#[from] RulingError),
    #[error("panel draw failed: {0}")]
    Draw(#[from] DrawError),
    #[error("state_hash must be 64 hex characters (SHA-256), got {0:?}")]
    BadStateHash(String),
    #[error("{0}")]
    Debate(#[from] DebateError),
    #[error("exam refused: {0}")]
    Exam(String),
    #[error("revocation refused: {0}")]
    Revocation(String),
    #[error("key rotation refused: {0}")]
    Rotation(String),
    #[error("this public key is (or was) arbiter {0}'s; every arbiter needs its own key")]
    KeyInUse(String),
    #[error("arbiter {0}'s key was revoked; its rulings no longer count")]
    Revoked(String),
    #[error(
        "motion {0} belongs to a debate: submit reveals (signed ruling, salt and signed commitment), not bare rulings"
    )]
    CommitmentRequired(String),
    #[error("reveal of a ruling on motion {motion}: {reason}")]
    BadReveal { motion: String, reason: String },
    #[error("{0}")]
    Authorship(#[from] crate::authorship::AuthorshipError),
}

impl ApplyError {
    pub fn code(&self) -> &'static str {
        match self {
            ApplyError::Empty { .. } => "empty_field",
            ApplyError::ArbiterExists(_) => "arbiter_exists",
            ApplyError::UnknownArbiter(_) => "unknown_arbiter",
            ApplyError::MotionExists(_) => "motion_exists",
            ApplyError::UnknownMotion(_) => "unknown_motion",
            ApplyError::MotionClosed(_) => "motion_closed",
            ApplyError::DuplicateRuling(_) => "duplicate_ruling",
            ApplyError::Ruling(_) => "bad_ruling",
            ApplyError::Draw(_) => "draw_failed",
            ApplyError::BadStateHash(_) => "bad_state_hash",
            ApplyError::Debate(e) => e.code(),
            ApplyError::Exam(_) => "exam_refused",
            ApplyError::Revocation(_) => "revocation_refused",
            ApplyError::Rotation(_) => "rotation_refused",
            ApplyError::KeyInUse(_) => "key_in_use",
            ApplyError::Revoked(_) => "revoked_key",
            ApplyError::CommitmentRequired(_) => "commitment_required",
            ApplyError::BadReveal { .. } => "bad_reveal",
            ApplyError::Authorship(_) => "authorship",
        }
    }
}

/// An ordered string-keyed table. The state machine lives in memory; its durable form is
/// the Raft log plus snapshots (`raft::state_machine`), so tables need no row tracking.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
#[serde(bound(serialize = "V: Serialize", deserialize = "V: DeserializeOwned"))]
pub struct Table<V> {
    rows: BTreeMap<String, V>,
}

impl<V> Default for Table<V> {
    fn default() -> Self {
        Self {
            rows: BTreeMap::new(),
        }
    }
}

impl<V> Table<V> {
    pub fn get(&self, key: &str) -> Option<&V> {
        self.rows.get(key)
    }
    pub fn contains(&self, key: &str) -> bool {
        self.rows.contains_key(key)
    }
    pub fn insert(&mut self, key: String, value: V) {
        self.rows.insert(key, value);
    }
    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.rows.get_mut(key)
    }
    pub fn remove(&mut self, key: &str) -> Option<V> {
        self.rows.remove(key)
    }
    pub fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.rows.iter()
    }
    pub fn len(&self) -> usize {
        self.rows.len()
    }
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
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
    /// and its rulings are refused.
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
    Decided(Verdict),
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
    /// The reveals (ruling, salt, commitment) of a debate motion, as submitted.
    #[serde(default)]
    pub reveals: Vec<String>,
    pub decided_log_index: Option<u64>,
}

/// The stored reply of a deduplicated request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredReply {
    pub reply: ItemReply,
    pub log_index: u64,
}

/// Everything the state machine holds. Adding a table: a field (with `#[serde(default)]`
/// so snapshots and records written before it still load).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct State {
    pub kv: Table<String>,
    pub notes: Table<Vec<NoteRecord>>,
    pub arbiters: Table<Arbiter>,
    pub motions: Table<Motion>,
    /// Replies by `client_id#request_id`, so a retried write applies at most once.
    pub requests: Table<StoredReply>,
    /// Debates by id (the Crucible document and its panel bookkeeping).
    pub debates: Table<DebateRecord>,
    /// The record: every applied registration, debate write and outcome, in order, keyed
    /// by a zero-padded sequence number. `panel verify` replays it.
    pub record: Table<RecordEntry>,
    /// Author names bound to a contributor key by their first signed write.
    #[serde(default)]
    pub contributors: Table<crate::authorship::AuthorKey>,
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
}

impl RecordEntry {
    /// The bytes hashed into the transparency log.
    pub fn leaf_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// Commands that go on the record (test commands do not).
pub fn on_record(c: &Command) -> bool {
    !matches!(c, Command::Put { .. } | Command::Note { .. })
}

fn dedup_key(client_id: &str, request_id: u64) -> String {
    format!("{client_id}#{request_id}")
}

/// Apply one Raft entry's batch. Items with a known `(client_id, request_id)` return their
/// stored reply and change nothing.
pub fn apply_batch(state: &mut State, log_index: u64, batch: &Batch) -> BatchReply {
    let mut items = Vec::with_capacity(batch.items.len());
    for (i, item) in batch.items.iter().enumerate() {
        let key = (!item.client_id.is_empty()).then(|| dedup_key(&item.client_id, item.request_id));
        if let Some(stored) = key.as_deref().and_then(|k| state.requests.get(k)) {
            items.push(ItemOutcome {
                reply: stored.reply.clone(),
                duplicate: true,
                log_index: stored.log_index,
            });
            continue;
        }
        let ctx = ApplyCtx {
            log_index,
            item_index: i as u32,
            time_ms: batch.time_ms,
            seed: batch.seed,
        };
        let reply = match apply(state, &ctx, &item.client_id, item.request_id, &item.command) {
            Ok(v) => ItemReply::Applied(v),
            Err(e) => ItemReply::Refused {
                code: e.code().into(),
                message: e.to_string(),
            },
        };
        if matches!(reply, ItemReply::Applied(_)) && on_record(&item.command) {
            let seq = state.record.len() as u64;
            state.record.insert(
                format!("{seq:012}"),
                RecordEntry {
                    seq,
                    log_index,
                    item_index: i as u32,
                    time_ms: batch.time_ms,
                    seed: batch.seed,
                    client_id: item.client_id.clone(),
                    request_id: item.request_id,
                    command: item.command.clone(),
                    reply: reply.clone(),
                },
            );
        }
        if let Some(k) = key {
            state.requests.insert(
                k,
                StoredReply {
                    reply: reply.clone(),
                    log_index,
                },
            );
        }
        items.push(ItemOutcome {
            reply,
            duplicate: false,
            log_index,
        });
    }
    BatchReply { items }
}

/// Apply one command. Pure: the result depends only on the arguments.
pub fn apply(
    state: &mut State,
    ctx: &ApplyCtx,
    client_id: &str,
    request_id: u64,
    command: &Command,
) -> Result<Value, ApplyError> {
    match command {
        Command::Put { key, value } => {
            non_empty("key", key)?;
            let previous = state.kv.get(key).cloned();
            state.kv.insert(key.clone(), value.clone());
            Ok(json!({ "previous": previous }))
        }
        Command::Note { topic, text } => {
            non_empty("topic", topic)?;
            let record = NoteRecord {
                text: text.clone(),
                client_id: client_id.into(),
                request_id,
                log_index: ctx.log_index,
                time_ms: ctx.time_ms,
            };
            let count = match state.notes.get_mut(topic) {
                Some(list) => {
                    list.push(record);
                    list.len()
                }
                None => {
                    state.notes.insert(topic.clone(), vec![record]);
                    1
                }
            };
            Ok(json!({ "count": count }))
        }
        Command::RegisterArbiter(reg) => register_arbiter(state, ctx, reg),
        Command::SetAdmission {
            arbiter_id,
            admitted,
            score_milli,
        } => {
            let a = state
                .arbiters
                .get_mut(arbiter_id)
                .ok_or_else(|| ApplyError::UnknownArbiter(arbiter_id.clone()))?;
            a.admitted = *admitted;
            a.score_milli = *score_milli;
            Ok(json!({ "arbiter_id": arbiter_id, "admitted": admitted }))
        }
        Command::OpenMotion(spec) => open_motion(state, ctx, spec),
        Command::RecordOutcome(sub) => record_outcome(state, ctx, sub),
        Command::CreateDebate(spec) => create_debate(state, ctx, spec),
        Command::Contribute(sub) => contribute(state, ctx, client_id, request_id, sub),
        Command::AskPanel(req) => ask_panel(state, ctx, req),
        Command::SubmitExam {
            arbiter_id,
            reveals,
        } => submit_exam(state, ctx, arbiter_id, reveals),
        Command::RevokeKey { revocation } => {
            let bytes =
                hex::decode(revocation).map_err(|_| ApplyError::Revocation("not hex".into()))?;
            let doc = <panel_proto::pb::KeyRevocation as prost::Message>::decode(bytes.as_slice())
                .map_err(|e| {
                    ApplyError::Revocation(format!("not a protobuf KeyRevocation: {e}"))
                })?;
            let key = panel_proto::keys::verify_revocation(&doc)
                .map_err(|e| ApplyError::Revocation(e.to_string()))?;
            let key_hex = hex::encode(key.as_bytes());
            let id = state
                .arbiters
                .iter()
                .find(|(_, a)| a.registration.public_key == key_hex)
                .map(|(id, _)| id.clone())
                .ok_or_else(|| {
                    ApplyError::Revocation(format!("no registered arbiter holds key {key_hex}"))
                })?;
            if let Some(a) = state.arbiters.get_mut(&id) {
                a.admitted = false;
                a.revoked = Some(json!({
                    "reason": doc.reason,
                    "effective_from_unix_ms": doc.effective_from_unix_ms,
                    "log_index": ctx.log_index,
                }));
            }
            Ok(json!({ "arbiter_id": id, "revoked": true }))
        }
        Command::RotateKey { rotation } => rotate_key(state, ctx, rotation),
        Command::CheckPriors => {
            let findings = crate::priors::run(state).map_err(ApplyError::Exam)?;
            let mut flagged = Vec::new();
            for (id, finding, fitted) in findings {
                if let Some(a) = state.arbiters.get_mut(&id) {
                    a.prior_check = Some(finding);
                    a.fitted_stance = fitted;
                    if fitted.is_some() {
                        flagged.push(id);
                    }
                }
            }
            Ok(json!({ "flagged": flagged }))
        }
        Command::ReissueVerdict { debate_id, author } => {
            let rec = debate_mut(state, debate_id)?;
            let n = rec.reissue_verdict(ctx.time_ms, author);
            let opened = open_pending(state, ctx, debate_id);
            Ok(json!({ "debate_id": debate_id, "verdict": n, "opened": opened }))
        }
    }
}

fn non_empty(field: &'static str, v: &str) -> Result<(), ApplyError> {
    if v.trim().is_empty() {
        Err(ApplyError::Empty { field })
    } else {
        Ok(())
    }
}

fn register_arbiter(
    state: &mut State,
    ctx: &ApplyCtx,
    reg: &ArbiterRegistration,
) -> Result<Value, ApplyError> {
    non_empty("arbiter_id", &reg.arbiter_id)?;
    non_empty("organisation", &reg.organisation)?;
    non_empty("model_family", &reg.model_family)?;
    ruling::parse_public_key(&reg.arbiter_id, &reg.public_key)?;
    if state.arbiters.contains(&reg.arbiter_id) {
        return Err(ApplyError::ArbiterExists(reg.arbiter_id.clone()));
    }
    // One key, one arbiter, ever: a key held now or rotated away cannot be registered again.
    if let Some((other, _)) = state
        .arbiters
        .iter()
        .find(|(_, a)| a.holds_or_held(&reg.public_key))
    {
        return Err(ApplyError::KeyInUse(other.clone()));
    }
    state.arbiters.insert(
        reg.arbiter_id.clone(),
        Arbiter {
            registration: reg.clone(),
            admitted: false,
            score_milli: 0,
            registered_at_ms: ctx.time_ms,
            exam: None,
            prior_check: None,
            fitted_stance: None,
            revoked: None,
            key_history: Vec::new(),
            recalibration: Default::default(),
        },
    );
    Ok(json!({ "arbiter_id": reg.arbiter_id }))
}

fn open_motion(state: &mut State, ctx: &ApplyCtx, spec: &MotionSpec) -> Result<Value, ApplyError> {
    non_empty("motion_id", &spec.motion_id)?;
    non_empty("debate_id", &spec.debate_id)?;
    if spec.state_hash.len() != 64 || hex::decode(&spec.state_hash).is_err() {
        return Err(ApplyError::BadStateHash(spec.state_hash.clone()));
    }
    if state.motions.contains(&spec.motion_id) {
        return Err(ApplyError::MotionExists(spec.motion_id.clone()));
    }
    let pool: Vec<Candidate> = state
        .arbiters
        .iter()
        .map(|(id, a)| Candidate {
            id: id.clone(),
            stance: a.seated_stance(),
            organisation: a.registration.organisation.clone(),
            model_family: a.registration.model_family.clone(),
            admitted: a.admitted && !a.recalibration.is_flagged(),
        })
        .collect();
    let draw_spec = DrawSpec {
        seats: spec.seats,
        min_per_stance: spec.min_per_stance,
        min_organisations: 2,
        contributors: spec.contributors.iter().cloned().collect(),
        author_model_family: spec.author_model_family.clone(),
    };
    let draw_seed = ctx.derive_seed(&spec.motion_id);
    let panel = draw::draw(&pool, &draw_spec, draw_seed)?;
    let seats: Vec<Seat> = panel
        .into_iter()
        .map(|c| Seat {
            arbiter_id: c.id,
            stance: c.stance,
            organisation: c.organisation,
        })
        .collect();
    let reply = json!({ "motion_id": spec.motion_id, "seats": seats, "draw_seed": draw_seed });
    state.motions.insert(
        spec.motion_id.clone(),
        Motion {
            spec: spec.clone(),
            seats,
            draw_seed,
            opened_at_ms: ctx.time_ms,
            opened_log_index: ctx.log_index,
            status: MotionStatus::Open,
            rulings: Vec::new(),
            reveals: Vec::new(),
            decided_log_index: None,
        },
    );
    Ok(reply)
}

/// Re-verify every ruling (decoding, seat by registered key, binding to motion, debate,
/// kind and state hash, strict signature), then run the acceptance rule. A single bad
/// ruling refuses the whole submission, so a forged or replayed ruling can never ride
/// along with good ones; a second ruling from one arbiter is refused too.
fn record_outcome(
    state: &mut State,
    ctx: &ApplyCtx,
    sub: &OutcomeSubmission,
) -> Result<Value, ApplyError> {
    let motion = state
        .motions
        .get(&sub.motion_id)
        .ok_or_else(|| ApplyError::UnknownMotion(sub.motion_id.clone()))?;
    if motion.status != MotionStatus::Open {
        return Err(ApplyError::MotionClosed(sub.motion_id.clone()));
    }
    let state_hash = hex::decode(&motion.spec.state_hash)
        .map_err(|_| ApplyError::BadStateHash(motion.spec.state_hash.clone()))?;
    let binding = Binding {
        motion_id: &motion.spec.motion_id,
        debate_id: &motion.spec.debate_id,
        kind: motion.spec.kind,
        state_hash: &state_hash,
    };
    // Seated arbiters by registered key.
    let mut seated: BTreeMap<Vec<u8>, (&str, ed25519_dalek::VerifyingKey)> = BTreeMap::new();
    for seat in &motion.seats {
        let arbiter = state
            .arbiters
            .get(&seat.arbiter_id)
            .ok_or_else(|| ApplyError::UnknownArbiter(seat.arbiter_id.clone()))?;
        let key = ruling::parse_public_key(&seat.arbiter_id, &arbiter.registration.public_key)?;
        if arbiter.revoked.is_some() {
            // A revoked key's rulings never count: treat it as holding no seat.
            continue;
        }
        seated.insert(key.to_bytes().to_vec(), (seat.arbiter_id.as_str(), key));
    }
    let debate_motion = motion.spec.question.is_some();
    if debate_motion && !sub.rulings.is_empty() {
        return Err(ApplyError::CommitmentRequired(sub.motion_id.clone()));
    }
    // Reveals: the commitment is signed by the arbiter and opened by the signed ruling
    // and the salt (docs/WIRE.md, commit-reveal); then the ruling is checked like any other.
    let mut from_reveals = Vec::with_capacity(sub.reveals.len());
    let mut rationales = Vec::with_capacity(sub.reveals.len());
    for hex_reveal in &sub.reveals {
        let bad = |reason: String| ApplyError::BadReveal {
            motion: sub.motion_id.clone(),
            reason,
        };
        let ruling::RevealParts {
            signed: sr,
            salt,
            commitment: c,
        } = ruling::decode_reveal(hex_reveal).map_err(bad)?;
        // A commitment signature is checked at intake and removed from the entry
        // (`ruling::intake_check`); one still present is verified like any signature.
        if !c.signature.is_empty() {
            panel_proto::commit_reveal::verify_commitment(&c).map_err(|e| bad(e.to_string()))?;
        }
        panel_proto::commit_reveal::check_opens(&c, &sr, &salt).map_err(|e| bad(e.to_string()))?;
        if c.motion_id != motion.spec.motion_id {
            return Err(bad(format!("the commitment is for motion {}", c.motion_id)));
        }
        if let Some(r) = sr.ruling.as_ref() {
            rationales.push(r.rationale.clone());
        }
        from_reveals.push(sr);
    }
    let bare = sub
        .rulings
        .iter()
        .map(WireRuling::decode)
        .collect::<Result<Vec<_>, _>>()?;
    let mut revealed = Vec::new();
    let mut receipts = Vec::new();
    let mut seen = BTreeSet::new();
    for sr in bare.iter().chain(from_reveals.iter()) {
        let signer = sr
            .ruling
            .as_ref()
            .map(|r| r.arbiter_key.clone())
            .unwrap_or_default();
        let (arbiter_id, key) = seated.get(&signer).ok_or_else(|| RulingError::NotSeated {
            fingerprint: hex::encode(&signer),
        })?;
        if !seen.insert(*arbiter_id) {
            return Err(ApplyError::DuplicateRuling((*arbiter_id).to_owned()));
        }
        let checked = ruling::check(sr, arbiter_id, key, &binding)?;
        revealed.extend(checked.revealed);
        receipts.extend(checked.receipt);
    }
    let policy = motion.spec.policy.clone().unwrap_or_default();
    let verdict = acceptance::decide(
        motion.spec.kind,
        &motion.seats,
        &revealed,
        &receipts,
        &policy,
    );
    let question = motion.spec.question.clone();
    let debate_id = motion.spec.debate_id.clone();
    let mut reply = json!({ "motion_id": sub.motion_id, "verdict": verdict });
    let mut all = sub.rulings.clone();
    all.extend(from_reveals.iter().map(WireRuling::encode));
    if let Some(m) = state.motions.get_mut(&sub.motion_id) {
        m.status = MotionStatus::Decided(verdict.clone());
        m.rulings = all;
        m.reveals = sub.reveals.clone();
        m.decided_log_index = Some(ctx.log_index);
    }
    if let Some(q) = question
        && let Some(rec) = state.debates.get_mut(&debate_id)
    {
        let settled = match &verdict {
            Verdict::Accepted { outcome, tallies } => {
                let rationale = format!(
                    "Accepted by a cross-stance panel ({}). {}",
                    tallies
                        .iter()
                        .map(|(k, t)| format!("{k:?}: {} yes, {} no", t.yes, t.no))
                        .collect::<Vec<_>>()
                        .join("; "),
                    rationales.first().map(String::as_str).unwrap_or("")
                );
                rec.settle(
                    ctx.time_ms,
                    &sub.motion_id,
                    debates::answer_of(outcome),
                    rationale.trim(),
                )
                .map_err(|e| e.to_string())
            }
            Verdict::Deadlocked(_) => {
                rec.deadlocked(&sub.motion_id, &q);
                Ok(())
            }
        };
        reply["settled"] = match settled {
            Ok(()) => json!(true),
            Err(e) => json!({ "refused": e }),
        };
        reply["opened"] = json!(open_pending(state, ctx, &debate_id));
    }
    if let Some(r) = crate::recalibration::on_outcome(state, &sub.motion_id) {
        reply["recalibration"] = r;
    }
    Ok(reply)
}

/// Records a signed key rotation: both signatures verify strictly (old key: authority; new
/// key: possession), the old key belongs to a registered, unrevoked arbiter, and the new
/// key is nobody's yet. From this entry on the arbiter's rulings must carry the new key;
/// rulings already recorded under the old key stay valid, and the old key is kept in
/// `key_history`.
fn rotate_key(state: &mut State, ctx: &ApplyCtx, rotation: &str) -> Result<Value, ApplyError> {
    let bytes = hex::decode(rotation).map_err(|_| ApplyError::Rotation("not hex".into()))?;
    let doc = <panel_proto::pb::KeyRotation as prost::Message>::decode(bytes.as_slice())
        .map_err(|e| ApplyError::Rotation(format!("not a protobuf KeyRotation: {e}")))?;
    let (old, new) = panel_proto::keys::verify_rotation(&doc)
        .map_err(|e| ApplyError::Rotation(e.to_string()))?;
    let (old_hex, new_hex) = (hex::encode(old.as_bytes()), hex::encode(new.as_bytes()));
    // One key, one arbiter, ever: the same rule as registration.
    if let Some((other, _)) = state
        .arbiters
        .iter()
        .find(|(_, a)| a.holds_or_held(&new_hex))
    {
        return Err(ApplyError::Rotation(format!(
            "the new key is (or was) arbiter {other}'s; generate a fresh key"
        )));
    }
    let id = state
        .arbiters
        .iter()
        .find(|(_, a)| a.registration.public_key == old_hex)
        .map(|(id, _)| id.clone())
        .ok_or_else(|| {
            ApplyError::Rotation(format!(
                "no registered arbiter holds the old key {}",
                panel_proto::fingerprint(&old)
            ))
        })?;
    let Some(a) = state.arbiters.get_mut(&id) else {
        return Err(ApplyError::UnknownArbiter(id));
    };
    if a.revoked.is_some() {
        return Err(ApplyError::Rotation(format!(
            "arbiter {id}'s key was revoked; a revoked key cannot authorise a rotation"
        )));
    }
    a.key_history.push(RotatedKey {
        public_key: old_hex,
        rotated_to: new_hex.clone(),
        reason: doc.reason.clone(),
        issued_at_unix_ms: doc.issued_at_unix_ms,
        log_index: ctx.log_index,
    });
    a.registration.public_key = new_hex.clone();
    Ok(json!({
        "arbiter_id": id,
        "old_fingerprint": panel_proto::fingerprint(&old),
        "new_fingerprint": panel_proto::fingerprint(&new),
    }))
}

fn submit_exam(
    state: &mut State,
    ctx: &ApplyCtx,
    arbiter_id: &str,
    reveals: &[String],
) -> Result<Value, ApplyError> {
    let arbiter = state
        .arbiters
        .get(arbiter_id)
        .ok_or_else(|| ApplyError::UnknownArbiter(arbiter_id.to_string()))?;
    let key = ruling::parse_public_key(arbiter_id, &arbiter.registration.public_key)?;
    let exam = crate::admission::default_exam().map_err(ApplyError::Exam)?;
    let answers = crate::admission::answers_from_reveals(exam, arbiter_id, &key, reveals)
        .map_err(|e| ApplyError::Exam(e.to_string()))?;
    let (scores, decision) =
        crate::admission::admit(exam, arbiter_id, &answers, (ctx.time_ms / 1000) as i64)
            .map_err(|e| ApplyError::Exam(e.to_string()))?;
    let brier_skill = scores
        .binary
        .as_ref()
        .map(|b| (1.0 - b.brier).clamp(0.0, 1.0))
        .unwrap_or(0.0);
    let record = json!({ "scores": scores, "decision": decision });
    if let Some(a) = state.arbiters.get_mut(arbiter_id) {
        // A revoked key is never re-admitted by an exam.
        a.admitted = decision.admitted && a.revoked.is_none();
        a.score_milli = (brier_skill * 1000.0).round() as u32;
        a.exam = Some(record.clone());
        a.recalibration.restart_after_exam();
    }
    Ok(json!({ "arbiter_id": arbiter_id, "admitted": decision.admitted, "exam": record }))
}

fn debate_mut<'a>(state: &'a mut State, id: &str) -> Result<&'a mut DebateRecord, ApplyError> {
    state
        .debates
        .get_mut(id)
        .ok_or_else(|| ApplyError::Debate(DebateError::UnknownDebate(id.to_string())))
}

fn create_debate(
    state: &mut State,
    ctx: &ApplyCtx,
    spec: &DebateSpec,
) -> Result<Value, ApplyError> {
    non_empty("resolution", &spec.resolution)?;
    non_empty("convener", &spec.convener)?;
    let id = format!("deb_{}", state.debates.len() + 1);
    let rec = debates::create(
        &id,
        ctx.time_ms,
        crucible::model::NewDebate {
            resolution: spec.resolution.clone(),
            pos_a: spec.pos_a.clone(),
            pos_b: spec.pos_b.clone(),
            burden: spec.burden.clone(),
            claim_budget: spec.claim_budget,
        },
        spec.policy.clone().unwrap_or_default(),
        spec.seats.max(2),
        spec.min_per_stance.max(1),
        spec.simulation,
    );
    state.debates.insert(id.clone(), rec);
    Ok(json!({ "debate_id": id }))
}

fn contribute(
    state: &mut State,
    ctx: &ApplyCtx,
    client_id: &str,
    request_id: u64,
    sub: &ContributionSubmission,
) -> Result<Value, ApplyError> {
    let authorship = crate::authorship::check(
        sub,
        state.contributors.get(&sub.author),
        client_id,
        request_id,
    )?;
    let rec = debate_mut(state, &sub.debate_id)?;
    let created = debates::contribute(
        rec,
        ctx.time_ms,
        &sub.author,
        &sub.side,
        sub.model_family.as_deref(),
        &sub.contribution,
        &sub.hints,
    )?;
    let signed_by = match authorship {
        crate::authorship::Authorship::Unsigned => None,
        crate::authorship::Authorship::Signed { public_key, bind } => {
            if bind {
                state.contributors.insert(
                    sub.author.clone(),
                    crate::authorship::AuthorKey {
                        public_key: public_key.clone(),
                        bound_at_log_index: ctx.log_index,
                    },
                );
            }
            Some(public_key)
        }
    };
    let opened = open_pending(state, ctx, &sub.debate_id);
    Ok(
        json!({ "debate_id": sub.debate_id, "created": created, "opened": opened, "signed_by": signed_by }),
    )
}

fn ask_panel(state: &mut State, ctx: &ApplyCtx, req: &PanelRequest) -> Result<Value, ApplyError> {
    let rec = debate_mut(state, &req.debate_id)?;
    let to_open = rec.request(req.question.clone(), req.expected)?;
    let id = open_question(state, ctx, to_open, 0)?;
    let opened = open_pending(state, ctx, &req.debate_id);
    Ok(json!({ "debate_id": req.debate_id, "motion_id": id, "opened": opened }))
}

/// Opens a motion for one debate question: draws its panel from the admitted arbiters.
fn open_question(
    state: &mut State,
    ctx: &ApplyCtx,
    t: ToOpen,
    n: u32,
) -> Result<String, ApplyError> {
    let rec = state
        .debates
        .get(&t.debate_id)
        .ok_or_else(|| ApplyError::Debate(DebateError::UnknownDebate(t.debate_id.clone())))?;
    let motion_id = ctx.new_id("mot", n);
    let widen = rec.deadlocks.get(&t.question.key()).copied().unwrap_or(0) as usize;
    let spec = MotionSpec {
        motion_id: motion_id.clone(),
        debate_id: t.debate_id.clone(),
        kind: t.kind,
        state_hash: t.state_hash.clone(),
        seats: rec.seats + 2 * widen,
        min_per_stance: rec.min_per_stance,
        contributors: rec.contributors.iter().cloned().collect(),
        author_model_family: rec.author_family_for(&t.question),
        policy: Some(rec.policy.clone()),
        question: Some(t.question.clone()),
        projection: Some(t.projection.clone()),
        expected: t.expected,
    };
    // A panel widened after a deadlock falls back to the debate's size when the pool of
    // admitted arbiters is too small for it.
    if let Err(e) = open_motion(state, ctx, &spec) {
        if widen == 0 {
            return Err(e);
        }
        let base = MotionSpec {
            seats: spec.seats - 2 * widen,
            ..spec
        };
        open_motion(state, ctx, &base)?;
    }
    if let Some(rec) = state.debates.get_mut(&t.debate_id) {
        rec.open.insert(t.question.key(), motion_id.clone());
        rec.questions.insert(motion_id.clone(), t.question);
    }
    Ok(motion_id)
}

/// Opens a motion for every question the document leaves pending. A question whose
/// panel cannot be drawn yet (too few admitted arbiters) stays pending and is tried
/// again after the next write.
fn open_pending(state: &mut State, ctx: &ApplyCtx, debate_id: &str) -> Vec<String> {
    let Some(rec) = state.debates.get(debate_id) else {
        return Vec::new();
    };
    let mut opened = Vec::new();
    for (i, t) in rec.to_open().into_iter().enumerate() {
        if let Ok(id) = open_question(state, ctx, t, 1000 + i as u32) {
            opened.push(id);
        }
    }
    opened
}

/// Answer a read-only query.
pub fn query(state: &State, q: &Query) -> Value {
    match q {
        Query::Get { key } => json!({ "value": state.kv.get(key) }),
        Query::Notes { topic } => {
            json!({ "notes": state.notes.get(topic).cloned().unwrap_or_default() })
        }
        Query::Arbiter { arbiter_id } => json!({ "arbiter": state.arbiters.get(arbiter_id) }),
        Query::Arbiters => {
            json!({ "arbiters": state.arbiters.iter().map(|(_, a)| a).collect::<Vec<_>>() })
        }
        Query::Motion { motion_id } => json!({ "motion": state.motions.get(motion_id) }),
        Query::Stats => {
            let counts: BTreeMap<&str, usize> = [
                ("kv", state.kv.len()),
                ("notes", state.notes.len()),
                ("arbiters", state.arbiters.len()),
                ("motions", state.motions.len()),
                ("requests", state.requests.len()),
            ]
            .into_iter()
            .collect();
            let accepted = state
                .motions
                .iter()
                .filter(|(_, m)| matches!(&m.status, MotionStatus::Decided(v) if v.is_accepted()))
                .count();
            json!({ "rows": counts, "accepted_motions": accepted })
        }
        Query::Debate { debate_id } => json!({ "debate": state.debates.get(debate_id) }),
        Query::Debates => json!({
            "debates": state
                .debates
                .iter()
                .map(|(id, r)| json!({
                    "id": id,
                    "resolution": r.debate.resolution,
                    "phase": r.debate.phase,
                    "verdicts": r.debate.verdicts.len(),
                    "open_motions": r.open.len(),
                }))
                .collect::<Vec<_>>()
        }),
        Query::DebateMotions { debate_id } => {
            let mut ms: Vec<&Motion> = state
                .motions
                .iter()
                .map(|(_, m)| m)
                .filter(|m| &m.spec.debate_id == debate_id)
                .collect();
            ms.sort_by_key(|m| (m.opened_log_index, m.spec.motion_id.clone()));
            json!({ "motions": ms })
        }
        Query::Export => json!({
            "format": crate::record::FORMAT,
            "entries": state.record.iter().map(|(_, e)| e).collect::<Vec<_>>(),
            "debates": state.debates.iter().map(|(id, r)| (id.clone(), r.debate.to_json())).collect::<BTreeMap<_, _>>(),
            "arbiters": state.arbiters.iter().map(|(_, a)| a).collect::<Vec<_>>(),
        }),
    }
}

/// The stance of an arbiter, for callers composing panels outside `apply`.
pub fn stance_of(state: &State, arbiter_id: &str) -> Option<Stance> {
    state
        .arbiters
        .get(arbiter_id)
        .map(|a| a.registration.stance)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acceptance::{Decision, MotionKind};
    use crate::command::Item;
    use ed25519_dalek::SigningKey;

    fn batch(items: Vec<(&str, u64, Command)>) -> Batch {
        Batch {
            time_ms: 1_000,
            seed: 7,
            items: items
                .into_iter()
                .map(|(c, r, command)| Item {
                    client_id: c.into(),
                    request_id: r,
                    command,
                })
                .collect(),
        }
    }

    fn key(i: u8) -> SigningKey {
        SigningKey::from_bytes(&[i; 32])
    }

    fn register(id: &str, i: u8, stance: Stance, org: &str) -> Command {
        Command::RegisterArbiter(ArbiterRegistration {
            arbiter_id: id.into(),
            public_key: hex::encode(key(i).verifying_key().to_bytes()),
            organisation: org.into(),
            model_family: format!("fam-{id}"),
            stance,
            endpoint: String::new(),
        })
    }

    /// Four admitted arbiters (two per side) and an open merge motion with four seats.
    fn setup() -> State {
        let mut s = State::default();
        let mut items = vec![];
        for (n, (id, stance, org)) in [
            ("a1", Stance::A, "o1"),
            ("a2", Stance::A, "o2"),
            ("b1", Stance::B, "o1"),
            ("b2", Stance::B, "o3"),
        ]
        .iter()
        .enumerate()
        {
            items.push(("t", n as u64 * 2, register(id, n as u8 + 1, *stance, org)));
            items.push((
                "t",
                n as u64 * 2 + 1,
                Command::SetAdmission {
                    arbiter_id: (*id).into(),
                    admitted: true,
                    score_milli: 900,
                },
            ));
        }
        items.push(("t", 100, open("m1")));
        let r = apply_batch(&mut s, 1, &batch(items));
        assert!(
            r.items
                .iter()
                .all(|o| matches!(o.reply, ItemReply::Applied(_))),
            "{r:?}"
        );
        s
    }

    fn open(id: &str) -> Command {
        Command::OpenMotion(MotionSpec {
            motion_id: id.into(),
            debate_id: "d1".into(),
            kind: MotionKind::Merge,
            state_hash: "ab".repeat(32),
            seats: 4,
            min_per_stance: 2,
            contributors: vec![],
            author_model_family: None,
            policy: None,
            question: None,
            projection: None,
            expected: None,
        })
    }

    const HASH: [u8; 32] = [0xab; 32];

    fn binding() -> Binding<'static> {
        Binding {
            motion_id: "m1",
            debate_id: "d1",
            kind: MotionKind::Merge,
            state_hash: &HASH,
        }
    }

    fn signed(_id: &str, i: u8, d: Decision) -> WireRuling {
        ruling::sign(&key(i), &binding(), d, 0.8, None)
    }

    fn all_yes() -> Vec<WireRuling> {
        vec![
            signed("a1", 1, Decision::Yes),
            signed("a2", 2, Decision::Yes),
            signed("b1", 3, Decision::Yes),
            signed("b2", 4, Decision::Yes),
        ]
    }

    fn outcome(rulings: Vec<WireRuling>) -> Command {
        Command::RecordOutcome(OutcomeSubmission {
            motion_id: "m1".into(),
            rulings,
            reveals: vec![],
        })
    }

    #[test]
    fn retried_request_applies_once() {
        let mut s = State::default();
        let note = Command::Note {
            topic: "t".into(),
            text: "x".into(),
        };
        apply_batch(&mut s, 1, &batch(vec![("c", 1, note.clone())]));
        let r = apply_batch(
            &mut s,
            2,
            &batch(vec![("c", 1, note.clone()), ("c", 2, note)]),
        );
        assert!(r.items[0].duplicate);
        assert_eq!(r.items[0].log_index, 1);
        assert!(!r.items[1].duplicate);
        assert_eq!(s.notes.get("t").unwrap().len(), 2);
    }

    #[test]
    fn apply_is_deterministic_across_replicas() {
        let a = setup();
        let b = setup();
        assert_eq!(
            serde_json::to_value(&a).unwrap(),
            serde_json::to_value(&b).unwrap()
        );
        assert_eq!(a.motions.get("m1").unwrap().seats.len(), 4);
    }

    #[test]
    fn accepted_outcome_with_real_signatures() {
        let mut s = setup();
        let r = apply_batch(&mut s, 2, &batch(vec![("t", 200, outcome(all_yes()))]));
        let ItemReply::Applied(v) = &r.items[0].reply else {
            panic!("{r:?}")
        };
        assert!(v["verdict"]["Accepted"].is_object(), "{v}");
        // Counting the same rulings again is refused.
        let r = apply_batch(&mut s, 3, &batch(vec![("t", 201, outcome(all_yes()))]));
        assert!(
            matches!(&r.items[0].reply, ItemReply::Refused { code, .. } if code == "motion_closed")
        );
    }

    fn refused_code(r: &BatchReply) -> String {
        match &r.items[0].reply {
            ItemReply::Refused { code, message } => format!("{code}: {message}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn forged_ruling_refuses_the_submission_and_changes_nothing() {
        let mut s = setup();
        let mut rulings = all_yes();
        rulings[3] = signed("b2", 9, Decision::Yes); // a key that holds no seat
        let before = serde_json::to_value(&s.motions).unwrap();
        let r = apply_batch(&mut s, 2, &batch(vec![("u", 1, outcome(rulings))]));
        assert!(refused_code(&r).starts_with("bad_ruling"), "{r:?}");
        assert_eq!(before, serde_json::to_value(&s.motions).unwrap());
    }

    #[test]
    fn tampered_stale_and_duplicate_rulings_refused() {
        let mut s = setup();
        // Changed after signing.
        let mut rulings = all_yes();
        let mut sr = rulings[0].decode().unwrap();
        sr.ruling.as_mut().unwrap().decision = panel_proto::pb::Decision::Reject as i32;
        rulings[0] = WireRuling::encode(&sr);
        let r = apply_batch(&mut s, 2, &batch(vec![("u", 1, outcome(rulings))]));
        assert!(refused_code(&r).contains("fails verification"), "{r:?}");
        // Signed over another state of the debate.
        let mut rulings = all_yes();
        let stale = Binding {
            state_hash: &[0xcd; 32],
            ..binding()
        };
        rulings[1] = ruling::sign(&key(2), &stale, Decision::Yes, 0.8, None);
        let r = apply_batch(&mut s, 3, &batch(vec![("u", 2, outcome(rulings))]));
        assert!(refused_code(&r).contains("not bound"), "{r:?}");
        // The same arbiter twice (a replay to pad the count).
        let mut rulings = all_yes();
        rulings[3] = rulings[0].clone();
        let r = apply_batch(&mut s, 4, &batch(vec![("u", 3, outcome(rulings))]));
        assert!(refused_code(&r).starts_with("duplicate_ruling"), "{r:?}");
        // Garbage.
        let r = apply_batch(
            &mut s,
            5,
            &batch(vec![("u", 4, outcome(vec![WireRuling("00ff".into())]))]),
        );
        assert!(refused_code(&r).starts_with("bad_ruling"), "{r:?}");
        assert_eq!(s.motions.get("m1").unwrap().status, MotionStatus::Open);
    }

    #[test]
    fn one_sided_rulings_deadlock_and_are_recorded() {
        let mut s = setup();
        let rulings = vec![
            signed("a1", 1, Decision::Yes),
            signed("a2", 2, Decision::Yes),
            signed("b1", 3, Decision::No),
        ];
        let r = apply_batch(&mut s, 2, &batch(vec![("u", 1, outcome(rulings))]));
        let ItemReply::Applied(v) = &r.items[0].reply else {
            panic!("{r:?}")
        };
        assert!(v["verdict"]["Deadlocked"].is_object(), "{v}");
        assert_eq!(s.motions.get("m1").unwrap().rulings.len(), 3);
    }

    #[test]
    fn draw_failure_is_a_clear_refusal() {
        let mut s = State::default();
        let r = apply_batch(&mut s, 1, &batch(vec![("t", 1, open("m9"))]));
        assert!(
            matches!(&r.items[0].reply, ItemReply::Refused { code, message } if code == "draw_failed" && message.contains("stance A"))
        );
        assert!(s.motions.is_empty());
    }

    fn revoke(i: u8, signer: u8) -> Command {
        let mut doc = panel_proto::keys::sign_revocation(&key(signer), 1, 1, "key lost")
            .expect("sign revocation");
        doc.key = key(i).verifying_key().to_bytes().to_vec();
        Command::RevokeKey {
            revocation: hex::encode(prost::Message::encode_to_vec(&doc)),
        }
    }

    fn rotate(old: u8, new: u8, authority: u8) -> Command {
        let mut doc = panel_proto::keys::sign_rotation(&key(authority), &key(new), 1, "scheduled")
            .expect("sign rotation");
        doc.old_key = key(old).verifying_key().to_bytes().to_vec();
        Command::RotateKey {
            rotation: hex::encode(prost::Message::encode_to_vec(&doc)),
        }
    }

    fn refused(r: &BatchReply, want: &str) -> bool {
        matches!(&r.items[0].reply, ItemReply::Refused { code, .. } if code == want)
    }

    #[test]
    fn a_signed_rotation_moves_the_arbiter_to_its_new_key() {
        let mut s = setup();
        // Authorised by a key that is not the old key: the old-key signature fails.
        let r = apply_batch(&mut s, 2, &batch(vec![("t", 400, rotate(1, 21, 9))]));
        assert!(refused(&r, "rotation_refused"), "{r:?}");
        // Onto a key another arbiter holds.
        let r = apply_batch(&mut s, 3, &batch(vec![("t", 401, rotate(1, 2, 1))]));
        assert!(refused(&r, "rotation_refused"), "{r:?}");
        // From a key nobody registered.
        let r = apply_batch(&mut s, 4, &batch(vec![("t", 402, rotate(30, 31, 30))]));
        assert!(refused(&r, "rotation_refused"), "{r:?}");
        assert_eq!(
            s.arbiters.get("a1").unwrap().registration.public_key,
            hex::encode(key(1).verifying_key().to_bytes())
        );
        // The holder's own rotation: recorded, old key kept in the history.
        let r = apply_batch(&mut s, 5, &batch(vec![("t", 403, rotate(1, 21, 1))]));
        assert!(matches!(r.items[0].reply, ItemReply::Applied(_)), "{r:?}");
        let a1 = s.arbiters.get("a1").unwrap();
        assert_eq!(
            a1.registration.public_key,
            hex::encode(key(21).verifying_key().to_bytes())
        );
        assert_eq!(
            a1.key_history[0].public_key,
            hex::encode(key(1).verifying_key().to_bytes())
        );
        // A ruling under the old key no longer counts; the new key's does.
        let r = apply_batch(&mut s, 6, &batch(vec![("t", 404, outcome(all_yes()))]));
        assert!(refused(&r, "bad_ruling"), "{r:?}");
        let mut rulings = all_yes();
        rulings[0] = signed("a1", 21, Decision::Yes);
        let r = apply_batch(&mut s, 7, &batch(vec![("t", 405, outcome(rulings))]));
        assert!(matches!(r.items[0].reply, ItemReply::Applied(_)), "{r:?}");
        // A revoked key cannot rotate.
        let r = apply_batch(&mut s, 8, &batch(vec![("t", 406, revoke(2, 2))]));
        assert!(matches!(r.items[0].reply, ItemReply::Applied(_)), "{r:?}");
        let r = apply_batch(&mut s, 9, &batch(vec![("t", 407, rotate(2, 22, 2))]));
        assert!(refused(&r, "rotation_refused"), "{r:?}");
        // A rotated-away key cannot be registered again by anyone.
        let r = apply_batch(
            &mut s,
            10,
            &batch(vec![("t", 408, register("x1", 1, Stance::A, "o9"))]),
        );
        assert!(refused(&r, "key_in_use"), "{r:?}");
    }

    #[test]
    fn a_revoked_key_is_not_drawn_and_its_rulings_are_refused() {
        let mut s = setup();
        // A revocation signed by someone else is refused and changes nothing.
        let r = apply_batch(&mut s, 2, &batch(vec![("t", 300, revoke(1, 9))]));
        assert!(
            matches!(&r.items[0].reply, ItemReply::Refused { code, .. } if code == "revocation_refused"),
            "{r:?}"
        );
        assert!(s.arbiters.get("a1").unwrap().revoked.is_none());
        // The holder's own signed revocation is recorded.
        let r = apply_batch(&mut s, 3, &batch(vec![("t", 301, revoke(1, 1))]));
        assert!(matches!(r.items[0].reply, ItemReply::Applied(_)), "{r:?}");
        let a1 = s.arbiters.get("a1").unwrap();
        assert!(a1.revoked.is_some() && !a1.admitted);
        // Its ruling on a motion it was seated on no longer counts: the submission is refused.
        let r = apply_batch(&mut s, 4, &batch(vec![("t", 302, outcome(all_yes()))]));
        assert!(
            matches!(&r.items[0].reply, ItemReply::Refused { code, .. } if code == "bad_ruling"),
            "{r:?}"
        );
        // And it is never drawn again: four seats cannot be filled from three arbiters.
        let r = apply_batch(&mut s, 5, &batch(vec![("t", 303, open("m2"))]));
        assert!(
            matches!(&r.items[0].reply, ItemReply::Refused { code, .. } if code == "draw_failed"),
            "{r:?}"
        );
    }
}
