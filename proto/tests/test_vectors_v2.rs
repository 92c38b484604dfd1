//! Published test vectors for the documents added with the trust boundary
//! (`testvectors/signing-v2.json`, docs/WIRE.md section 9): a signed motion and its
//! digest, an envelope v2 ruling bound to that digest with its commitment, a registration
//! attestation (proof of possession and endorsement), and an organisation admission
//! endorsement.
//!
//! `v2_vectors_file_matches_this_implementation` recomputes every vector; run it with
//! `PANEL_WRITE_VECTORS=1` to (re)write the file. `v2_vectors_verify_from_hex_alone` checks
//! the file as another implementation would: from the hex strings only, strict ed25519,
//! and the digests recomputed from their definitions.

mod common;

use common::*;
use panel_proto::organisation::{self, OrganisationClaim};
use panel_proto::pb::{
    ContentProjection, Motion, MotionKind, PanelSeat, ProjectionItem, SignedRuling,
};
use panel_proto::registration::{self, RegistrationClaim};
use panel_proto::{SigningKey, VerifyingKey, commit_reveal, motion_signing, sign_ruling, signing};
use prost::Message;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testvectors/signing-v2.json"
);

fn seed(start: u8) -> [u8; 32] {
    std::array::from_fn(|i| start + i as u8)
}

fn arbiter() -> SigningKey {
    SigningKey::from_bytes(&seed(0))
}
fn other_arbiter() -> SigningKey {
    SigningKey::from_bytes(&seed(32))
}
fn motion_key() -> SigningKey {
    SigningKey::from_bytes(&seed(64))
}
fn org_north() -> SigningKey {
    SigningKey::from_bytes(&seed(96))
}
fn org_south() -> SigningKey {
    SigningKey::from_bytes(&seed(128))
}

fn motion() -> Motion {
    let m = Motion {
        motion_id: "m-1".into(),
        debate_id: "d-1".into(),
        kind: MotionKind::Merge as i32,
        state_hash: state_hash(7),
        projection: Some(ContentProjection {
            question: "Should the candidate version replace the incumbent?".into(),
            items: vec![ProjectionItem {
                label: "candidate".into(),
                text: "Output per worker rose 4% in participating firms.".into(),
                ..Default::default()
            }],
            resolution: "Resolved: a four-day week raises output.".into(),
            ..Default::default()
        }),
        commit_deadline_unix_ms: 1_790_000_000_400,
        reveal_deadline_unix_ms: 1_790_000_005_400,
        panel: vec![
            PanelSeat {
                public_key: arbiter().verifying_key().to_bytes().to_vec(),
                endpoint: "https://10.0.0.7:7401".into(),
            },
            PanelSeat {
                public_key: other_arbiter().verifying_key().to_bytes().to_vec(),
                endpoint: String::new(),
            },
        ],
        ..Default::default()
    };
    motion_signing::sign_motion(&motion_key(), m)
}

fn registration_claim(pk: &[u8]) -> RegistrationClaim<'_> {
    RegistrationClaim {
        arbiter_id: "arb-north-a",
        public_key: pk,
        organisation: "northwind",
        model_family: "family-x",
        stance: "A",
        endpoint: "https://10.0.0.7:7401",
        lineage: None,
    }
}

fn build() -> Value {
    let m = motion();
    let digest = motion_signing::motion_digest(&m);
    let mut r = merge_ruling();
    r.motion_digest = digest.to_vec();
    let sr = sign_ruling(&arbiter(), r).unwrap();
    let ruling = sr.ruling.clone().unwrap();
    let canonical = signing::ruling_canonical_bytes_v2(&ruling).unwrap();
    let salt = vec![0x44; 32];
    let commitment =
        commit_reveal::commit(&arbiter(), &sr, &salt, ruling.issued_at_unix_ms + 1).unwrap();

    let pk = arbiter().verifying_key().to_bytes();
    let claim = registration_claim(&pk);
    let attestation = registration::attest(&claim, &arbiter(), &org_north()).unwrap();

    let newcomer = SigningKey::from_bytes(&seed(160))
        .verifying_key()
        .to_bytes();
    let ca = [0x5a; 32];
    let admission = OrganisationClaim {
        name: "eastside",
        ca_sha256: &ca,
        signing_key: &newcomer,
    };
    json!({
        "format": "crucible-panel test vectors: signed motion v1, ruling envelope v2, registration and organisation admission v1; see docs/WIRE.md",
        "keys": {
            "arbiter_seed_hex": hex::encode(seed(0)),
            "arbiter_public_key_hex": hex::encode(arbiter().verifying_key().as_bytes()),
            "motion_key_seed_hex": hex::encode(seed(64)),
            "motion_key_public_hex": hex::encode(motion_key().verifying_key().as_bytes()),
            "northwind_roster_seed_hex": hex::encode(seed(96)),
            "northwind_roster_public_hex": hex::encode(org_north().verifying_key().as_bytes()),
            "southbank_roster_seed_hex": hex::encode(seed(128)),
            "southbank_roster_public_hex": hex::encode(org_south().verifying_key().as_bytes()),
        },
        "motion": {
            "protobuf_hex": hex::encode(m.encode_to_vec()),
            "canonical_bytes_hex": hex::encode(motion_signing::motion_canonical_bytes(&m)),
            "signature_hex": hex::encode(&m.signature),
            "digest_hex": hex::encode(digest),
        },
        "ruling_v2": {
            "canonical_bytes_hex": hex::encode(&canonical),
            "signature_hex": hex::encode(&sr.signature),
            "signed_ruling_protobuf_hex": hex::encode(sr.encode_to_vec()),
            "salt_hex": hex::encode(&salt),
            "commitment_digest_hex": hex::encode(&commitment.digest),
            "commitment_canonical_bytes_hex": hex::encode(commit_reveal::commitment_canonical_bytes(&commitment).unwrap()),
            "commitment_signature_hex": hex::encode(&commitment.signature),
        },
        "registration": {
            "arbiter_id": claim.arbiter_id,
            "organisation": claim.organisation,
            "model_family": claim.model_family,
            "stance": claim.stance,
            "endpoint": claim.endpoint,
            "canonical_bytes_hex": hex::encode(registration::registration_canonical_bytes(&claim).unwrap()),
            "proof_hex": hex::encode(&attestation.proof),
            "endorsement_hex": hex::encode(&attestation.endorsement),
        },
        "organisation_admission": {
            "name": admission.name,
            "ca_sha256_hex": hex::encode(ca),
            "signing_key_hex": hex::encode(newcomer),
            "canonical_bytes_hex": hex::encode(organisation::admission_canonical_bytes(&admission).unwrap()),
            "northwind_signature_hex": hex::encode(organisation::endorse(&admission, &org_north()).unwrap()),
            "southbank_signature_hex": hex::encode(organisation::endorse(&admission, &org_south()).unwrap()),
        },
    })
}

