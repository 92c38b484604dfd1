//! The record's Merkle log (`panel_tlog::merkle`, RFC 6962) and the checkpoint layout of
//! records exported before the witnessed log (format v1), which `panel verify` still reads.
//! New records carry C2SP checkpoints (`crate::features::checkpoints`, docs/WIRE.md).

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
pub use panel_tlog::merkle::*;
use serde::{Deserialize, Serialize};

/// Domain tag of a v1 record's signed checkpoint.
pub const CHECKPOINT_DOMAIN: &[u8] = b"crucible-panel/checkpoint/v1\0";

/// Why a v1 checkpoint does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LegacyCheckpointError {
    #[error("the checkpoint root is not 64 hex digits")]
    BadRoot,
    #[error("the checkpoint signature does not verify under the stated key")]
    BadSignature,
    #[error("the checkpoint key is not a valid ed25519 public key")]
    BadKey,
}

/// A signed statement "the log had `size` entries with `root` at `time_ms`".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub size: u64,
    /// The SHA-256 root.
    pub root: crate::rules::hex_bytes::DigestBytes,
    pub time_ms: u64,
    /// The ed25519 public key of the signer.
    pub signer: crate::rules::hex_bytes::PublicKeyBytes,
    /// The ed25519 signature over [`Checkpoint::signed_bytes`].
    pub signature: crate::rules::hex_bytes::SignatureBytes,
}

impl Checkpoint {
    /// Domain tag || size (u64 BE) || root (32 bytes) || time (u64 BE).
    pub fn signed_bytes(size: u64, root: &Hash, time_ms: u64) -> Vec<u8> {
        let mut b = Vec::with_capacity(CHECKPOINT_DOMAIN.len() + 48);
        b.extend_from_slice(CHECKPOINT_DOMAIN);
        b.extend_from_slice(&size.to_be_bytes());
        b.extend_from_slice(root);
        b.extend_from_slice(&time_ms.to_be_bytes());
        b
    }

    pub fn sign(key: &SigningKey, size: u64, root: &Hash, time_ms: u64) -> Checkpoint {
        let sig = key.sign(&Self::signed_bytes(size, root, time_ms));
        Checkpoint {
            size,
            root: crate::rules::hex_bytes::DigestBytes::new(*root),
            time_ms,
            signer: crate::rules::hex_bytes::PublicKeyBytes::new(key.verifying_key().to_bytes()),
            signature: crate::rules::hex_bytes::SignatureBytes::new(sig.to_bytes()),
        }
    }

    /// Checks the signature strictly and returns the root it vouches for.
    pub fn verify(&self) -> Result<Hash, LegacyCheckpointError> {
        let root: Hash = self.root.array().ok_or(LegacyCheckpointError::BadRoot)?;
        let key_bytes: [u8; 32] = self.signer.array().ok_or(LegacyCheckpointError::BadKey)?;
        let key =
            VerifyingKey::from_bytes(&key_bytes).map_err(|_| LegacyCheckpointError::BadKey)?;
        let sig_bytes: [u8; 64] = self
            .signature
            .array()
            .ok_or(LegacyCheckpointError::BadSignature)?;
        let sig = Signature::from_bytes(&sig_bytes);
        key.verify_strict(&Self::signed_bytes(self.size, &root, self.time_ms), &sig)
            .map_err(|_| LegacyCheckpointError::BadSignature)?;
        Ok(root)
    }
}
