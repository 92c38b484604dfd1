//! The paper's worked verdict (section 4), split at its first verdict so callers can
//! continue the story: [`build`] plays the worked-example scenario
//! ([`crate::scenario::worked_example`], the one `panel demo` and `panel up` play) up to
//! verdict 1 (A 6.36 against B 4.20, margin 0.340, clear); [`verify_b1_and_revise`] plays
//! the rest: B1's source retrieved and confirmed at T1, the revised verdict (B 6.40
//! against A 6.36, margin 0.006, unresolved), and the close.

use crate::document::Debate;
use crate::env::Env;
use crate::protocol::Protocol;
use crate::scenario::{EngineError, HintedRun, Step, worked_example};

/// The worked example at its first verdict, with the ids of B1, whose source the
/// continuation verifies.
#[derive(Debug, Clone)]
pub struct WorkedExample {
    pub debate: Debate,
    pub b1_thread: String,
    pub b1_version: String,
    run: HintedRun,
}

/// Builds the debate up to and including the first verdict (phase `verdict`).
pub fn build<E: Env>(p: &mut Protocol<E>) -> Result<WorkedExample, EngineError> {
    let mut run = HintedRun::start(p, &worked_example("http://127.0.0.1"));
    while let Some(step) = run.step(p)? {
        if matches!(step, Step::ExpectVerdict { .. }) {
            break;
        }
    }
    let b1_thread = run.labels().id(run.debate(), "$b1.thread")?;
    let b1_version = run.labels().id(run.debate(), "$b1")?;
    Ok(WorkedExample {
        debate: run.debate().clone(),
        b1_thread,
        b1_version,
        run,
    })
}

/// Section 4's one change: an arbiter retrieves B1's source and confirms it at T1; a
/// revised verdict is issued (the first stays on the record) and the debate closes.
pub fn verify_b1_and_revise<E: Env>(
    p: &mut Protocol<E>,
    ex: &mut WorkedExample,
) -> Result<(), EngineError> {
    std::mem::swap(ex.run.debate_mut(), &mut ex.debate);
    let result = ex.run.finish(p);
    std::mem::swap(ex.run.debate_mut(), &mut ex.debate);
    result
}
