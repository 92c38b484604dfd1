//! The log's checkpoints (docs/WIRE.md "Transparency log"; docs/SECURITY.md "The record").
//!
//! Apply keeps the RFC 6962 tree of the record's entries and issues a checkpoint (origin,
//! size, root) at the cadence the leader stamps on each batch: every `every_entries` new
//! entries, after `every_ms` of batch time, and after every batch that issued a verdict.
//! The body is a function of the applied (so committed) record alone; replicas sign it with
//! the log key outside apply, and Ed25519 is deterministic, so every replica produces the
//! same signed note for a size. This is why the log cannot sign two inconsistent
//! checkpoints across leader changes: nothing signs a body that was not computed from a
//! prefix of the one committed record, and committed entries are never rewritten.
//!
//! Witness cosignatures come back through the log (`AddCosignatures`): apply accepts only
//! lines that verify under a witness key of the charter over that checkpoint's body, so a
//! leader can withhold cosignatures but never invent one.
//!
//! Under a quorum log (`LogIdentity::quorum`) each replica signs with its own key, the
//! leader collects those signatures (`Replica.SignCheckpoint`) and logs them the same way,
//! and apply keeps each line that verifies under a replica log key of the charter. A
//! checkpoint is the log's once the keys of the charter's quorum of organisations signed
//! it ([`log_signed`]); only then does the leader show it to witnesses, and the witnesses
//! and `panel verify --policy` check that quorum themselves.

pub use crate::log::cadence::{Cadence, Cosignatures};
use crate::log::refusal_code::RefusalCode;
pub use crate::model::checkpoint::IssuedCheckpoint;
use crate::model::record_entry::LeafError;
use crate::model::{RecordEntry, State};
use crate::reply::CosignaturesReply;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use panel_tlog::checkpoint::decode_hash;
use panel_tlog::note::{Note, NoteSigner, SignatureLine};
use serde::{Deserialize, Serialize};

/// The origin of an unchartered debug group's log (no federation names it).
pub const UNCHARTERED_ORIGIN: &str = "crucible-panel.invalid/unchartered";

/// Why cosignatures were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error(
        "no checkpoint of size {0} was issued; cosign a checkpoint the log issued (`panel monitor` shows the latest)"
    )]
    NoCheckpoint(u64),
    #[error(
        "cosignature line {line}: {problem}; send the lines exactly as the witness returned them"
    )]
    Line {
        line: usize,
        problem: panel_tlog::SignatureLineError,
    },
    #[error(
        "cosignature line {line} is by {name}, which is neither a witness nor a replica log key \
         of the charter; only the charter's witnesses and replica log keys cosign, so drop the line"
    )]
    UnknownWitness { line: usize, name: String },
    #[error(
        "cosignature line {line} by {name} does not verify over the checkpoint of size {size}; send the cosignature the witness returned for that checkpoint, unchanged"
    )]
    BadCosignature {
        line: usize,
        name: String,
        size: u64,
    },
    #[error("{0} cosignature lines; send at most one per charter witness and replica log key")]
    TooMany(usize),
}

impl CheckpointError {
    pub fn code(&self) -> RefusalCode {
        RefusalCode::BadCosignature
    }
}

/// The log's origin: the charter's, or the unchartered default.
pub fn origin(state: &State) -> &str {
    state
        .charter
        .as_ref()
        .and_then(|c| c.log.as_ref())
        .map_or(UNCHARTERED_ORIGIN, |l| l.origin.as_str())
}

/// Appends the held record entries the tree does not hold yet (after a snapshot load, or
/// for entries applied before the tree was kept). Entries a replica handed to its store
/// are not here: the replica rebuilds the tree from its stored leaves instead
/// (`raft::state_machine`), and this leaves a tree that ends before the held entries alone.
pub fn sync_tree(state: &mut State) -> Result<(), LeafError> {
    let have = state.tree.len();
    if have >= state.record.len() || have < state.record.first_held() {
        return Ok(());
    }
    let missing: Vec<Vec<u8>> = state
        .record
        .iter()
        .filter(|e| e.seq >= have)
        .map(RecordEntry::leaf_bytes)
        .collect::<Result<_, _>>()?;
    for leaf in missing {
        state.tree.append(&leaf);
    }
    Ok(())
}

