//! Membership-change authorisations (docs/WIRE.md, "Membership change"): the voters of a
//! chartered group change only after an entry that member organisations sign with their
//! roster keys (docs/SECURITY.md, "Membership"). The layout binds the federation's
//! charter, a sequence number and the new voter set, so an endorsement of one change
//! cannot be replayed to authorise another, or the same change again later.

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};

use crate::keys::{KeyError, parse_signature};
use crate::signing::CanonicalWriter;

/// Domain tag of membership-change canonical bytes, layout version 1.
pub const MEMBERSHIP_CHANGE_TAG_V1: &[u8] = b"crucible-panel/membership-change/v1\0";

/// What a membership change says, as organisations sign it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MembershipClaim<'a> {
    /// SHA-256 of the adopted charter (its JSON), naming the federation.
    pub charter_digest: &'a [u8; 32],
    /// 1 for the first change under the charter, then one more each time.
    pub seq: u64,
    /// The Raft ids of every voter after the change, strictly ascending.
    pub voters: &'a [u64],
}

/// Why a signature over a membership change is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MembershipSignatureError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("voters must be strictly ascending Raft ids with no repeats")]
    Unordered,
    #[error("the signature does not verify over the membership change's canonical bytes")]
    BadSignature,
}

/// Canonical bytes of a membership claim.
pub fn membership_canonical_bytes(
    c: &MembershipClaim<'_>,
) -> Result<Vec<u8>, MembershipSignatureError> {
    if c.voters.windows(2).any(|w| w[0] >= w[1]) {
        return Err(MembershipSignatureError::Unordered);
    }
    let mut w = CanonicalWriter::new(MEMBERSHIP_CHANGE_TAG_V1);
    w.fixed(c.charter_digest);
    w.u64(c.seq);
    w.u64(c.voters.len() as u64);
    for v in c.voters {
        w.u64(*v);
    }
    Ok(w.finish())
}

/// An organisation's endorsement (64 bytes) of the change, by its roster key.
pub fn sign_membership(
    c: &MembershipClaim<'_>,
    key: &SigningKey,
) -> Result<Vec<u8>, MembershipSignatureError> {
    Ok(key
        .sign(&membership_canonical_bytes(c)?)
        .to_bytes()
        .to_vec())
}

/// Verifies one endorsement of the change strictly under `key`.
pub fn verify_membership(
    c: &MembershipClaim<'_>,
    signature: &[u8],
    key: &VerifyingKey,
) -> Result<(), MembershipSignatureError> {
    let bytes = membership_canonical_bytes(c)?;
    let sig = parse_signature(signature)?;
    key.verify_strict(&bytes, &sig)
        .map_err(|_| MembershipSignatureError::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_binds_charter_sequence_and_voters() {
        let org = SigningKey::from_bytes(&[9; 32]);
        let claim = MembershipClaim {
            charter_digest: &[7; 32],
            seq: 1,
            voters: &[1, 2, 3],
        };
        let sig = sign_membership(&claim, &org).unwrap();
        assert!(verify_membership(&claim, &sig, &org.verifying_key()).is_ok());
        for changed in [
            MembershipClaim {
                charter_digest: &[8; 32],
                ..claim
            },
            MembershipClaim { seq: 2, ..claim },
            MembershipClaim {
                voters: &[1],
                ..claim
            },
            MembershipClaim {
                voters: &[1, 2],
                ..claim
            },
        ] {
            assert_eq!(
                verify_membership(&changed, &sig, &org.verifying_key()),
                Err(MembershipSignatureError::BadSignature)
            );
        }
        let stranger = SigningKey::from_bytes(&[4; 32]).verifying_key();
        assert!(verify_membership(&claim, &sig, &stranger).is_err());
        assert_eq!(
            membership_canonical_bytes(&MembershipClaim {
                voters: &[2, 1],
                ..claim
            }),
            Err(MembershipSignatureError::Unordered)
        );
    }
}
