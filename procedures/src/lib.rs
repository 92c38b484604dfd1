//! The seed procedures other than the Crucible Protocol, run by the same panel
//! (docs/PROCEDURES.md): crux mediation (`seeds/crux.txt`), falsification buckets
//! (`seeds/truth-seeking-debate.txt`) and the decision dossier
//! (`seeds/spellweaver-crucible.txt`).
//!
//! Pure, like `crucible`: no clock, no randomness, no I/O. Each procedure is a state
//! machine that says which binary questions it needs the panel to answer next
//! ([`Procedure::pending`]) and takes the panel's settled answers back
//! ([`Procedure::settle`]). The replicated machine (`panel-machine`) opens a motion per
//! pending question, runs the usual draw, commit-reveal and cross-prior acceptance, and
//! feeds the outcome back; so a procedure's one decisive judge becomes a panel without
//! the procedure knowing how panels work.

pub mod contract;
pub mod crux;
pub mod deadlock;
pub mod dossier;
pub mod falsify;
pub mod panel;
pub mod run;

pub use contract::{ContractError, decode};
pub use deadlock::{DeadlockCause, DeadlockCauses};
pub use panel::{
    AnswerShape, Awaited, Expected, Finding, PanelOutcome, PanelQuestion, PanelRuling, Prior,
    Procedure, ProcedureError, Settlement, ShownItem, StartContext, Tally, presentation_order,
    tallies,
};
pub use run::{Run, RunInput, RunKind, RunStart};
