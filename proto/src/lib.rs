//! Crucible Panel wire protocol (`crucible.panel.v1`).
//!
//! * [`pb`]: the generated protobuf messages and the gRPC client/server for the arbiter
//!   node (compiled from `panel.proto` by protox in `build.rs`; no system `protoc`).
//! * [`signing`]: canonical bytes, domain tags and ed25519 signatures of rulings,
//!   commitments and key documents. Signatures never depend on protobuf encoding details.
//! * [`keys`]: public-key parsing with weak-key refusal, fingerprints, key rotation and
//!   revocation documents.
//! * [`commit_reveal`]: commitment digests and [`CommitRevealBook`], the pure state
//!   machine that enforces one commitment per arbiter per motion and reveal-after-window.
//! * [`ruling_check`]: shape rules a ruling must satisfy (ranges, decision per motion kind)
//!   and the binding of a ruling to the motion it answers.
//! * [`motion_signing`]: canonical bytes, digest and signature of the motions a
//!   coordinator puts to nodes (signed by the cluster's motion key).
//! * [`round`]: one commit-reveal round as a sans-I/O core: the [`round::Window`] rule of
//!   what may happen when, and the driver's [`round::Round`], which says what to do next
//!   and until when to sleep.
//! * [`link`]: the signed hello of the arbiter link (`link.proto`), the stream a node
//!   opens to a coordinator when it cannot be called.
//!
//! The byte layouts, domain tags and versioning rule are documented in `docs/WIRE.md`;
//! test vectors live in `testvectors/`.

pub mod breaker_order;
pub mod commit_reveal;
pub mod keys;
pub mod link;
pub mod membership_change;
pub mod motion_key_rotation;
pub mod motion_signing;
pub mod organisation;
pub mod registration;
pub mod round;
pub mod ruling_check;
pub mod signing;
pub mod stance_declaration;

/// Generated messages and services of package `crucible.panel.v1`.
pub mod pb {
    #![allow(clippy::doc_lazy_continuation, clippy::large_enum_variant)]
    include!(concat!(env!("OUT_DIR"), "/crucible.panel.v1.rs"));
}

/// The encoded `FileDescriptorSet` of `panel.proto` and `link.proto`, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/panel_descriptor.bin"));

/// The coordinator's client API (`coordinator.proto`, package `crucible.coordinator.v1`):
/// the coordinator serves it, the CLI and the arbiter node call it, so all share one
/// generated schema.
pub mod coordinator_pb {
    #![allow(clippy::all, missing_docs)]
    include!(concat!(env!("OUT_DIR"), "/crucible.coordinator.v1.rs"));
}

/// The encoded `FileDescriptorSet` of `coordinator.proto`, for gRPC server reflection.
pub const COORDINATOR_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/coordinator_descriptor.bin"));

pub use commit_reveal::{CommitRevealBook, CommitRevealError, MotionWindow};
pub use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
pub use keys::{KeyError, fingerprint, parse_public_key};
pub use motion_signing::{MotionSignatureError, motion_digest, sign_motion, verify_motion};
pub use ruling_check::{BindingError, RulingError};
pub use signing::{VerifiedMemo, VerifyError, sign_ruling, verify_ruling, verify_rulings_batch};
