//! The exported record and its offline verification (`panel verify`).
//!
//! A record bundles every applied registration, debate write and outcome in log order,
//! the debates' SPEC documents, the arbiters, and a checkpoint signed by the exporting
//! replica over the Merkle root of the entries (`transparency`). Verification needs no
//! service: it checks the checkpoint, then re-applies every entry with the same pure
//! `apply` the replicas run (strict signatures, commitments against reveals, the panel
//! draw from its logged seed, the acceptance rule, the Crucible engine) and compares each
//! result, and finally the recomputed documents, with what the record claims.

use std::collections::BTreeMap;

use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::apply::{self, ApplyCtx};
use crate::command::ItemReply;
use crate::model::{MotionStatus, RecordEntry, State};
use crate::transparency::{Checkpoint, Log};

/// Format tag of an exported record.
pub const FORMAT: &str = "crucible-panel-record/v1";

/// An exported record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    pub format: String,
    pub entries: Vec<RecordEntry>,
    pub debates: BTreeMap<String, Value>,
    pub arbiters: Vec<Value>,
    #[serde(default)]
    pub checkpoint: Option<Checkpoint>,
}

/// The transparency log over the entries, in order.
pub fn log_of(entries: &[RecordEntry]) -> Log {
    let mut log = Log::new();
    for e in entries {
        log.append(&e.leaf_bytes());
    }
    log
}

/// Adds a checkpoint over the entries, signed with the replica's key.
pub fn sign(bundle: &mut Bundle, key: &SigningKey, time_ms: u64) {
    let log = log_of(&bundle.entries);
    bundle.checkpoint = Some(Checkpoint::sign(key, log.len(), &log.root(), time_ms));
}

/// The first thing in a record that does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    #[error("the record format is {0:?}; expected {FORMAT:?}")]
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
    #[error("arbiters: {0}")]
    Arbiters(String),
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    #[error("charter: {0}")]
    Charter(String),
}

/// What a successful verification established.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub entries: usize,
    pub arbiters: usize,
    pub debates: usize,
    pub motions_accepted: usize,
    pub motions_deadlocked: usize,
    pub verdicts: Vec<Value>,
    pub checkpoint_size: u64,
    pub checkpoint_root: String,
    /// Hex SHA-256 of the charter the record adopted (its first entry), if any.
    pub charter: Option<String>,
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
        ItemReply::Applied(v) => {
            let verdict = v.get("verdict").map(|v| {
                if v.get("Accepted").is_some() {
                    "accepted".to_string()
                } else if let Some(d) = v.get("Deadlocked") {
                    format!("deadlocked ({})", d.get("reasons").unwrap_or(&Value::Null))
                } else {
                    v.to_string()
                }
            });
            match verdict {
                Some(v) => format!("applied, outcome {v}"),
                None => "applied".into(),
            }
        }
        ItemReply::Refused { code, message } => format!("refused ({code}): {message}"),
    }
}

/// Verifies a record offline. Returns the first failure, naming the entry and why.
pub fn verify(bundle: &Bundle) -> Result<Report, Failure> {
    if bundle.format != FORMAT {
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
    // Re-apply every entry exactly as the replicas did.
    let mut st = State::default();
    for e in &bundle.entries {
        let ctx = ApplyCtx {
            log_index: e.log_index,
            item_index: e.item_index,
            time_ms: e.time_ms,
            seed: e.seed,
        };
        let replayed = match apply::apply(&mut st, &ctx, &e.client_id, e.request_id, &e.command) {
            Ok(v) => ItemReply::Applied(v),
            Err(err) => ItemReply::Refused {
                code: err.code().into(),
                message: err.to_string(),
            },
        };
        if replayed != e.reply {
            let reason = match (&e.reply, &replayed) {
                (ItemReply::Applied(a), ItemReply::Applied(b)) => match first_difference("$", a, b)
                {
                    Some((path, why)) => format!(
                        "the recorded result differs from re-applying it: {path} {why} ({})",
                        describe(&replayed)
                    ),
                    None => "the recorded result differs from re-applying it".into(),
                },
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
    let arbiters: Vec<Value> = st
        .arbiters
        .iter()
        .map(|(_, a)| serde_json::to_value(a).unwrap_or(Value::Null))
        .collect();
    if let Some((path, why)) = first_difference("$", &json!(bundle.arbiters), &json!(arbiters)) {
        return Err(Failure::Arbiters(format!("{path} {why}")));
    }
    // The checkpoint binds the exact sequence of entries.
    let cp = bundle
        .checkpoint
        .as_ref()
        .ok_or_else(|| Failure::Checkpoint("the record carries no signed checkpoint".into()))?;
    let root = cp
        .verify()
        .map_err(|e| Failure::Checkpoint(e.to_string()))?;
    let log = log_of(&bundle.entries);
    if cp.size != log.len() {
        return Err(Failure::Checkpoint(format!(
            "it covers {} entries but the record has {}",
            cp.size,
            log.len()
        )));
    }
    if root != log.root() {
        return Err(Failure::Checkpoint(
            "the Merkle root of the entries differs from the signed root: an entry was changed, added, dropped or reordered".into(),
        ));
    }
    let (mut accepted, mut deadlocked) = (0, 0);
    for (_, m) in st.motions.iter() {
        match &m.status {
            MotionStatus::Decided(v) if v.is_accepted() => accepted += 1,
            MotionStatus::Decided(_) => deadlocked += 1,
            _ => {}
        }
    }
    let verdicts = st
        .debates
        .iter()
        .flat_map(|(id, r)| {
            r.debate.verdicts.iter().map(move |v| {
                json!({"debate": id, "n": v.n, "winner": v.winner, "totals": v.totals, "margin": v.margin, "band": v.band.key})
            })
        })
        .collect();
    Ok(Report {
        entries: bundle.entries.len(),
        arbiters: st.arbiters.len(),
        debates: st.debates.len(),
        motions_accepted: accepted,
        motions_deadlocked: deadlocked,
        verdicts,
        checkpoint_size: cp.size,
        checkpoint_root: cp.root.clone(),
        charter: st.charter.as_ref().map(|c| hex::encode(c.digest())),
    })
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
        Some(Command::Internal(InternalCommand::AdoptCharter(c))) => {
            Err(Failure::Charter(format!(
                "the record adopts charter {}, not the trusted charter {}: another federation's \
             record, or a rewritten one",
                hex::encode(c.digest()),
                hex::encode(trusted.digest())
            )))
        }
        _ => Err(Failure::Charter(
            "the record's first entry adopts no charter; it is not a chartered group's record"
                .into(),
        )),
    }
}
