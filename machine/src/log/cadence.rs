//! What the leader stamps and sends about checkpoints: the cadence at which apply issues
//! them, and the cosignatures returned for one (docs/WIRE.md section 11).

use serde::{Deserialize, Serialize};

/// When apply issues checkpoints; stamped by the leader on each batch from its flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cadence {
    /// Issue once this many entries were added since the last checkpoint.
    pub every_entries: u64,
    /// Issue once this much batch time passed since the last one (if anything was added).
    pub every_ms: u64,
}

impl Default for Cadence {
    fn default() -> Self {
        Cadence {
            every_entries: 256,
            every_ms: 1_000,
        }
    }
}

/// `AddCosignatures`: the cosignatures witnesses returned for the checkpoint at `size`, and
/// under a quorum log the replicas' log signatures over it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cosignatures {
    pub size: u64,
    pub lines: Vec<String>,
}