/// The checkpoint issued last.
pub fn latest(state: &State) -> Option<&IssuedCheckpoint> {
    state.checkpoints.last()
}

/// The checkpoint issued at exactly `size`.
pub fn at_size(state: &State, size: u64) -> Option<&IssuedCheckpoint> {
    state
        .checkpoints
        .binary_search_by_key(&size, |c| c.size)
        .ok()
        .map(|i| &state.checkpoints[i])
}

/// Issues a checkpoint at the current size if the record grew since the last one.
pub fn issue(state: &mut State, time_ms: u64) -> Option<u64> {
    // A held entry without a leaf (a damaged snapshot) leaves the tree short: no
    // checkpoint, and `apply_batch` refuses every write naming the entry.
    sync_tree(state).ok()?;
    let size = state.tree.len();
    if latest(state).is_some_and(|c| c.size >= size) || size == 0 {
        return None;
    }
    state.checkpoints.push(IssuedCheckpoint {
        size,
        root: B64.encode(state.tree.root()),
        time_ms,
        cosignatures: Vec::new(),
        log_signatures: Vec::new(),
    });
    Some(size)
}

/// After a batch: issues a checkpoint when the cadence says so.
pub fn after_batch(state: &mut State, cadence: Option<&Cadence>, time_ms: u64, verdict: bool) {
    let Some(c) = cadence else { return };
    let size = state.record.len();
    let (last_size, last_time) = latest(state).map_or((0, 0), |l| (l.size, l.time_ms));
    if size <= last_size {
        return;
    }
    let due = verdict
        || size - last_size >= c.every_entries.max(1)
        || time_ms.saturating_sub(last_time) >= c.every_ms;
    if due {
        issue(state, time_ms);
    }
}

/// When (batch time) a checkpoint is due for entries not yet covered, if any: the leader's
/// driver proposes `IssueCheckpoint` then, so a quiet log's tail is checkpointed too.
pub fn due_at(state: &State, cadence: &Cadence) -> Option<u64> {
    let size = state.record.len();
    let (last_size, last_time) = latest(state).map_or((0, 0), |l| (l.size, l.time_ms));
    (size > last_size).then(|| last_time.saturating_add(cadence.every_ms))
}

/// The checkpoint's note text (tlog-checkpoint).
pub fn body(state: &State, cp: &IssuedCheckpoint) -> String {
    let root = decode_hash(&cp.root).unwrap_or_default();
    panel_tlog::Checkpoint::new(origin(state), cp.size, root).body()
}

/// The checkpoint as a signed note: the log signatures ([`log_note`]), then every
/// cosignature received.
pub fn note(state: &State, cp: &IssuedCheckpoint, log_key: Option<&NoteSigner>) -> Note {
    let mut note = log_note(state, cp, log_key);
    for line in cp.cosignatures.iter() {
        if let Ok(l) = SignatureLine::parse(line) {
            note.add(l);
        }
    }
    note
}

/// The checkpoint signed by the log alone, as witnesses are asked to cosign it: this
/// replica's own signature when it holds a log key, and those on record under a quorum log.
pub fn log_note(state: &State, cp: &IssuedCheckpoint, log_key: Option<&NoteSigner>) -> Note {
    let mut note = Note {
        text: body(state, cp),
        signatures: Vec::new(),
    };
    let recorded: Vec<SignatureLine> = cp
        .log_signatures
        .iter()
        .filter_map(|l| SignatureLine::parse(l).ok())
        .collect();
    if let Some(k) = log_key {
        let own = k.verifier();
        if !recorded.iter().any(|l| own.matches(l)) {
            note.add(k.sign(&note.text));
        }
    }
    for line in recorded {
        note.add(line);
    }
    note
}

