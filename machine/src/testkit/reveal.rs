//! A seat's answer as the wire carries it: the signed ruling of a [`Vote`], its salt and
//! commitment, and the hex `Reveal` (docs/WIRE.md "Ruling", "Reveal").

use crate::rules::hex_bytes::RevealBytes;
use panel_proto::pb;
use panel_proto::ruling_check::binary_pair;
use prost::Message;
use sha2::{Digest, Sha256};

use crate::model::Motion;
use crate::rules::ruling::wire_kind;

use super::{KitError, Vote};

/// The state hash `m` is judged against, as a signed motion or ruling carries it.
pub(super) fn state_hash(m: &Motion) -> Result<Vec<u8>, KitError> {
    m.spec
        .state_hash
        .bytes()
        .map(|b| b.into_owned())
        .map_err(|_| KitError::StateHash {
            motion: m.spec.motion_id.clone(),
        })
}

/// `vote` on `m` as a ruling signed with `key`; bound to the signed motion's digest
/// (envelope v2) when `digest` is given.
pub fn signed_ruling(
    key: &ed25519_dalek::SigningKey,
    m: &Motion,
    arbiter: &str,
    v: Vote,
    digest: Option<&[u8; 32]>,
) -> Result<pb::SignedRuling, KitError> {
    let kind = wire_kind(m.spec.kind);
    let (yes, no) = binary_pair(kind).unwrap_or((pb::Decision::None, pb::Decision::None));
    let state_hash = state_hash(m)?;
    let ruling = pb::Ruling {
        motion_id: m.spec.motion_id.clone(),
        debate_id: m.spec.debate_id.clone(),
        kind: kind as i32,
        state_hash,
        decision: if v.yes { yes } else { no } as i32,
        probability: v.p,
        relevance: v.relevance,
        // The tier found: the claimed T1 when verifying.
        tier: (kind == pb::MotionKind::VerifyTier && v.yes).then_some(1),
        receipt: v.receipt.map(|byte| pb::RetrievalReceipt {
            url: "http://source.test/doc".into(),
            sha256: vec![byte; 32],
            fetched_at_unix_ms: 1,
        }),
        rationale: "simulated ruling".into(),
        issued_at_unix_ms: 1,
        motion_digest: digest.map(|d| d.to_vec()).unwrap_or_default(),
        ..Default::default()
    };
    panel_proto::sign_ruling(key, ruling).map_err(|e| KitError::Sign {
        arbiter: arbiter.into(),
        reason: e.to_string(),
    })
}

/// What a seat sends: its commitment (signed at `committed_at_ms`) and the hex `Reveal`
/// that opens it. The salt is derived from the motion and the arbiter.
pub struct Sealed {
    pub commitment: pb::Commitment,
    pub reveal: RevealBytes,
}

/// Commits to `sr` and reveals it.
pub fn seal(
    key: &ed25519_dalek::SigningKey,
    sr: pb::SignedRuling,
    motion_id: &str,
    arbiter: &str,
    committed_at_ms: i64,
) -> Result<Sealed, KitError> {
    let salt: [u8; 32] = Sha256::digest(format!("{motion_id}/{arbiter}").as_bytes()).into();
    let commitment =
        panel_proto::commit_reveal::commit(key, &sr, &salt, committed_at_ms).map_err(|e| {
            KitError::Sign {
                arbiter: arbiter.into(),
                reason: e.to_string(),
            }
        })?;
    let reveal = RevealBytes::new(
        pb::Reveal {
            signed_ruling: Some(sr),
            salt: salt.to_vec(),
            commitment: Some(commitment.clone()),
        }
        .encode_to_vec(),
    );
    Ok(Sealed { commitment, reveal })
}

/// The hex `Reveal` of `vote` for a `RecordOutcome` (unbound v1 ruling, committed at 1).
pub fn outcome_reveal(
    key: &ed25519_dalek::SigningKey,
    m: &Motion,
    arbiter: &str,
    v: Vote,
) -> Result<RevealBytes, KitError> {
    let sr = signed_ruling(key, m, arbiter, v, None)?;
    Ok(seal(key, sr, &m.spec.motion_id, arbiter, 1)?.reveal)
}
