//! Signed motions: canonical bytes, digest, sign and strict verify (docs/WIRE.md, "Motion,
//! layout v1").
//!
//! A node judges whatever a motion shows it, so a motion must come from the coordinator and
//! reach the node unaltered: an unsigned motion let any caller pre-commit honest nodes on a
//! predicted motion id with altered content (docs/SECURITY.md "What each attacker can and cannot do"). The coordinator cluster
//! holds one ed25519 motion key; every motion it sends is signed over the canonical layout
//! below, nodes verify it against the keys they are configured with before judging, and a
//! ruling (envelope v2, [`crate::signing`]) binds the [`motion_digest`] of the motion it
//! answers.
//!
//! The layout covers every field of the motion except the signature itself, including the
//! signer key (so a signature cannot be re-attributed) and the simulation truth hint. It is
//! total: every protobuf `Motion` has canonical bytes, malformed values included, so the
//! signature is checked before any shape rule and a shape refusal never depends on which
//! key signed. Lengths are u32 big-endian (content text may exceed a u16), integers and
//! enums are written as their full-width big-endian values (an unknown enum value stays
//! distinguishable), `f64` as IEEE-754 bits with `-0.0` written as `+0.0`, and optionals
//! with a presence byte.

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::keys::{self, KeyError};
use crate::pb::{ContentProjection, ExamItem, ExpectedAnswer, Motion};
use crate::signing::VerifiedMemo;

/// Domain tag of motion canonical bytes, layout version 1.
pub const MOTION_TAG_V1: &[u8] = b"crucible-panel/motion/v1\0";
/// Domain tag of the motion digest preimage.
pub const MOTION_DIGEST_TAG_V1: &[u8] = b"crucible-panel/motion-digest/v1\0";

/// Why a motion's signature is not accepted. Each message names what is wrong and the fix.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum MotionSignatureError {
    #[error(
        "motion {motion_id:?} is unsigned: nodes judge only motions signed by a coordinator's \
         motion key (start every replica with `panel coordinator run --motion-key FILE`)"
    )]
    Unsigned { motion_id: String },
    #[error("motion {motion_id:?} names a signer key that is refused: {source}")]
    SignerKey {
        motion_id: String,
        #[source]
        source: KeyError,
    },
    #[error(
        "motion {motion_id:?} is signed by key {signer}, which this node is not configured to \
         trust; if that is your coordinator's motion key, add its hex public key to \
         `coordinator_keys` in node.toml"
    )]
    UnknownSigner { motion_id: String, signer: String },
    #[error(
        "motion {motion_id:?}: the signature is not 64 bytes of ed25519 ({source}); send the \
         motion exactly as the coordinator signed it"
    )]
    MalformedSignature {
        motion_id: String,
        #[source]
        source: KeyError,
    },
    #[error(
        "motion {motion_id:?}: the signature by {signer} does not verify (strict ed25519): the \
         motion was altered after signing (content, deadlines, panel or ids), or signed by \
         another key"
    )]
    BadSignature { motion_id: String, signer: String },
}

/// Length-prefixed (u32), big-endian writer of the motion layout.
struct MotionWriter {
    buf: Vec<u8>,
}