/// The organisations whose replica log keys signed `cp` on record, if they meet the
/// charter's quorum; `None` while they do not, or when the log has no quorum.
pub fn log_signed(state: &State, cp: &IssuedCheckpoint) -> Option<Vec<String>> {
    let quorum = state.charter.as_ref()?.log_quorum()?;
    quorum.check(&note(state, cp, None)).ok()
}

/// Whether the checkpoint may be shown to witnesses: under a quorum log only once the
/// quorum signed it (a single-key log's replica signs it itself).
pub fn ready_for_witnesses(state: &State, cp: &IssuedCheckpoint) -> bool {
    let quorum = state.charter.as_ref().and_then(|c| c.log_quorum());
    quorum.is_none() || log_signed(state, cp).is_some()
}

/// `Query::Checkpoints`: the log's checkpoints (the latest `limit`, oldest first) with
/// who cosigned each, and every charter witness's standing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointsReply {
    /// The log's origin line.
    pub origin: String,
    /// Entries on the record now (the latest checkpoint may cover fewer).
    pub record_size: u64,
    /// Checkpoints issued in all.
    pub total: usize,
    pub checkpoints: Vec<CheckpointView>,
    /// The charter's witnesses, in charter order (none in an unchartered group).
    pub witnesses: Vec<WitnessStatus>,
}

/// One issued checkpoint as a reader sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointView {
    pub size: u64,
    /// Base64 RFC 6962 root.
    pub root: String,
    pub time_ms: u64,
    pub cosigned_by: Vec<Cosigning>,
    /// Under a quorum log: the organisations whose replica keys signed it, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_signed_by: Vec<String>,
}

/// One cosignature on a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cosigning {
    /// The witness's key name.
    pub witness: String,
    /// The charter organisation whose witness key made it.
    pub organisation: Option<String>,
    /// The time the witness states (Unix seconds, cosignature/v1).
    pub timestamp: Option<u64>,
}

/// A charter witness and the latest checkpoint it cosigned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WitnessStatus {
    pub organisation: String,
    pub name: String,
    pub vkey: String,
    pub last_cosigned_size: Option<u64>,
    pub last_timestamp: Option<u64>,
    /// Whether it cosigned the latest checkpoint.
    pub cosigned_latest: bool,
}

