//! The arbiter link handshake (`link.proto`, docs/WIRE.md "Arbiter link"): the bytes a
//! node signs to prove it holds its registered key when it connects out to a coordinator.
//!
//! The coordinator sends a fresh 32-byte nonce per stream and its replica id; the node
//! signs `"crucible-panel/link-hello/v1\0" || nonce || u16 len || arbiter_id || replica_id
//! (u64 BE)`. The nonce makes every hello single-use (a hello recorded on one stream does
//! not verify on another); the arbiter id and replica id bind it to one registration and
//! one replica. Verification is strict ed25519, as for rulings.

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use thiserror::Error;

use crate::keys::{self, KeyError};
use crate::pb::{LinkChallenge, LinkHello};
use crate::signing::CanonicalWriter;

/// Domain tag of the link hello, layout version 1.
pub const LINK_HELLO_TAG_V1: &[u8] = b"crucible-panel/link-hello/v1\0";
/// The link protocol version this crate speaks.
pub const LINK_VERSION: u32 = 1;
/// Length of the challenge nonce.
pub const NONCE_LEN: usize = 32;
/// Longest arbiter id a hello may carry, in bytes.
pub const MAX_ARBITER_ID_BYTES: usize = 256;

/// Why a hello cannot be built or does not verify.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HelloError {
    #[error("challenge nonce is {0} bytes; the link challenge nonce is exactly 32 bytes")]
    NonceLength(usize),
    #[error(
        "link protocol version {0} is not supported; this build speaks version 1 \
         (upgrade the node or the coordinator so both speak the same version)"
    )]
    Version(u32),
    #[error("hello has an empty arbiter_id; give the id the arbiter was registered under")]
    EmptyArbiterId,
    #[error("arbiter_id is {0} bytes; at most 256 bytes are allowed")]
    ArbiterIdTooLong(usize),
    #[error("hello key refused: {0}")]
    Key(#[from] KeyError),
    #[error(
        "hello signature for arbiter {arbiter_id:?} does not verify (strict ed25519) over this \
         link's challenge: it was signed by another key, for another challenge (a replayed \
         hello) or for another replica"
    )]
    BadSignature { arbiter_id: String },
}

/// Canonical bytes of a hello (docs/WIRE.md, "Arbiter link").
pub fn hello_canonical_bytes(
    nonce: &[u8],
    arbiter_id: &str,
    replica_id: u64,
) -> Result<Vec<u8>, HelloError> {
    if nonce.len() != NONCE_LEN {
        return Err(HelloError::NonceLength(nonce.len()));
    }
    if arbiter_id.is_empty() {
        return Err(HelloError::EmptyArbiterId);
    }
    if arbiter_id.len() > MAX_ARBITER_ID_BYTES {
        return Err(HelloError::ArbiterIdTooLong(arbiter_id.len()));
    }
    let mut w = CanonicalWriter::new(LINK_HELLO_TAG_V1);
    w.fixed(nonce);
    w.text(arbiter_id);
    w.fixed(&replica_id.to_be_bytes());
    Ok(w.finish())
}

/// The node's answer to a challenge.
pub fn sign_hello(
    key: &SigningKey,
    challenge: &LinkChallenge,
    arbiter_id: &str,
) -> Result<LinkHello, HelloError> {
    if challenge.version != LINK_VERSION {
        return Err(HelloError::Version(challenge.version));
    }
    let bytes = hello_canonical_bytes(&challenge.nonce, arbiter_id, challenge.replica_id)?;
    Ok(LinkHello {
        arbiter_id: arbiter_id.to_owned(),
        public_key: key.verifying_key().to_bytes().to_vec(),
        signature: key.sign(&bytes).to_bytes().to_vec(),
    })
}

/// Verifies `hello` against the challenge this stream issued, under `key` (the key
/// registered for the arbiter; the caller checks that `hello.public_key` names it).
pub fn verify_hello(
    hello: &LinkHello,
    nonce: &[u8],
    replica_id: u64,
    key: &VerifyingKey,
) -> Result<(), HelloError> {
    let bytes = hello_canonical_bytes(nonce, &hello.arbiter_id, replica_id)?;
    let sig = keys::parse_signature(&hello.signature)?;
    key.verify_strict(&bytes, &sig)
        .map_err(|_| HelloError::BadSignature {
            arbiter_id: hello.arbiter_id.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn challenge(nonce: u8, replica_id: u64) -> LinkChallenge {
        LinkChallenge {
            nonce: vec![nonce; 32],
            replica_id,
            version: LINK_VERSION,
        }
    }

    #[test]
    fn layout_is_tag_nonce_id_replica() {
        let b = hello_canonical_bytes(&[7; 32], "arb-1", 3).unwrap();
        let mut want = LINK_HELLO_TAG_V1.to_vec();
        want.extend_from_slice(&[7; 32]);
        want.extend_from_slice(&[0, 5]);
        want.extend_from_slice(b"arb-1");
        want.extend_from_slice(&3u64.to_be_bytes());
        assert_eq!(b, want);
    }

    #[test]
    fn signed_hello_verifies_only_for_its_challenge_id_replica_and_key() {
        let key = SigningKey::from_bytes(&[1; 32]);
        let vk = key.verifying_key();
        let h = sign_hello(&key, &challenge(9, 2), "arb-1").unwrap();
        assert_eq!(h.public_key, vk.to_bytes().to_vec());
        verify_hello(&h, &[9; 32], 2, &vk).unwrap();
        // Replayed on another stream (another nonce), or at another replica.
        assert!(matches!(
            verify_hello(&h, &[8; 32], 2, &vk),
            Err(HelloError::BadSignature { .. })
        ));
        assert!(matches!(
            verify_hello(&h, &[9; 32], 3, &vk),
            Err(HelloError::BadSignature { .. })
        ));
        // Moved to another arbiter id.
        let mut moved = h.clone();
        moved.arbiter_id = "arb-2".into();
        assert!(verify_hello(&moved, &[9; 32], 2, &vk).is_err());
        // Checked under another key.
        let other = SigningKey::from_bytes(&[2; 32]).verifying_key();
        assert!(verify_hello(&h, &[9; 32], 2, &other).is_err());
    }

    #[test]
    fn malformed_hellos_are_named() {
        let key = SigningKey::from_bytes(&[1; 32]);
        let vk = key.verifying_key();
        let mut h = sign_hello(&key, &challenge(9, 2), "arb-1").unwrap();
        h.signature.truncate(10);
        assert_eq!(
            verify_hello(&h, &[9; 32], 2, &vk),
            Err(HelloError::Key(KeyError::SignatureLength(10)))
        );
        assert_eq!(
            hello_canonical_bytes(&[0; 31], "a", 1),
            Err(HelloError::NonceLength(31))
        );
        assert_eq!(
            hello_canonical_bytes(&[0; 32], "", 1),
            Err(HelloError::EmptyArbiterId)
        );
        let long = "x".repeat(300);
        assert_eq!(
            hello_canonical_bytes(&[0; 32], &long, 1),
            Err(HelloError::ArbiterIdTooLong(300))
        );
        let mut c = challenge(1, 1);
        c.version = 2;
        assert_eq!(sign_hello(&key, &c, "a"), Err(HelloError::Version(2)));
    }
}
