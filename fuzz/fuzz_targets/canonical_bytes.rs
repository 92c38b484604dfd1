//! The canonical byte layouts (docs/WIRE.md section 2) against an independent reader
//! (`panel_fuzz::canonical`): rulings v1 and v2, commitments, link hellos and motions,
//! built from fuzzer-chosen protobuf messages.
//!
//! Properties: whenever the encoder writes bytes, they read back, with nothing left
//! over, into exactly the fields they were written from (so the layout is unambiguous and
//! a signature covers one message only); the encoder is deterministic; fields a layout
//! does not carry (the signature, a v1 ruling's motion digest) are refused or excluded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use panel_fuzz::canonical;
use panel_proto::pb;
use panel_proto::{commit_reveal, link, motion_signing, signing};
use prost::Message;

fn ruling(r: &pb::Ruling) {
    for version in [1, 2] {
        let Ok(bytes) = signing::ruling_canonical_bytes_for(r, version) else {
            continue;
        };
        assert_eq!(
            signing::ruling_canonical_bytes_for(r, version)
                .ok()
                .as_ref(),
            Some(&bytes)
        );
        let read = canonical::read_ruling(&bytes, version)
            .unwrap_or_else(|| panic!("v{version} canonical bytes do not read back"));
        let want = canonical::expected_ruling(r, version)
            .unwrap_or_else(|| panic!("v{version} encoded a ruling the layout cannot hold"));
        assert_eq!(
            read, want,
            "v{version} canonical bytes read back differently"
        );
        // The other version's reader must not accept these bytes (the tags differ).
        assert!(canonical::read_ruling(&bytes, 3 - version).is_none());
    }
}

fn commitment(c: &pb::Commitment) {
    let Ok(bytes) = commit_reveal::commitment_canonical_bytes(c) else {
        return;
    };
    let read = canonical::read_commitment(&bytes).expect("commitment bytes read back");
    assert_eq!(read.motion_id, c.motion_id);
    assert_eq!(read.debate_id, c.debate_id);
    assert_eq!(read.arbiter_key.as_slice(), c.arbiter_key.as_slice());
    assert_eq!(read.digest.as_slice(), c.digest.as_slice());
    assert_eq!(read.committed_at, c.committed_at_unix_ms);
}

fn hello(nonce: &[u8], arbiter_id: &str, replica_id: u64) {
    let Ok(bytes) = link::hello_canonical_bytes(nonce, arbiter_id, replica_id) else {
        return;
    };
    let (n, id, rid) = canonical::read_hello(&bytes).expect("hello bytes read back");
    assert_eq!(n.as_slice(), nonce);
    assert_eq!(id, arbiter_id);
    assert_eq!(rid, replica_id);
}

fn motion(m: &pb::Motion) {
    let bytes = motion_signing::motion_canonical_bytes(m);
    assert_eq!(bytes, motion_signing::motion_canonical_bytes(m));
    let read = canonical::read_motion(&bytes).expect("motion bytes read back");
    assert_eq!(
        read.encode_to_vec(),
        canonical::normalised_motion(m).encode_to_vec(),
        "motion canonical bytes read back differently"
    );
    // The signature is not part of what is signed.
    let mut other = m.clone();
    other.signature = vec![1, 2, 3];
    assert_eq!(motion_signing::motion_canonical_bytes(&other), bytes);
}

fuzz_target!(|data: &[u8]| {
    if data.len() > panel_fuzz::MAX_INPUT {
        return;
    }
    let Some((&which, bytes)) = data.split_first() else {
        return;
    };
    match which % 4 {
        0 => {
            if let Ok(sr) = pb::SignedRuling::decode(bytes)
                && let Some(r) = &sr.ruling
            {
                ruling(r);
            } else if let Ok(r) = pb::Ruling::decode(bytes) {
                ruling(&r);
            }
        }
        1 => {
            if let Ok(c) = pb::Commitment::decode(bytes) {
                commitment(&c);
            }
        }
        2 => {
            if let Ok(h) = pb::LinkChallenge::decode(bytes) {
                hello(&h.nonce, "arbiter", h.replica_id);
            }
            if let Ok(h) = pb::LinkHello::decode(bytes) {
                hello(&[5; 32], &h.arbiter_id, 7);
            }
        }
        _ => {
            if let Ok(m) = pb::Motion::decode(bytes) {
                motion(&m);
            }
        }
    }
});
