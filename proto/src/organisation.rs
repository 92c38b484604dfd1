//! Organisation admission documents (docs/WIRE.md, "Organisation admission"): a new
//! organisation joins a chartered federation only when enough existing organisations
//! (the charter's `admission_threshold`) sign its entry with their roster keys, so no
//! single organisation can bring in a second organisation of its own making.

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};

use crate::keys::{KeyError, parse_public_key, parse_signature};
use crate::signing::CanonicalWriter;

/// Domain tag of organisation admission canonical bytes, layout version 1.
pub const ORGANISATION_ADMISSION_TAG_V1: &[u8] = b"crucible-panel/organisation-admission/v1\0";

/// The organisation being admitted, as endorsers sign it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrganisationClaim<'a> {
    pub name: &'a str,
    /// SHA-256 of its certificate authority's certificate.
    pub ca_sha256: &'a [u8; 32],
    /// Its 32-byte roster key.
    pub signing_key: &'a [u8],
}

/// Why an endorsement of an admission is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndorsementError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("organisation name is {0} bytes; at most 256 are allowed")]
    NameTooLong(usize),
    #[error("the endorsement does not verify under the endorser's roster key")]
    BadSignature,
}

/// Canonical bytes of an admission claim.
pub fn admission_canonical_bytes(c: &OrganisationClaim<'_>) -> Result<Vec<u8>, EndorsementError> {
    if c.name.len() > 256 {
        return Err(EndorsementError::NameTooLong(c.name.len()));
    }
    let key = parse_public_key(c.signing_key)?;
    let mut w = CanonicalWriter::new(ORGANISATION_ADMISSION_TAG_V1);
    w.text(c.name);
    w.fixed(c.ca_sha256);
    w.fixed(key.as_bytes());
    Ok(w.finish())
}

/// One existing organisation's endorsement (64-byte signature) of the claim.
pub fn endorse(
    c: &OrganisationClaim<'_>,
    endorser: &SigningKey,
) -> Result<Vec<u8>, EndorsementError> {
    Ok(endorser
        .sign(&admission_canonical_bytes(c)?)
        .to_bytes()
        .to_vec())
}

/// Verifies one endorsement strictly under the endorser's roster key.
pub fn verify_endorsement(
    c: &OrganisationClaim<'_>,
    signature: &[u8],
    endorser: &VerifyingKey,
) -> Result<(), EndorsementError> {
    let bytes = admission_canonical_bytes(c)?;
    let sig = parse_signature(signature)?;
    endorser
        .verify_strict(&bytes, &sig)
        .map_err(|_| EndorsementError::BadSignature)
}

/// Domain tag of organisation removal canonical bytes, layout version 1.
pub const ORGANISATION_REMOVAL_TAG_V1: &[u8] = b"crucible-panel/organisation-removal/v1\0";

/// The organisation being removed, as the other members sign it: its whole identity (so
/// an endorsement removes that organisation and no later one of the same name) under one
/// federation's charter (so it cannot be replayed in another federation both belong to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemovalClaim<'a> {
    pub charter_digest: &'a [u8; 32],
    pub organisation: OrganisationClaim<'a>,
}

/// Canonical bytes of a removal claim.
pub fn removal_canonical_bytes(c: &RemovalClaim<'_>) -> Result<Vec<u8>, EndorsementError> {
    let o = &c.organisation;
    if o.name.len() > 256 {
        return Err(EndorsementError::NameTooLong(o.name.len()));
    }
    let key = parse_public_key(o.signing_key)?;
    let mut w = CanonicalWriter::new(ORGANISATION_REMOVAL_TAG_V1);
    w.fixed(c.charter_digest);
    w.text(o.name);
    w.fixed(o.ca_sha256);
    w.fixed(key.as_bytes());
    Ok(w.finish())
}

/// One other organisation's endorsement (64-byte signature) of a removal.
pub fn endorse_removal(
    c: &RemovalClaim<'_>,
    endorser: &SigningKey,
) -> Result<Vec<u8>, EndorsementError> {
    Ok(endorser
        .sign(&removal_canonical_bytes(c)?)
        .to_bytes()
        .to_vec())
}

/// Verifies one endorsement of a removal strictly under the endorser's roster key.
pub fn verify_removal_endorsement(
    c: &RemovalClaim<'_>,
    signature: &[u8],
    endorser: &VerifyingKey,
) -> Result<(), EndorsementError> {
    let bytes = removal_canonical_bytes(c)?;
    let sig = parse_signature(signature)?;
    endorser
        .verify_strict(&bytes, &sig)
        .map_err(|_| EndorsementError::BadSignature)
}

