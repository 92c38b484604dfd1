//! The signed motion an outcome answers, as the log carries it and `apply` re-checks it
//! (docs/WIRE.md "Motion, layout v1" and "Ruling, envelope version 2").
//!
//! The motion driver signs every motion it puts to nodes with the cluster's motion key and
//! puts that signed motion into its `RecordOutcome`. `apply` then checks, from the entry
//! alone: the signature (strict, under the key the motion names; the signer is reported in
//! the reply so a verifier can hold it against its policy), that the motion is the one the
//! state machine opened (id, debate, kind, state hash, and the seats' keys), and that every
//! ruling of envelope v2 binds exactly this motion's digest. So a ruling judged on other
//! content under the same id, or on another round's deadlines, never counts.

use std::collections::BTreeSet;

use panel_proto::motion_signing::{self, MotionSignatureError};
use panel_proto::pb;
use prost::Message;
use thiserror::Error;

use crate::rules::ruling::{Binding, wire_kind};

pub use crate::rules::hex_bytes::WireMotion;

/// Why the signed motion of an outcome, or a ruling's binding to it, is refused.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum MotionError {
    #[error(
        "the outcome's motion is not a hex-encoded protobuf Motion (not hex); send the motion \
         exactly as the driver signed it"
    )]
    NotHex,
    #[error(
        "the outcome's motion is not a hex-encoded protobuf Motion ({0}); send the motion \
         exactly as the driver signed it"
    )]
    Decode(prost::DecodeError),
    #[error("the outcome's motion signature is refused: {0}")]
    Signature(#[from] MotionSignatureError),
    #[error(
        "the outcome's signed motion has {field} {signed:?}, but the motion opened under \
         {motion_id:?} has {opened:?}; an outcome answers the motion the state machine opened"
    )]
    Mismatch {
        motion_id: String,
        field: &'static str,
        signed: String,
        opened: String,
    },
    #[error(
        "the outcome's signed motion seats other keys than the panel drawn for {motion_id:?}; \
         the driver must put the drawn panel to the nodes"
    )]
    PanelMismatch { motion_id: String },
    #[error(
        "the outcome's motion is signed by {signer}, not by the charter's motion key {pinned}; \
         replicas sign motions with the key the charter names (--motion-key)"
    )]
    UnpinnedSigner { signer: String, pinned: String },
    #[error(
        "the outcome of {motion_id} carries no signed motion; under a charter an outcome \
         answers the motion the driver signed with the charter's motion key"
    )]
    Unsigned { motion_id: String },
    #[error("ruling of {arbiter} does not answer the outcome's signed motion: {reason}")]
    RulingNotBound { arbiter: String, reason: String },
    #[error(
        "ruling of {arbiter} binds a signed motion (envelope v2), but the outcome carries no \
         signed motion to check it against; the driver sends the motion it signed"
    )]
    SignedMotionRequired { arbiter: String },
}

/// Decodes and checks the outcome's signed motion against the opened motion; returns its
/// digest. `seat_keys` are the registered keys of the drawn seats.
///
/// `pinned` is the charter's motion key: with one, a motion signed by any other key is
/// refused (the record says which key speaks for the cluster, so a leader cannot sign
/// motions of its own making under a key of its choosing). The signature is verified
/// through the caller's `memo`.
pub fn check(
    wire: &WireMotion,
    opened: &Binding<'_>,
    seat_keys: &BTreeSet<Vec<u8>>,
    pinned: Option<&panel_proto::VerifyingKey>,
    memo: &panel_proto::VerifiedMemo,
) -> Result<[u8; 32], MotionError> {
    check_round(wire, opened, seat_keys, pinned, memo).map(|(digest, _)| digest)
}

/// [`check`], also returning the decoded motion (its deadlines bound a logged round).
pub fn check_round(
    wire: &WireMotion,
    opened: &Binding<'_>,
    seat_keys: &BTreeSet<Vec<u8>>,
    pinned: Option<&panel_proto::VerifyingKey>,
    memo: &panel_proto::VerifiedMemo,
) -> Result<([u8; 32], pb::Motion), MotionError> {
    let m = decode(wire)?;
    let digest = motion_signing::verify_motion_self(&m, memo)?;
    if let Some(key) = pinned
        && m.signer_key.as_slice() != key.as_bytes()
    {
        return Err(MotionError::UnpinnedSigner {
            signer: hex::encode(&m.signer_key),
            pinned: hex::encode(key.as_bytes()),
        });
    }
    let mismatch = |field: &'static str, signed: String, opened_v: String| MotionError::Mismatch {
        motion_id: opened.motion_id.to_owned(),
        field,
        signed,
        opened: opened_v,
    };
    if m.motion_id != opened.motion_id {
        return Err(mismatch("id", m.motion_id, opened.motion_id.into()));
    }
    if m.debate_id != opened.debate_id {
        return Err(mismatch("debate", m.debate_id, opened.debate_id.into()));
    }
    let kind = wire_kind(opened.kind) as i32;
    if m.kind != kind {
        return Err(mismatch("kind", m.kind.to_string(), kind.to_string()));
    }
    if m.state_hash != opened.state_hash {
        return Err(mismatch(
            "state hash",
            hex::encode(&m.state_hash),
            hex::encode(opened.state_hash),
        ));
    }
    let signed_keys: BTreeSet<Vec<u8>> = m.panel.iter().map(|s| s.public_key.clone()).collect();
    if &signed_keys != seat_keys || signed_keys.len() != m.panel.len() {
        return Err(MotionError::PanelMismatch {
            motion_id: opened.motion_id.to_owned(),
        });
    }
    Ok((digest, m))
}

/// Checks one verified ruling's binding to the outcome's signed motion: with a signed
/// motion every ruling must bind its digest (envelope v2; nodes sign nothing else), and a
/// v2 ruling without a signed motion to hold it against is refused. An outcome without a
/// signed motion and with v1 rulings only is the form of records written before motions
/// were signed; it still applies, so those records replay unchanged.
pub fn check_ruling(
    sr: &pb::SignedRuling,
    arbiter: &str,
    motion_id: &str,
    digest: Option<&[u8; 32]>,
) -> Result<(), MotionError> {
    match digest {
        Some(d) => panel_proto::ruling_check::check_motion_digest(sr, motion_id, d).map_err(|e| {
            MotionError::RulingNotBound {
                arbiter: arbiter.to_owned(),
                reason: e.to_string(),
            }
        }),
        None if panel_proto::signing::bound_motion_digest(sr).is_some() => {
            Err(MotionError::SignedMotionRequired {
                arbiter: arbiter.to_owned(),
            })
        }
        None => Ok(()),
    }
}

/// A signed motion as the log carries it.
pub fn encode(m: &pb::Motion) -> WireMotion {
    WireMotion::new(m.encode_to_vec())
}

/// The signed motion a round holds, decoded (for readers: apply checked it when logged).
pub fn decode(wire: &WireMotion) -> Result<pb::Motion, MotionError> {
    let bytes = wire.bytes().map_err(|_| MotionError::NotHex)?;
    pb::Motion::decode(bytes.as_ref()).map_err(MotionError::Decode)
}
