//! Keys derived from names, so a test or a simulation needs no randomness: an arbiter's
//! key is the SHA-256 of its id, the motion driver's and the log's are constants.

use ed25519_dalek::SigningKey;
use sha2::{Digest, Sha256};

/// The signing key of arbiter `id`.
pub fn arbiter_key(id: &str) -> SigningKey {
    SigningKey::from_bytes(&Sha256::digest(id.as_bytes()).into())
}

/// The key the kit's motion driver signs the motions of a round with (no charter pins
/// one, docs/coordinator/state-machine.md "The commit-reveal round").
pub fn motion_key() -> SigningKey {
    SigningKey::from_bytes(&[7; 32])
}

/// The log key the tests export records with.
pub fn log_key() -> panel_tlog::NoteSigner {
    panel_tlog::NoteSigner::new("test.example/log", SigningKey::from_bytes(&[42; 32]))
        .expect("the kit's log key name is valid")
}
