//! Signed rulings as the state machine re-verifies them in `apply`.
//!
//! This is the coordinator's interim wire form until `panel-proto` lands its canonical
//! envelope; swapping it means replacing [`SignedRuling::canonical_bytes`] and
//! [`SignedRuling::verify`] with the proto crate's functions, nothing else. The canonical
//! bytes are a domain tag followed by length-prefixed fields, so no two distinct rulings
//! share bytes. Verification is `verify_strict` only (stack-notes section 4: batch
//! verification is not strict and would let replicas disagree).

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::acceptance::{Decision, RevealedRuling};

/// Domain tag: a signature for anything else never verifies as a ruling.
pub const RULING_DOMAIN: &[u8] = b"crucible-panel/coordinator/ruling/v0\0";

/// One arbiter's signed answer to one motion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignedRuling {
    pub motion_id: String,
    /// Hex SHA-256 of the debate state the arbiter judged; must equal the motion's.
    pub state_hash: String,
    pub arbiter_id: String,
    pub decision: Decision,
    pub probability_milli: u16,
    pub relevance: Option<u8>,
    /// Hex ed25519 signature over [`SignedRuling::canonical_bytes`].
    pub signature: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RulingError {
    #[error("signature of {arbiter} is not 64 hex-encoded bytes")]
    MalformedSignature { arbiter: String },
    #[error("public key of {arbiter} is not a valid 32-byte ed25519 key")]
    MalformedKey { arbiter: String },
    #[error(
        "signature of {arbiter} does not verify (strict ed25519) over the ruling's canonical bytes"
    )]
    BadSignature { arbiter: String },
}

impl SignedRuling {
    /// Domain tag, then each field as a 4-byte big-endian length and its bytes.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(160);
        out.extend_from_slice(RULING_DOMAIN);
        let decision: &[u8] = match self.decision {
            Decision::Yes => b"yes",
            Decision::No => b"no",
        };
        let relevance = self
            .relevance
            .map(|r| vec![1, r])
            .unwrap_or_else(|| vec![0]);
        let probability = self.probability_milli.to_be_bytes();
        for field in [
            self.motion_id.as_bytes(),
            self.state_hash.as_bytes(),
            self.arbiter_id.as_bytes(),
            decision,
            &probability,
            &relevance,
        ] {
            out.extend_from_slice(&(field.len() as u32).to_be_bytes());
            out.extend_from_slice(field);
        }
        out
    }

    /// Fill in `signature` with `key`.
    pub fn sign(mut self, key: &SigningKey) -> Self {
        let sig = key.sign(&self.canonical_bytes());
        self.signature = hex::encode(sig.to_bytes());
        self
    }

    /// Strict verification against the arbiter's registered key.
    pub fn verify(&self, key: &VerifyingKey) -> Result<(), RulingError> {
        let bytes: [u8; 64] = hex::decode(&self.signature)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| RulingError::MalformedSignature {
                arbiter: self.arbiter_id.clone(),
            })?;
        key.verify_strict(&self.canonical_bytes(), &Signature::from_bytes(&bytes))
            .map_err(|_| RulingError::BadSignature {
                arbiter: self.arbiter_id.clone(),
            })
    }

    pub fn revealed(&self) -> RevealedRuling {
        RevealedRuling {
            arbiter_id: self.arbiter_id.clone(),
            decision: self.decision,
            probability_milli: self.probability_milli,
            relevance: self.relevance,
        }
    }
}

/// Parse a hex public key, refusing small-order ("weak") keys (stack-notes section 4).
pub fn parse_public_key(arbiter: &str, hex_key: &str) -> Result<VerifyingKey, RulingError> {
    let bytes: [u8; 32] = hex::decode(hex_key)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| RulingError::MalformedKey {
            arbiter: arbiter.into(),
        })?;
    let key = VerifyingKey::from_bytes(&bytes).map_err(|_| RulingError::MalformedKey {
        arbiter: arbiter.into(),
    })?;
    if key.is_weak() {
        return Err(RulingError::MalformedKey {
            arbiter: arbiter.into(),
        });
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ruling() -> SignedRuling {
        SignedRuling {
            motion_id: "m1".into(),
            state_hash: "00".repeat(32),
            arbiter_id: "a1".into(),
            decision: Decision::Yes,
            probability_milli: 900,
            relevance: None,
            signature: String::new(),
        }
    }

    #[test]
    fn sign_verify_and_tamper() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let r = ruling().sign(&key);
        r.verify(&key.verifying_key()).unwrap();
        let mut flipped = r.clone();
        flipped.decision = Decision::No;
        assert!(matches!(
            flipped.verify(&key.verifying_key()),
            Err(RulingError::BadSignature { .. })
        ));
        let other = SigningKey::from_bytes(&[8; 32]);
        assert!(r.verify(&other.verifying_key()).is_err());
        let mut garbage = r.clone();
        garbage.signature = "zz".into();
        assert!(matches!(
            garbage.verify(&key.verifying_key()),
            Err(RulingError::MalformedSignature { .. })
        ));
    }

    #[test]
    fn field_boundaries_are_unambiguous() {
        let mut a = ruling();
        a.motion_id = "ab".into();
        a.state_hash = "c".into();
        let mut b = ruling();
        b.motion_id = "a".into();
        b.state_hash = "bc".into();
        assert_ne!(a.canonical_bytes(), b.canonical_bytes());
    }

    #[test]
    fn weak_and_malformed_keys_refused() {
        // The identity point encodes as 0x01 followed by zeros: small order.
        let mut weak = [0u8; 32];
        weak[0] = 1;
        assert!(parse_public_key("x", &hex::encode(weak)).is_err());
        assert!(parse_public_key("x", "abcd").is_err());
        let good = SigningKey::from_bytes(&[3; 32]).verifying_key();
        assert!(parse_public_key("x", &hex::encode(good.to_bytes())).is_ok());
    }
}
