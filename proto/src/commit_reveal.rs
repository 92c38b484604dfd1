//! Commit-reveal of rulings (docs/WIRE.md, "Commit-reveal").
//!
//! An arbiter first publishes a commitment H(domain, signed ruling bytes, salt), signed
//! with its key, and reveals the signed ruling and salt only after the motion's commit
//! window has closed. Since nobody's ruling is visible before that instant, no arbiter can
//! see another's ruling before committing its own; the rationale is inside the signed
//! ruling, so the reason is committed together with the vote.
//!
//! [`CommitRevealBook`] is the rule as a pure state machine (its timing is
//! [`crate::round::Window`], the one rule of what may happen when): time is passed in, nothing
//! is read from a clock, and iteration order is deterministic (BTreeMap), so every
//! replica of a coordinator reaches the same state from the same inputs.

use std::collections::{BTreeMap, BTreeSet};

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::keys::{self, KeyError};
use crate::pb::{Commitment, Motion, MotionKind, Reveal, SignedRuling};
use crate::round::{Window, WindowError};
use crate::ruling_check::{self, BindingError, RulingError};
use crate::signing::{self, CanonicalWriter, VerifiedMemo, VerifyError};

/// Salt length in bytes. Salts must be fresh random bytes per commitment: a guessable
/// salt lets anyone test candidate rulings against the commitment before the reveal.
pub const SALT_LEN: usize = 32;

