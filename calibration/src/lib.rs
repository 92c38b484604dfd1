//! Calibration for the arbiter panel: proper scoring rules, Cooke's classical model,
//! agreement statistics, inert-factor detection, the bridging model and the prior
//! consistency check, the exam format and the admission policy.
//!
//! Pure: no I/O, no clock, no randomness (the bridging fit draws its initial factors from a
//! seeded generator; admission takes "now" as an argument). Formulas and their sources are
//! collected in docs/CALIBRATION.md.

pub mod admission;
pub mod agreement;
pub mod bridging;
pub mod canonical_json;
pub mod chi_square;
pub mod cooke;
pub mod error;
pub mod exam;
pub mod exam_scoring;

pub mod independence;
pub mod inert;
pub mod prior_consistency;
pub mod recalibration;
pub mod reliability_svg;
pub mod request;
mod request_field;
pub mod response;

pub mod scoring_rules;
pub mod seeded_rng;

pub use error::{CalibrationError, Result};
