//! The coordinator's replicated state machine, pure (docs/COORDINATOR.md, "Layers").
//!
//! Everything every replica and every offline verifier must compute identically lives
//! here: what the Raft log carries ([`command`]), the state ([`model`]) and how an entry
//! changes it ([`apply`]), what a read sees ([`query`]), what a write answers ([`reply`]), the panel draw ([`draw`]), the cross-prior acceptance rule
//! ([`acceptance`]), admission by exam ([`admission`]), prior checks ([`priors`]),
//! recalibration ([`recalibration`]) and the verifiable record ([`record`],
//! [`checkpoints`], [`transparency`], [`entry_proof`]). No clock, randomness, socket or
//! disk: the leader stamps time and a seed into each batch, and the shell (`panel-coordinator`) does the I/O. `panel verify`
//! and the simulator depend on this crate alone.

pub mod acceptance;
pub mod admission;
pub mod appeal_credits;
pub mod apply;
pub mod authorship;
pub mod beacon;
pub mod breakers;
pub mod charter_rules;
pub mod checkpoints;
pub mod command;
pub mod confidence;
pub mod debates;
pub mod declared_priors;
pub mod draw;
pub mod draw_seed;
pub mod endorsers;
pub mod entry_proof;
pub mod exam_sitting;
pub mod finality;
pub mod fresh_panel;
pub mod independence;
pub mod last_word;
pub mod limits;
pub mod log;
pub mod membership;
pub mod model;
pub use model::{motion_table, record_log, reply_table};
pub mod motion_history;
pub mod opaque_exam;
pub mod org_pools;
pub mod precedent;
pub mod priors;
pub mod query;
pub mod recalibration;
pub mod record;
pub mod reply;
pub mod rules;
pub mod ruling;
pub mod run_convener;
pub mod run_deadlocks;
pub mod run_roles;
pub mod runs;
pub mod sample_appeals;
pub mod signed_motion;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod transparency;
pub mod weighted_pool;
