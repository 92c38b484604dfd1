//! Stance declarations (docs/WIRE.md, "Stance declaration"): an arbiter's prior is a claim
//! about one debate, signed by the arbiter's own key, not one label for every debate. The
//! debate id is signed, so a declaration for one debate cannot be replayed onto another;
//! the arbiter id is signed, so it cannot be moved to another arbiter holding the same key.

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};

use crate::keys::{KeyError, parse_signature};
use crate::signing::CanonicalWriter;

/// Domain tag of stance-declaration canonical bytes, layout version 1.
pub const STANCE_DECLARATION_TAG_V1: &[u8] = b"crucible-panel/stance-declaration/v1\0";

/// Longest arbiter or debate id a declaration may carry, in bytes.
pub const MAX_DECLARATION_TEXT: usize = 256;

/// What a declaration claims, as the signature covers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeclarationClaim<'a> {
    pub arbiter_id: &'a str,
    pub debate_id: &'a str,
    /// `A`, `B` or `none`.
    pub side: &'a str,
    /// The arbiter's credence in its side, in thousandths (0..=1000).
    pub credence_permille: u16,
}

/// Why a declaration's signature is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeclarationError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error(
        "stance declaration field {field} is {len} bytes; at most {MAX_DECLARATION_TEXT} are allowed"
    )]
    TooLong { field: &'static str, len: usize },
    #[error("credence_permille is {0}; it must lie in 0..=1000 (a credence of 0.7 is 700)")]
    Credence(u16),
    #[error(
        "the stance declaration's signature does not verify under the arbiter's registered key: \
         it must be signed by that key for this arbiter, debate, side and credence \
         (`panel arbiter declare --key ARBITER.key`)"
    )]
    BadSignature,
}

/// Canonical bytes of a declaration: the tag, then the u16-length-prefixed arbiter id,
/// debate id and side, then the credence as a big-endian u32.
pub fn declaration_canonical_bytes(c: &DeclarationClaim<'_>) -> Result<Vec<u8>, DeclarationError> {
    for (field, text) in [
        ("arbiter_id", c.arbiter_id),
        ("debate_id", c.debate_id),
        ("side", c.side),
    ] {
        if text.len() > MAX_DECLARATION_TEXT {
            return Err(DeclarationError::TooLong {
                field,
                len: text.len(),
            });
        }
    }
    if c.credence_permille > 1000 {
        return Err(DeclarationError::Credence(c.credence_permille));
    }
    let mut w = CanonicalWriter::new(STANCE_DECLARATION_TAG_V1);
    w.text(c.arbiter_id);
    w.text(c.debate_id);
    w.text(c.side);
    w.u32(u32::from(c.credence_permille));
    Ok(w.finish())
}

/// Signs a declaration with the arbiter's key (64 bytes).
pub fn sign_declaration(
    claim: &DeclarationClaim<'_>,
    arbiter: &SigningKey,
) -> Result<Vec<u8>, DeclarationError> {
    Ok(arbiter
        .sign(&declaration_canonical_bytes(claim)?)
        .to_bytes()
        .to_vec())
}

/// Verifies a declaration's signature strictly under the arbiter's key.
pub fn verify_declaration(
    claim: &DeclarationClaim<'_>,
    signature: &[u8],
    arbiter_key: &VerifyingKey,
) -> Result<(), DeclarationError> {
    let bytes = declaration_canonical_bytes(claim)?;
    let sig = parse_signature(signature)?;
    arbiter_key
        .verify_strict(&bytes, &sig)
        .map_err(|_| DeclarationError::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim() -> DeclarationClaim<'static> {
        DeclarationClaim {
            arbiter_id: "arb-1",
            debate_id: "deb_1",
            side: "A",
            credence_permille: 700,
        }
    }

    #[test]
    fn every_field_is_bound_and_only_the_arbiters_key_signs() {
        let key = SigningKey::from_bytes(&[5; 32]);
        let sig = sign_declaration(&claim(), &key).unwrap();
        assert!(verify_declaration(&claim(), &sig, &key.verifying_key()).is_ok());
        for c in [
            DeclarationClaim {
                arbiter_id: "arb-2",
                ..claim()
            },
            DeclarationClaim {
                debate_id: "deb_2",
                ..claim()
            },
            DeclarationClaim {
                side: "B",
                ..claim()
            },
            DeclarationClaim {
                credence_permille: 900,
                ..claim()
            },
        ] {
            assert_eq!(
                verify_declaration(&c, &sig, &key.verifying_key()),
                Err(DeclarationError::BadSignature),
                "{c:?}"
            );
        }
        let other = SigningKey::from_bytes(&[6; 32]);
        assert_eq!(
            verify_declaration(&claim(), &sig, &other.verifying_key()),
            Err(DeclarationError::BadSignature)
        );
    }

    #[test]
    fn malformed_declarations_are_named() {
        let key = SigningKey::from_bytes(&[5; 32]);
        let long = "x".repeat(MAX_DECLARATION_TEXT + 1);
        assert!(matches!(
            sign_declaration(
                &DeclarationClaim {
                    debate_id: &long,
                    ..claim()
                },
                &key
            ),
            Err(DeclarationError::TooLong {
                field: "debate_id",
                ..
            })
        ));
        assert_eq!(
            sign_declaration(
                &DeclarationClaim {
                    credence_permille: 1001,
                    ..claim()
                },
                &key
            ),
            Err(DeclarationError::Credence(1001))
        );
        assert!(matches!(
            verify_declaration(&claim(), &[0; 10], &key.verifying_key()),
            Err(DeclarationError::Key(_))
        ));
    }
}