/// Why a commitment or a reveal is refused.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CommitRevealError {
    #[error("motion {0:?} is not open in this book; open it before accepting commitments")]
    UnknownMotion(String),
    #[error("motion {0:?} is already open")]
    MotionAlreadyOpen(String),
    #[error("motion window is invalid: {0}")]
    BadWindow(&'static str),
    #[error(
        "commitment is for debate {commitment:?}, but motion {motion_id:?} is in debate {motion:?}"
    )]
    DebateMismatch {
        motion_id: String,
        commitment: String,
        motion: String,
    },
    #[error("arbiter {0} is not on the panel of this motion")]
    NotOnPanel(String),
    #[error(
        "commit window of motion {motion_id:?} closed at {deadline_ms} ms; commitment at \
         {now_ms} ms is too late"
    )]
    CommitWindowClosed {
        motion_id: String,
        deadline_ms: i64,
        now_ms: i64,
    },
    #[error(
        "second commitment by arbiter {arbiter} on motion {motion_id:?}; one commitment per \
         arbiter per motion"
    )]
    SecondCommitment { motion_id: String, arbiter: String },
    #[error(
        "reveal on motion {motion_id:?} at {now_ms} ms is before the commit window closes at \
         {deadline_ms} ms; reveal after the deadline"
    )]
    RevealBeforeWindowCloses {
        motion_id: String,
        deadline_ms: i64,
        now_ms: i64,
    },
    #[error("reveal window of motion {motion_id:?} closed at {deadline_ms} ms")]
    RevealWindowClosed { motion_id: String, deadline_ms: i64 },
    #[error(
        "reveal without commitment: arbiter {arbiter} made no commitment on motion {motion_id:?}"
    )]
    RevealWithoutCommitment { motion_id: String, arbiter: String },
    #[error(
        "reveal does not match the commitment of arbiter {arbiter} on motion {motion_id:?}: \
         the revealed ruling or salt differs from what was committed"
    )]
    RevealMismatch { motion_id: String, arbiter: String },
    #[error("arbiter {arbiter} already revealed on motion {motion_id:?}")]
    AlreadyRevealed { motion_id: String, arbiter: String },
    #[error("salt is {0} bytes; it must be 32 bytes")]
    SaltLength(usize),
    #[error("commitment digest is {0} bytes; it must be 32 bytes")]
    DigestLength(usize),
    #[error("commitment is malformed: {0}")]
    MalformedCommitment(RulingError),
    #[error("commitment signature does not verify (strict ed25519) for arbiter {0}")]
    BadCommitmentSignature(String),
    #[error("reveal has no {0}")]
    MissingPart(&'static str),
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error(transparent)]
    Verify(#[from] VerifyError),
    #[error(transparent)]
    Binding(#[from] BindingError),
}

/// The round's window refusals, as this module has always named them.
impl From<WindowError> for CommitRevealError {
    fn from(e: WindowError) -> Self {
        match e {
            WindowError::Inverted { .. } => {
                Self::BadWindow("reveal deadline lies before the commit deadline")
            }
            WindowError::CommitClosed {
                motion_id,
                deadline_ms,
                at_ms,
            } => Self::CommitWindowClosed {
                motion_id,
                deadline_ms,
                now_ms: at_ms,
            },
            WindowError::RevealTooEarly {
                motion_id,
                deadline_ms,
                now_ms,
            } => Self::RevealBeforeWindowCloses {
                motion_id,
                deadline_ms,
                now_ms,
            },
            WindowError::RevealClosed {
                motion_id,
                deadline_ms,
            } => Self::RevealWindowClosed {
                motion_id,
                deadline_ms,
            },
        }
    }
}

/// The commitment digest: SHA-256(COMMIT_DIGEST_TAG_V1 || u32be(len C) || C || sig || salt)
/// where C is the ruling's canonical bytes and sig its 64-byte signature.
pub fn commitment_digest(
    signed: &SignedRuling,
    salt: &[u8],
) -> Result<[u8; 32], CommitRevealError> {
    if salt.len() != SALT_LEN {
        return Err(CommitRevealError::SaltLength(salt.len()));
    }
    let ruling = signed
        .ruling
        .as_ref()
        .ok_or(CommitRevealError::MissingPart("ruling"))?;
    let canonical = signing::ruling_canonical_bytes_for(ruling, signed.envelope_version)?;
    let sig = keys::parse_signature(&signed.signature)?;
    let mut h = Sha256::new();
    h.update(signing::COMMIT_DIGEST_TAG_V1);
    h.update((canonical.len() as u32).to_be_bytes());
    h.update(&canonical);
    h.update(sig.to_bytes());
    h.update(salt);
    Ok(h.finalize().into())
}

fn check_id(field: &'static str, v: &str) -> Result<(), CommitRevealError> {
    if v.is_empty() {
        return Err(CommitRevealError::MalformedCommitment(
            RulingError::EmptyId { field },
        ));
    }
    if v.len() > ruling_check::MAX_ID_BYTES {
        return Err(CommitRevealError::MalformedCommitment(
            RulingError::TooLong {
                field,
                len: v.len(),
                max: ruling_check::MAX_ID_BYTES,
            },
        ));
    }
    Ok(())
}

/// Canonical bytes of a commitment (what the arbiter signs): tag, motion id, debate id,
/// arbiter key, digest, commit time.
pub fn commitment_canonical_bytes(c: &Commitment) -> Result<Vec<u8>, CommitRevealError> {
    check_id("motion_id", &c.motion_id)?;
    check_id("debate_id", &c.debate_id)?;
    if c.arbiter_key.len() != 32 {
        return Err(CommitRevealError::MalformedCommitment(
            RulingError::ArbiterKeyLength(c.arbiter_key.len()),
        ));
    }
    if c.digest.len() != 32 {
        return Err(CommitRevealError::DigestLength(c.digest.len()));
    }
    if c.committed_at_unix_ms < 0 {
        return Err(CommitRevealError::MalformedCommitment(
            RulingError::NegativeTime(c.committed_at_unix_ms),
        ));
    }
    let mut w = CanonicalWriter::new(signing::COMMITMENT_TAG_V1);
    w.text(&c.motion_id);
    w.text(&c.debate_id);
    w.fixed(&c.arbiter_key);
    w.fixed(&c.digest);
    w.i64(c.committed_at_unix_ms);
    Ok(w.finish())
}

/// Computes and signs the commitment to a signed ruling. The signer must be the ruling's
/// arbiter.
pub fn commit(
    key: &SigningKey,
    signed: &SignedRuling,
    salt: &[u8],
    committed_at_unix_ms: i64,
) -> Result<Commitment, CommitRevealError> {
    let digest = commitment_digest(signed, salt)?;
    let ruling = signed
        .ruling
        .as_ref()
        .ok_or(CommitRevealError::MissingPart("ruling"))?;
    let mut c = Commitment {
        motion_id: ruling.motion_id.clone(),
        debate_id: ruling.debate_id.clone(),
        arbiter_key: key.verifying_key().to_bytes().to_vec(),
        digest: digest.to_vec(),
        committed_at_unix_ms,
        signature: Vec::new(),
    };
    let bytes = commitment_canonical_bytes(&c)?;
    c.signature = key.sign(&bytes).to_bytes().to_vec();
    Ok(c)
}

/// Verifies a commitment's signature strictly (remembered in `memo`); returns the arbiter
/// key.
pub fn verify_commitment(
    c: &Commitment,
    memo: &VerifiedMemo,
) -> Result<VerifyingKey, CommitRevealError> {
    let bytes = commitment_canonical_bytes(c)?;
    let key = keys::parse_public_key(&c.arbiter_key)?;
    let sig = keys::parse_signature(&c.signature)?;
    if !memo.verify_strict(&key, &bytes, &sig) {
        return Err(CommitRevealError::BadCommitmentSignature(
            keys::fingerprint(&key),
        ));
    }
    Ok(key)
}

/// Checks that a revealed signed ruling and salt open a commitment: the ruling verifies
/// strictly, names the commitment's motion, debate and arbiter, and the digest matches.
/// Does not check windows; see [`CommitRevealBook`] for the full rule.
pub fn check_opens(
    c: &Commitment,
    signed: &SignedRuling,
    salt: &[u8],
    memo: &VerifiedMemo,
) -> Result<(), CommitRevealError> {
    let ruling = signing::verify_ruling(signed, memo)?;
    let arbiter = keys::fingerprint_bytes(&c.arbiter_key);
    if ruling.arbiter_key != c.arbiter_key
        || ruling.motion_id != c.motion_id
        || ruling.debate_id != c.debate_id
    {
        return Err(CommitRevealError::RevealMismatch {
            motion_id: c.motion_id.clone(),
            arbiter,
        });
    }
    let digest = commitment_digest(signed, salt)?;
    if digest.as_slice() != c.digest.as_slice() {
        return Err(CommitRevealError::RevealMismatch {
            motion_id: c.motion_id.clone(),
            arbiter,
        });
    }
    Ok(())
}

/// The part of a motion the commit-reveal rule needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MotionWindow {
    pub motion_id: String,
    pub debate_id: String,
    pub kind: MotionKind,
    pub state_hash: [u8; 32],
    /// Commitments accepted while `now <= commit_deadline_ms`; reveals only after it.
    pub commit_deadline_ms: i64,
    /// Reveals accepted while `now <= reveal_deadline_ms`.
    pub reveal_deadline_ms: i64,
    /// Panel members' keys; `None` accepts any valid key (e.g. exam motions).
    pub panel: Option<BTreeSet<[u8; 32]>>,
}

