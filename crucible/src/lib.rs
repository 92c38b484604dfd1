//! The Crucible Protocol v1.1 engine: the debate document, the Gate, scoring and every
//! writer of SPEC sections 6 to 12.
//!
//! Pure and deterministic: no I/O, no clock, no randomness. Time and ids come from an
//! injected [`env::Env`], so a replay with the same environment yields a byte-identical
//! document (SPEC section 2, commitment 6).

pub mod appeal;
pub mod challenge;
pub mod contribution;
pub mod document;
pub mod env;
pub mod error;
pub mod example;
pub mod gate;
pub mod merge;
pub mod migrate;
pub mod model;
pub mod motion;
pub mod phase;
pub mod protocol;
pub mod replay;
pub mod report;
pub mod scenario;
pub mod scoring;
pub mod steelman;
pub mod verdict;

pub use document::{Citation, Debate, Side};
pub use env::{Env, FixedEnv};
pub use error::{Code, Outcome, Refusal};
pub use protocol::{Conformance, Protocol};
