//! The paper's worked verdict (section 4), split at its first verdict so callers can
//! continue the story: [`build`] plays the worked-example scenario
//! ([`crate::scenario::worked_example`], the one `panel demo` and `panel up` play) up to
//! verdict 1 (A 6.36 against B 4.20, margin 0.340, clear); [`verify_b1_and_revise`] plays
//! the rest: B1's source retrieved and confirmed at T1, the revised verdict (B 6.40
//! against A 6.36, margin 0.006, unresolved), and the close.

use serde_json::json;

use crate::document::Debate;
use crate::env::Env;
use crate::error::{Code, Outcome, Refusal};
use crate::protocol::Protocol;
use crate::scenario::{HintedRun, Scenario, Step, worked_example};

/// The worked example at its first verdict, with the ids of B1, whose source the
/// continuation verifies.
#[derive(Debug, Clone)]
pub struct WorkedExample {
    pub debate: Debate,
    pub b1_thread: String,
    pub b1_version: String,
    run: HintedRun,
    scenario: Scenario,
    next_step: usize,
}

/// Builds the debate up to and including the first verdict (phase `verdict`).
pub fn build<E: Env>(p: &mut Protocol<E>) -> Outcome<WorkedExample> {
    let scenario = worked_example("http://127.0.0.1");
    let mut run = HintedRun::start(p, &scenario);
    let mut next_step = scenario.steps.len();
    for (i, step) in scenario.steps.iter().enumerate() {
        run.step(p, step)?;
        if matches!(step, Step::ExpectVerdict { .. }) {
            next_step = i + 1;
            break;
        }
    }
    let resolve = |r: &HintedRun, label: &str| -> Outcome<String> {
        match r.labels.resolve(&r.debate, &json!(label))? {
            serde_json::Value::String(id) => Ok(id),
            _ => Err(Refusal::new(
                Code::VersionNotFound,
                format!("{label} is not bound"),
            )),
        }
    };
    let b1_thread = resolve(&run, "$b1.thread")?;
    let b1_version = resolve(&run, "$b1")?;
    Ok(WorkedExample {
        debate: run.debate.clone(),
        b1_thread,
        b1_version,
        run,
        scenario,
        next_step,
    })
}

/// Section 4's one change: an arbiter retrieves B1's source and confirms it at T1; a
/// revised verdict is issued (the first stays on the record) and the debate closes.
pub fn verify_b1_and_revise<E: Env>(p: &mut Protocol<E>, ex: &mut WorkedExample) -> Outcome {
    std::mem::swap(&mut ex.run.debate, &mut ex.debate);
    let mut result = Ok(());
    for step in &ex.scenario.steps[ex.next_step..] {
        result = ex.run.step(p, step);
        if result.is_err() {
            break;
        }
    }
    ex.next_step = ex.scenario.steps.len();
    std::mem::swap(&mut ex.run.debate, &mut ex.debate);
    result
}
