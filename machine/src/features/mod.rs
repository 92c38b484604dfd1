//! Functions over the state (docs/ARCHITECTURE.md "Layers of the machine", layer 5): each
//! takes `&State` or `&mut State` with the values a command carries and returns its own
//! error, which `apply/error.rs` unites. Grouped by what they serve: admission and exams,
//! the federation's own rules, panels and their answers, procedure runs.

// Admission and exams.
pub mod admission;
pub mod exam_sitting;
pub mod opaque_exam;
pub mod org_pools;

// The federation: charter rules, membership, limits, breakers, the log's checkpoints,
// the draw's beacon and seed.
pub mod beacon;
pub mod breakers;
pub mod charter_rules;
pub mod checkpoints;
pub mod draw_seed;
pub mod endorsers;
pub mod limits;
pub mod membership;
pub mod roster_keys;

// Panels and their answers: declared priors, the prior check, what decided motions say
// about lineages, fresh panels, appeals, finality, precedent, the last word,
// recalibration from resolved outcomes.
pub mod appeal_credits;
pub mod declared_priors;
pub mod finality;
pub mod fresh_panel;
pub mod last_word;
pub mod motion_history;
pub mod precedent;
pub mod priors;
pub mod recalibration;
pub mod sample_appeals;

// Procedure runs.
pub mod run_convener;
pub mod run_deadlocks;
pub mod run_roles;
