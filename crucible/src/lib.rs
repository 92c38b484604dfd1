//! The Crucible Protocol v1.1 engine: the debate document, the Gate, scoring and every
//! writer of SPEC sections 6 to 12.
//!
//! Pure and deterministic: no I/O, no clock, no randomness. Time and ids come from an
//! injected [`env::Env`], so a replay with the same environment yields a byte-identical
//! document (SPEC section 2, commitment 6).

pub mod gate;