impl MotionWriter {
    /// Bytes with a u32 length. A motion is one gRPC message (at most a few MiB), so its
    /// fields are far below 4 GiB; the count saturates rather than wraps regardless.
    fn bytes(&mut self, b: &[u8]) {
        self.count(b.len());
        self.buf.extend_from_slice(b);
    }
    fn text(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
    fn count(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
    fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }
    fn f64(&mut self, v: f64) {
        let v = if v == 0.0 { 0.0 } else { v };
        self.buf.extend_from_slice(&v.to_bits().to_be_bytes());
    }
    fn present(&mut self, p: bool) {
        self.buf.push(u8::from(p));
    }
}

/// Canonical bytes of a motion, layout v1 (docs/WIRE.md): every field but `signature` and
/// the `seals`, which sign the digest of these bytes and the signature.
pub fn motion_canonical_bytes(m: &Motion) -> Vec<u8> {
    let mut w = MotionWriter {
        buf: Vec::with_capacity(512),
    };
    w.buf.extend_from_slice(MOTION_TAG_V1);
    w.text(&m.motion_id);
    w.text(&m.debate_id);
    w.i32(m.kind);
    w.bytes(&m.state_hash);
    w.present(m.projection.is_some());
    if let Some(p) = &m.projection {
        projection(&mut w, p);
    }
    w.i64(m.commit_deadline_unix_ms);
    w.i64(m.reveal_deadline_unix_ms);
    w.count(m.panel.len());
    for seat in &m.panel {
        w.bytes(&seat.public_key);
        w.text(&seat.endpoint);
    }
    w.bytes(&m.signer_key);
    w.buf
}

fn projection(w: &mut MotionWriter, p: &ContentProjection) {
    w.text(&p.question);
    w.count(p.items.len());
    for item in &p.items {
        w.text(&item.label);
        w.text(&item.text);
        w.i32(item.side);
        w.count(item.citations.len());
        for c in &item.citations {
            w.text(&c.source);
            w.text(&c.url);
            w.u32(c.claimed_tier);
            w.text(&c.quote);
        }
    }
    w.text(&p.resolution);
    w.i32(p.affirmative_favours);
    w.present(p.exam_item.is_some());
    if let Some(e) = &p.exam_item {
        exam_item(w, e);
    }
    w.present(p.expected.is_some());
    if let Some(e) = &p.expected {
        expected(w, e);
    }
    // Appended after layout v1's last field and written only when present, so every
    // motion signed before procedures existed keeps its canonical bytes (docs/WIRE.md).
    if let Some(q) = &p.procedure {
        w.present(true);
        w.text(&q.run_id);
        w.text(&q.key);
        w.u32(q.answer_shape);
        w.present(q.shuffle_items);
        w.i64(q.presentation_seed as i64);
        w.text(&q.expected_rationale);
    }
}

fn exam_item(w: &mut MotionWriter, e: &ExamItem) {
    w.text(&e.item_id);
    w.text(&e.question);
    w.i32(e.answer_kind);
    w.count(e.quantile_levels.len());
    for l in &e.quantile_levels {
        w.f64(*l);
    }
    w.text(&e.unit);
    w.present(e.seed);
}

fn expected(w: &mut MotionWriter, e: &ExpectedAnswer) {
    w.i32(e.decision);
    w.present(e.value.is_some());
    if let Some(v) = e.value {
        w.f64(v);
    }
    w.present(e.relevance.is_some());
    if let Some(v) = e.relevance {
        w.u32(v);
    }
    w.present(e.tier.is_some());
    if let Some(v) = e.tier {
        w.u32(v);
    }
}

/// The motion digest: SHA-256(MOTION_DIGEST_TAG_V1 || canonical bytes || signature). It
/// names one signed motion; a ruling of envelope v2 carries it, so the ruling says exactly
/// which content, deadlines and panel it answers.
pub fn motion_digest(m: &Motion) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(MOTION_DIGEST_TAG_V1);
    h.update(motion_canonical_bytes(m));
    h.update(&m.signature);
    h.finalize().into()
}

/// Signs a motion with the coordinator's motion key: sets `signer_key`, then `signature`.
/// Any later change to any field makes [`verify_motion`] refuse it.
pub fn sign_motion(key: &SigningKey, mut m: Motion) -> Motion {
    m.signer_key = key.verifying_key().to_bytes().to_vec();
    let bytes = motion_canonical_bytes(&m);
    m.signature = key.sign(&bytes).to_bytes().to_vec();
    m
}

/// Verifies a motion strictly under the key it names, which must be one of `trusted` (a
/// node's configured coordinator keys). Returns the motion digest. The success is
/// remembered in `memo`.
pub fn verify_motion(
    m: &Motion,
    trusted: &[VerifyingKey],
    memo: &VerifiedMemo,
) -> Result<[u8; 32], MotionSignatureError> {
    let signer = signer_of(m)?;
    if !trusted.iter().any(|k| k.as_bytes() == signer.as_bytes()) {
        return Err(MotionSignatureError::UnknownSigner {
            motion_id: m.motion_id.clone(),
            signer: keys::fingerprint(&signer),
        });
    }
    verify_under(m, &signer, memo)
}