/// Builds the reply to `Query::Checkpoints`. Cosignatures were verified when they were
/// applied (`add_cosignatures`); here each line is only named.
pub fn reply(state: &State, limit: Option<usize>) -> CheckpointsReply {
    let witnesses: Vec<(
        &panel_federation::WitnessEntry,
        Option<panel_tlog::VerifierKey>,
    )> = state
        .charter
        .as_ref()
        .map(|c| c.witnesses.iter().map(|w| (w, w.verifier())).collect())
        .unwrap_or_default();
    let cosigning = |raw: &str| -> Option<Cosigning> {
        let line = SignatureLine::parse(raw).ok()?;
        let organisation = witnesses
            .iter()
            .find(|(_, k)| k.as_ref().is_some_and(|k| k.matches(&line)))
            .map(|(w, _)| w.organisation.clone());
        // cosignature/v1: an 8-byte big-endian timestamp, then the signature.
        let timestamp = line
            .signature
            .get(..8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_be_bytes);
        Some(Cosigning {
            witness: line.name,
            organisation,
            timestamp,
        })
    };
    let quorum = state.charter.as_ref().and_then(|c| c.log_quorum());
    let log_signed_by = |c: &IssuedCheckpoint| -> Vec<String> {
        let Some(q) = &quorum else { return Vec::new() };
        let orgs: std::collections::BTreeSet<String> = c
            .log_signatures
            .iter()
            .filter_map(|l| SignatureLine::parse(l).ok())
            .filter_map(|l| q.signer_of(&l).map(|s| s.organisation.clone()))
            .collect();
        orgs.into_iter().collect()
    };
    let views: Vec<CheckpointView> = state
        .checkpoints
        .iter()
        .map(|c| CheckpointView {
            size: c.size,
            root: c.root.clone(),
            time_ms: c.time_ms,
            cosigned_by: c.cosignatures.iter().filter_map(|l| cosigning(l)).collect(),
            log_signed_by: log_signed_by(c),
        })
        .collect();
    let latest_size = views.last().map(|c| c.size);
    let status = witnesses
        .iter()
        .map(|(w, k)| {
            let name = k.as_ref().map_or_else(String::new, |k| k.name.clone());
            let last = views.iter().rev().find_map(|c| {
                c.cosigned_by
                    .iter()
                    .find(|s| s.organisation.as_deref() == Some(w.organisation.as_str()))
                    .map(|s| (c.size, s.timestamp))
            });
            WitnessStatus {
                organisation: w.organisation.clone(),
                name,
                vkey: w.vkey.clone(),
                last_cosigned_size: last.map(|l| l.0),
                last_timestamp: last.and_then(|l| l.1),
                cosigned_latest: last.is_some() && last.map(|l| l.0) == latest_size,
            }
        })
        .collect();
    let total = views.len();
    let skip = limit.map_or(0, |n| total.saturating_sub(n));
    CheckpointsReply {
        origin: origin(state).to_string(),
        record_size: state.record.len(),
        total,
        checkpoints: views.into_iter().skip(skip).collect(),
        witnesses: status,
    }
}

/// `AddCosignatures`: keeps each line that verifies over the checkpoint's body under a
/// charter witness's key (a cosignature) or, under a quorum log, a replica's log key (a log
/// signature); one per key, a newer one replacing the older. The witness of an organisation
/// removed by entry counts no more: its verified lines are dropped, not kept, so from the
/// removal on it adds nothing to any checkpoint (docs/FEDERATION.md "Removal").
pub fn add_cosignatures(
    state: &mut State,
    cos: &Cosignatures,
) -> Result<CosignaturesReply, CheckpointError> {
    let witnesses: Vec<(panel_tlog::VerifierKey, Kept)> = state
        .charter
        .as_ref()
        .map(|c| {
            c.witnesses
                .iter()
                .filter_map(|w| {
                    let removed = crate::features::endorsers::is_removed(state, &w.organisation);
                    let kept = if removed {
                        Kept::Dropped
                    } else {
                        Kept::Cosignature
                    };
                    w.verifier().map(|k| (k, kept))
                })
                .collect()
        })
        .unwrap_or_default();
    let signers: Vec<panel_tlog::VerifierKey> = state
        .charter
        .as_ref()
        .and_then(|c| c.log_quorum())
        .map(|q| q.keys().cloned().collect())
        .unwrap_or_default();
    if cos.lines.len() > (witnesses.len() + signers.len()).max(1) {
        return Err(CheckpointError::TooMany(cos.lines.len()));
    }
    let cp = at_size(state, cos.size).ok_or(CheckpointError::NoCheckpoint(cos.size))?;
    let text = body(state, cp);
    let mut accepted: Vec<(Kept, SignatureLine)> = Vec::new();
    for (i, raw) in cos.lines.iter().enumerate() {
        let line = SignatureLine::parse(raw).map_err(|problem| CheckpointError::Line {
            line: i + 1,
            problem,
        })?;
        let (kind, key) = match witnesses.iter().find(|(w, _)| w.matches(&line)) {
            Some((w, kept)) => (*kept, w),
            None => match signers.iter().find(|k| k.matches(&line)) {
                Some(k) => (Kept::LogSignature, k),
                None => {
                    return Err(CheckpointError::UnknownWitness {
                        line: i + 1,
                        name: line.name.clone(),
                    });
                }
            },
        };
        if !key.verifies(&text, &line.signature) {
            return Err(CheckpointError::BadCosignature {
                line: i + 1,
                name: line.name.clone(),
                size: cos.size,
            });
        }
        accepted.push((kind, line));
    }
    let index = state
        .checkpoints
        .binary_search_by_key(&cos.size, |c| c.size)
        .map_err(|_| CheckpointError::NoCheckpoint(cos.size))?;
    let cp = &mut state.checkpoints[index];
    for (kind, line) in &accepted {
        let kept = match kind {
            Kept::Cosignature => &mut cp.cosignatures,
            Kept::LogSignature => &mut cp.log_signatures,
            Kept::Dropped => continue,
        };
        // Witnesses are one per name; replica keys share the origin's name, so one per key.
        kept.retain(|l| {
            SignatureLine::parse(l).map_or(true, |p| match kind {
                Kept::Cosignature | Kept::Dropped => p.name != line.name,
                Kept::LogSignature => p.key_id != line.key_id,
            })
        });
        kept.push(line.to_line().trim_end().to_string());
        kept.sort();
    }
    Ok(CosignaturesReply {
        size: cos.size,
        witnesses: accepted
            .iter()
            .filter(|(k, _)| *k == Kept::Cosignature)
            .map(|(_, l)| l.name.clone())
            .collect(),
    })
}

