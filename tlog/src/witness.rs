//! C2SP tlog-witness v1.0.0, the rules of `add-checkpoint` without the HTTP: the request
//! body (`old <size>`, up to 63 consistency proof lines, a blank line, the checkpoint), and
//! the witness's decision against the latest checkpoint it cosigned for the log. The shell
//! (`panel-witness`) persists the accepted checkpoint atomically before it answers.

use crate::checkpoint::{Checkpoint, decode_hash, encode_hash};
use crate::merkle::{Hash, empty_root, verify_consistency};
use crate::note::{Note, NoteError, SignatureLine, SignatureLineError, VerifierKey};

/// Most consistency proof lines a request may carry (the spec's limit).
pub const MAX_PROOF_LINES: usize = 63;

/// An `add-checkpoint` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddCheckpoint {
    pub old_size: u64,
    pub proof: Vec<Hash>,
    /// The signed checkpoint note, as sent.
    pub checkpoint: Note,
}

/// A refusal with the HTTP status the spec assigns to it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("400 Bad Request: {0}")]
    BadRequest(String),
    #[error("403 Forbidden: {0}")]
    Forbidden(String),
    #[error("404 Not Found: the log {0:?} is not one this witness knows")]
    UnknownLog(String),
    #[error("409 Conflict: this witness holds size {0} for the log; send the proof from it")]
    Conflict(u64),
    #[error("422 Unprocessable Entity: {0}")]
    Unprocessable(String),
}

impl Refusal {
    pub fn status(&self) -> u16 {
        match self {
            Refusal::BadRequest(_) => 400,
            Refusal::Forbidden(_) => 403,
            Refusal::UnknownLog(_) => 404,
            Refusal::Conflict(_) => 409,
            Refusal::Unprocessable(_) => 422,
        }
    }

    /// The response body: the latest size for a 409 (`text/x.tlog.size`), else the reason.
    pub fn body(&self) -> String {
        match self {
            Refusal::Conflict(size) => format!("{size}\n"),
            other => format!("{other}\n"),
        }
    }
}

fn bad(why: impl Into<String>) -> Refusal {
    Refusal::BadRequest(why.into())
}

impl AddCheckpoint {
    /// The request body.
    pub fn to_body(&self) -> String {
        let mut s = format!("old {}\n", self.old_size);
        for h in &self.proof {
            s.push_str(&encode_hash(h));
            s.push('\n');
        }
        s.push('\n');
        s.push_str(&self.checkpoint.to_text());
        s
    }

