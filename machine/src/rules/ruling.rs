//! Signed rulings as the log carries them and `apply` re-verifies them.
//!
//! A ruling is `panel-proto`'s `SignedRuling` (canonical bytes, domain tag, ed25519),
//! carried in the JSON log as the hex of its protobuf encoding. `apply` decodes it, checks
//! it is bound to the motion (id, debate, kind, state hash: `check_binding`), finds the
//! seated arbiter whose registered key signed it, and verifies with `verify_strict` under
//! that registered key (`verify_ruling_with_key`). Batch verification is never used here:
//! its random coefficients are not `verify_strict` and could make replicas disagree
//! (stack-notes section 4).

use ed25519_dalek::VerifyingKey;
use panel_proto::VerifiedMemo;
use panel_proto::pb;
use panel_proto::ruling_check;
use prost::Message;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::rules::acceptance::{Decision, MotionKind, RetrievalReceipt, RevealedRuling};
use crate::rules::hex_bytes::{HexBytes, RevealBytes};

/// A protobuf-encoded `crucible.panel.v1.SignedRuling`, hex in JSON (commands, replies,
/// the record). Held as bytes: a decided motion keeps its rulings, and as hex text they
/// were twice the memory (BENCHMARKS.md, "Soak"). A string that is not lowercase hex is
/// kept as it came, so it serialises back unchanged (upper-case hex still decodes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WireRuling(HexBytes);

impl WireRuling {
    pub fn encode(sr: &pb::SignedRuling) -> Self {
        Self(HexBytes::new(sr.encode_to_vec()))
    }

    /// A wire ruling as JSON carries it (hex); anything else decodes to an error.
    pub fn from_hex(text: impl AsRef<str>) -> Self {
        Self(HexBytes::from_hex(text.as_ref()))
    }

    /// The hex JSON carries.
    pub fn to_hex(&self) -> String {
        self.0.to_hex()
    }

    pub fn decode(&self) -> Result<pb::SignedRuling, RulingError> {
        let bytes = self.0.bytes().map_err(|_| RulingError::Malformed {
            reason: "not hex".into(),
        })?;
        pb::SignedRuling::decode(&*bytes).map_err(|e| RulingError::Malformed {
            reason: e.to_string(),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RulingError {
    #[error(
        "a ruling is not a hex-encoded SignedRuling ({reason}); send panel-proto's SignedRuling, protobuf-encoded, as hex"
    )]
    Malformed { reason: String },
    #[error("public key of {arbiter} is not a valid, non-weak 32-byte ed25519 key")]
    MalformedKey { arbiter: String },
    #[error(
        "public key of {arbiter} is not written in lower case; send the 32 key bytes as 64 \
         lower-case hex characters, the form every key is compared and looked up in"
    )]
    KeyNotLowercase { arbiter: String },
    #[error("ruling signed by key {fingerprint} holds no seat on this motion's panel")]
    NotSeated { fingerprint: String },
    #[error("ruling of {arbiter} is not bound to this motion: {reason}")]
    Binding { arbiter: String, reason: String },
    #[error("ruling of {arbiter} fails verification: {reason}")]
    Verify { arbiter: String, reason: String },
    #[error("ruling of {arbiter} has decision {decision}, which does not answer a {kind} motion")]
    WrongDecision {
        arbiter: String,
        decision: String,
        kind: String,
    },
}

/// The wire kind of a coordinator motion kind.
pub fn wire_kind(kind: MotionKind) -> pb::MotionKind {
    match kind {
        MotionKind::Merge => pb::MotionKind::Merge,
        MotionKind::Challenge => pb::MotionKind::ResolveChallenge,
        MotionKind::TierVerification => pb::MotionKind::VerifyTier,
        MotionKind::Relevance => pb::MotionKind::AssignRelevance,
        MotionKind::Steelman => pb::MotionKind::CertifySteelman,
        MotionKind::Phase => pb::MotionKind::AdvancePhase,
        MotionKind::Appeal => pb::MotionKind::AdmitAppeal,
        MotionKind::Procedure => pb::MotionKind::Procedure,
    }
}

