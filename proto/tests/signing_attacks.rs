//! Attacks on signed rulings and key documents: forged and misattributed signatures,
//! every signed field tampered, malformed values, weak keys, encoding games.

mod common;

use common::*;
use panel_proto::keys::{self, KeyError};
use panel_proto::pb::{Decision, MotionKind, Quantile, RetrievalReceipt, Ruling, SignedRuling};
use panel_proto::ruling_check::{self, BindingError, RulingError};
use panel_proto::signing::{self, VerifiedMemo, VerifyError};
use panel_proto::{sign_ruling, verify_ruling, verify_rulings_batch};
use prost::Message;

fn signed(r: Ruling) -> SignedRuling {
    sign_ruling(&key(1), r).expect("well-formed ruling signs")
}

#[test]
fn honest_rulings_verify() {
    let memo = VerifiedMemo::default();
    for r in [merge_ruling(), verify_tier_ruling(), exam_quantile_ruling()] {
        let sr = signed(r);
        let got = verify_ruling(&sr, &memo).expect("honest ruling verifies");
        assert_eq!(got.arbiter_key, key(1).verifying_key().to_bytes().to_vec());
    }
}

#[test]
fn forged_signature_is_refused() {
    let memo = VerifiedMemo::default();
    let mut sr = signed(merge_ruling());
    sr.signature[10] ^= 0x01;
    assert!(matches!(
        verify_ruling(&sr, &memo),
        Err(VerifyError::BadSignature { .. })
    ));
    // A signature made by someone else entirely.
    sr.signature = sign_ruling(&key(2), merge_ruling()).unwrap().signature;
    assert!(matches!(
        verify_ruling(&sr, &memo),
        Err(VerifyError::BadSignature { .. })
    ));
}

#[test]
fn ruling_claimed_under_another_key_is_refused() {
    let memo = VerifiedMemo::default();
    // Arbiter 1 signs; the attacker relabels the ruling as arbiter 2's.
    let mut sr = signed(merge_ruling());
    sr.ruling.as_mut().unwrap().arbiter_key = key(2).verifying_key().to_bytes().to_vec();
    assert!(matches!(
        verify_ruling(&sr, &memo),
        Err(VerifyError::BadSignature { .. })
    ));
    // Checked against a registry key that is not the signer's.
    let sr = signed(merge_ruling());
    let err = signing::verify_ruling_with_key(&sr, &key(2).verifying_key(), &memo).unwrap_err();
    assert!(matches!(err, VerifyError::WrongArbiter { .. }), "{err}");
    assert!(signing::verify_ruling_with_key(&sr, &key(1).verifying_key(), &memo).is_ok());
}

