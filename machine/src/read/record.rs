//! The exported record and its offline verification (`panel verify`).
//!
//! A record bundles every applied registration, debate write and outcome in log order,
//! the debates' SPEC documents, the arbiters, and the log's checkpoints over the Merkle
//! tree of the entries: C2SP signed notes carrying the log key's signature and the
//! witnesses' cosignatures (`checkpoints`, docs/WIRE.md "Transparency log"). Records of
//! format v1 carry one checkpoint signed by the exporting replica instead
//! (`transparency::Checkpoint`) and still verify. Verification needs no
//! service: it checks the checkpoints, then re-applies every entry with the same pure
//! `apply` the replicas run (strict signatures, commitments against reveals, the panel
//! draw from its logged seed, the acceptance rule, the Crucible engine) and compares each
//! result, and finally the recomputed documents, with what the record claims.

use std::collections::BTreeMap;

use ed25519_dalek::SigningKey;
use panel_tlog::note::{Note, NoteSigner};
use panel_tlog::policy::Policy;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::apply::{self, ApplyCtx};
use crate::command::ItemReply;
use crate::model::record_entry::LeafError;
use crate::model::{MotionStatus, RecordEntry, State};
use crate::rules::acceptance::Acceptance;
use crate::rules::transparency::{Checkpoint, Log};

/// Format tag of an exported record: v3 binds procedure runs' roles to keys.
pub const FORMAT: &str = "crucible-panel-record/v3";
/// Format tag of witnessed records from before run roles were bound; they still verify,
/// their runs' inputs taken as open.
pub const FORMAT_V2: &str = "crucible-panel-record/v2";
/// Format tag of records exported before the witnessed log (one replica-signed checkpoint).
pub const FORMAT_V1: &str = "crucible-panel-record/v1";

/// An exported record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    pub format: String,
    pub entries: Vec<RecordEntry>,
    pub debates: BTreeMap<String, Value>,
    pub arbiters: Vec<Value>,
    /// v1 only: the exporting replica's checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Checkpoint>,
    /// v2: the log's checkpoints in order of size, each a signed note (log signature and
    /// cosignatures); the last covers every entry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<String>,
    /// Procedure runs by id, as their entries leave them (docs/PROCEDURES.md); absent in
    /// records from before procedures.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub runs: BTreeMap<String, Value>,
}

/// The record of `state`: every entry, document and arbiter, and every checkpoint apply
/// issued, signed with `log_key`. If the last issued checkpoint does not cover the whole
/// record, one at the full size is added, signed but not cosigned; signing it is safe for
/// the same reason as every checkpoint (`checkpoints` module docs): its body is computed
/// from the applied record alone.
pub fn export(state: &State, log_key: Option<&NoteSigner>) -> Bundle {
    let entries: Vec<RecordEntry> = state.record.iter().cloned().collect();
    let size = entries.len() as u64;
    let mut checkpoints: Vec<String> = state
        .checkpoints
        .iter()
        .filter(|c| c.size <= size)
        .map(|c| crate::features::checkpoints::note(state, c, log_key).to_text())
        .collect();
    let covered = state.checkpoints.iter().any(|c| c.size == size);
    // The tail's root is the state's own tree, which holds every applied entry's leaf
    // (`apply_batch`); a tree short of the record (a damaged snapshot) gets no tail, so
    // `panel verify` reports the record's last entries as uncovered.
    let tail_root = (state.tree.len() == size).then(|| state.tree.root());
    if let (false, true, Some(root)) = (covered, size > 0, tail_root) {
        let tail = crate::model::checkpoint::IssuedCheckpoint {
            size,
            root: panel_tlog::checkpoint::encode_hash(&root),
            time_ms: 0,
            cosignatures: Vec::new(),
            log_signatures: Vec::new(),
        };
        checkpoints.push(crate::features::checkpoints::note(state, &tail, log_key).to_text());
    }
    Bundle {
        format: FORMAT.into(),
        entries,
        debates: state
            .debates
            .iter()
            .map(|(id, r)| (id.clone(), r.debate.to_json()))
            .collect(),
        arbiters: state
            .arbiters
            .iter()
            .map(|(_, a)| serde_json::to_value(a).unwrap_or(Value::Null))
            .collect(),
        checkpoint: None,
        checkpoints,
        runs: runs_of(state),
    }
}

/// Every procedure run as the record carries it.
fn runs_of(state: &State) -> BTreeMap<String, Value> {
    state
        .runs
        .iter()
        .map(|(id, r)| (id.clone(), serde_json::to_value(r).unwrap_or(Value::Null)))
        .collect()
}

