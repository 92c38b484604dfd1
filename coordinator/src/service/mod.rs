//! The I/O shell around the pure machine (docs/COORDINATOR.md, "Layers and modules"): the
//! replica process and its gRPC services, the leader's drivers and proposer, intake, and
//! the outbound arbiter link.

pub mod admin;
pub mod charter_adoption;
pub mod client_api;
pub mod debates_api;
pub mod driver;
pub mod intake;
pub mod link;
pub mod log_api;
pub mod log_key;
pub mod metrics;
pub mod motion_key;
pub mod proposer;
pub mod replica;
pub mod runtime;
pub mod serve;
pub mod witnessing;