impl MotionWindow {
    /// The window of a wire motion. The panel is the motion's seats, or `None` if it
    /// lists none.
    pub fn from_motion(m: &Motion) -> Result<Self, CommitRevealError> {
        let kind =
            ruling_check::known_kind(m.kind).map_err(CommitRevealError::MalformedCommitment)?;
        let state_hash: [u8; 32] = m.state_hash.as_slice().try_into().map_err(|_| {
            CommitRevealError::MalformedCommitment(RulingError::StateHashLength(m.state_hash.len()))
        })?;
        let panel = if m.panel.is_empty() {
            None
        } else {
            let mut set = BTreeSet::new();
            for seat in &m.panel {
                let key = keys::parse_public_key(&seat.public_key)?;
                set.insert(key.to_bytes());
            }
            Some(set)
        };
        let w = Self {
            motion_id: m.motion_id.clone(),
            debate_id: m.debate_id.clone(),
            kind,
            state_hash,
            commit_deadline_ms: m.commit_deadline_unix_ms,
            reveal_deadline_ms: m.reveal_deadline_unix_ms,
            panel,
        };
        w.check()?;
        Ok(w)
    }

    /// The round's timing rule for this motion.
    pub fn round(&self) -> Window {
        Window {
            commit_deadline_ms: self.commit_deadline_ms,
            reveal_deadline_ms: self.reveal_deadline_ms,
        }
    }

    fn check(&self) -> Result<(), CommitRevealError> {
        check_id("motion_id", &self.motion_id)?;
        check_id("debate_id", &self.debate_id)?;
        Window::new(self.commit_deadline_ms, self.reveal_deadline_ms)?;
        Ok(())
    }
}

#[derive(Debug, Clone)]
struct Entry {
    commitment: Commitment,
    revealed: Option<(SignedRuling, Vec<u8>)>,
}

#[derive(Debug, Clone)]
struct MotionBook {
    window: MotionWindow,
    /// Keyed by arbiter public key.
    entries: BTreeMap<[u8; 32], Entry>,
}

/// The commit-reveal rule as a pure state machine. See the module docs.
#[derive(Debug, Clone, Default)]
pub struct CommitRevealBook {
    motions: BTreeMap<String, MotionBook>,
}

impl CommitRevealBook {
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens a motion for commitments.
    pub fn open(&mut self, window: MotionWindow) -> Result<(), CommitRevealError> {
        window.check()?;
        if self.motions.contains_key(&window.motion_id) {
            return Err(CommitRevealError::MotionAlreadyOpen(window.motion_id));
        }
        self.motions.insert(
            window.motion_id.clone(),
            MotionBook {
                window,
                entries: BTreeMap::new(),
            },
        );
        Ok(())
    }

    /// The window of an open motion.
    pub fn window(&self, motion_id: &str) -> Option<&MotionWindow> {
        self.motions.get(motion_id).map(|m| &m.window)
    }

