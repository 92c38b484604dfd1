//! Crucible Panel's verdict-quality simulator (docs/SIMULATION.md).
//!
//! It generates worlds with known truth and arbiter populations with realistic faults
//! (position and verbosity bias, self-family preference, errors correlated through shared
//! lineage, inert relevance, false declared priors, colluding camps, sybils, a leader that
//! steers the draw), runs every motion through the machine's own draw
//! (`panel_machine::rules::draw`), draw seed (`panel_machine::features::draw_seed`) and acceptance rule
//! (`panel_machine::rules::acceptance::decide`, old and `Policy::independent()`), and measures the
//! outcomes with the calibration crate's scoring rules, prior-consistency check and inert
//! screen.
//!
//! A second engine (`replica`, figures in `replica_figures`) runs every motion through the
//! machine's `apply` instead, driven by `panel_machine::testkit`: registration, admission,
//! declared stances, commit-reveal rounds and the machine's own outcome and confidence
//! (docs/SIMULATION.md "The machine's own path"), then the parties' appeals of accepted
//! outcomes to wider fresh panels (`appeal_ladder`).
//!
//! A third, separate model (`shards`) simulates the throughput and latency of debates
//! sharded over several Raft groups on one machine, from the real path's measured CPU per
//! decision (docs/SHARDING.md).
//!
//! Pure: no I/O and no clock; randomness only from the scenario's seed. The CLI
//! (`panel sim`) reads the scenario and writes the report and plots this crate renders.

pub mod adversaries;
pub mod appeal_ladder;
pub mod bootstrap;
pub mod coalition;
pub mod error;
pub mod exam_answers;
pub mod gaussian;
pub mod impostors;
pub mod judge;
pub mod markdown;
pub mod panel;
pub mod plot;
pub mod population;
pub mod quality;
pub mod relevance;
pub mod replica;
pub mod replica_figures;
pub mod report;
pub mod scenario;
pub mod self_selection;
pub mod shards;
pub mod simulation;
pub mod sweep;
pub mod world;

pub use error::ScenarioError;
pub use report::{Options, Report, run};
pub use scenario::{Scenario, parse};
