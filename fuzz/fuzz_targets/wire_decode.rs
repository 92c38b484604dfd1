//! Every protobuf message a node or a replica decodes: the first byte picks the message,
//! the rest is its encoding. After decoding, the checks the receiver runs are run on it
//! (motion window and signature, ruling shape and signature, commitment signature,
//! reveal intake, link hello, key documents).
//!
//! Properties: no panic; decode -> encode -> decode -> encode is stable (the second
//! encoding equals the first, and `encoded_len` is exact); a hello the node signs for any
//! decoded challenge verifies; hex transport of rulings and reveals (the log's form)
//! round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use panel_machine::WireRuling;
use panel_machine::rules::ruling as log_ruling;
use panel_proto::pb::{self, link_from_node, link_response, link_to_node};
use panel_proto::{
    SigningKey, VerifiedMemo, commit_reveal, keys, link, motion_signing, ruling_check, signing,
};
use prost::Message;

/// Decodes `bytes` as `M` and checks that its encoding is a fixed point.
fn stable<M: Message + Default>(bytes: &[u8]) -> Option<M> {
    let m = M::decode(bytes).ok()?;
    let first = m.encode_to_vec();
    assert_eq!(
        m.encoded_len(),
        first.len(),
        "encoded_len is not the length"
    );
    let again = M::decode(first.as_slice()).expect("an encoding decodes");
    assert_eq!(again.encode_to_vec(), first, "decode/encode is not stable");
    Some(m)
}

fn node_key() -> SigningKey {
    SigningKey::from_bytes(&[7; 32])
}

/// What a node does with a motion it is asked to judge (before judging).
fn motion(m: &pb::Motion) {
    let _ = commit_reveal::MotionWindow::from_motion(m);
    let digest = motion_signing::motion_digest(m);
    assert_eq!(digest, motion_signing::motion_digest(m));
    let trusted = [node_key().verifying_key()];
    let _ = motion_signing::verify_motion(m, &trusted, &VerifiedMemo::default());
    let _ = motion_signing::verify_motion_self(m, &VerifiedMemo::default());
    let wire = panel_machine::rules::signed_motion::encode(m);
    let back = panel_machine::rules::signed_motion::decode(&wire).expect("decodes");
    assert_eq!(back.encode_to_vec(), m.encode_to_vec());
}

/// What a replica does with a bare signed ruling (intake), and the node with a peer's.
fn signed_ruling(sr: &pb::SignedRuling) {
    let _ = signing::verify_ruling(sr, &VerifiedMemo::default());
    if let Some(r) = &sr.ruling {
        let _ = ruling_check::check_ruling(r);
        let _ = signing::ruling_canonical_bytes_for(r, sr.envelope_version);
        if let Ok(d) = <[u8; 32]>::try_from(r.motion_digest.as_slice()) {
            let _ = ruling_check::check_motion_digest(sr, &r.motion_id, &d);
        }
    }
    let wire = WireRuling::encode(sr);
    let back = wire.decode().expect("an encoded ruling decodes");
    assert_eq!(back.encode_to_vec(), sr.encode_to_vec());
    let _ = log_ruling::intake_check(&[wire], &[], &VerifiedMemo::default());
}

fn commitment(c: &pb::Commitment) {
    let _ = commit_reveal::commitment_canonical_bytes(c);
    let _ = commit_reveal::verify_commitment(c, &VerifiedMemo::default());
}

/// What a replica does with a reveal (intake), and a node with a delivered one.
fn reveal(r: &pb::Reveal) {
    if let Some(sr) = &r.signed_ruling {
        signed_ruling(sr);
    }
    if let Some(c) = &r.commitment {
        commitment(c);
        if let Some(sr) = &r.signed_ruling {
            let _ = commit_reveal::check_opens(c, sr, &r.salt, &VerifiedMemo::default());
            let _ = commit_reveal::commitment_digest(sr, &r.salt);
        }
    }
    let wire = panel_machine::RevealBytes::new(r.encode_to_vec());
    if let Ok(parts) = log_ruling::decode_reveal(&wire) {
        let _ = log_ruling::intake_reveal(parts, &VerifiedMemo::default());
    }
    let _ = log_ruling::intake_check(&[], &[wire], &VerifiedMemo::default());
}