/// The transparency log over the entries, in order.
pub fn log_of(entries: &[RecordEntry]) -> Result<Log, LeafError> {
    let mut log = Log::new();
    for e in entries {
        log.append(&e.leaf_bytes()?);
    }
    Ok(log)
}

/// Adds a v1 checkpoint over the entries, signed with a replica's key (v1 records only).
pub fn sign_v1(bundle: &mut Bundle, key: &SigningKey, time_ms: u64) -> Result<(), LeafError> {
    let log = log_of(&bundle.entries)?;
    bundle.checkpoint = Some(Checkpoint::sign(key, log.len(), &log.root(), time_ms));
    Ok(())
}

/// The first thing in a record that does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    #[error(
        "the record format is {0:?}; expected {FORMAT:?} (or the older {FORMAT_V2:?} or {FORMAT_V1:?})"
    )]
    Format(String),
    #[error("entry {position}: its sequence number is {seq}; the log is reordered or has a gap")]
    Sequence { position: usize, seq: u64 },
    #[error("entry {seq} ({kind}): {reason}")]
    Entry {
        seq: u64,
        kind: &'static str,
        reason: String,
    },
    #[error("debate {debate}: {path} {reason}")]
    Document {
        debate: String,
        path: String,
        reason: String,
    },
    #[error("procedure run {run}: {path} {reason}")]
    Run {
        run: String,
        path: String,
        reason: String,
    },
    #[error("arbiters: {path} {reason}")]
    Arbiters { path: String, reason: String },
    #[error("checkpoint: {0}")]
    Checkpoint(#[from] CheckpointFailure),
    #[error("{0}")]
    Leaf(#[from] LeafError),
    #[error("charter: {0}")]
    Charter(#[from] CharterFailure),
    #[error("policy: {0}")]
    Policy(#[from] PolicyFailure),
}

/// Why a record's checkpoints do not bind its entries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointFailure {
    #[error("the record carries no signed checkpoint")]
    NoneSigned,
    #[error("{0}")]
    Legacy(#[from] crate::rules::transparency::LegacyCheckpointError),
    #[error("it covers {covers} entries but the record has {entries}")]
    LegacySize { covers: u64, entries: u64 },
    #[error(
        "the Merkle root of the entries differs from the signed root: an entry was changed, added, dropped or reordered"
    )]
    LegacyRoot,
    #[error("checkpoints[{index}]: {problem}")]
    At {
        index: usize,
        problem: CheckpointProblem,
    },
    #[error("the record carries no checkpoint")]
    None,
    #[error(
        "the last checkpoint covers {covers} of the record's {entries} entries; entries after it are not bound"
    )]
    LastShort { covers: u64, entries: u64 },
}

/// What is wrong with one checkpoint of a record (`CheckpointFailure::At`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointProblem {
    #[error("{0}")]
    Note(panel_tlog::NoteError),
    #[error("{0}")]
    Body(#[from] panel_tlog::checkpoint::CheckpointError),
    #[error("its origin is {found:?}, but this record's log is {expected:?}")]
    Origin { found: String, expected: String },
    #[error("checkpoints must be non-empty and grow in size")]
    NotGrowing,
    #[error("it covers {covers} entries but the record has {entries}")]
    BeyondEntries { covers: u64, entries: u64 },
    #[error("the log key of the record's charter: {0}")]
    LogKey(panel_tlog::NoteError),
    #[error(
        "its root is not the Merkle root of the first {size} entries: an entry was changed, added, dropped or reordered"
    )]
    Root { size: u64 },
}

/// Why a record does not satisfy the verifier's trust policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyFailure {
    #[error(
        "a {format} record carries no log-signed checkpoints; only {FORMAT} and {FORMAT_V2} records can be checked against a policy"
    )]
    Unsigned { format: String },
    #[error("checkpoints[{index}]: {error}")]
    Note {
        index: usize,
        error: panel_tlog::NoteError,
    },
    #[error("checkpoints[{index}] is not the policy's log's: {error}")]
    NotByPolicyLog {
        index: usize,
        error: Box<panel_tlog::policy::PolicyError>,
    },
    #[error("the record carries no checkpoint")]
    NoCheckpoint,
    #[error("the checkpoint covering the whole record does not satisfy the policy: {0}")]
    Unsatisfied(#[from] panel_tlog::policy::PolicyError),
    #[error("the record's charter names log key {key}, which the policy does not list")]
    CharterLogKey { key: String },
}

