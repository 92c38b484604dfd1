//! A sitting's pool as the log carries it: the sealed public half with the commitment to
//! its answer key, and the reveal of the whole file (docs/CALIBRATION.md "Sealed pools").

use calibration::public_pool::PublicPool;
use serde::{Deserialize, Serialize};

/// `SealExamPool`: the public half of a pool and the commitment to its answer key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SealedPool {
    pub public: PublicPool,
    /// SHA-256 from [`calibration::answer_key::commit_answer_key`].
    pub key_commitment: crate::rules::hex_bytes::DigestBytes,
    /// The member organisation whose pool this is (rule set
    /// [`ORG_POOLS`](crate::rules::ORG_POOLS)); its arbiters do not sit the sitting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organisation: Option<String>,
    /// That organisation's replica's seal over the sitting, pool id and commitment
    /// (`panel_federation::pool_seal`), one C2SP note signature line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
}

/// `CloseExamSitting`: no answers are taken in the sitting from this entry on, so an
/// organisation's replica may hand its pool's key to the leader (`org_pools.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SittingClose {
    pub sitting: u32,
}

/// `RevealExamKey`: the whole exam file of the open sitting's pool and the key's salt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyReveal {
    pub sitting: u32,
    /// The pool's JSONL text, golds and sources included.
    pub exam: String,
    /// 32 bytes.
    pub salt: crate::rules::hex_bytes::SaltBytes,
}
