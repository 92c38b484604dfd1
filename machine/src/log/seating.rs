//! `SeatMotion`: the replicas' beacon shares a motion's panel is drawn from
//! (`beacon.rs`; docs/WIRE.md "Beacon seating").

use serde::{Deserialize, Serialize};

/// One replica's VRF proof over a question key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BeaconShare {
    /// The replica's Raft id, as the charter lists it.
    pub replica: u64,
    /// The 80-byte vrf-r255 proof over `beacon::input` of the question key.
    pub proof: crate::rules::hex_bytes::ProofBytes,
}

/// The `SeatMotion` command: the shares a motion's panel is drawn from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Seating {
    pub motion_id: String,
    pub shares: Vec<BeaconShare>,
}