/// Domain tag of roster-key rotation canonical bytes, layout version 1.
pub const ROSTER_KEY_ROTATION_TAG_V1: &[u8] = b"crucible-panel/roster-key-rotation/v1\0";

/// A member's change of roster key, as the endorsing members and the new key sign it: the
/// federation (charter digest), the member, a sequence number per member (so an old
/// rotation cannot be replayed to switch back), both keys, and how long the old key still
/// counts (ms after the entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RosterRotationClaim<'a> {
    pub charter_digest: &'a [u8; 32],
    pub organisation: &'a str,
    pub seq: u64,
    pub from: &'a [u8],
    pub to: &'a [u8],
    pub overlap_ms: u64,
}

/// Canonical bytes of a roster-key rotation claim.
pub fn roster_rotation_canonical_bytes(
    c: &RosterRotationClaim<'_>,
) -> Result<Vec<u8>, EndorsementError> {
    if c.organisation.len() > 256 {
        return Err(EndorsementError::NameTooLong(c.organisation.len()));
    }
    let from = parse_public_key(c.from)?;
    let to = parse_public_key(c.to)?;
    let mut w = CanonicalWriter::new(ROSTER_KEY_ROTATION_TAG_V1);
    w.fixed(c.charter_digest);
    w.text(c.organisation);
    w.u64(c.seq);
    w.fixed(from.as_bytes());
    w.fixed(to.as_bytes());
    w.u64(c.overlap_ms);
    Ok(w.finish())
}

/// A signature over the claim: a member's roster key endorsing it, or the new key proving
/// possession.
pub fn sign_roster_rotation(
    c: &RosterRotationClaim<'_>,
    key: &SigningKey,
) -> Result<Vec<u8>, EndorsementError> {
    Ok(key
        .sign(&roster_rotation_canonical_bytes(c)?)
        .to_bytes()
        .to_vec())
}

/// Verifies one signature over a roster-key rotation strictly under `key`.
pub fn verify_roster_rotation(
    c: &RosterRotationClaim<'_>,
    signature: &[u8],
    key: &VerifyingKey,
) -> Result<(), EndorsementError> {
    let bytes = roster_rotation_canonical_bytes(c)?;
    let sig = parse_signature(signature)?;
    key.verify_strict(&bytes, &sig)
        .map_err(|_| EndorsementError::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endorsement_binds_name_authority_and_key() {
        let new = SigningKey::from_bytes(&[5; 32]).verifying_key().to_bytes();
        let other = SigningKey::from_bytes(&[6; 32]).verifying_key().to_bytes();
        let endorser = SigningKey::from_bytes(&[7; 32]);
        let claim = OrganisationClaim {
            name: "eastside",
            ca_sha256: &[1; 32],
            signing_key: &new,
        };
        let sig = endorse(&claim, &endorser).unwrap();
        assert!(verify_endorsement(&claim, &sig, &endorser.verifying_key()).is_ok());
        for changed in [
            OrganisationClaim {
                name: "westside",
                ..claim
            },
            OrganisationClaim {
                ca_sha256: &[2; 32],
                ..claim
            },
            OrganisationClaim {
                signing_key: &other,
                ..claim
            },
        ] {
            assert_eq!(
                verify_endorsement(&changed, &sig, &endorser.verifying_key()),
                Err(EndorsementError::BadSignature)
            );
        }
        // An admission's endorsement is no removal's, and a removal binds its charter.
        let removal = RemovalClaim {
            charter_digest: &[3; 32],
            organisation: claim,
        };
        assert_eq!(
            verify_removal_endorsement(&removal, &sig, &endorser.verifying_key()),
            Err(EndorsementError::BadSignature)
        );
        let removed = endorse_removal(&removal, &endorser).unwrap();
        assert!(verify_removal_endorsement(&removal, &removed, &endorser.verifying_key()).is_ok());
        let elsewhere = RemovalClaim {
            charter_digest: &[4; 32],
            ..removal
        };
        assert_eq!(
            verify_removal_endorsement(&elsewhere, &removed, &endorser.verifying_key()),
            Err(EndorsementError::BadSignature)
        );
        let stranger = SigningKey::from_bytes(&[8; 32]).verifying_key();
        assert_eq!(
            verify_endorsement(&claim, &sig, &stranger),
            Err(EndorsementError::BadSignature)
        );
    }
}