/// Each mutation changes one signed field; every one must break the signature.
#[test]
fn every_signed_field_tampered_is_refused() {
    let memo = VerifiedMemo::default();
    type Tamper = (&'static str, fn(&mut Ruling));
    let tampers: &[Tamper] = &[
        ("motion_id", |r| r.motion_id.push('x')),
        ("debate_id", |r| r.debate_id = "d-2".into()),
        ("kind", |r| r.kind = MotionKind::Reject as i32),
        ("state_hash", |r| r.state_hash[31] ^= 1),
        ("decision", |r| r.decision = Decision::Reject as i32),
        ("probability", |r| r.probability = 0.81),
        ("probability ulp", |r| {
            r.probability = f64::from_bits(r.probability.to_bits() + 1)
        }),
        ("relevance", |r| r.relevance = Some(3)),
        ("tier", |r| r.tier = Some(3)),
        ("quantile value", |r| r.quantiles[1].value += 1.0),
        ("quantile level", |r| r.quantiles[0].level = 0.1),
        ("quantile removed", |r| {
            r.quantiles.pop();
        }),
        ("receipt url", |r| r.receipt.as_mut().unwrap().url.push('?')),
        ("receipt sha", |r| {
            r.receipt.as_mut().unwrap().sha256[0] ^= 1
        }),
        ("receipt time", |r| {
            r.receipt.as_mut().unwrap().fetched_at_unix_ms += 1
        }),
        ("receipt removed", |r| r.receipt = None),
        ("rationale", |r| r.rationale.push('.')),
        ("issued_at", |r| r.issued_at_unix_ms += 1),
    ];
    // A ruling that carries every optional field, so every tamper applies.
    let mut full = verify_tier_ruling();
    full.kind = MotionKind::Exam as i32;
    full.relevance = Some(2);
    full.quantiles = exam_quantile_ruling().quantiles;
    let base = signed(full);
    verify_ruling(&base, &memo).expect("base verifies");
    for (name, tamper) in tampers {
        let mut sr = base.clone();
        tamper(sr.ruling.as_mut().unwrap());
        match verify_ruling(&sr, &memo) {
            Err(VerifyError::BadSignature { .. }) => {}
            other => panic!("tampered {name}: expected BadSignature, got {other:?}"),
        }
    }
}

#[test]
fn replay_onto_another_motion_or_state_is_refused_by_binding() {
    let memo = VerifiedMemo::default();
    let sr = signed(merge_ruling());
    let r = verify_ruling(&sr, &memo).unwrap();
    let motion = motion_for(r, &[]);
    ruling_check::check_binding(r, &motion).expect("binds to its own motion");

    let mut other_state = motion.clone();
    other_state.state_hash = state_hash(99);
    assert!(matches!(
        ruling_check::check_binding(r, &other_state),
        Err(BindingError::StateHash { .. })
    ));
    let mut other_motion = motion.clone();
    other_motion.motion_id = "m-2".into();
    assert!(matches!(
        ruling_check::check_binding(r, &other_motion),
        Err(BindingError::MotionId { .. })
    ));
    let mut other_debate = motion.clone();
    other_debate.debate_id = "d-9".into();
    assert!(matches!(
        ruling_check::check_binding(r, &other_debate),
        Err(BindingError::DebateId { .. })
    ));
    let mut other_kind = motion;
    other_kind.kind = MotionKind::Reject as i32;
    assert!(matches!(
        ruling_check::check_binding(r, &other_kind),
        Err(BindingError::Kind { .. })
    ));
}

#[test]
fn malformed_rulings_are_refused_before_signing_and_verifying() {
    let memo = VerifiedMemo::default();
    type Break = (&'static str, fn(&mut Ruling), fn(&RulingError) -> bool);
    let cases: &[Break] = &[
        (
            "probability NaN",
            |r| r.probability = f64::NAN,
            |e| matches!(e, RulingError::ProbabilityOutOfRange(_)),
        ),
        (
            "probability 1.5",
            |r| r.probability = 1.5,
            |e| matches!(e, RulingError::ProbabilityOutOfRange(_)),
        ),
        (
            "short state hash",
            |r| r.state_hash.truncate(31),
            |e| matches!(e, RulingError::StateHashLength(31)),
        ),
        (
            "unknown kind",
            |r| r.kind = 42,
            |e| matches!(e, RulingError::UnknownKind(42)),
        ),
        (
            "unspecified decision",
            |r| r.decision = 0,
            |e| matches!(e, RulingError::DecisionUnspecified),
        ),
        (
            "UPHOLD on a merge",
            |r| r.decision = Decision::Uphold as i32,
            |e| matches!(e, RulingError::DecisionDoesNotFitKind { .. }),
        ),
        (
            "relevance 5",
            |r| r.relevance = Some(5),
            |e| matches!(e, RulingError::RelevanceOutOfRange(5)),
        ),
        (
            "tier 0",
            |r| r.tier = Some(0),
            |e| matches!(e, RulingError::TierOutOfRange(0)),
        ),
        (
            "empty motion id",
            |r| r.motion_id.clear(),
            |e| matches!(e, RulingError::EmptyId { .. }),
        ),
        (
            "oversized rationale",
            |r| r.rationale = "x".repeat(20_000),
            |e| matches!(e, RulingError::TooLong { .. }),
        ),
        (
            "decreasing quantiles",
            |r| {
                r.quantiles = vec![
                    Quantile {
                        level: 0.5,
                        value: 2.0,
                    },
                    Quantile {
                        level: 0.95,
                        value: 1.0,
                    },
                ]
            },
            |e| matches!(e, RulingError::BadQuantile { .. }),
        ),
        (
            "empty receipt",
            |r| r.receipt = Some(RetrievalReceipt::default()),
            |e| matches!(e, RulingError::BadReceipt(_)),
        ),
    ];
    for (name, breaker, expect) in cases {
        let mut r = merge_ruling();
        breaker(&mut r);
        let err = sign_ruling(&key(1), r.clone()).expect_err(name);
        assert!(expect(&err), "{name}: signing gave {err}");
        // The same field broken after signing is refused at verification.
        let mut sr = signed(merge_ruling());
        breaker(sr.ruling.as_mut().unwrap());
        match verify_ruling(&sr, &memo) {
            Err(VerifyError::Malformed(e)) => assert!(expect(&e), "{name}: verify gave {e}"),
            other => panic!("{name}: expected Malformed, got {other:?}"),
        }
    }
}

#[test]
fn envelope_framing_errors_are_named() {
    let memo = VerifiedMemo::default();
    let mut sr = signed(merge_ruling());
    sr.envelope_version = 3;
    assert_eq!(
        verify_ruling(&sr, &memo),
        Err(VerifyError::UnsupportedEnvelope(3))
    );
    // A v1 ruling relabelled as v2 has no motion digest to bind.
    let mut sr = signed(merge_ruling());
    sr.envelope_version = 2;
    assert_eq!(
        verify_ruling(&sr, &memo),
        Err(VerifyError::Malformed(
            panel_proto::RulingError::MotionDigestLength(0)
        ))
    );
    // A v2 ruling relabelled as v1 (or v1 carrying an unsigned digest) is refused too.
    let mut r = merge_ruling();
    r.motion_digest = vec![9; 32];
    let mut sr = signed(r);
    assert_eq!(sr.envelope_version, 2);
    assert!(verify_ruling(&sr, &memo).is_ok());
    sr.envelope_version = 1;
    assert_eq!(
        verify_ruling(&sr, &memo),
        Err(VerifyError::Malformed(
            panel_proto::RulingError::MotionDigestInV1
        ))
    );
    let mut sr = signed(merge_ruling());
    sr.signature.pop();
    assert_eq!(
        verify_ruling(&sr, &memo),
        Err(VerifyError::Key(KeyError::SignatureLength(63)))
    );
    let mut sr = signed(merge_ruling());
    sr.ruling = None;
    assert_eq!(verify_ruling(&sr, &memo), Err(VerifyError::MissingRuling));
}

#[test]
fn weak_and_invalid_keys_are_refused() {
    let memo = VerifiedMemo::default();
    // The identity point (small order): y = 1.
    let mut identity = [0u8; 32];
    identity[0] = 1;
    assert!(matches!(
        keys::parse_public_key(&identity),
        Err(KeyError::Weak(_))
    ));
    assert!(matches!(
        keys::parse_public_key(&[0u8; 31]),
        Err(KeyError::Length(31))
    ));
    // A ruling claiming a weak key is refused as such, whatever the signature.
    let mut sr = signed(merge_ruling());
    sr.ruling.as_mut().unwrap().arbiter_key = identity.to_vec();
    assert!(matches!(
        verify_ruling(&sr, &memo),
        Err(VerifyError::Key(KeyError::Weak(_)))
    ));
}

#[test]
fn signature_does_not_depend_on_protobuf_encoding() {
    let memo = VerifiedMemo::default();
    let sr = signed(verify_tier_ruling());
    let mut wire = sr.encode_to_vec();
    // Unknown field 99 (varint 7) appended inside the top-level message.
    wire.extend_from_slice(&[0x98, 0x06, 0x07]);
    let decoded = SignedRuling::decode(wire.as_slice()).expect("unknown fields are skipped");
    verify_ruling(&decoded, &memo).expect("still verifies");
    // Explicit default-valued optional field (relevance absent vs present) is distinct.
    let mut with_zero = decoded.clone();
    with_zero.ruling.as_mut().unwrap().relevance = Some(0);
    assert!(matches!(
        verify_ruling(&with_zero, &memo),
        Err(VerifyError::Malformed(RulingError::RelevanceOutOfRange(0)))
    ));
    // -0.0 and +0.0 have one canonical form.
    let mut a = merge_ruling();
    a.probability = 0.0;
    a.decision = Decision::Reject as i32;
    let mut b = a.clone();
    b.probability = -0.0;
    a.arbiter_key = vec![3; 32];
    b.arbiter_key = vec![3; 32];
    assert_eq!(
        signing::ruling_canonical_bytes(&a).unwrap(),
        signing::ruling_canonical_bytes(&b).unwrap()
    );
}

#[test]
fn canonical_bytes_start_with_the_versioned_domain_tag() {
    let mut r = merge_ruling();
    r.arbiter_key = vec![3; 32];
    let bytes = signing::ruling_canonical_bytes(&r).unwrap();
    assert!(bytes.starts_with(b"crucible-panel/ruling/v1\0"));
}

#[test]
fn batch_intake_isolates_the_bad_item() {
    let memo = VerifiedMemo::default();
    let mut items: Vec<SignedRuling> = (0..8u8)
        .map(|i| {
            let mut r = merge_ruling();
            r.motion_id = format!("m-{i}");
            sign_ruling(&key(i + 1), r).unwrap()
        })
        .collect();
    assert!(
        verify_rulings_batch(&items, &memo)
            .iter()
            .all(|r| r.is_ok())
    );
    items[3].ruling.as_mut().unwrap().probability = 0.1;
    items[5].signature[0] ^= 0x80;
    items[6].envelope_version = 9;
    let results = verify_rulings_batch(&items, &memo);
    for (i, res) in results.iter().enumerate() {
        match i {
            3 | 5 => assert!(
                matches!(res, Err(VerifyError::BadSignature { .. })),
                "item {i}: {res:?}"
            ),
            6 => assert_eq!(res, &Err(VerifyError::UnsupportedEnvelope(9))),
            _ => assert!(res.is_ok(), "item {i}: {res:?}"),
        }
    }
}

#[test]
fn batch_with_cached_keys_names_the_wrong_arbiter() {
    let memo = VerifiedMemo::default();
    let items: Vec<SignedRuling> = (0..4u8)
        .map(|i| sign_ruling(&key(i + 1), merge_ruling()).unwrap())
        .collect();
    let mut keys: Vec<_> = (0..4u8).map(|i| key(i + 1).verifying_key()).collect();
    assert!(
        signing::verify_rulings_batch_with_keys(&items, &keys, &memo)
            .iter()
            .all(|r| r.is_ok())
    );
    keys[2] = key(9).verifying_key();
    let mut tampered = items.clone();
    tampered[0].ruling.as_mut().unwrap().rationale.push('x');
    let res = signing::verify_rulings_batch_with_keys(&tampered, &keys, &memo);
    assert!(matches!(res[0], Err(VerifyError::BadSignature { .. })));
    assert!(res[1].is_ok() && res[3].is_ok());
    assert!(matches!(res[2], Err(VerifyError::WrongArbiter { .. })));
}

#[test]
fn key_rotation_and_revocation_documents() {
    let (old, new, other) = (key(1), key(2), key(3));
    let doc = keys::sign_rotation(&old, &new, 1_000, "scheduled rotation").unwrap();
    let (o, n) = keys::verify_rotation(&doc).unwrap();
    assert_eq!((o, n), (old.verifying_key(), new.verifying_key()));

    let mut tampered = doc.clone();
    tampered.reason.push('!');
    assert!(matches!(
        keys::verify_rotation(&tampered),
        Err(KeyError::BadSignature {
            which: "old key's",
            ..
        })
    ));
    // Rotating onto a key the rotator does not hold: new-key signature by someone else.
    let mut hijack = doc.clone();
    hijack.new_key = other.verifying_key().to_bytes().to_vec();
    let bytes = keys::rotation_canonical_bytes(&hijack).unwrap();
    use ed25519_dalek::Signer;
    hijack.old_key_signature = old.sign(&bytes).to_bytes().to_vec();
    assert!(matches!(
        keys::verify_rotation(&hijack),
        Err(KeyError::BadSignature {
            which: "new key's",
            ..
        })
    ));
    assert_eq!(
        keys::sign_rotation(&old, &old, 1_000, "").unwrap_err(),
        KeyError::RotationToSelf
    );

    let rev = keys::sign_revocation(&old, 2_000, 1_500, "laptop stolen").unwrap();
    assert_eq!(keys::verify_revocation(&rev).unwrap(), old.verifying_key());
    let mut moved = rev.clone();
    moved.effective_from_unix_ms = 1_900;
    assert!(matches!(
        keys::verify_revocation(&moved),
        Err(KeyError::BadSignature { .. })
    ));
    // A revocation of key 1 signed by key 2 is refused.
    let mut forged = rev;
    forged.signature = keys::sign_revocation(&new, 2_000, 1_500, "laptop stolen")
        .unwrap()
        .signature;
    assert!(keys::verify_revocation(&forged).is_err());
}

#[test]
fn fingerprints_are_stable_and_grouped() {
    let fp = keys::fingerprint(&key(1).verifying_key());
    assert_eq!(fp.len(), 8 * 4 + 7);
    assert_eq!(fp.matches(':').count(), 7);
    assert_ne!(fp, keys::fingerprint(&key(2).verifying_key()));
}

proptest::proptest! {
    /// Any well-formed ruling survives a protobuf round trip with identical canonical
    /// bytes and a valid signature.
    #[test]
    fn protobuf_round_trip_keeps_signature(
        motion in "[a-z0-9-]{1,40}",
        debate in "[a-z0-9-]{1,40}",
        p in 0.0f64..=1.0,
        rationale in ".{0,200}",
        issued in 0i64..4_000_000_000_000,
        accept in proptest::bool::ANY,
    ) {
        let memo = VerifiedMemo::default();
        let mut r = merge_ruling();
        r.motion_id = motion;
        r.debate_id = debate;
        r.probability = p;
        r.rationale = rationale;
        r.issued_at_unix_ms = issued;
        r.decision = if accept { Decision::Accept as i32 } else { Decision::Reject as i32 };
        let sr = signed(r);
        let back = SignedRuling::decode(sr.encode_to_vec().as_slice()).unwrap();
        proptest::prop_assert!(verify_ruling(&back, &memo).is_ok());
        proptest::prop_assert_eq!(
            signing::ruling_canonical_bytes(back.ruling.as_ref().unwrap()).unwrap(),
            signing::ruling_canonical_bytes(sr.ruling.as_ref().unwrap()).unwrap()
        );
    }
}

proptest::proptest! {
    /// Arbitrary bytes on the wire never panic the decoder or the verifier, and never
    /// verify.
    #[test]
    fn random_bytes_never_verify(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
        let memo = VerifiedMemo::default();
        if let Ok(sr) = SignedRuling::decode(bytes.as_slice()) {
            proptest::prop_assert!(verify_ruling(&sr, &memo).is_err());
            let _ = verify_rulings_batch(std::slice::from_ref(&sr), &memo);
        }
    }

    /// Flipping any single bit of an honest signed ruling's encoding yields a decode
    /// error, the same message, or a message that fails verification: every ruling field
    /// is signed and the envelope version is checked.
    #[test]
    fn any_bit_flip_is_refused(pos in 0usize..10_000, bit in 0u8..8) {
        let memo = VerifiedMemo::default();
        let sr = signed(verify_tier_ruling());
        let mut wire = sr.encode_to_vec();
        let i = pos % wire.len();
        wire[i] ^= 1 << bit;
        if let Ok(back) = SignedRuling::decode(wire.as_slice())
            && back != sr
        {
            proptest::prop_assert!(verify_ruling(&back, &memo).is_err(), "flip at byte {} bit {} verified", i, bit);
        }
    }
}

/// The memo of verified signatures remembers exact (key, signature, message) triples only:
/// once a ruling verified, the same signature on altered bytes, under another key, or a
/// flipped signature bit is still refused, every time.
#[test]
fn remembered_success_does_not_cover_altered_rulings() {
    let memo = VerifiedMemo::default();
    let sr = signed(merge_ruling());
    for _ in 0..2 {
        verify_ruling(&sr, &memo).expect("honest ruling verifies, first and second time");
    }
    let mut tampered = sr.clone();
    tampered.ruling.as_mut().unwrap().probability = 0.01;
    let mut flipped = sr.clone();
    flipped.signature[0] ^= 0x80;
    let other_key = key(3).verifying_key();
    for _ in 0..2 {
        assert!(matches!(
            verify_ruling(&tampered, &memo),
            Err(VerifyError::BadSignature { .. })
        ));
        assert!(verify_ruling(&flipped, &memo).is_err());
        assert!(matches!(
            signing::verify_ruling_with_key(&sr, &other_key, &memo),
            Err(VerifyError::WrongArbiter { .. })
        ));
        let bytes = signing::ruling_canonical_bytes(sr.ruling.as_ref().unwrap()).unwrap();
        let sig = keys::parse_signature(&sr.signature).unwrap();
        assert!(!memo.verify_strict(&other_key, &bytes, &sig));
        assert!(memo.verify_strict(&key(1).verifying_key(), &bytes, &sig));
    }
    assert_eq!(memo.len(), 1, "only the honest triple is remembered");
}

/// A signature that fails is never remembered, however often it is presented and through
/// whichever entry point (single, batch fallback, raw), so it fails every time.
#[test]
fn a_failure_is_never_remembered() {
    let memo = VerifiedMemo::default();
    let sr = signed(merge_ruling());
    let mut tampered = sr.clone();
    tampered.ruling.as_mut().unwrap().probability = 0.01;
    let mut flipped = sr.clone();
    flipped.signature[0] ^= 0x80;
    let bytes = signing::ruling_canonical_bytes(sr.ruling.as_ref().unwrap()).unwrap();
    let sig = keys::parse_signature(&sr.signature).unwrap();
    for _ in 0..3 {
        assert!(verify_ruling(&tampered, &memo).is_err());
        assert!(verify_ruling(&flipped, &memo).is_err());
        assert!(!memo.verify_strict(&key(3).verifying_key(), &bytes, &sig));
        let results = verify_rulings_batch(&[tampered.clone(), flipped.clone()], &memo);
        assert!(results.iter().all(|r| r.is_err()), "{results:?}");
        assert!(memo.is_empty(), "a failure was remembered");
    }
    // A batch that fails re-checks each item strictly: the honest one is remembered, the
    // bad one is not.
    let results = verify_rulings_batch(&[sr.clone(), tampered.clone()], &memo);
    assert!(results[0].is_ok() && results[1].is_err(), "{results:?}");
    assert_eq!(memo.len(), 1);
    assert!(verify_ruling(&tampered, &memo).is_err());
    assert_eq!(memo.len(), 1);
}

/// Each memo remembers only its own successes: a ruling verified through one memo is
/// checked in full through another (which then remembers it too), and neither is global.
#[test]
fn two_memos_are_independent() {
    let (a, b) = (VerifiedMemo::default(), VerifiedMemo::default());
    let sr = signed(merge_ruling());
    verify_ruling(&sr, &a).unwrap();
    verify_ruling(&sr, &a).unwrap();
    assert_eq!(
        (a.len(), b.len()),
        (1, 0),
        "a success in one memo reached the other"
    );
    let other = signed(verify_tier_ruling());
    verify_ruling(&other, &b).unwrap();
    assert_eq!((a.len(), b.len()), (1, 1));
    verify_ruling(&sr, &b).unwrap();
    assert_eq!(
        (a.len(), b.len()),
        (1, 2),
        "b checked and remembered sr itself"
    );
    // A fresh memo starts empty whatever others hold, and one can be shared by threads.
    assert!(VerifiedMemo::default().is_empty());
    fn shareable<T: Send + Sync>(_: &T) {}
    shareable(&a);
}

fn provenance() -> panel_proto::pb::JudgeProvenance {
    panel_proto::pb::JudgeProvenance {
        judge_kind: "llm".into(),
        model: "qwen2.5-7b-instruct".into(),
        model_version: "qwen2.5-7b-instruct-q4_k_m system_fingerprint=b4321".into(),
        latency_ms: Some(1840),
        prompt_tokens: Some(912),
        completion_tokens: Some(77),
        requests: 2,
        reading: None,
    }
}

fn reading() -> panel_proto::pb::JudgeReading {
    panel_proto::pb::JudgeReading {
        method: "next-token".into(),
        prompt_sha256: vec![7; 32],
        orders: vec![
            panel_proto::pb::OrderReading {
                order: "as-given".into(),
                p_affirmative: 0.58,
                answer_mass: 0.97,
            },
            panel_proto::pb::OrderReading {
                order: "swapped".into(),
                p_affirmative: 0.66,
                answer_mass: 0.95,
            },
        ],
    }
}

/// A model judge's reading (method, prompt digest, both orders) is appended after the
/// provenance only when present, and every part of it is signed.
#[test]
fn judge_reading_is_signed_when_present_and_provenance_without_it_keeps_its_bytes() {
    let memo = VerifiedMemo::default();
    let mut plain = merge_ruling();
    plain.arbiter_key = key(1).verifying_key().to_bytes().to_vec();
    plain.motion_digest = vec![9; 32];
    plain.provenance = Some(provenance());
    let before = signing::ruling_canonical_bytes_v2(&plain).unwrap();
    let mut with = plain.clone();
    with.provenance.as_mut().unwrap().reading = Some(reading());
    let after = signing::ruling_canonical_bytes_v2(&with).unwrap();
    assert_eq!(&after[..before.len()], before.as_slice());
    assert_eq!(after[before.len()], 1);
    let sr = signed(with);
    verify_ruling(&sr, &memo).expect("a ruling with a reading verifies");
    type Tamper = (&'static str, fn(&mut panel_proto::pb::JudgeReading));
    let tampers: [Tamper; 5] = [
        ("method", |r| r.method = "stated".into()),
        ("digest", |r| r.prompt_sha256[0] ^= 1),
        ("order", |r| r.orders.swap(0, 1)),
        ("p", |r| r.orders[1].p_affirmative = 0.67),
        ("dropped order", |r| {
            r.orders.pop();
        }),
    ];
    for (what, tamper) in tampers {
        let mut t = sr.clone();
        tamper(
            t.ruling
                .as_mut()
                .unwrap()
                .provenance
                .as_mut()
                .unwrap()
                .reading
                .as_mut()
                .unwrap(),
        );
        assert!(
            matches!(
                verify_ruling(&t, &memo),
                Err(VerifyError::BadSignature { .. })
            ),
            "{what}: still verifies"
        );
    }
}

#[test]
fn malformed_readings_are_refused_with_the_field() {
    type Break = fn(&mut panel_proto::pb::JudgeReading);
    let breaks: [(&str, Break); 5] = [
        ("method", |r| r.method = "vibes".into()),
        ("prompt_sha256", |r| r.prompt_sha256.truncate(31)),
        ("orders", |r| r.orders.clear()),
        ("order", |r| r.orders[1].order = "as-given".into()),
        ("p_affirmative", |r| r.orders[0].p_affirmative = f64::NAN),
    ];
    for (field, br) in breaks {
        let mut r = merge_ruling();
        let mut rd = reading();
        br(&mut rd);
        r.provenance = Some(panel_proto::pb::JudgeProvenance {
            reading: Some(rd),
            ..provenance()
        });
        let e = sign_ruling(&key(1), r).unwrap_err();
        assert!(matches!(e, RulingError::BadProvenance(_)), "{field}: {e}");
        assert!(e.to_string().contains(field), "{field}: {e}");
    }
}

/// Provenance is appended to the signed layout only when present: a ruling without it has
/// the bytes it always had (the test vectors pin those), one with it has more bytes, and
/// every provenance field is signed, in envelope v1 and v2 alike.
#[test]
fn judge_provenance_is_signed_when_present_and_absent_bytes_are_unchanged() {
    let memo = VerifiedMemo::default();
    for base in [merge_ruling(), verify_tier_ruling(), exam_quantile_ruling()] {
        let mut plain = base.clone();
        plain.arbiter_key = key(1).verifying_key().to_bytes().to_vec();
        let before = signing::ruling_canonical_bytes(&plain).unwrap();
        let mut with = plain.clone();
        with.provenance = Some(provenance());
        let after = signing::ruling_canonical_bytes(&with).unwrap();
        assert_eq!(&after[..before.len()], before.as_slice());
        assert_eq!(after[before.len()], 1, "presence byte after issued_at");
        let mut v2 = with.clone();
        v2.motion_digest = vec![9; 32];
        let mut v2_plain = plain.clone();
        v2_plain.motion_digest = vec![9; 32];
        let b2 = signing::ruling_canonical_bytes_v2(&v2_plain).unwrap();
        let a2 = signing::ruling_canonical_bytes_v2(&v2).unwrap();
        assert_eq!(&a2[..b2.len()], b2.as_slice());

        let sr = signed(v2);
        assert_eq!(sr.envelope_version, 2);
        verify_ruling(&sr, &memo).expect("a ruling with provenance verifies");
        type Tamper = (&'static str, fn(&mut panel_proto::pb::JudgeProvenance));
        let tampers: [Tamper; 7] = [
            ("kind", |p| p.judge_kind = "scripted".into()),
            ("model", |p| p.model.push('x')),
            ("version", |p| p.model_version.clear()),
            ("latency", |p| p.latency_ms = Some(1)),
            ("prompt", |p| p.prompt_tokens = None),
            ("completion", |p| p.completion_tokens = Some(78)),
            ("requests", |p| p.requests = 1),
        ];
        for (what, tamper) in tampers {
            let mut t = sr.clone();
            tamper(t.ruling.as_mut().unwrap().provenance.as_mut().unwrap());
            assert!(
                matches!(
                    verify_ruling(&t, &memo),
                    Err(VerifyError::BadSignature { .. })
                ),
                "{what}: still verifies"
            );
        }
        // Stripping the provenance (an old reader re-encoding without it) breaks it too.
        let mut stripped = sr.clone();
        stripped.ruling.as_mut().unwrap().provenance = None;
        assert!(verify_ruling(&stripped, &memo).is_err());
        // And it survives the protobuf round trip that the record uses.
        let back = SignedRuling::decode(sr.encode_to_vec().as_slice()).unwrap();
        assert_eq!(back, sr);
        verify_ruling(&back, &memo).unwrap();
    }
}

#[test]
fn malformed_provenance_is_refused_with_the_field() {
    let mut r = merge_ruling();
    r.provenance = Some(panel_proto::pb::JudgeProvenance {
        judge_kind: String::new(),
        ..provenance()
    });
    let e = sign_ruling(&key(1), r.clone()).unwrap_err();
    assert!(matches!(e, RulingError::BadProvenance(_)), "{e}");
    r.provenance = Some(panel_proto::pb::JudgeProvenance {
        model: "m".repeat(ruling_check::MAX_MODEL_BYTES + 1),
        ..provenance()
    });
    let e = sign_ruling(&key(1), r).unwrap_err();
    assert!(e.to_string().contains("provenance.model"), "{e}");
}
