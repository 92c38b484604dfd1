//! The replicated coordinator (ARCHITECTURE.md, "coordinator/"): an openraft group whose log,
//! vote and state machine live in redb; a pure, deterministic state machine; the panel draw;
//! the cross-prior acceptance rule; and the client gRPC API. See docs/COORDINATOR.md.

pub use panel_machine::{
    acceptance, admission, apply, authorship, command, debates, draw, model, priors, query,
    recalibration, record, ruling, transparency,
};

pub mod api;
pub mod bench;
pub mod client;
pub mod driver;
pub mod intake;
pub mod link;
pub mod proposer;
pub mod raft;
pub mod server;

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
