//! The replicated coordinator (ARCHITECTURE.md, "coordinator/"): an openraft group whose log,
//! vote and state machine live in redb; a pure, deterministic state machine; the panel draw;
//! the cross-prior acceptance rule; and the client gRPC API. See docs/COORDINATOR.md.

pub mod acceptance;
pub mod admission;
pub mod api;
pub mod authorship;
pub mod bench;
pub mod client;
pub mod command;
pub mod debates;
pub mod draw;
pub mod driver;
pub mod intake;
pub mod link;
pub mod priors;
pub mod proposer;
pub mod raft;
pub mod recalibration;
pub mod record;
pub mod ruling;
pub mod server;
pub mod state;

/// Generated gRPC code (see `proto/`).
pub mod pb {
    #![allow(clippy::all, missing_docs)]
    /// Client API: `crucible.coordinator.v1`.
    pub mod coordinator {
        tonic::include_proto!("crucible.coordinator.v1");
    }
    /// Replica-to-replica transport: `crucible.coordinator.replica.v1`.
    pub mod replica {
        tonic::include_proto!("crucible.coordinator.replica.v1");
    }
    /// Encoded descriptor set of both packages, for gRPC reflection.
    pub const DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/coordinator_descriptor.bin"));
}
pub mod transparency;