/// Why a record is not the trusted federation's (`panel verify --charter`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CharterFailure {
    #[error(
        "the record adopts charter {adopted}, not the trusted charter {trusted}: another federation's record, or a rewritten one"
    )]
    Other { adopted: String, trusted: String },
    #[error("the record's first entry adopts no charter; it is not a chartered group's record")]
    NotChartered,
}

/// What a successful verification established.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerificationReport {
    pub entries: usize,
    pub arbiters: usize,
    pub debates: usize,
    pub motions_accepted: usize,
    pub motions_deadlocked: usize,
    pub verdicts: Vec<Value>,
    /// Every procedure run, as the entries leave it.
    pub runs: Vec<RunSummary>,
    pub checkpoint_size: u64,
    pub checkpoint_root: String,
    /// How many checkpoints the record carries (v2), all consistent with its entries.
    pub checkpoints: usize,
    /// The log's origin (v2).
    pub origin: Option<String>,
    /// Whether the checkpoints' log signatures were checked against the log vkey the
    /// record's own charter names (no trust anchor: the record's own claim).
    pub log_signed_per_charter: bool,
    /// Hex SHA-256 of the charter the record adopted (its first entry), if any.
    pub charter: Option<String>,
}

/// One procedure run in a verification report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub run: String,
    pub kind: panel_procedures::RunKind,
    pub summary: String,
    pub finished: bool,
}

/// The first JSON path where two values differ, with both values.
pub fn first_difference(
    path: &str,
    recorded: &Value,
    recomputed: &Value,
) -> Option<(String, String)> {
    match (recorded, recomputed) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                let p = format!("{path}.{k}");
                match b.get(k) {
                    Some(vb) => {
                        if let Some(d) = first_difference(&p, va, vb) {
                            return Some(d);
                        }
                    }
                    None => return Some((p, "is in the record but not recomputed".into())),
                }
            }
            b.keys().find(|k| !a.contains_key(*k)).map(|k| {
                (
                    format!("{path}.{k}"),
                    "is recomputed but missing from the record".into(),
                )
            })
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                if let Some(d) = first_difference(&format!("{path}[{i}]"), va, vb) {
                    return Some(d);
                }
            }
            (a.len() != b.len()).then(|| {
                (
                    path.to_string(),
                    format!(
                        "has {} items in the record but {} recomputed",
                        a.len(),
                        b.len()
                    ),
                )
            })
        }
        (a, b) if a == b => None,
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => None,
        (a, b) => Some((
            path.to_string(),
            format!("is {a} in the record but recomputes to {b}"),
        )),
    }
}

fn describe(reply: &ItemReply) -> String {
    match reply {
        ItemReply::Applied(v) => match crate::reply::Decided::deserialize(v).map(|d| d.verdict) {
            Ok(Acceptance::Accepted { .. }) => "applied, outcome accepted".into(),
            Ok(Acceptance::Deadlocked(d)) => format!(
                "applied, outcome deadlocked ({})",
                serde_json::to_string(&d.reasons).unwrap_or_default()
            ),
            Err(_) => "applied".into(),
        },
        ItemReply::Refused { code, message } => format!("refused ({code}): {message}"),
    }
}

/// Verifies a record offline. Returns the first failure, naming the entry and why.
/// The procedure runs must be exactly what the entries produce, none missing, none extra.
fn check_runs(bundle: &Bundle, st: &State) -> Result<(), Failure> {
    let recomputed = runs_of(st);
    for (id, run) in &recomputed {
        let recorded = bundle.runs.get(id).ok_or_else(|| Failure::Run {
            run: id.clone(),
            path: "$".into(),
            reason: "is missing from the record".into(),
        })?;
        if let Some((path, reason)) = first_difference("$", recorded, run) {
            return Err(Failure::Run {
                run: id.clone(),
                path,
                reason,
            });
        }
    }
    if let Some(extra) = bundle.runs.keys().find(|k| !recomputed.contains_key(*k)) {
        return Err(Failure::Run {
            run: extra.clone(),
            path: "$".into(),
            reason: "is in the record but no entry starts it".into(),
        });
    }
    Ok(())
}

