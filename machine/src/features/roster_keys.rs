//! Member organisations' roster keys over time (docs/FEDERATION.md "Rotating a roster
//! key"): a member's key is its entry's `signing_key` until a `RotateRosterKey` entry,
//! signed by the new key and endorsed by the charter's `admission_threshold` of members
//! including the member itself, puts another in force. The replaced key still counts for
//! the overlap the rotation names (at most [`MAX_OVERLAP_MS`]), so registrations signed
//! just before the change are not lost; after it, only the new key speaks for the member.

use panel_proto::organisation::{
    EndorsementError as SignatureError, RosterRotationClaim, sign_roster_rotation,
    verify_roster_rotation,
};
use panel_proto::{SigningKey, VerifyingKey};

use crate::command::RosterKeyRotation;
use crate::features::endorsers::{
    EndorsementError, current_roster_key, distinct_endorsers, organisations, roster_key_holder,
};
use crate::model::{RosterKeyChange, State};
use crate::rules::hex_bytes::{PublicKeyBytes, SignatureBytes};

/// The longest a replaced roster key keeps counting: seven days.
pub const MAX_OVERLAP_MS: u64 = 7 * 24 * 3_600_000;

/// Why a roster-key rotation (or a signature over one) is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RosterRotationError {
    #[error("the group has no charter, so no member has a roster key to rotate")]
    Unchartered,
    #[error("organisation {0:?} is not a member")]
    NotMember(String),
    #[error(
        "seq is {seq}, but {organisation:?}'s next rotation is {expected}; sign the rotation \
         again with seq {expected}"
    )]
    WrongSeq {
        organisation: String,
        seq: u64,
        expected: u64,
    },
    #[error("to is not 32 bytes of hex (the new roster key's public half)")]
    ToNotHex,
    #[error("to: {0}")]
    To(panel_proto::KeyError),
    #[error(
        "to: the key is (or was) organisation {0:?}'s roster key; every rotation brings a \
         key never used before"
    )]
    Reused(String),
    #[error("overlap_ms is {0}; at most {MAX_OVERLAP_MS} (seven days) is allowed")]
    OverlapTooLong(u64),
    #[error("possession: the new key's signature does not verify: {0}")]
    Possession(SignatureError),
    #[error(
        "{organisation:?} does not endorse its own rotation with its current roster key; a \
         member's key changes only with its consent"
    )]
    NotEndorsedByMember { organisation: String },
    #[error(transparent)]
    Endorsement(#[from] EndorsementError<SignatureError>),
    #[error(
        "{found} distinct member organisation(s) endorse the rotation; the charter requires \
         {required}"
    )]
    TooFewEndorsers { found: usize, required: usize },
    #[error("the charter cannot be digested, so no rotation can be signed under it: {0}")]
    Charter(#[from] panel_federation::CharterError),
    #[error("the rotation cannot be signed: {0}")]
    Signing(SignatureError),
}

/// The next seq of `name`'s rotations.
fn next_seq(state: &State, name: &str) -> u64 {
    state
        .roster_keys
        .iter()
        .filter(|c| c.organisation == name)
        .count() as u64
        + 1
}

/// The claim `rot` makes about `member`, whose key in force is `from`.
fn claim<'a>(
    digest: &'a [u8; 32],
    rot: &'a RosterKeyRotation,
    from: &'a [u8; 32],
    to: &'a [u8; 32],
) -> RosterRotationClaim<'a> {
    RosterRotationClaim {
        charter_digest: digest,
        organisation: &rot.organisation,
        seq: rot.seq,
        from,
        to,
        overlap_ms: rot.overlap_ms,
    }
}

/// A signature over `rot` by `key` (an endorsing member's roster key, or the new key
/// proving possession), for the federation of `state`'s charter.
pub fn sign(
    charter: &panel_federation::Charter,
    rot: &RosterKeyRotation,
    from: &VerifyingKey,
    key: &SigningKey,
) -> Result<SignatureBytes, RosterRotationError> {
    let digest = charter.digest()?;
    let to = rot.to.array::<32>().ok_or(RosterRotationError::ToNotHex)?;
    sign_roster_rotation(&claim(&digest, rot, from.as_bytes(), &to), key)
        .map(SignatureBytes::new)
        .map_err(RosterRotationError::Signing)
}

/// Checks a rotation and returns the change it makes at `log_index`.
pub fn check(
    state: &State,
    rot: &RosterKeyRotation,
    log_index: u64,
) -> Result<RosterKeyChange, RosterRotationError> {
    type E = RosterRotationError;
    let charter = state.charter.as_ref().ok_or(E::Unchartered)?;
    let member = organisations(state)
        .find(|o| o.name == rot.organisation)
        .ok_or_else(|| E::NotMember(rot.organisation.clone()))?;
    let expected = next_seq(state, &member.name);
    if rot.seq != expected {
        return Err(E::WrongSeq {
            organisation: member.name.clone(),
            seq: rot.seq,
            expected,
        });
    }
    if rot.overlap_ms > MAX_OVERLAP_MS {
        return Err(E::OverlapTooLong(rot.overlap_ms));
    }
    let to_bytes = rot.to.bytes().map_err(|_| E::ToNotHex)?;
    let to = panel_proto::parse_public_key(&to_bytes).map_err(E::To)?;
    if let Some(holder) = roster_key_holder(state, &to) {
        return Err(E::Reused(holder));
    }
    let from =
        current_roster_key(state, member).ok_or_else(|| E::NotMember(member.name.clone()))?;
    let digest = charter.digest()?;
    let claim = claim(&digest, rot, from.as_bytes(), to.as_bytes());
    let possession = rot
        .possession
        .bytes()
        .map_err(|_| E::Possession(SignatureError::BadSignature))?;
    verify_roster_rotation(&claim, &possession, &to).map_err(E::Possession)?;
    // The member itself must consent, with the key in force now.
    let consents = rot.endorsements.iter().any(|e| {
        e.by == member.name
            && e.signature
                .bytes()
                .is_ok_and(|sig| verify_roster_rotation(&claim, &sig, &from).is_ok())
    });
    if !consents {
        return Err(E::NotEndorsedByMember {
            organisation: member.name.clone(),
        });
    }
    let found = distinct_endorsers(state, &rot.endorsements, |sig, by| {
        verify_roster_rotation(&claim, sig, by)
    })?;
    if found < charter.admission_threshold {
        return Err(E::TooFewEndorsers {
            found,
            required: charter.admission_threshold,
        });
    }
    Ok(RosterKeyChange {
        organisation: member.name.clone(),
        seq: rot.seq,
        key: PublicKeyBytes::new(to.to_bytes()),
        previous: PublicKeyBytes::new(from.to_bytes()),
        log_index,
        overlap_until_ms: state.batch_time_ms.saturating_add(rot.overlap_ms),
    })
}
