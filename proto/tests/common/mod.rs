//! Fixtures shared by the proto integration tests.
#![allow(dead_code)]

use panel_proto::SigningKey;
use panel_proto::pb::{
    Decision, Motion, MotionKind, PanelSeat, Quantile, RetrievalReceipt, Ruling,
};

/// Deterministic key from a one-byte label (tests only).
pub fn key(label: u8) -> SigningKey {
    let mut seed = [0u8; 32];
    for (i, b) in seed.iter_mut().enumerate() {
        *b = label.wrapping_mul(31).wrapping_add(i as u8);
    }
    SigningKey::from_bytes(&seed)
}

pub fn state_hash(label: u8) -> Vec<u8> {
    vec![label; 32]
}

pub fn merge_ruling() -> Ruling {
    Ruling {
        motion_id: "m-1".into(),
        debate_id: "d-1".into(),
        kind: MotionKind::Merge as i32,
        state_hash: state_hash(7),
        decision: Decision::Accept as i32,
        probability: 0.8,
        relevance: None,
        tier: None,
        quantiles: vec![],
        receipt: None,
        rationale: "Candidate cites a verified T2 source the incumbent lacks.".into(),
        arbiter_key: vec![],
        issued_at_unix_ms: 1_790_000_000_000,
        motion_digest: Vec::new(),
        provenance: None,
    }
}

pub fn verify_tier_ruling() -> Ruling {
    Ruling {
        motion_id: "m-2".into(),
        debate_id: "d-1".into(),
        kind: MotionKind::VerifyTier as i32,
        state_hash: state_hash(8),
        decision: Decision::Accept as i32,
        probability: 0.95,
        relevance: None,
        tier: Some(2),
        quantiles: vec![],
        receipt: Some(RetrievalReceipt {
            url: "https://example.org/report.pdf".into(),
            sha256: vec![0xab; 32],
            fetched_at_unix_ms: 1_789_999_999_000,
        }),
        rationale: "Peer-reviewed report; quote found on page 4.".into(),
        arbiter_key: vec![],
        issued_at_unix_ms: 1_790_000_000_500,
        motion_digest: Vec::new(),
        provenance: None,
    }
}

pub fn exam_quantile_ruling() -> Ruling {
    Ruling {
        motion_id: "exam-17".into(),
        debate_id: "exam-v1".into(),
        kind: MotionKind::Exam as i32,
        state_hash: state_hash(9),
        decision: Decision::None as i32,
        probability: 0.9,
        relevance: None,
        tier: None,
        quantiles: vec![
            Quantile {
                level: 0.05,
                value: 1200.0,
            },
            Quantile {
                level: 0.5,
                value: 1500.0,
            },
            Quantile {
                level: 0.95,
                value: 2100.0,
            },
        ],
        receipt: None,
        rationale: "".into(),
        arbiter_key: vec![],
        issued_at_unix_ms: 1_790_000_001_000,
        motion_digest: Vec::new(),
        provenance: None,
    }
}

pub fn motion_for(r: &Ruling, panel: &[&SigningKey]) -> Motion {
    Motion {
        motion_id: r.motion_id.clone(),
        debate_id: r.debate_id.clone(),
        kind: r.kind,
        state_hash: r.state_hash.clone(),
        projection: None,
        commit_deadline_unix_ms: 1_000,
        reveal_deadline_unix_ms: 2_000,
        panel: panel
            .iter()
            .map(|k| PanelSeat {
                public_key: k.verifying_key().to_bytes().to_vec(),
                endpoint: String::new(),
            })
            .collect(),
        signature: Vec::new(),
        signer_key: Vec::new(),
        seals: Vec::new(),
    }
}

/// Compares a published vectors file with `fresh`, the vectors this implementation
/// computes; with `PANEL_WRITE_VECTORS=1` (re)writes the file first.
pub fn check_published(path: &str, fresh: &serde_json::Value) {
    if std::env::var_os("PANEL_WRITE_VECTORS").is_some() {
        let text = serde_json::to_string_pretty(fresh).unwrap() + "\n";
        std::fs::write(path, text).unwrap();
    }
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}; write it with PANEL_WRITE_VECTORS=1"));
    let published: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        &published, fresh,
        "published vectors drifted from the implementation"
    );
}

/// Bytes of a hex string in a vectors file.
pub fn unhex(v: &serde_json::Value) -> Vec<u8> {
    hex::decode(v.as_str().expect("hex string")).expect("valid hex")
}
