//! Published signing test vectors (`testvectors/signing-v1.json`).
//!
//! `vectors_file_matches_this_implementation` recomputes every vector from its inputs and
//! compares with the file; run it with `PANEL_WRITE_VECTORS=1` to (re)write the file.
//! `vectors_verify_from_hex_alone` checks the file the way another implementation would:
//! only from the hex strings, with strict ed25519.

mod common;

use common::*;
use panel_proto::commit_reveal;
use panel_proto::keys;
use panel_proto::pb::{Ruling, SignedRuling};
use panel_proto::signing;
use panel_proto::{SigningKey, VerifyingKey, sign_ruling};
use prost::Message;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testvectors/signing-v1.json"
);

fn seed(start: u8) -> [u8; 32] {
    std::array::from_fn(|i| start + i as u8)
}

fn ruling_json(r: &Ruling) -> Value {
    json!({
        "motion_id": r.motion_id,
        "debate_id": r.debate_id,
        "kind": r.kind,
        "state_hash_hex": hex::encode(&r.state_hash),
        "decision": r.decision,
        "probability": r.probability,
        "relevance": r.relevance,
        "tier": r.tier,
        "quantiles": r.quantiles.iter().map(|q| json!({"level": q.level, "value": q.value})).collect::<Vec<_>>(),
        "receipt": r.receipt.as_ref().map(|rc| json!({
            "url": rc.url,
            "sha256_hex": hex::encode(&rc.sha256),
            "fetched_at_unix_ms": rc.fetched_at_unix_ms,
        })),
        "rationale": r.rationale,
        "arbiter_key_hex": hex::encode(&r.arbiter_key),
        "issued_at_unix_ms": r.issued_at_unix_ms,
    })
}

fn vector(name: &str, key: &SigningKey, r: Ruling, salt_byte: u8) -> Value {
    let sr = sign_ruling(key, r).unwrap();
    let ruling = sr.ruling.clone().unwrap();
    let canonical = signing::ruling_canonical_bytes(&ruling).unwrap();
    let salt = vec![salt_byte; 32];
    let commitment = commit_reveal::commit(key, &sr, &salt, ruling.issued_at_unix_ms + 1).unwrap();
    json!({
        "name": name,
        "ruling": ruling_json(&ruling),
        "rationale_sha256_hex": hex::encode(signing::rationale_digest(&ruling.rationale)),
        "canonical_bytes_hex": hex::encode(&canonical),
        "signature_hex": hex::encode(&sr.signature),
        "signed_ruling_protobuf_hex": hex::encode(sr.encode_to_vec()),
        "salt_hex": hex::encode(&salt),
        "commitment_digest_hex": hex::encode(&commitment.digest),
        "commitment": {
            "committed_at_unix_ms": commitment.committed_at_unix_ms,
            "canonical_bytes_hex": hex::encode(commit_reveal::commitment_canonical_bytes(&commitment).unwrap()),
            "signature_hex": hex::encode(&commitment.signature),
        },
    })
}