    /// Records a commitment made at `now_ms`. Refuses: unknown motion, wrong debate, bad
    /// signature or weak key, a key not on the panel, a commitment after the window, and a
    /// second commitment by the same arbiter (even an identical one).
    pub fn commit(
        &mut self,
        c: &Commitment,
        now_ms: i64,
        memo: &VerifiedMemo,
    ) -> Result<(), CommitRevealError> {
        let book = self
            .motions
            .get_mut(&c.motion_id)
            .ok_or_else(|| CommitRevealError::UnknownMotion(c.motion_id.clone()))?;
        if c.debate_id != book.window.debate_id {
            return Err(CommitRevealError::DebateMismatch {
                motion_id: c.motion_id.clone(),
                commitment: c.debate_id.clone(),
                motion: book.window.debate_id.clone(),
            });
        }
        let key = verify_commitment(c, memo)?;
        let key_bytes = key.to_bytes();
        if let Some(panel) = &book.window.panel
            && !panel.contains(&key_bytes)
        {
            return Err(CommitRevealError::NotOnPanel(keys::fingerprint(&key)));
        }
        book.window.round().check_commit(&c.motion_id, now_ms)?;
        if book.entries.contains_key(&key_bytes) {
            return Err(CommitRevealError::SecondCommitment {
                motion_id: c.motion_id.clone(),
                arbiter: keys::fingerprint(&key),
            });
        }
        book.entries.insert(
            key_bytes,
            Entry {
                commitment: c.clone(),
                revealed: None,
            },
        );
        Ok(())
    }

    /// Accepts a reveal made at `now_ms`. Refuses a reveal before the commit window
    /// closes, after the reveal window, without a commitment, one that does not match,
    /// a ruling that does not verify strictly, one bound to another motion, debate, kind
    /// or state hash, and a second reveal.
    pub fn reveal(
        &mut self,
        reveal: &Reveal,
        now_ms: i64,
        memo: &VerifiedMemo,
    ) -> Result<(), CommitRevealError> {
        let signed = reveal
            .signed_ruling
            .as_ref()
            .ok_or(CommitRevealError::MissingPart("signed_ruling"))?;
        let ruling = signed
            .ruling
            .as_ref()
            .ok_or(CommitRevealError::MissingPart("ruling"))?;
        let book = self
            .motions
            .get_mut(&ruling.motion_id)
            .ok_or_else(|| CommitRevealError::UnknownMotion(ruling.motion_id.clone()))?;
        let w = &book.window;
        w.round().check_reveal(&w.motion_id, now_ms)?;
        let ruling = signing::verify_ruling(signed, memo)?;
        check_window_binding(ruling, w)?;
        let key_bytes: [u8; 32] = ruling
            .arbiter_key
            .as_slice()
            .try_into()
            .map_err(|_| KeyError::Length(ruling.arbiter_key.len()))?;
        let arbiter = keys::fingerprint_bytes(&key_bytes);
        let entry = book.entries.get_mut(&key_bytes).ok_or_else(|| {
            CommitRevealError::RevealWithoutCommitment {
                motion_id: ruling.motion_id.clone(),
                arbiter: arbiter.clone(),
            }
        })?;
        if entry.revealed.is_some() {
            return Err(CommitRevealError::AlreadyRevealed {
                motion_id: ruling.motion_id.clone(),
                arbiter,
            });
        }
        check_opens(&entry.commitment, signed, &reveal.salt, memo)?;
        entry.revealed = Some((signed.clone(), reveal.salt.clone()));
        Ok(())
    }

    /// Revealed rulings of a motion, in arbiter-key order. Empty until the commit window
    /// has closed, by construction (reveals are refused before).
    pub fn revealed(&self, motion_id: &str) -> Vec<&SignedRuling> {
        self.motions
            .get(motion_id)
            .map(|b| {
                b.entries
                    .values()
                    .filter_map(|e| e.revealed.as_ref().map(|(s, _)| s))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Commitments of a motion, in arbiter-key order.
    pub fn commitments(&self, motion_id: &str) -> Vec<&Commitment> {
        self.motions
            .get(motion_id)
            .map(|b| b.entries.values().map(|e| &e.commitment).collect())
            .unwrap_or_default()
    }

    /// Arbiters that committed but have not revealed (a withheld reveal is itself a
    /// recordable fact).
    pub fn unrevealed(&self, motion_id: &str) -> Vec<[u8; 32]> {
        self.motions
            .get(motion_id)
            .map(|b| {
                b.entries
                    .iter()
                    .filter(|(_, e)| e.revealed.is_none())
                    .map(|(k, _)| *k)
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn check_window_binding(r: &crate::pb::Ruling, w: &MotionWindow) -> Result<(), CommitRevealError> {
    // Reuse the motion binding rule on a motion shell built from the window.
    let shell = Motion {
        motion_id: w.motion_id.clone(),
        debate_id: w.debate_id.clone(),
        kind: w.kind as i32,
        state_hash: w.state_hash.to_vec(),
        ..Default::default()
    };
    ruling_check::check_binding(r, &shell)?;
    Ok(())
}
