//! Mutual TLS for every hop of Crucible Panel, with the charter pinning who is who
//! (docs/SECURITY.md, "Transport").
//!
//! Client ↔ replica, replica ↔ replica, coordinator ↔ arbiter node, node ↔ node and the
//! node's outbound link all run mutual TLS (rustls through tonic) over certificates issued
//! by the federation's organisations; the charter pins which certificate is which replica
//! and which operator, so a certificate from a listed authority is not by itself a role,
//! neither for a caller (`RoleGuard`) nor for a server a process dials as a replica
//! (`Peer`, `PinnedVerifier`).

pub mod charter_file;
pub mod error;
pub mod incoming;
pub mod material;
pub mod mode;
pub mod peer;
pub mod pin;
pub mod pki;
pub mod spiffe;
pub mod trust;
pub mod verify;

pub use charter_file::{Charter, Role};
pub use error::TransportError;
pub use incoming::{ConnInfo, Incoming};
pub use material::TlsMaterial;
pub use mode::{ClientAuth, Transport};
pub use peer::{Fingerprint, RoleGuard, peer_chain, peer_fingerprint, peer_leaf, remote_addr};
pub use pin::{Peer, PinError, PinnedVerifier, connect_failure, pin_error};
pub use trust::{LiveTrust, TrustView};