#[test]
fn v2_vectors_file_matches_this_implementation() {
    check_published(PATH, &build());
}

fn h(v: &Value) -> Vec<u8> {
    unhex(v)
}

fn strict(key_hex: &Value, msg: &[u8], sig_hex: &Value) {
    let key = VerifyingKey::from_bytes(&h(key_hex).try_into().unwrap()).unwrap();
    let sig = ed25519_dalek::Signature::from_bytes(&h(sig_hex).try_into().unwrap());
    key.verify_strict(msg, &sig)
        .expect("vector signature verifies");
}

#[test]
fn v2_vectors_verify_from_hex_alone() {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(PATH).unwrap()).unwrap();
    let keys = &v["keys"];
    let m = &v["motion"];
    let canonical = h(&m["canonical_bytes_hex"]);
    assert!(canonical.starts_with(b"crucible-panel/motion/v1\0"));
    strict(
        &keys["motion_key_public_hex"],
        &canonical,
        &m["signature_hex"],
    );
    // The digest: SHA-256 over its tag, the canonical bytes, the signature (docs/WIRE.md,
    // "Other domain tags").
    let mut hasher = Sha256::new();
    hasher.update(b"crucible-panel/motion-digest/v1\0");
    hasher.update(&canonical);
    hasher.update(h(&m["signature_hex"]));
    assert_eq!(hasher.finalize().to_vec(), h(&m["digest_hex"]));
    let decoded = Motion::decode(h(&m["protobuf_hex"]).as_slice()).unwrap();
    assert_eq!(
        motion_signing::verify_motion_self(&decoded, &panel_proto::VerifiedMemo::default())
            .unwrap()
            .to_vec(),
        h(&m["digest_hex"])
    );

    let r = &v["ruling_v2"];
    let canonical = h(&r["canonical_bytes_hex"]);
    assert!(canonical.starts_with(b"crucible-panel/ruling/v2\0"));
    // The v2 layout carries the motion digest: it must occur in the signed bytes.
    let digest = h(&m["digest_hex"]);
    assert!(canonical.windows(32).any(|w| w == digest.as_slice()));
    strict(
        &keys["arbiter_public_key_hex"],
        &canonical,
        &r["signature_hex"],
    );
    strict(
        &keys["arbiter_public_key_hex"],
        &h(&r["commitment_canonical_bytes_hex"]),
        &r["commitment_signature_hex"],
    );
    let sr = SignedRuling::decode(h(&r["signed_ruling_protobuf_hex"]).as_slice()).unwrap();
    panel_proto::verify_ruling(&sr, &panel_proto::VerifiedMemo::default()).unwrap();

    let reg = &v["registration"];
    let canonical = h(&reg["canonical_bytes_hex"]);
    assert!(canonical.starts_with(b"crucible-panel/arbiter-registration/v1\0"));
    strict(
        &keys["arbiter_public_key_hex"],
        &canonical,
        &reg["proof_hex"],
    );
    strict(
        &keys["northwind_roster_public_hex"],
        &canonical,
        &reg["endorsement_hex"],
    );

    let adm = &v["organisation_admission"];
    let canonical = h(&adm["canonical_bytes_hex"]);
    assert!(canonical.starts_with(b"crucible-panel/organisation-admission/v1\0"));
    strict(
        &keys["northwind_roster_public_hex"],
        &canonical,
        &adm["northwind_signature_hex"],
    );
    strict(
        &keys["southbank_roster_public_hex"],
        &canonical,
        &adm["southbank_signature_hex"],
    );
}
