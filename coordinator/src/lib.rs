//! The replicated coordinator's shell: openraft, storage, gRPC and the leader's drivers
//! around the pure state machine (docs/ARCHITECTURE.md, "coordinator/").
//!
//! It holds an openraft group on redb ([`raft`]) around the pure state machine of `panel-machine`
//! (callers name that crate's items from it: this shell re-exports none of its modules), the replica process and its gRPC
//! services, the leader's drivers and the outbound arbiter link ([`service`]), a failover
//! client ([`client`]), a local cluster as child processes ([`local`]: `panel up`, the
//! bench and the cross-process tests start one) and the bench ([`bench`]).

pub mod backup;
pub mod bench;
pub mod client;
pub mod clock;
pub mod config;
pub mod local;
pub mod raft;
pub mod service;

pub use service::driver::DriverOptions;
pub use service::proposer::ProposerOptions;
pub use service::serve::{ServeError, ServeOptions, serve};

/// Whether this build's replicas can accept test commands (the `test-commands` feature):
/// the component bench and test clusters need it, production builds leave it out.
pub const TEST_COMMANDS_BUILT: bool = cfg!(feature = "test-commands");

/// Generated gRPC code (see `proto/`).
pub mod pb {
    #![allow(clippy::all, missing_docs)]
    /// Client API: `crucible.coordinator.v1`, generated in `panel-proto` so the node
    /// shares it.
    pub use panel_proto::coordinator_pb as coordinator;
    /// Replica-to-replica transport: `crucible.coordinator.replica.v1`.
    pub mod replica {
        tonic::include_proto!("crucible.coordinator.replica.v1");
    }
    /// Encoded descriptor set of the replica package, for gRPC reflection.
    pub const REPLICA_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/replica_descriptor.bin"));
}
