//! Calibration for the arbiter panel: the statistics that admit arbiters and keep scoring
//! them (docs/CALIBRATION.md).
//!
//! It holds proper scoring rules, Cooke's classical model,
//! agreement statistics, inert-factor detection, the bridging model and the prior
//! consistency check, the exam format and the admission policy, the bias probes, the
//! per-arbiter exam draw and the answer-key commitment, and the simulated judge's formulas
//! (`judge_model`, shared by the simulator and the node's `simulated` judge), and Wilson's
//! interval for a proportion (`wilson`: reliability bins, probe flip rates), and the
//! leaderboard's baseline and peer scores (`leaderboard`).
//!
//! Pure: no I/O, no clock, no randomness (the bridging fit and the exam draw take a seed
//! for the crate's seeded generator; admission takes "now" and the commitment its salt as
//! arguments). Formulas and their sources are collected in docs/CALIBRATION.md.

pub mod admission;
pub mod agreement;
pub mod answer_key;
pub mod bias_probes;
pub mod bridging;
pub mod canonical_json;
pub mod chi_square;
pub mod cooke;
pub mod error;
pub mod exam;
pub mod exam_draw;
pub mod exam_hold_back;
pub mod exam_scoring;

pub mod independence;
pub mod inert;
pub mod judge_model;
pub mod leaderboard;
pub mod phrasing;
pub mod prior_consistency;
pub mod prior_consistency_v2;
pub mod probe_text;
pub mod public_pool;
pub mod recalibration;
pub mod reliability_svg;
pub mod request;
mod request_field;
pub mod response;

pub mod scoring_rules;
pub mod seeded_rng;
pub mod wilson;

pub use error::{CalibrationError, Result};