pub fn verify(bundle: &Bundle) -> Result<VerificationReport, Failure> {
    if ![FORMAT, FORMAT_V2, FORMAT_V1].contains(&bundle.format.as_str()) {
        return Err(Failure::Format(bundle.format.clone()));
    }
    for (i, e) in bundle.entries.iter().enumerate() {
        if e.seq != i as u64 {
            return Err(Failure::Sequence {
                position: i,
                seq: e.seq,
            });
        }
    }
    // Re-apply every entry exactly as the replicas did. The memo is this check's own: it
    // spares re-checking a signature that one entry verifies twice (a reveal's opening and
    // its ruling).
    let memo = panel_proto::VerifiedMemo::default();
    let mut st = State {
        v2_rules: bundle.format != FORMAT,
        ..State::default()
    };
    for e in &bundle.entries {
        // The rule set never goes down (`rules.rs`): an entry naming a lower level than one
        // before it was not applied by this cluster's replicas.
        let level = e.rules.unwrap_or(0);
        if level < st.rules {
            return Err(Failure::Entry {
                seq: e.seq,
                kind: e.command.kind(),
                reason: format!(
                    "it names rule set {level}, but an earlier entry was applied under rule set {}; a replica never lowers the rule set",
                    st.rules
                ),
            });
        }
        st.rules = level;
        let ctx = ApplyCtx {
            log_index: e.log_index,
            item_index: e.item_index,
            time_ms: e.time_ms,
            seed: e.seed,
            memo: &memo,
        };
        let replayed = match apply::apply(&mut st, &ctx, &e.client_id, e.request_id, &e.command) {
            Ok(v) => ItemReply::Applied(v.to_json()),
            Err(err) => ItemReply::Refused {
                code: err.code(),
                message: err.to_string(),
            },
        };
        if replayed != e.reply {
            let reason = match (&e.reply, &replayed) {
                (ItemReply::Applied(a), ItemReply::Applied(b)) => {
                    match first_difference("$", a, b) {
                        Some((path, why)) => format!(
                            "the recorded result differs from re-applying it: {path} {why} ({})",
                            describe(&replayed)
                        ),
                        None => "the recorded result differs from re-applying it".into(),
                    }
                }
                _ => format!(
                    "the record says {} but re-applying it is {}",
                    describe(&e.reply),
                    describe(&replayed)
                ),
            };
            return Err(Failure::Entry {
                seq: e.seq,
                kind: e.command.kind(),
                reason,
            });
        }
        // The tree grows after each entry, as in `apply_batch`: a motion drawn from the
        // record before it (`draw_seed`) sees the same root here as on the replicas.
        st.tree.append(&e.leaf_bytes()?);
    }
    // The documents must be exactly what the entries produce.
    for (id, rec) in st.debates.iter() {
        let recomputed = rec.debate.to_json();
        let recorded = bundle.debates.get(id).ok_or_else(|| Failure::Document {
            debate: id.clone(),
            path: "$".into(),
            reason: "is missing from the record".into(),
        })?;
        if let Some((path, reason)) = first_difference("$", recorded, &recomputed) {
            return Err(Failure::Document {
                debate: id.clone(),
                path,
                reason,
            });
        }
    }
    if let Some(extra) = bundle.debates.keys().find(|k| st.debates.get(k).is_none()) {
        return Err(Failure::Document {
            debate: extra.clone(),
            path: "$".into(),
            reason: "is in the record but no entry creates it".into(),
        });
    }
    check_runs(bundle, &st)?;
    let arbiters: Vec<Value> = st
        .arbiters
        .iter()
        .map(|(_, a)| serde_json::to_value(a).unwrap_or(Value::Null))
        .collect();
    if let Some((path, why)) = first_difference("$", &json!(bundle.arbiters), &json!(arbiters)) {
        return Err(Failure::Arbiters { path, reason: why });
    }
    // The checkpoints bind the exact sequence of entries.
    let bound = if bundle.format == FORMAT_V1 {
        v1_checkpoint(bundle, &log_of(&bundle.entries)?)?
    } else {
        v2_checkpoints(bundle, &st)?
    };
    let (mut accepted, mut deadlocked) = (0, 0);
    st.motions.for_each(|m| match &m.status {
        MotionStatus::Decided(v) if v.is_accepted() => accepted += 1,
        MotionStatus::Decided(_) => deadlocked += 1,
        _ => {}
    });
    let runs = st
        .runs
        .iter()
        .map(|(id, r)| RunSummary {
            run: id.clone(),
            kind: r.run.kind(),
            summary: r.run.summary(),
            finished: r.run.finished(),
        })
        .collect();
    let verdicts = st
        .debates
        .iter()
        .flat_map(|(id, r)| {
            r.debate.verdicts.iter().map(move |v| {
                json!({"debate": id, "n": v.n, "winner": v.winner, "totals": v.totals, "margin": v.margin, "band": v.band.key})
            })
        })
        .collect();
    Ok(VerificationReport {
        entries: bundle.entries.len(),
        arbiters: st.arbiters.len(),
        debates: st.debates.len(),
        motions_accepted: accepted,
        motions_deadlocked: deadlocked,
        verdicts,
        runs,
        checkpoint_size: bound.size,
        checkpoint_root: bound.root,
        checkpoints: bound.count,
        origin: bound.origin,
        log_signed_per_charter: bound.log_signed,
        charter: st.charter.as_ref().map(charter_digest),
    })
}