/// What a ruling must be bound to.
pub struct Binding<'a> {
    pub motion_id: &'a str,
    pub debate_id: &'a str,
    pub kind: MotionKind,
    /// Raw 32-byte state hash.
    pub state_hash: &'a [u8],
}

/// A ruling that passed every check, ready for the acceptance rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// `None` for an abstention: verified and recorded, not counted.
    pub revealed: Option<RevealedRuling>,
    pub receipt: Option<RetrievalReceipt>,
}

/// Verify one decoded ruling from the seated arbiter `arbiter_id` holding `key` (the
/// signature through the caller's `memo`).
pub fn check(
    sr: &pb::SignedRuling,
    arbiter_id: &str,
    key: &VerifyingKey,
    binding: &Binding<'_>,
    memo: &VerifiedMemo,
) -> Result<Checked, RulingError> {
    let ruling = panel_proto::signing::verify_ruling_with_key(sr, key, memo).map_err(|e| {
        RulingError::Verify {
            arbiter: arbiter_id.into(),
            reason: e.to_string(),
        }
    })?;
    let motion = pb::Motion {
        motion_id: binding.motion_id.into(),
        debate_id: binding.debate_id.into(),
        kind: wire_kind(binding.kind) as i32,
        state_hash: binding.state_hash.to_vec(),
        ..Default::default()
    };
    ruling_check::check_binding(ruling, &motion).map_err(|e| RulingError::Binding {
        arbiter: arbiter_id.into(),
        reason: e.to_string(),
    })?;
    let decision = pb::Decision::try_from(ruling.decision).unwrap_or(pb::Decision::Unspecified);
    let counted = match (ruling_check::binary_pair(wire_kind(binding.kind)), decision) {
        (_, pb::Decision::Abstain) => None,
        (None, _) => Some(Decision::Yes),
        (Some((yes, _)), d) if d == yes => Some(Decision::Yes),
        (Some((_, no)), d) if d == no => Some(Decision::No),
        (Some(_), d) => {
            return Err(RulingError::WrongDecision {
                arbiter: arbiter_id.into(),
                decision: ruling_check::decision_name(d).into(),
                kind: ruling_check::kind_name(wire_kind(binding.kind)).into(),
            });
        }
    };
    let probability_milli = (ruling.probability.clamp(0.0, 1.0) * 1000.0).round() as u16;
    Ok(Checked {
        revealed: counted.map(|decision| RevealedRuling {
            arbiter_id: arbiter_id.into(),
            decision,
            probability_milli,
            relevance: ruling.relevance.map(|v| v.min(u8::MAX as u32) as u8),
        }),
        receipt: ruling.receipt.as_ref().map(|r| RetrievalReceipt {
            arbiter_id: arbiter_id.into(),
            content_hash: crate::rules::hex_bytes::DigestBytes::new(r.sha256.clone()),
        }),
    })
}

/// Parse a hex public key, refusing small-order ("weak") keys (panel-proto's rule; its
/// parser keeps the decompressed keys, so arbiters' keys are decompressed once).
pub fn parse_public_key(
    arbiter: &str,
    key: &crate::rules::hex_bytes::PublicKeyBytes,
) -> Result<VerifyingKey, RulingError> {
    let malformed = || RulingError::MalformedKey {
        arbiter: arbiter.into(),
    };
    let bytes = key.bytes().map_err(|_| malformed())?;
    panel_proto::keys::parse_public_key(&bytes).map_err(|_| malformed())
}

/// A reveal's parts: the signed ruling, the salt and the commitment it opens.
#[derive(Debug, Clone, PartialEq)]
pub struct RevealParts {
    pub signed: pb::SignedRuling,
    pub salt: Vec<u8>,
    pub commitment: pb::Commitment,
}

impl RevealParts {
    /// The protobuf `Reveal`, as the log carries it.
    pub fn encode(&self) -> RevealBytes {
        RevealBytes::new(
            pb::Reveal {
                signed_ruling: Some(self.signed.clone()),
                salt: self.salt.clone(),
                commitment: Some(self.commitment.clone()),
            }
            .encode_to_vec(),
        )
    }
}

