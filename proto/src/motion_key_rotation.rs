//! Motion-key rotation documents (docs/WIRE.md, "Motion-key rotation"): the cluster's
//! motion key (the key nodes trust to sign the motions they judge) changes only by an
//! entry that the charter's `admission_threshold` of member organisations sign with their
//! roster keys, and that the new key signs too (proof of possession: nobody rotates to a
//! key that nobody holds). The layout binds the federation's charter, a sequence number
//! and both keys, so an old rotation cannot be replayed to switch the key back.

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};

use crate::keys::{KeyError, parse_public_key, parse_signature};
use crate::signing::CanonicalWriter;

/// Domain tag of motion-key rotation canonical bytes, layout version 1.
pub const MOTION_KEY_ROTATION_TAG_V1: &[u8] = b"crucible-panel/motion-key-rotation/v1\0";

/// What a rotation says, as organisations and the new key sign it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RotationClaim<'a> {
    /// SHA-256 of the adopted charter (its JSON), naming the federation.
    pub charter_digest: &'a [u8; 32],
    /// 1 for the first rotation under the charter, then one more each time.
    pub seq: u64,
    /// The 32-byte motion key in force before the rotation.
    pub from: &'a [u8],
    /// The 32-byte motion key in force after it.
    pub to: &'a [u8],
}

/// Why a signature over a rotation is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RotationSignatureError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("the signature does not verify over the rotation's canonical bytes")]
    BadSignature,
}

/// Canonical bytes of a rotation claim.
pub fn rotation_canonical_bytes(c: &RotationClaim<'_>) -> Result<Vec<u8>, RotationSignatureError> {
    let from = parse_public_key(c.from)?;
    let to = parse_public_key(c.to)?;
    let mut w = CanonicalWriter::new(MOTION_KEY_ROTATION_TAG_V1);
    w.fixed(c.charter_digest);
    w.u64(c.seq);
    w.fixed(from.as_bytes());
    w.fixed(to.as_bytes());
    Ok(w.finish())
}

/// A signature (64 bytes) over the claim: an organisation's roster key endorsing it, or
/// the new motion key proving possession.
pub fn sign_rotation(
    c: &RotationClaim<'_>,
    key: &SigningKey,
) -> Result<Vec<u8>, RotationSignatureError> {
    Ok(key.sign(&rotation_canonical_bytes(c)?).to_bytes().to_vec())
}

/// Verifies one signature over the claim strictly under `key`.
pub fn verify_rotation(
    c: &RotationClaim<'_>,
    signature: &[u8],
    key: &VerifyingKey,
) -> Result<(), RotationSignatureError> {
    let bytes = rotation_canonical_bytes(c)?;
    let sig = parse_signature(signature)?;
    key.verify_strict(&bytes, &sig)
        .map_err(|_| RotationSignatureError::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_binds_charter_sequence_and_both_keys() {
        let old = SigningKey::from_bytes(&[1; 32]).verifying_key().to_bytes();
        let new = SigningKey::from_bytes(&[2; 32]).verifying_key().to_bytes();
        let other = SigningKey::from_bytes(&[3; 32]).verifying_key().to_bytes();
        let org = SigningKey::from_bytes(&[9; 32]);
        let claim = RotationClaim {
            charter_digest: &[7; 32],
            seq: 1,
            from: &old,
            to: &new,
        };
        let sig = sign_rotation(&claim, &org).unwrap();
        assert!(verify_rotation(&claim, &sig, &org.verifying_key()).is_ok());
        for changed in [
            RotationClaim {
                charter_digest: &[8; 32],
                ..claim
            },
            RotationClaim { seq: 2, ..claim },
            RotationClaim {
                from: &other,
                ..claim
            },
            RotationClaim {
                to: &other,
                ..claim
            },
        ] {
            assert_eq!(
                verify_rotation(&changed, &sig, &org.verifying_key()),
                Err(RotationSignatureError::BadSignature)
            );
        }
        let stranger = SigningKey::from_bytes(&[4; 32]).verifying_key();
        assert!(verify_rotation(&claim, &sig, &stranger).is_err());
        assert!(matches!(
            rotation_canonical_bytes(&RotationClaim {
                to: &[0; 5],
                ..claim
            }),
            Err(RotationSignatureError::Key(_))
        ));
    }
}