/// Which list of a checkpoint a verified line joins, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kept {
    Cosignature,
    LogSignature,
    /// A removed organisation's witness: verified, then not kept.
    Dropped,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::write_one;
    use crate::command::{ClientCommand, Command, InternalCommand};
    use panel_tlog::Cosigner;
    use panel_tlog::merkle::verify_consistency;
    use serde_json::json;

    fn grow(state: &mut State, from: u64, n: u64) {
        for i in from..from + n {
            let item = crate::command::Item {
                client_id: "t".into(),
                request_id: i,
                command: Command::Client(ClientCommand::CreateDebate(
                    serde_json::from_value(json!({
                        "resolution": format!("Resolved: question {i}."), "pos_a": "yes",
                        "pos_b": "no", "seats": 2, "min_per_stance": 1, "convener": "c",
                    }))
                    .expect("debate"),
                )),
                writer: None,
            };
            let batch = crate::command::Batch {
                time_ms: 1_000 + i * 10,
                seed: i,
                items: vec![item],
                limits: None,
                checkpoints: Some(Cadence {
                    every_entries: 4,
                    every_ms: 1_000_000,
                }),
                rules: None,
            };
            crate::apply::apply_batch(state, i, &batch, &panel_proto::VerifiedMemo::default());
        }
    }

    #[test]
    fn checkpoints_follow_the_cadence_and_every_pair_is_consistent() {
        let mut st = State::default();
        grow(&mut st, 1, 18);
        let sizes: Vec<u64> = st.checkpoints.iter().map(|c| c.size).collect();
        assert_eq!(sizes, [4, 8, 12, 16]);
        assert_eq!(
            due_at(&st, &Cadence::default()),
            Some(st.checkpoints[3].time_ms + 1_000)
        );
        assert!(matches!(
            write_one(
                &mut st,
                99,
                Command::Internal(InternalCommand::IssueCheckpoint)
            ),
            crate::command::ItemReply::Applied(_)
        ));
        assert_eq!(latest(&st).map(|c| c.size), Some(18));
        assert_eq!(
            issue(&mut st, 5),
            None,
            "nothing new: no second checkpoint of one size"
        );
        for a in &st.checkpoints {
            for b in &st.checkpoints {
                if a.size <= b.size {
                    let proof = st.tree.consistency_proof(a.size, b.size).expect("proof");
                    let (ra, rb) = (
                        decode_hash(&a.root).expect("a"),
                        decode_hash(&b.root).expect("b"),
                    );
                    verify_consistency(a.size, b.size, &ra, &rb, &proof).expect("consistent");
                }
            }
        }
    }

    #[test]
    fn only_a_charter_witness_cosignature_over_the_body_is_kept() {
        let mut st = State::default();
        let w =
            Cosigner::new("w.north", ed25519_dalek::SigningKey::from_bytes(&[5; 32])).expect("w");
        let mut charter = crate::features::charter_rules::tests::charter();
        let log = NoteSigner::new(
            "panel.test/log",
            ed25519_dalek::SigningKey::from_bytes(&[6; 32]),
        )
        .expect("l");
        charter.log = Some(panel_federation::LogIdentity {
            origin: "panel.test/log".into(),
            vkey: log.verifier().to_string(),
            quorum: 0,
        });
        charter.witnesses = vec![panel_federation::WitnessEntry {
            organisation: "south".into(),
            vkey: w.verifier().to_string(),
        }];
        grow(&mut st, 1, 4);
        st.charter = Some(charter);
        let cp = latest(&st).expect("issued").clone();
        let text = body(&st, &cp);
        assert!(text.starts_with("panel.test/log\n4\n"));
        let good = w
            .cosign(&text, 1_700_000_000)
            .to_line()
            .trim_end()
            .to_string();
        let other =
            Cosigner::new("w.north", ed25519_dalek::SigningKey::from_bytes(&[7; 32])).expect("o");
        let unknown = other.cosign(&text, 1).to_line().trim_end().to_string();
        let wrong_body = w
            .cosign("panel.test/log\n4\nAAAA\n", 1)
            .to_line()
            .trim_end()
            .to_string();
        for (lines, want) in [
            (vec![unknown], "neither a witness nor a replica log key"),
            (vec![wrong_body], "does not verify"),
            (vec!["junk".into()], "cosignature line 1"),
        ] {
            let err =
                add_cosignatures(&mut st, &Cosignatures { size: 4, lines }).expect_err("refused");
            assert!(err.to_string().contains(want), "{err}");
        }
        assert!(
            add_cosignatures(
                &mut st,
                &Cosignatures {
                    size: 3,
                    lines: vec![good.clone()]
                }
            )
            .is_err()
        );
        add_cosignatures(
            &mut st,
            &Cosignatures {
                size: 4,
                lines: vec![good],
            },
        )
        .expect("kept");
        let r = reply(&st, Some(1));
        assert_eq!((r.total, r.checkpoints.len()), (1, 1));
        assert_eq!(r.origin, "panel.test/log");
        let cos = &r.checkpoints[0].cosigned_by;
        assert_eq!(cos.len(), 1);
        assert_eq!(cos[0].witness, "w.north");
        assert_eq!(cos[0].organisation.as_deref(), Some("south"));
        assert_eq!(cos[0].timestamp, Some(1_700_000_000));
        assert_eq!(r.witnesses.len(), 1);
        assert_eq!(r.witnesses[0].last_cosigned_size, Some(4));
        assert!(r.witnesses[0].cosigned_latest);
        // Once its organisation is removed, its witness's valid line is dropped (and a
        // line that does not verify is still refused).
        let mut removed = st.clone();
        let south = removed.charter.as_ref().expect("charter").organisations[1].clone();
        assert_eq!(south.name, "south");
        removed.removed_organisations.push(south);
        removed.checkpoints[0].cosignatures.clear();
        let again = w
            .cosign(&text, 1_700_000_001)
            .to_line()
            .trim_end()
            .to_string();
        let r = add_cosignatures(
            &mut removed,
            &Cosignatures {
                size: 4,
                lines: vec![again],
            },
        )
        .expect("verified, then dropped");
        assert!(r.witnesses.is_empty());
        assert!(removed.checkpoints[0].cosignatures.is_empty());
        let forged = w
            .cosign("panel.test/log\n4\nAAAA\n", 1)
            .to_line()
            .trim_end()
            .to_string();
        assert!(
            add_cosignatures(
                &mut removed,
                &Cosignatures {
                    size: 4,
                    lines: vec![forged]
                }
            )
            .is_err()
        );
        st.checkpoints.push(IssuedCheckpoint {
            size: 5,
            root: cp.root.clone(),
            time_ms: 0,
            cosignatures: Vec::new(),
            log_signatures: Vec::new(),
        });
        let r = reply(&st, None);
        assert_eq!(r.total, 2);
        assert!(
            !r.witnesses[0].cosigned_latest,
            "the new checkpoint is not cosigned yet"
        );
        assert_eq!(r.witnesses[0].last_cosigned_size, Some(4));
        let n = note(&st, &st.checkpoints[0], Some(&log));
        let reparsed = Note::parse(n.to_text().as_bytes()).expect("note");
        assert_eq!(
            reparsed
                .verify(&[log.verifier(), w.verifier()])
                .expect("both")
                .len(),
            2
        );
    }

    #[test]
    fn under_a_quorum_log_a_checkpoint_is_the_logs_only_with_two_organisations_signatures() {
        let origin = "panel.test/log";
        let key = |seed: u8| {
            NoteSigner::new(origin, ed25519_dalek::SigningKey::from_bytes(&[seed; 32])).expect("k")
        };
        let (r1, r2, rogue) = (key(41), key(42), key(43));
        let mut charter = crate::features::charter_rules::tests::charter();
        charter.replicas = [(1, "north", &r1), (2, "south", &r2)]
            .iter()
            .map(|(id, org, k)| panel_federation::ReplicaEntry {
                id: *id,
                organisation: (*org).into(),
                cert_sha256: panel_federation::Fingerprint([*id as u8; 32]),
                log_vkey: Some(k.verifier().to_string()),
                beacon_vkey: None,
            })
            .collect();
        charter.log = Some(panel_federation::LogIdentity {
            origin: origin.into(),
            vkey: String::new(),
            quorum: 2,
        });
        charter.check().expect("charter");
        let mut st = State::default();
        grow(&mut st, 1, 4);
        st.charter = Some(charter);
        let cp = latest(&st).expect("issued").clone();
        let text = body(&st, &cp);
        let line = |k: &NoteSigner, text: &str| k.sign(text).to_line().trim_end().to_string();
        // A key outside the charter, or a replica's line over another body, is refused.
        for lines in [
            vec![line(&rogue, &text)],
            vec![line(&r1, "panel.test/log\n4\nAAAA\n")],
        ] {
            assert!(add_cosignatures(&mut st, &Cosignatures { size: 4, lines }).is_err());
        }
        add_cosignatures(
            &mut st,
            &Cosignatures {
                size: 4,
                lines: vec![line(&r1, &text)],
            },
        )
        .expect("replica 1's signature");
        let cp = latest(&st).expect("cp").clone();
        assert_eq!(log_signed(&st, &cp), None, "one organisation alone");
        assert!(!ready_for_witnesses(&st, &cp));
        // Replica 1 signs again: still one line per key.
        add_cosignatures(
            &mut st,
            &Cosignatures {
                size: 4,
                lines: vec![line(&r1, &text)],
            },
        )
        .expect("again");
        add_cosignatures(
            &mut st,
            &Cosignatures {
                size: 4,
                lines: vec![line(&r2, &text)],
            },
        )
        .expect("replica 2's signature");
        let cp = latest(&st).expect("cp").clone();
        assert_eq!(cp.log_signatures.len(), 2);
        assert_eq!(
            log_signed(&st, &cp),
            Some(vec!["north".to_string(), "south".to_string()])
        );
        assert!(ready_for_witnesses(&st, &cp));
        assert_eq!(
            reply(&st, None).checkpoints[0].log_signed_by,
            ["north", "south"]
        );
        // The note carries both lines once, even from a replica that adds its own.
        let n = note(&st, &cp, Some(&r1));
        assert_eq!(n.signatures.len(), 2);
    }
}