/// Verifies a motion strictly under the key it names, whichever it is (the state machine,
/// which records the signer; a verifier compares it with its policy). Returns the digest.
pub fn verify_motion_self(
    m: &Motion,
    memo: &VerifiedMemo,
) -> Result<[u8; 32], MotionSignatureError> {
    let signer = signer_of(m)?;
    verify_under(m, &signer, memo)
}

fn signer_of(m: &Motion) -> Result<VerifyingKey, MotionSignatureError> {
    if m.signature.is_empty() && m.signer_key.is_empty() {
        return Err(MotionSignatureError::Unsigned {
            motion_id: m.motion_id.clone(),
        });
    }
    keys::parse_public_key(&m.signer_key).map_err(|source| MotionSignatureError::SignerKey {
        motion_id: m.motion_id.clone(),
        source,
    })
}

fn verify_under(
    m: &Motion,
    key: &VerifyingKey,
    memo: &VerifiedMemo,
) -> Result<[u8; 32], MotionSignatureError> {
    let sig = keys::parse_signature(&m.signature).map_err(|source| {
        MotionSignatureError::MalformedSignature {
            motion_id: m.motion_id.clone(),
            source,
        }
    })?;
    let bytes = motion_canonical_bytes(m);
    if !memo.verify_strict(key, &bytes, &sig) {
        return Err(MotionSignatureError::BadSignature {
            motion_id: m.motion_id.clone(),
            signer: keys::fingerprint(key),
        });
    }
    Ok(motion_digest(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::{Citation, PanelSeat, ProjectionItem};

    fn key(b: u8) -> SigningKey {
        SigningKey::from_bytes(&[b; 32])
    }

    fn motion() -> Motion {
        Motion {
            motion_id: "m-1".into(),
            debate_id: "d-1".into(),
            kind: 1,
            state_hash: vec![7; 32],
            projection: Some(ContentProjection {
                question: "Should v2 replace v1?".into(),
                items: vec![ProjectionItem {
                    label: "candidate".into(),
                    text: "Cites a T2 source.".into(),
                    side: 1,
                    citations: vec![Citation {
                        source: "Journal".into(),
                        url: "https://example.org/a".into(),
                        claimed_tier: 2,
                        quote: "q".into(),
                    }],
                }],
                resolution: "R".into(),
                affirmative_favours: 1,
                exam_item: Some(ExamItem {
                    item_id: "i".into(),
                    question: "q".into(),
                    answer_kind: 2,
                    quantile_levels: vec![0.05, 0.5, 0.95],
                    unit: "u".into(),
                    seed: true,
                }),
                expected: Some(ExpectedAnswer {
                    decision: 1,
                    value: Some(1.5),
                    relevance: Some(2),
                    tier: Some(3),
                }),
                procedure: None,
            }),
            commit_deadline_unix_ms: 1_000,
            reveal_deadline_unix_ms: 2_000,
            panel: vec![PanelSeat {
                public_key: key(9).verifying_key().to_bytes().to_vec(),
                endpoint: "http://127.0.0.1:7401".into(),
            }],
            signer_key: Vec::new(),
            signature: Vec::new(),
            seals: Vec::new(),
        }
    }

    type Tamper = (&'static str, fn(&mut Motion));

    /// Every field of the motion, altered one at a time after signing.
    fn tampers() -> Vec<Tamper> {
        fn p(m: &mut Motion) -> &mut ContentProjection {
            m.projection.as_mut().unwrap()
        }
        vec![
            ("motion_id", |m| m.motion_id.push('x')),
            ("debate_id", |m| m.debate_id.push('x')),
            ("kind", |m| m.kind = 2),
            ("state_hash", |m| m.state_hash[0] ^= 1),
            ("projection removed", |m| m.projection = None),
            ("question", |m| p(m).question.push('?')),
            ("item added", |m| p(m).items.push(ProjectionItem::default())),
            ("item label", |m| p(m).items[0].label = "incumbent".into()),
            ("item text", |m| p(m).items[0].text.push('!')),
            ("item side", |m| p(m).items[0].side = 2),
            ("citation source", |m| {
                p(m).items[0].citations[0].source.push('x')
            }),
            ("citation url", |m| p(m).items[0].citations[0].url.push('x')),
            ("citation tier", |m| {
                p(m).items[0].citations[0].claimed_tier = 1
            }),
            ("citation quote", |m| {
                p(m).items[0].citations[0].quote.push('x')
            }),
            ("resolution", |m| p(m).resolution.push('x')),
            ("affirmative_favours", |m| p(m).affirmative_favours = 2),
            ("exam item removed", |m| p(m).exam_item = None),
            ("exam item id", |m| {
                p(m).exam_item.as_mut().unwrap().item_id.push('x')
            }),
            ("exam question", |m| {
                p(m).exam_item.as_mut().unwrap().question.push('x')
            }),
            ("exam answer kind", |m| {
                p(m).exam_item.as_mut().unwrap().answer_kind = 1
            }),
            ("exam levels", |m| {
                p(m).exam_item.as_mut().unwrap().quantile_levels[1] = 0.6
            }),
            ("exam unit", |m| {
                p(m).exam_item.as_mut().unwrap().unit.push('x')
            }),
            ("exam seed", |m| {
                p(m).exam_item.as_mut().unwrap().seed = false
            }),
            ("expected removed", |m| p(m).expected = None),
            ("expected decision", |m| {
                p(m).expected.as_mut().unwrap().decision = 2
            }),
            ("expected value", |m| {
                p(m).expected.as_mut().unwrap().value = Some(2.5)
            }),
            ("expected relevance", |m| {
                p(m).expected.as_mut().unwrap().relevance = None
            }),
            ("expected tier", |m| {
                p(m).expected.as_mut().unwrap().tier = Some(4)
            }),
            ("commit deadline", |m| m.commit_deadline_unix_ms += 1),
            ("reveal deadline", |m| m.reveal_deadline_unix_ms += 1),
            ("seat added", |m| m.panel.push(PanelSeat::default())),
            ("seat key", |m| m.panel[0].public_key[0] ^= 1),
            ("seat endpoint", |m| {
                m.panel[0].endpoint = "http://10.0.0.66:7401".into()
            }),
        ]
    }

    #[test]
    fn a_signed_motion_verifies_and_names_its_digest() {
        let k = key(1);
        let m = sign_motion(&k, motion());
        let d = verify_motion(&m, &[k.verifying_key()], &VerifiedMemo::default()).unwrap();
        assert_eq!(d, motion_digest(&m));
        assert_eq!(verify_motion_self(&m, &VerifiedMemo::default()).unwrap(), d);
        assert!(motion_canonical_bytes(&m).starts_with(MOTION_TAG_V1));
    }

    #[test]
    fn seals_sign_the_digest_and_stay_outside_it() {
        // Seals are signatures over the digest (docs/WIRE.md "Motion seals"), added after
        // signing: they change neither the signed bytes nor the digest.
        let k = key(1);
        let m = sign_motion(&k, motion());
        let mut sealed = m.clone();
        sealed.seals.push("\u{2014} panel.test/log AAAA".into());
        assert_eq!(motion_digest(&sealed), motion_digest(&m));
        assert!(verify_motion(&sealed, &[k.verifying_key()], &VerifiedMemo::default()).is_ok());
    }

    #[test]
    fn tampering_with_any_field_breaks_the_signature_and_the_digest() {
        let k = key(1);
        let signed = sign_motion(&k, motion());
        let bytes = motion_canonical_bytes(&signed);
        let digest = motion_digest(&signed);
        for (what, tamper) in tampers() {
            let mut m = signed.clone();
            tamper(&mut m);
            assert_ne!(
                motion_canonical_bytes(&m),
                bytes,
                "{what}: same canonical bytes"
            );
            assert_ne!(motion_digest(&m), digest, "{what}: same digest");
            let err =
                verify_motion(&m, &[k.verifying_key()], &VerifiedMemo::default()).unwrap_err();
            assert!(
                matches!(err, MotionSignatureError::BadSignature { .. }),
                "{what}: {err}"
            );
        }
    }

    /// A procedure question is signed field by field, and adding one changes the bytes,
    /// while a motion without one keeps the bytes it had before procedures existed.
    #[test]
    fn every_procedure_field_is_signed() {
        use crate::pb::ProcedureQuestion;
        let k = key(1);
        let plain = motion_canonical_bytes(&motion());
        let mut with = motion();
        if let Some(p) = with.projection.as_mut() {
            p.procedure = Some(ProcedureQuestion {
                run_id: "run_1".into(),
                key: "crux/report".into(),
                answer_shape: 1,
                shuffle_items: true,
                presentation_seed: 42,
                expected_rationale: "{}".into(),
            });
        }
        assert_ne!(motion_canonical_bytes(&with), plain);
        let signed = sign_motion(&k, with);
        fn q(m: &mut Motion) -> &mut ProcedureQuestion {
            m.projection.as_mut().unwrap().procedure.as_mut().unwrap()
        }
        let tampers: Vec<Tamper> = vec![
            ("run", |m| q(m).run_id.push('x')),
            ("key", |m| q(m).key.push('x')),
            ("shape", |m| q(m).answer_shape = 0),
            ("shuffle", |m| q(m).shuffle_items = false),
            ("seed", |m| q(m).presentation_seed += 1),
            ("expected", |m| q(m).expected_rationale.push('x')),
            ("removed", |m| {
                m.projection.as_mut().unwrap().procedure = None
            }),
        ];
        for (what, tamper) in tampers {
            let mut m = signed.clone();
            tamper(&mut m);
            assert!(
                verify_motion(&m, &[k.verifying_key()], &VerifiedMemo::default()).is_err(),
                "{what}: still verifies"
            );
        }
    }

    #[test]
    fn unsigned_unknown_signer_and_bad_signatures_are_refused_with_the_fix() {
        let k = key(1);
        let err =
            verify_motion(&motion(), &[k.verifying_key()], &VerifiedMemo::default()).unwrap_err();
        assert!(err.to_string().contains("--motion-key"), "{err}");
        let other = sign_motion(&key(2), motion());
        let err =
            verify_motion(&other, &[k.verifying_key()], &VerifiedMemo::default()).unwrap_err();
        assert!(
            matches!(err, MotionSignatureError::UnknownSigner { .. })
                && err.to_string().contains("coordinator_keys"),
            "{err}"
        );
        // Re-attributing another key's signature to a trusted key fails too.
        let mut forged = other.clone();
        forged.signer_key = k.verifying_key().to_bytes().to_vec();
        assert!(matches!(
            verify_motion(&forged, &[k.verifying_key()], &VerifiedMemo::default()).unwrap_err(),
            MotionSignatureError::BadSignature { .. }
        ));
        let mut short = sign_motion(&k, motion());
        short.signature.truncate(10);
        assert!(matches!(
            verify_motion(&short, &[k.verifying_key()], &VerifiedMemo::default()).unwrap_err(),
            MotionSignatureError::MalformedSignature { .. }
        ));
        let mut weak = sign_motion(&k, motion());
        weak.signer_key = vec![0; 32];
        assert!(matches!(
            verify_motion(&weak, &[k.verifying_key()], &VerifiedMemo::default()).unwrap_err(),
            MotionSignatureError::SignerKey { .. }
        ));
    }

    #[test]
    fn lengths_keep_adjacent_fields_apart() {
        let mut a = motion();
        let mut b = motion();
        a.motion_id = "ab".into();
        a.debate_id = "c".into();
        b.motion_id = "a".into();
        b.debate_id = "bc".into();
        assert_ne!(motion_canonical_bytes(&a), motion_canonical_bytes(&b));
        let mut z = motion();
        z.projection
            .as_mut()
            .unwrap()
            .expected
            .as_mut()
            .unwrap()
            .value = Some(-0.0);
        let mut p = motion();
        p.projection
            .as_mut()
            .unwrap()
            .expected
            .as_mut()
            .unwrap()
            .value = Some(0.0);
        assert_eq!(motion_canonical_bytes(&z), motion_canonical_bytes(&p));
    }
}