/// A charter's digest in hex, or what kept it from having one (shown, never blank).
fn charter_digest(c: &panel_federation::Charter) -> String {
    c.digest()
        .map_or_else(|e| format!("(no digest: {e})"), hex::encode)
}

/// What the checkpoints of a record bind.
struct Bound {
    size: u64,
    root: String,
    count: usize,
    origin: Option<String>,
    log_signed: bool,
}

fn v1_checkpoint(bundle: &Bundle, log: &crate::rules::transparency::Log) -> Result<Bound, Failure> {
    let cp = bundle
        .checkpoint
        .as_ref()
        .ok_or(CheckpointFailure::NoneSigned)?;
    let root = cp.verify().map_err(CheckpointFailure::from)?;
    if cp.size != log.len() {
        return Err(CheckpointFailure::LegacySize {
            covers: cp.size,
            entries: log.len(),
        }
        .into());
    }
    if root != log.root() {
        return Err(CheckpointFailure::LegacyRoot.into());
    }
    Ok(Bound {
        size: cp.size,
        root: cp.root.to_hex(),
        count: 1,
        origin: None,
        log_signed: false,
    })
}

/// Every v2 checkpoint is a well-formed note of the record's log, in increasing size, whose
/// root is the entries' root at its size; the last covers every entry. Where the record's
/// charter names the log's keys (the shared key, or each replica's under a quorum log),
/// each must carry a valid signature by one of them, and every line by one must verify.
/// The quorum of organisations is the trust policy's to require (`check_policy`): a record
/// exported between checkpoints ends with one the exporting replica alone signed.
fn v2_checkpoints(bundle: &Bundle, st: &State) -> Result<Bound, Failure> {
    let entries = bundle.entries.len() as u64;
    let origin = crate::features::checkpoints::origin(st).to_string();
    let log_keys: Vec<panel_tlog::VerifierKey> = st
        .charter
        .as_ref()
        .map(|c| match c.log_quorum() {
            Some(q) => q.keys().cloned().collect(),
            None => c
                .log
                .as_ref()
                .and_then(|l| l.verifier())
                .into_iter()
                .collect(),
        })
        .unwrap_or_default();
    let mut parsed: Vec<panel_tlog::Checkpoint> = Vec::new();
    for (i, text) in bundle.checkpoints.iter().enumerate() {
        let at = |problem: CheckpointProblem| CheckpointFailure::At { index: i, problem };
        let note = Note::parse(text.as_bytes()).map_err(|e| at(CheckpointProblem::Note(e)))?;
        let cp = panel_tlog::Checkpoint::parse_body(&note.text).map_err(|e| at(e.into()))?;
        if cp.origin != origin {
            return Err(at(CheckpointProblem::Origin {
                found: cp.origin,
                expected: origin,
            })
            .into());
        }
        if parsed.last().is_some_and(|l| l.size >= cp.size) || cp.size == 0 {
            return Err(at(CheckpointProblem::NotGrowing).into());
        }
        if cp.size > entries {
            return Err(at(CheckpointProblem::BeyondEntries {
                covers: cp.size,
                entries,
            })
            .into());
        }
        if !log_keys.is_empty() {
            note.verify(&log_keys)
                .map_err(|e| at(CheckpointProblem::LogKey(e)))?;
        }
        parsed.push(cp);
    }
    let last = parsed.last().cloned().ok_or(CheckpointFailure::None)?;
    if last.size != entries {
        return Err(CheckpointFailure::LastShort {
            covers: last.size,
            entries,
        }
        .into());
    }
    // Roots at each checkpoint's size, from one pass over the entries (O(log n) each).
    let mut tree = crate::rules::transparency::Log::new();
    let mut next = parsed.iter().enumerate().peekable();
    for e in &bundle.entries {
        tree.append(&e.leaf_bytes()?);
        while let Some((i, cp)) = next.next_if(|(_, cp)| cp.size == tree.len()) {
            if cp.root != tree.root() {
                return Err(CheckpointFailure::At {
                    index: i,
                    problem: CheckpointProblem::Root { size: cp.size },
                }
                .into());
            }
        }
    }
    Ok(Bound {
        size: last.size,
        root: panel_tlog::checkpoint::encode_hash(&last.root),
        count: bundle.checkpoints.len(),
        origin: Some(origin),
        log_signed: !log_keys.is_empty(),
    })
}

