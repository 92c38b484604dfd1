//! Answers to the calibration exam (docs/CALIBRATION.md "The exam"), committed, signed
//! and revealed as an arbiter's node sends them, and the signed exam motions the exam
//! driver puts (docs/SECURITY.md "Exams").

use crate::rules::hex_bytes::RevealBytes;
use std::collections::BTreeMap;

use calibration::exam::{ExamItem, Gold};
use ed25519_dalek::SigningKey;
use panel_proto::pb;
use prost::Message;

use super::KitError;
use super::keys::motion_key;

/// The answer to a quantity seed of realised value `value`: a median just below or just
/// above the truth by the item's position `n`, and wide outer quantiles, so a run of such
/// answers is calibrated.
fn calibrated_quantiles(value: f64, n: usize, levels: &[f64]) -> Vec<pb::Quantile> {
    let shift = if n.is_multiple_of(2) { 0.01 } else { -0.01 };
    let q = if value > 0.0 {
        [value / 2.0, value * (1.0 + shift), value * 2.0]
    } else {
        let w = value.abs().max(1.0);
        [value - w, value + shift * w, value + w]
    };
    levels
        .iter()
        .zip(q)
        .map(|(&level, value)| pb::Quantile { level, value })
        .collect()
}

/// One item answered and revealed (hex `Reveal`): `ruling` names the motion; a binary
/// item is answered `p_yes`, a relevance or tier item with its gold, a quantity seed by
/// [`calibrated_quantiles`] at position `n`.
pub(crate) fn item_reveal(
    key: &SigningKey,
    ruling: pb::Ruling,
    gold: &Gold,
    p_yes: f64,
    n: usize,
    levels: &[f64],
) -> Result<RevealBytes, KitError> {
    let mut r = pb::Ruling {
        debate_id: crate::features::admission::EXAM_DEBATE.into(),
        kind: pb::MotionKind::Exam as i32,
        decision: pb::Decision::None as i32,
        rationale: "exam answer".into(),
        issued_at_unix_ms: 1,
        ..ruling
    };
    match gold {
        Gold::Binary(_) => {
            r.probability = p_yes;
            r.decision = if p_yes >= 0.5 {
                pb::Decision::Accept
            } else {
                pb::Decision::Reject
            } as i32;
        }
        Gold::Relevance(x) => r.relevance = Some(u32::from(crate::debates::relevance_step(*x))),
        Gold::Tier(t) => r.tier = Some(t.index() as u32 + 1),
        Gold::Quantity { value, .. } => r.quantiles = calibrated_quantiles(*value, n, levels),
    }
    let sign_error = |reason: String| KitError::Sign {
        arbiter: r.motion_id.clone(),
        reason,
    };
    let sr = panel_proto::sign_ruling(key, r.clone()).map_err(|e| sign_error(e.to_string()))?;
    let salt = [n as u8; 32];
    let c = panel_proto::commit_reveal::commit(key, &sr, &salt, 1)
        .map_err(|e| sign_error(e.to_string()))?;
    Ok(RevealBytes::new(
        pb::Reveal {
            signed_ruling: Some(sr),
            salt: salt.to_vec(),
            commitment: Some(c),
        }
        .encode_to_vec(),
    ))
}

/// Every item of the default exam answered for `arbiter_id`: binary items at the
/// probability `p_yes` gives, each ruling bound to the digest `digests` gives for its
/// motion id (envelope v2), if any.
pub fn try_exam_answers_by(
    key: &SigningKey,
    arbiter_id: &str,
    digests: &BTreeMap<String, [u8; 32]>,
    p_yes: impl Fn(&ExamItem) -> f64,
) -> Result<Vec<RevealBytes>, KitError> {
    let exam = crate::features::admission::default_exam().map_err(|e| KitError::Sign {
        arbiter: arbiter_id.into(),
        reason: format!("the default exam does not load: {e}"),
    })?;
    let hash = hex::decode(exam.content_hash.trim_start_matches("sha256:")).map_err(|_| {
        KitError::StateHash {
            motion: "exam".into(),
        }
    })?;
    exam.items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let motion_id = crate::features::admission::exam_motion_id(exam, arbiter_id, &item.id);
            let ruling = pb::Ruling {
                motion_digest: digests
                    .get(&motion_id)
                    .map(|d| d.to_vec())
                    .unwrap_or_default(),
                motion_id,
                state_hash: hash.clone(),
                ..Default::default()
            };
            item_reveal(key, ruling, &item.gold, p_yes(item), i, &exam.quantiles)
        })
        .collect()
}

/// A good exam: binary items at 0.9 toward the gold.
pub fn exam_answers(
    key: &SigningKey,
    arbiter_id: &str,
    digests: &BTreeMap<String, [u8; 32]>,
) -> Vec<RevealBytes> {
    try_exam_answers_by(key, arbiter_id, digests, |item| match item.gold {
        Gold::Binary(true) => 0.9,
        _ => 0.1,
    })
    .expect("exam answers")
}

/// [`exam_answers`] unbound to any motion (envelope v1).
pub fn exam_reveals(key: &SigningKey, arbiter_id: &str) -> Vec<RevealBytes> {
    exam_answers(key, arbiter_id, &BTreeMap::new())
}

/// The signed exam motions of every item for `arbiter_id`, as the exam driver puts them;
/// `alter` may change one before it is signed.
pub fn exam_motions(arbiter_id: &str, alter: impl Fn(&mut pb::Motion)) -> Vec<pb::Motion> {
    let exam = crate::features::admission::default_exam().expect("exam");
    let motion_key = motion_key();
    exam.items
        .iter()
        .map(|item| {
            let mut m = crate::features::admission::exam_motion(
                exam,
                item,
                arbiter_id,
                1_790_000_000_000,
                1_790_000_001_000,
                false,
            )
            .expect("the shipped exam's hash decodes");
            alter(&mut m);
            panel_proto::sign_motion(&motion_key, m)
        })
        .collect()
}

/// Each motion's digest by motion id.
pub fn digests(motions: &[pb::Motion]) -> BTreeMap<String, [u8; 32]> {
    motions
        .iter()
        .map(|m| (m.motion_id.clone(), panel_proto::motion_digest(m)))
        .collect()
}
