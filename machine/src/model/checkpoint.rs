//! One checkpoint apply issued, with the cosignatures it received (`checkpoints`).

use serde::{Deserialize, Serialize};

/// One checkpoint the state machine issued, with the cosignatures it received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedCheckpoint {
    pub size: u64,
    /// Base64 RFC 6962 root of the first `size` entries.
    pub root: String,
    /// Batch time at which it was issued.
    pub time_ms: u64,
    /// Witness cosignature lines (without the final newline), one per witness.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cosignatures: Vec<String>,
    /// Under a quorum log: the replicas' log signature lines (without the final newline),
    /// one per replica key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_signatures: Vec<String>,
}