/// What a record's check against a trust policy established.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyReport {
    pub origin: String,
    pub size: u64,
    /// The policy's witnesses that cosigned the checkpoint covering the record.
    pub witnesses: Vec<String>,
}

/// Checks a (verified) record against a tlog-policy, the verifier's own trust anchor:
/// every checkpoint carries a signature by a log key of the policy, and the last, which
/// covers every entry, is the log's by the policy's rule and meets its witness quorum. A record whose history was
/// rewritten cannot carry cosignatures over its new roots without the witnesses.
pub fn check_policy(bundle: &Bundle, policy: &Policy) -> Result<PolicyReport, Failure> {
    if bundle.format == FORMAT_V1 {
        return Err(PolicyFailure::Unsigned {
            format: bundle.format.clone(),
        }
        .into());
    }
    // Every checkpoint carries a valid signature by a log key of the policy; the last, which
    // covers the record, must also be the log's by its rule (under a quorum log, the keys
    // of enough organisations: earlier ones may carry only the exporting replica's, when a
    // leader change left their signatures uncollected) and meet the witness quorum.
    let keys = policy.log_keys();
    let mut last = None;
    for (i, text) in bundle.checkpoints.iter().enumerate() {
        let note = Note::parse(text.as_bytes())
            .map_err(|error| PolicyFailure::Note { index: i, error })?;
        note.verify(&keys)
            .map_err(|e| PolicyFailure::NotByPolicyLog {
                index: i,
                error: Box::new(panel_tlog::policy::PolicyError::LogSignature {
                    origin: panel_tlog::Checkpoint::parse_body(&note.text)
                        .map(|c| c.origin)
                        .unwrap_or_default(),
                    reason: e.to_string(),
                }),
            })?;
        last = Some(note);
    }
    let note = last.ok_or(PolicyFailure::NoCheckpoint)?;
    let v = policy.check(&note).map_err(PolicyFailure::from)?;
    if let Some(key) = bundle.entries.first().and_then(|e| match &e.command {
        crate::command::Command::Internal(crate::command::InternalCommand::AdoptCharter(c)) => {
            charter_log_key_unknown(c, policy)
        }
        _ => None,
    }) {
        return Err(PolicyFailure::CharterLogKey { key }.into());
    }
    Ok(PolicyReport {
        origin: v.checkpoint.origin,
        size: v.checkpoint.size,
        witnesses: v.witnesses,
    })
}

/// A log key the record's charter names that the verifier's policy does not list (the
/// shared key, or under a quorum log any replica's key), if any: the policy was written
/// for another federation, or before the charter's keys changed.
fn charter_log_key_unknown(charter: &panel_federation::Charter, policy: &Policy) -> Option<String> {
    let listed = policy.log_keys();
    let keys: Vec<panel_tlog::VerifierKey> = match charter.log_quorum() {
        Some(q) => q.keys().cloned().collect(),
        None => charter
            .log
            .as_ref()
            .and_then(|l| l.verifier())
            .into_iter()
            .collect(),
    };
    keys.into_iter()
        .find(|k| !listed.contains(k))
        .map(|k| k.to_string())
}

/// Checks that the record's first entry adopts exactly `trusted`, the charter the
/// verifier holds from the federation (`panel verify --charter`): every role in the record
/// is then checked against keys the verifier trusts, not against keys the record names
/// for itself.
pub fn check_charter(bundle: &Bundle, trusted: &panel_federation::Charter) -> Result<(), Failure> {
    use crate::command::{Command, InternalCommand};
    let first = bundle.entries.first().map(|e| &e.command);
    match first {
        Some(Command::Internal(InternalCommand::AdoptCharter(c))) if **c == *trusted => Ok(()),
        Some(Command::Internal(InternalCommand::AdoptCharter(c))) => Err(CharterFailure::Other {
            adopted: charter_digest(c),
            trusted: charter_digest(trusted),
        }
        .into()),
        _ => Err(CharterFailure::NotChartered.into()),
    }
}
