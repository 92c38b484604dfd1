//! A test kit for driving [`apply_batch`](crate::apply::apply_batch), in the manner of
//! raft-rs's `harness/`: a replicated state driven only through the log, arbiters with
//! derived keys, fixture builders (arbiters, debates, panels, signed rulings, exams) and
//! the commit-reveal round a motion driver runs (docs/ARCHITECTURE.md "Layers of the
//! machine": the kit sits above every layer and imports downwards only).
//!
//! Compiled for this crate's unit tests and with the `testkit` feature, for other crates'
//! tests and the verdict-quality simulator (docs/SIMULATION.md). Pure like the rest of the
//! crate: batch time and seeds are parameters ([`driver::Schedule`]), keys are derived
//! from names. Helpers named `ok` or returning a fixture panic on a refusal, as a test
//! wants; the `try_` ones return [`KitError`] for callers that must not panic.

pub mod driver;
pub mod error;
pub mod exam;
pub mod fixtures;
pub mod keys;
pub mod reveal;
pub mod round;
pub mod sitting;
pub mod worked_example;

pub use driver::{Driver, Schedule, assert_refused};
pub use error::KitError;
pub use fixtures::{EIGHTEEN, SIX, Vote, hinted};
