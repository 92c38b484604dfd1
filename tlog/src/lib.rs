//! The record's transparency log formats (docs/WIRE.md, "Transparency log"), pure: no I/O,
//! no clock (callers pass timestamps). Follows C2SP at the commit named in docs/WIRE.md.
//!
//! - [`merkle`]: RFC 6962 trees, inclusion and consistency proofs;
//! - [`note`]: signed-note v1.0.0 and verifier keys;
//! - [`checkpoint`]: tlog-checkpoint v1.0.0;
//! - [`cosignature`]: tlog-cosignature v1.0.1, Ed25519 (`cosignature/v1`);
//! - [`log_quorum`]: checkpoints signed by replicas of several organisations;
//! - [`witness`]: the rules of tlog-witness v1.0.0 `add-checkpoint`;
//! - [`proof`]: the tlog-proof offline bundle (editor's draft);
//! - [`policy`]: tlog-policy files and quorums (editor's draft);
//! - [`tiles`]: tlog-tiles, the record as static tiles, entry bundles and checkpoint.

pub mod checkpoint;
pub mod cosignature;
pub mod log_quorum;
pub mod merkle;
pub mod note;
pub mod policy;
pub mod proof;
pub mod tiles;
pub mod witness;

pub use checkpoint::Checkpoint;
pub use cosignature::Cosigner;
pub use log_quorum::{LogQuorum, LogQuorumError, LogSigner};
pub use merkle::{Hash, Log, ProofError};
pub use note::{Note, NoteError, NoteSigner, SignatureLine, SignatureLineError, VerifierKey};
pub use policy::{Policy, QuorumMiss};
pub use proof::ProofBundle;
