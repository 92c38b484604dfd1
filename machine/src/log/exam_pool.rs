//! A sitting's pool as the log carries it: the sealed public half with the commitment to
//! its answer key, and the reveal of the whole file (docs/CALIBRATION.md "Sealed pools").

use calibration::public_pool::PublicPool;
use serde::{Deserialize, Serialize};

/// `SealExamPool`: the public half of a pool and the commitment to its answer key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SealedPool {
    pub public: PublicPool,
    /// Hex SHA-256 from [`calibration::answer_key::commit_answer_key`].
    pub key_commitment: String,
}

/// `RevealExamKey`: the whole exam file of the open sitting's pool and the key's salt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyReveal {
    pub sitting: u32,
    /// The pool's JSONL text, golds and sources included.
    pub exam: String,
    /// Hex, 32 bytes.
    pub salt: String,
}