    /// Parses a request body; malformed bodies are 400s.
    pub fn parse(body: &[u8]) -> Result<Self, Refusal> {
        let text = std::str::from_utf8(body).map_err(|_| bad("the body is not UTF-8"))?;
        let (head, note) = text
            .split_once("\n\n")
            .ok_or_else(|| bad("no blank line between the proof and the checkpoint"))?;
        let mut lines = head.split('\n');
        let old = lines
            .next()
            .and_then(|l| l.strip_prefix("old "))
            .ok_or_else(|| bad("the first line must be `old <size>`"))?;
        if old.is_empty()
            || !old.bytes().all(|b| b.is_ascii_digit())
            || (old.len() > 1 && old.starts_with('0'))
        {
            return Err(bad(format!(
                "old size {old:?} is not a decimal without leading zeroes"
            )));
        }
        let old_size = old.parse().map_err(|_| bad("old size is out of range"))?;
        let proof = lines
            .enumerate()
            .map(|(i, l)| {
                decode_hash(l)
                    .ok_or_else(|| bad(format!("proof line {} is not a base64 hash", i + 1)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if proof.len() > MAX_PROOF_LINES {
            return Err(bad(format!(
                "{} proof lines; at most {MAX_PROOF_LINES}",
                proof.len()
            )));
        }
        let checkpoint =
            Note::parse(note.as_bytes()).map_err(|e| bad(format!("the checkpoint: {e}")))?;
        Ok(AddCheckpoint {
            old_size,
            proof,
            checkpoint,
        })
    }
}

/// A log the witness cosigns for: its origin and the keys that sign its checkpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownLog {
    pub origin: String,
    /// A signature by any one of these makes a checkpoint the log's, unless `quorum` is set.
    pub keys: Vec<VerifierKey>,
    /// A log no single replica can sign for: a checkpoint is the log's only with the
    /// signatures of this quorum (`log_quorum`), whatever `keys` holds.
    pub quorum: Option<crate::log_quorum::LogQuorum>,
}

/// The latest checkpoint a witness cosigned for one log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Latest {
    pub size: u64,
    pub root: Hash,
}

/// A checkpoint of a log without a quorum needs a signature by one of its keys (403).
fn verify_log_key(log: &KnownLog, note: &Note) -> Result<(), Refusal> {
    match note.verify(&log.keys) {
        Ok(_) => Ok(()),
        Err(e @ (NoteError::BadSignature { .. } | NoteError::NoKnownSignature { .. })) => {
            Err(Refusal::Forbidden(e.to_string()))
        }
        Err(e) => Err(bad(e.to_string())),
    }
}

/// Decides an `add-checkpoint` request in the order the spec gives: the log must be known
/// (404), signed by its key (403), the old size no larger than the new (400) and equal to
/// the size held (409), and the proof must show the new tree extends the held one (422).
/// Returns the checkpoint to record and cosign.
pub fn decide(
    logs: &[KnownLog],
    latest: Option<&Latest>,
    req: &AddCheckpoint,
) -> Result<Checkpoint, Refusal> {
    let cp = Checkpoint::parse_body(&req.checkpoint.text)
        .map_err(|e| bad(format!("the checkpoint: {e}")))?;
    let log = logs
        .iter()
        .find(|l| l.origin == cp.origin)
        .ok_or_else(|| Refusal::UnknownLog(cp.origin.clone()))?;
    if let Some(q) = &log.quorum {
        q.check(&req.checkpoint)
            .map_err(|e| Refusal::Forbidden(e.to_string()))?;
    } else {
        verify_log_key(log, &req.checkpoint)?;
    }
    if req.old_size > cp.size {
        return Err(bad(format!(
            "old size {} is larger than the checkpoint's {}",
            req.old_size, cp.size
        )));
    }
    let held = latest.map_or(0, |l| l.size);
    if req.old_size != held {
        return Err(Refusal::Conflict(held));
    }
    if cp.size == 0 && cp.root != empty_root() {
        return Err(Refusal::Unprocessable(
            "a checkpoint of size 0 must carry the empty tree's root".into(),
        ));
    }
    match latest {
        None => {
            if !req.proof.is_empty() {
                return Err(Refusal::Unprocessable(
                    "from size 0 the consistency proof must be empty".into(),
                ));
            }
        }
        Some(held) => {
            if held.size == 0 && !req.proof.is_empty() {
                return Err(Refusal::Unprocessable(
                    "from size 0 the consistency proof must be empty".into(),
                ));
            }
            if held.size == cp.size && held.root != cp.root {
                return Err(Refusal::Unprocessable(format!(
                    "a checkpoint of size {} with another root than the one cosigned: a split view",
                    cp.size
                )));
            }
            if held.size > 0 {
                verify_consistency(held.size, cp.size, &held.root, &cp.root, &req.proof).map_err(
                    |e| {
                        Refusal::Unprocessable(format!(
                            "the consistency proof from size {} does not hold: {e}",
                            held.size
                        ))
                    },
                )?;
            }
        }
    }
    Ok(cp)
}

/// Why an `add-checkpoint` response body is not one or more signature lines; the witness
/// that sent it does not follow the spec, so its operator is the one to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CosignaturesError {
    #[error("the response does not end in a newline")]
    NoNewline,
    #[error(transparent)]
    Line(#[from] SignatureLineError),
    #[error("{0} signature lines")]
    Count(usize),
}

/// Parses an `add-checkpoint` response body: one or more signature lines.
pub fn parse_cosignatures(body: &str) -> Result<Vec<SignatureLine>, CosignaturesError> {
    let lines = body
        .strip_suffix('\n')
        .ok_or(CosignaturesError::NoNewline)?;
    let parsed: Vec<SignatureLine> = lines
        .split('\n')
        .map(SignatureLine::parse)
        .collect::<Result<_, _>>()?;
    if parsed.is_empty() || parsed.len() > crate::note::MAX_SIGNATURES {
        return Err(CosignaturesError::Count(parsed.len()));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::Log;
    use crate::note::NoteSigner;
    use ed25519_dalek::SigningKey;

    fn log_of(n: usize) -> Log {
        let mut l = Log::new();
        for i in 0..n {
            l.append(format!("e{i}").as_bytes());
        }
        l
    }

    fn signed(signer: &NoteSigner, size: u64, root: Hash) -> Note {
        let cp = Checkpoint::new(signer.name(), size, root);
        let mut note = Note::new(cp.body()).expect("note");
        note.add(signer.sign(&note.text));
        note
    }

    fn setup() -> (NoteSigner, Vec<KnownLog>) {
        let s = NoteSigner::new("panel.example/log", SigningKey::from_bytes(&[4; 32])).expect("s");
        let logs = vec![KnownLog {
            origin: "panel.example/log".into(),
            keys: vec![s.verifier()],
            quorum: None,
        }];
        (s, logs)
    }

    #[test]
    fn a_quorum_log_is_cosigned_only_with_signatures_of_enough_organisations() {
        use crate::log_quorum::{LogQuorum, LogSigner};
        let key = |seed: u8| {
            NoteSigner::new("panel.example/log", SigningKey::from_bytes(&[seed; 32])).expect("k")
        };
        let (north, south) = (key(1), key(2));
        let logs = vec![KnownLog {
            origin: "panel.example/log".into(),
            keys: vec![],
            quorum: Some(LogQuorum {
                signers: [("north", &north), ("south", &south)]
                    .iter()
                    .map(|(o, k)| LogSigner {
                        organisation: (*o).into(),
                        key: k.verifier(),
                    })
                    .collect(),
                organisations: 2,
            }),
        }];
        let l = log_of(8);
        // One replica alone (a rogue one, say) signs a checkpoint: 403, nothing held.
        let alone = AddCheckpoint {
            old_size: 0,
            proof: vec![],
            checkpoint: signed(&north, 8, l.root_at(8).expect("root")),
        };
        let err = decide(&logs, None, &alone).expect_err("one organisation");
        assert_eq!(err.status(), 403, "{err}");
        assert!(err.to_string().contains("quorum is 2"), "{err}");
        let mut both = alone.clone();
        both.checkpoint.add(south.sign(&both.checkpoint.text));
        assert!(decide(&logs, None, &both).is_ok());
    }

    #[test]
    fn the_witness_follows_a_growing_log_and_refuses_every_other_request() {
        let (s, logs) = setup();
        let l = log_of(20);
        let first = AddCheckpoint {
            old_size: 0,
            proof: vec![],
            checkpoint: signed(&s, 8, l.root_at(8).expect("root")),
        };
        let parsed = AddCheckpoint::parse(first.to_body().as_bytes()).expect("round trip");
        assert_eq!(parsed, first);
        let cp = decide(&logs, None, &first).expect("first");
        let held = Latest {
            size: cp.size,
            root: cp.root,
        };
        let next = AddCheckpoint {
            old_size: 8,
            proof: l.consistency_proof(8, 20).expect("proof"),
            checkpoint: signed(&s, 20, l.root_at(20).expect("root")),
        };
        assert!(decide(&logs, Some(&held), &next).is_ok());
        // A stale old size: 409 with the size held.
        let stale = AddCheckpoint {
            old_size: 5,
            ..next.clone()
        };
        assert_eq!(
            decide(&logs, Some(&held), &stale),
            Err(Refusal::Conflict(8))
        );
        // A rewritten history: the proof does not hold, 422.
        let mut forged = Log::new();
        for i in 0..20 {
            forged.append(
                if i == 3 {
                    b"edited".to_vec()
                } else {
                    format!("e{i}").into_bytes()
                }
                .as_slice(),
            );
        }
        let rewritten = AddCheckpoint {
            old_size: 8,
            proof: forged.consistency_proof(8, 20).expect("proof"),
            checkpoint: signed(&s, 20, forged.root_at(20).expect("root")),
        };
        assert_eq!(
            decide(&logs, Some(&held), &rewritten).map_err(|e| e.status()),
            Err(422)
        );
        // Same size, other root: 422 (a split view).
        let split = AddCheckpoint {
            old_size: 8,
            proof: vec![],
            checkpoint: signed(&s, 8, forged.root_at(8).expect("root")),
        };
        assert_eq!(
            decide(&logs, Some(&held), &split).map_err(|e| e.status()),
            Err(422)
        );
        // Another log key under the same origin: 403. An unknown origin: 404.
        let other =
            NoteSigner::new("panel.example/log", SigningKey::from_bytes(&[5; 32])).expect("o");
        let foreign = AddCheckpoint {
            checkpoint: signed(&other, 20, l.root_at(20).expect("root")),
            ..next.clone()
        };
        assert_eq!(
            decide(&logs, Some(&held), &foreign).map_err(|e| e.status()),
            Err(403)
        );
        let unknown =
            NoteSigner::new("elsewhere.example/log", SigningKey::from_bytes(&[6; 32])).expect("u");
        let stranger = AddCheckpoint {
            checkpoint: signed(&unknown, 20, l.root_at(20).expect("root")),
            ..next.clone()
        };
        assert_eq!(
            decide(&logs, Some(&held), &stranger).map_err(|e| e.status()),
            Err(404)
        );
        // Old size above the checkpoint's: 400.
        let backwards = AddCheckpoint {
            old_size: 30,
            ..next
        };
        assert_eq!(
            decide(&logs, Some(&held), &backwards).map_err(|e| e.status()),
            Err(400)
        );
    }

    #[test]
    fn malformed_requests_are_400s() {
        for body in [
            "".as_bytes(),
            b"old 01\n\nx\n",
            b"new 1\n\nx\n",
            b"old 1\nnot-base64\n\nx\n",
            b"old 1\n\nnot a note",
            &[0xff, 0xfe],
        ] {
            assert_eq!(
                AddCheckpoint::parse(body).map_err(|e| e.status()),
                Err(400),
                "{body:?}"
            );
        }
        let many = format!(
            "old 1\n{}\nlog\n1\nAA==\n\n\u{2014} a AAAAAA==\n",
            "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n".repeat(64)
        );
        assert_eq!(
            AddCheckpoint::parse(many.as_bytes()).map_err(|e| e.status()),
            Err(400)
        );
    }
}
