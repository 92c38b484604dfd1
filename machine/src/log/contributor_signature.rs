//! A contributor's own signature over a write, as the log carries it (`authorship`
//! checks it).

use serde::{Deserialize, Serialize};

/// A key's signature over one write, hex encoded: a contributor's over its contribution,
/// a run role's over its input (`run_roles`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContributorSignature {
    /// The 32-byte ed25519 public key.
    pub public_key: crate::rules::hex_bytes::PublicKeyBytes,
    /// The 64-byte signature over [`signed_bytes`].
    pub signature: crate::rules::hex_bytes::SignatureBytes,
}