/// Why a reveal cannot be read or does not hold at intake.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RevealError {
    #[error("not hex")]
    NotHex,
    #[error("not a protobuf Reveal: {0}")]
    NotProtobuf(#[from] prost::DecodeError),
    #[error("a reveal needs the signed ruling and its commitment")]
    Incomplete,
    #[error("a reveal needs the signed ruling")]
    NoSignedRuling,
    #[error("the commitment is for motion {0}")]
    OtherMotion(String),
    #[error(transparent)]
    Unbound(#[from] panel_proto::ruling_check::BindingError),
    #[error("the logged round's motion digest is not 32 bytes of hex")]
    LoggedDigest,
    #[error("the logged commitment is not hex")]
    LoggedCommitmentNotHex,
    #[error("the logged commitment does not decode: {0}")]
    LoggedCommitment(prost::DecodeError),
    #[error("the commitment is unsigned; send the commitment exactly as the arbiter signed it")]
    UnsignedCommitment,
    #[error(transparent)]
    Commitment(#[from] panel_proto::commit_reveal::CommitRevealError),
}

/// Why an outcome's rulings or reveals were refused at intake, naming which one.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum IntakeError {
    #[error("ruling {index}: {error}")]
    RulingMalformed { index: usize, error: RulingError },
    #[error("ruling {index}: {error}")]
    RulingSignature {
        index: usize,
        error: panel_proto::VerifyError,
    },
    #[error("reveal {index}: {error}")]
    Reveal { index: usize, error: RevealError },
}

/// Splits a reveal into its parts; both the signed ruling and the commitment must be there.
pub fn reveal_parts(reveal: pb::Reveal) -> Result<RevealParts, RevealError> {
    match (reveal.signed_ruling, reveal.commitment) {
        (Some(signed), Some(commitment)) => Ok(RevealParts {
            signed,
            salt: reveal.salt,
            commitment,
        }),
        _ => Err(RevealError::Incomplete),
    }
}

/// Decodes a protobuf `Reveal` into its parts (nothing verified yet).
pub fn decode_reveal(reveal: &RevealBytes) -> Result<RevealParts, RevealError> {
    let bytes = reveal.bytes().map_err(|_| RevealError::NotHex)?;
    reveal_parts(pb::Reveal::decode(&*bytes)?)
}

/// Intake of one reveal: the commitment's signature and the opening are verified, and the
/// reveal is returned in its log form, without the commitment signature (see
/// [`intake_check`]).
pub fn intake_reveal(
    mut parts: RevealParts,
    memo: &VerifiedMemo,
) -> Result<RevealBytes, RevealError> {
    if parts.commitment.signature.is_empty() {
        return Err(RevealError::UnsignedCommitment);
    }
    panel_proto::commit_reveal::verify_commitment(&parts.commitment, memo)?;
    panel_proto::commit_reveal::check_opens(&parts.commitment, &parts.signed, &parts.salt, memo)?;
    parts.commitment.signature.clear();
    Ok(parts.encode())
}

/// Intake check on the leader, before proposal, so garbage never reaches the log.
///
/// Every bare ruling and every reveal is decoded and verified strictly through `memo`;
/// a leader passes the memo its state machine applies with, so its own `apply` finds
/// these signatures there instead of checking them a second time. A reveal's commitment signature authenticates the commitment when
/// it is made: it is verified here, at the last point where the commitment is received,
/// and removed from the entry, so the log carries what the record needs (the commitment
/// digest, opened by the arbiter's signed ruling and salt) and each replica verifies one
/// signature per ruling instead of two. Returns the reveals as they go into the log.
pub fn intake_check(
    rulings: &[WireRuling],
    reveals: &[RevealBytes],
    memo: &VerifiedMemo,
) -> Result<Vec<RevealBytes>, IntakeError> {
    for (index, w) in rulings.iter().enumerate() {
        let sr = w
            .decode()
            .map_err(|error| IntakeError::RulingMalformed { index, error })?;
        panel_proto::verify_ruling(&sr, memo)
            .map_err(|error| IntakeError::RulingSignature { index, error })?;
    }
    reveals
        .iter()
        .enumerate()
        .map(|(index, h)| {
            decode_reveal(h)
                .and_then(|parts| intake_reveal(parts, memo))
                .map_err(|error| IntakeError::Reveal { index, error })
        })
        .collect()
}

/// Build and sign a ruling the way an arbiter node does (tests, bench).
pub fn sign(
    key: &ed25519_dalek::SigningKey,
    binding: &Binding<'_>,
    decision: Decision,
    probability: f64,
    relevance: Option<u32>,
) -> WireRuling {
    sign_answering(key, binding, decision, probability, relevance, None)
}

/// [`sign`], bound to the digest of the signed motion it answers when one is given
/// (envelope v2, docs/WIRE.md).
pub fn sign_answering(
    key: &ed25519_dalek::SigningKey,
    binding: &Binding<'_>,
    decision: Decision,
    probability: f64,
    relevance: Option<u32>,
    motion_digest: Option<&[u8; 32]>,
) -> WireRuling {
    let (yes, no) = ruling_check::binary_pair(wire_kind(binding.kind))
        .unwrap_or((pb::Decision::None, pb::Decision::None));
    let ruling = pb::Ruling {
        motion_id: binding.motion_id.into(),
        debate_id: binding.debate_id.into(),
        kind: wire_kind(binding.kind) as i32,
        state_hash: binding.state_hash.to_vec(),
        decision: match decision {
            Decision::Yes => yes,
            Decision::No => no,
        } as i32,
        probability,
        relevance,
        rationale: "bench/test ruling".into(),
        issued_at_unix_ms: 1,
        motion_digest: motion_digest.map(|d| d.to_vec()).unwrap_or_default(),
        provenance: None,
        ..Default::default()
    };
    match panel_proto::sign_ruling(key, ruling) {
        Ok(sr) => WireRuling::encode(&sr),
        // An ill-formed ruling cannot be signed; an empty wire ruling fails decoding.
        Err(_) => WireRuling::from_hex(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// JSON carries a wire ruling exactly as it came: lowercase hex as bytes, anything else
    /// as its text (upper-case hex still decodes; non-hex names itself on decoding).
    #[test]
    fn wire_rulings_serialise_back_as_they_came() {
        let key = SigningKey::from_bytes(&[3; 32]);
        let sr = sign_answering(&key, &binding(), Decision::Yes, 0.7, None, None)
            .decode()
            .unwrap();
        let lower = hex::encode(sr.encode_to_vec());
        for text in [lower.clone(), lower.to_uppercase(), "zz".to_string()] {
            let w: WireRuling = serde_json::from_value(serde_json::json!(text)).unwrap();
            assert_eq!(serde_json::to_value(&w).unwrap(), serde_json::json!(text));
            assert_eq!(w.to_hex(), text);
            assert_eq!(w.decode().is_ok(), text != "zz", "{text}");
        }
        assert_eq!(WireRuling::encode(&sr).to_hex(), lower);
    }
    use ed25519_dalek::{Signer, SigningKey};

    const HASH: [u8; 32] = [0xab; 32];

    fn binding() -> Binding<'static> {
        Binding {
            motion_id: "m1",
            debate_id: "d1",
            kind: MotionKind::Merge,
            state_hash: &HASH,
        }
    }

    #[test]
    fn sign_check_and_tamper() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let w = sign(&key, &binding(), Decision::Yes, 0.9, None);
        let sr = w.decode().unwrap();
        let c = check(
            &sr,
            "a1",
            &key.verifying_key(),
            &binding(),
            &VerifiedMemo::default(),
        )
        .unwrap();
        assert_eq!(c.revealed.unwrap().probability_milli, 900);
        // Flipping the decision after signing breaks the signature.
        let mut flipped = sr.clone();
        flipped.ruling.as_mut().unwrap().decision = pb::Decision::Reject as i32;
        assert!(matches!(
            check(
                &flipped,
                "a1",
                &key.verifying_key(),
                &binding(),
                &VerifiedMemo::default()
            ),
            Err(RulingError::Verify { .. })
        ));
        // Another arbiter's key: refused.
        let other = SigningKey::from_bytes(&[8; 32]);
        assert!(
            check(
                &sr,
                "a1",
                &other.verifying_key(),
                &binding(),
                &VerifiedMemo::default()
            )
            .is_err()
        );
        // Replayed onto another motion: refused by the binding.
        let mut b = binding();
        b.motion_id = "m2";
        assert!(matches!(
            check(
                &sr,
                "a1",
                &key.verifying_key(),
                &b,
                &VerifiedMemo::default()
            ),
            Err(RulingError::Binding { .. })
        ));
        assert!(matches!(
            WireRuling::from_hex("zz").decode(),
            Err(RulingError::Malformed { .. })
        ));
        assert!(intake_check(std::slice::from_ref(&w), &[], &VerifiedMemo::default()).is_ok());
        assert!(
            intake_check(
                &[WireRuling::encode(&flipped)],
                &[],
                &VerifiedMemo::default()
            )
            .is_err()
        );
    }

    fn reveal_hex(
        key: &SigningKey,
        tweak: impl FnOnce(&mut pb::Reveal),
    ) -> (RevealBytes, pb::SignedRuling) {
        let sr = sign(key, &binding(), Decision::Yes, 0.8, None)
            .decode()
            .unwrap();
        let salt = [5u8; 32];
        let commitment = panel_proto::commit_reveal::commit(key, &sr, &salt, 10).unwrap();
        let mut reveal = pb::Reveal {
            signed_ruling: Some(sr.clone()),
            salt: salt.to_vec(),
            commitment: Some(commitment),
        };
        tweak(&mut reveal);
        (RevealBytes::new(reveal.encode_to_vec()), sr)
    }

    #[test]
    fn intake_verifies_commitments_and_logs_them_without_their_signature() {
        let key = SigningKey::from_bytes(&[9; 32]);
        let (good, sr) = reveal_hex(&key, |_| {});
        let logged =
            intake_check(&[], std::slice::from_ref(&good), &VerifiedMemo::default()).unwrap();
        let back = pb::Reveal::decode(&*logged[0].bytes().unwrap()).unwrap();
        let c = back.commitment.unwrap();
        assert!(
            c.signature.is_empty(),
            "the log form carries no commitment signature"
        );
        assert_eq!(
            back.signed_ruling.unwrap(),
            sr,
            "the signed ruling is untouched"
        );
        panel_proto::commit_reveal::check_opens(&c, &sr, &back.salt, &VerifiedMemo::default())
            .unwrap();

        // A commitment signed by another key, an unsigned one, a salt that does not open
        // it and a tampered ruling are each refused, naming the reveal.
        let other = SigningKey::from_bytes(&[10; 32]);
        type Tweak<'a> = Box<dyn FnOnce(&mut pb::Reveal) + 'a>;
        let cases: Vec<(&str, Tweak)> = vec![
            (
                "signature",
                Box::new(|r: &mut pb::Reveal| {
                    let c = r.commitment.as_mut().unwrap();
                    c.signature = other
                        .sign(&panel_proto::commit_reveal::commitment_canonical_bytes(c).unwrap())
                        .to_bytes()
                        .to_vec();
                }),
            ),
            (
                "unsigned",
                Box::new(|r: &mut pb::Reveal| r.commitment.as_mut().unwrap().signature.clear()),
            ),
            ("salt", Box::new(|r: &mut pb::Reveal| r.salt = vec![6; 32])),
            (
                "tampered",
                Box::new(|r: &mut pb::Reveal| {
                    r.signed_ruling
                        .as_mut()
                        .unwrap()
                        .ruling
                        .as_mut()
                        .unwrap()
                        .probability = 0.1
                }),
            ),
        ];
        for (what, tweak) in cases {
            let (bad, _) = reveal_hex(&key, tweak);
            let err =
                intake_check(&[], &[good.clone(), bad], &VerifiedMemo::default()).unwrap_err();
            assert!(
                matches!(err, IntakeError::Reveal { index: 1, .. }),
                "{what}: {err}"
            );
            assert!(err.to_string().starts_with("reveal 1:"), "{what}: {err}");
        }
    }

    #[test]
    fn weak_and_malformed_keys_refused() {
        let mut weak = [0u8; 32];
        weak[0] = 1;
        assert!(parse_public_key("x", &hex::encode(weak).into()).is_err());
        assert!(parse_public_key("x", &"abcd".into()).is_err());
        let good = SigningKey::from_bytes(&[3; 32]).verifying_key();
        assert!(parse_public_key("x", &hex::encode(good.to_bytes()).into()).is_ok());
    }
}
