//! The coordinator's replicated state machine, pure (docs/COORDINATOR.md, "Layers").
//!
//! Everything every replica and every offline verifier must compute identically lives
//! here, in layers (docs/ARCHITECTURE.md "Layers of the machine"), from the bottom: the
//! rules over values ([`rules`]: the acceptance rule, the draw, a ruling's checks), what
//! the Raft log carries ([`log`], [`command`], the debate and run documents [`debates`]
//! and [`runs`], [`authorship`]), the state ([`model`]), what a write answers
//! ([`reply`]), the functions over the state ([`features`]: admission, exams, limits,
//! checkpoints, finality, recalibration, ...), how an entry changes the state ([`apply`])
//! and what a reader sees ([`read`]: queries, the record and its offline verification).
//! No clock, randomness, socket or disk: the leader stamps time and a seed into each
//! batch, and the shell (`panel-coordinator`) does the I/O. `panel verify` and the
//! simulator depend on this crate alone.

// Layer 1: the rules over values, and the rule sets.
pub mod rules;

// Layer 2: what the log carries.
pub mod authorship;
pub mod command;
pub mod debates;
pub mod log;
pub mod runs;

// Layers 3 and 4: the state and what a write answers.
pub mod model;
pub mod reply;

// Layers 5 and 6: the functions over the state, and apply dispatching to them.
pub mod apply;
pub mod features;

// Layer 7: what a reader sees.
pub mod read;

/// Drives `apply` as a replica would (the simulator and the integration tests).
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

// The face: the names the shells use, at the root, in the manner of quinn-proto's short
// list, so a caller writes `panel_machine::State` and the layout above can change
// without changing callers. The long tail (a feature's own types and functions) is
// named by its module.
pub use apply::{ApplyError, apply_batch};
pub use command::{
    Batch, ClientCommand, Command, CommitmentLog, ContributionSubmission, DebateSpec,
    InternalCommand, Item, ItemReply, MotionSpec, OutcomeSubmission, PanelRequest, Query,
    TestCommand,
};
pub use debates::DebateRecord;
pub use log::refusal_code::RefusalCode;
pub use model::record_entry::LeafError;
pub use model::{Arbiter, Motion, MotionStatus, RecordEntry, State};
pub use read::record::Bundle;
pub use reply::{BatchReply, ItemOutcome, Reply};
pub use rules::acceptance::{
    Acceptance, DeadlockReason, Decision, MotionKind, Outcome, Policy, Seat, Stance,
};
pub use rules::hex_bytes::{CommitmentBytes, HexBytes, RevealBytes};
pub use rules::ruling::WireRuling;
pub use runs::{RunRecord, RunRequest};