fn build() -> Value {
    let k1 = SigningKey::from_bytes(&seed(0));
    let k2 = SigningKey::from_bytes(&seed(32));
    let rotation = keys::sign_rotation(&k1, &k2, 1_790_000_100_000, "scheduled rotation").unwrap();
    let revocation =
        keys::sign_revocation(&k1, 1_790_000_200_000, 1_790_000_150_000, "key compromised")
            .unwrap();
    json!({
        "format": "crucible-panel signing test vectors, envelope v1; see docs/WIRE.md",
        "keys": [
            {
                "seed_hex": hex::encode(seed(0)),
                "public_key_hex": hex::encode(k1.verifying_key().as_bytes()),
                "fingerprint": keys::fingerprint(&k1.verifying_key()),
            },
            {
                "seed_hex": hex::encode(seed(32)),
                "public_key_hex": hex::encode(k2.verifying_key().as_bytes()),
                "fingerprint": keys::fingerprint(&k2.verifying_key()),
            }
        ],
        "rulings": [
            vector("merge accept", &k1, merge_ruling(), 0x11),
            vector("verify-tier with receipt", &k1, verify_tier_ruling(), 0x22),
            vector("exam quantiles, empty rationale", &k1, exam_quantile_ruling(), 0x33),
        ],
        "key_rotation": {
            "old_key_hex": hex::encode(&rotation.old_key),
            "new_key_hex": hex::encode(&rotation.new_key),
            "issued_at_unix_ms": rotation.issued_at_unix_ms,
            "reason": rotation.reason,
            "canonical_bytes_hex": hex::encode(keys::rotation_canonical_bytes(&rotation).unwrap()),
            "old_key_signature_hex": hex::encode(&rotation.old_key_signature),
            "new_key_signature_hex": hex::encode(&rotation.new_key_signature),
        },
        "key_revocation": {
            "key_hex": hex::encode(&revocation.key),
            "issued_at_unix_ms": revocation.issued_at_unix_ms,
            "effective_from_unix_ms": revocation.effective_from_unix_ms,
            "reason": revocation.reason,
            "canonical_bytes_hex": hex::encode(keys::revocation_canonical_bytes(&revocation).unwrap()),
            "signature_hex": hex::encode(&revocation.signature),
        },
    })
}

#[test]
fn vectors_file_matches_this_implementation() {
    check_published(PATH, &build());
}

fn h(v: &Value) -> Vec<u8> {
    unhex(v)
}

fn strict(key_hex: &Value, msg_hex: &Value, sig_hex: &Value) {
    let key = VerifyingKey::from_bytes(&h(key_hex).try_into().unwrap()).unwrap();
    let sig = ed25519_dalek::Signature::from_bytes(&h(sig_hex).try_into().unwrap());
    key.verify_strict(&h(msg_hex), &sig)
        .expect("vector signature verifies");
}

#[test]
fn vectors_verify_from_hex_alone() {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(PATH).unwrap()).unwrap();
    for k in v["keys"].as_array().unwrap() {
        let sk = SigningKey::from_bytes(&h(&k["seed_hex"]).try_into().unwrap());
        assert_eq!(
            sk.verifying_key().as_bytes().to_vec(),
            h(&k["public_key_hex"])
        );
    }
    for r in v["rulings"].as_array().unwrap() {
        let key = &r["ruling"]["arbiter_key_hex"];
        strict(key, &r["canonical_bytes_hex"], &r["signature_hex"]);
        // The canonical bytes end with the rationale digest, the key and the issue time.
        let canonical = h(&r["canonical_bytes_hex"]);
        let tail = &canonical[canonical.len() - 72..];
        assert_eq!(&tail[..32], h(&r["rationale_sha256_hex"]).as_slice());
        assert_eq!(&tail[32..64], h(key).as_slice());
        // Commitment digest recomputed from its definition.
        let mut hasher = Sha256::new();
        hasher.update(b"crucible-panel/commit-digest/v1\0");
        hasher.update((canonical.len() as u32).to_be_bytes());
        hasher.update(&canonical);
        hasher.update(h(&r["signature_hex"]));
        hasher.update(h(&r["salt_hex"]));
        assert_eq!(hasher.finalize().to_vec(), h(&r["commitment_digest_hex"]));
        strict(
            key,
            &r["commitment"]["canonical_bytes_hex"],
            &r["commitment"]["signature_hex"],
        );
        // The protobuf form decodes to a ruling that verifies.
        let sr = SignedRuling::decode(h(&r["signed_ruling_protobuf_hex"]).as_slice()).unwrap();
        panel_proto::verify_ruling(&sr, &panel_proto::VerifiedMemo::default()).unwrap();
    }
    let rot = &v["key_rotation"];
    strict(
        &rot["old_key_hex"],
        &rot["canonical_bytes_hex"],
        &rot["old_key_signature_hex"],
    );
    strict(
        &rot["new_key_hex"],
        &rot["canonical_bytes_hex"],
        &rot["new_key_signature_hex"],
    );
    let rev = &v["key_revocation"];
    strict(
        &rev["key_hex"],
        &rev["canonical_bytes_hex"],
        &rev["signature_hex"],
    );
}