fn hello(h: &pb::LinkHello) {
    if let Ok(key) = keys::parse_public_key(&h.public_key) {
        let _ = link::verify_hello(h, &[9; 32], 1, &key);
    }
    let _ = link::hello_canonical_bytes(&[9; 32], &h.arbiter_id, 1);
}

fn link_from_node(m: &pb::LinkFromNode) {
    match &m.body {
        Some(link_from_node::Body::Hello(h)) => hello(h),
        Some(link_from_node::Body::Response(r)) => match &r.body {
            Some(link_response::Body::Commitment(c)) => commitment(c),
            Some(link_response::Body::Reveal(rv)) => reveal(rv),
            Some(link_response::Body::Error(_)) | None => {}
        },
        None => {}
    }
}

fn link_to_node(m: &pb::LinkToNode) {
    match &m.body {
        Some(link_to_node::Body::Challenge(c)) => {
            if let Ok(h) = link::sign_hello(&node_key(), c, "a1") {
                link::verify_hello(&h, &c.nonce, c.replica_id, &node_key().verifying_key())
                    .expect("a hello the node signs verifies");
            }
        }
        Some(link_to_node::Body::Request(r)) => {
            if let Some(pb::link_request::Body::Commit(m)) = &r.body {
                motion(m);
            }
        }
        Some(link_to_node::Body::Accepted(_)) | None => {}
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() > panel_fuzz::MAX_INPUT {
        return;
    }
    let Some((&which, bytes)) = data.split_first() else {
        return;
    };
    match which % 20 {
        // Received by a node.
        0 => {
            if let Some(m) = stable::<pb::Motion>(bytes) {
                motion(&m);
            }
        }
        1 => {
            stable::<pb::RevealRequest>(bytes);
        }
        2 => {
            if let Some(r) = stable::<pb::Reveal>(bytes) {
                reveal(&r);
            }
        }
        3 => {
            if let Some(m) = stable::<pb::LinkToNode>(bytes) {
                link_to_node(&m);
            }
        }
        4 => {
            stable::<pb::HumanAnswer>(bytes);
        }
        5 => {
            stable::<pb::ListRulingsRequest>(bytes);
        }
        6 => {
            // The node's own store, read back from disk.
            if let Some(rec) = stable::<pb::RulingRecord>(bytes) {
                if let Some(m) = &rec.motion {
                    motion(m);
                }
                if let Some(sr) = &rec.signed_ruling {
                    signed_ruling(sr);
                }
            }
        }
        // Received by a replica.
        7 => {
            if let Some(c) = stable::<pb::Commitment>(bytes) {
                commitment(&c);
            }
        }
        8 => {
            if let Some(m) = stable::<pb::LinkFromNode>(bytes) {
                link_from_node(&m);
            }
        }
        9 => {
            if let Some(sr) = stable::<pb::SignedRuling>(bytes) {
                signed_ruling(&sr);
            }
        }
        10 => {
            stable::<pb::ArbiterIdentity>(bytes);
        }
        11 => {
            if let Some(r) = stable::<pb::CommitResult>(bytes)
                && let Some(c) = &r.commitment
            {
                commitment(c);
            }
        }
        12 => {
            if let Some(r) = stable::<pb::RevealResult>(bytes)
                && let Some(rv) = &r.reveal
            {
                reveal(rv);
            }
        }
        13 => {
            stable::<pb::DeliverAck>(bytes);
        }
        14 => {
            stable::<pb::ListRulingsResponse>(bytes);
        }
        15 => {
            if let Some(d) = stable::<pb::KeyRotation>(bytes) {
                let _ = keys::rotation_canonical_bytes(&d);
                let _ = keys::verify_rotation(&d);
            }
        }
        16 => {
            if let Some(d) = stable::<pb::KeyRevocation>(bytes) {
                let _ = keys::revocation_canonical_bytes(&d);
                let _ = keys::verify_revocation(&d);
            }
        }
        17 => {
            stable::<pb::PendingResponse>(bytes);
        }
        18 => {
            if let Some(m) = stable::<pb::LinkChallenge>(bytes) {
                link_to_node(&pb::LinkToNode {
                    body: Some(link_to_node::Body::Challenge(m)),
                });
            }
        }
        _ => {
            if let Some(h) = stable::<pb::LinkHello>(bytes) {
                hello(&h);
            }
        }
    }
});
