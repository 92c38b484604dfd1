//! The demo's dossier (`panel up --procedure dossier`): a real-looking platform decision
//! with three advocates whose scripted Quench ends PREPARE (docs/DOSSIER.md, "Demo").

use super::framing::{DossierStart, RetryChange, RetryOf};
use super::input::DossierInput;

const START: &str = include_str!("fixtures/start.json");
const INPUTS: &str = include_str!("fixtures/inputs.json");

/// The demo's start document, simulation section included. The fixture is compiled in
/// and tested; should it ever fail to decode, the start that results is refused by name
/// at `start` instead of panicking.
pub fn demo_start() -> DossierStart {
    DossierStart::from_json(START.as_bytes()).unwrap_or_else(|e| empty_start(&e.to_string()))
}

/// The scripted advocate inputs in submission order: submit each once the run lists
/// its advocate as awaited.
pub fn demo_inputs() -> Vec<DossierInput> {
    crate::contract::decode("dossier demo inputs", INPUTS.as_bytes()).unwrap_or_default()
}

/// The demo's retry: the same casting after the full-size rehearsal was added to the
/// evidence, referencing the first run (which stays as it was).
pub fn demo_retry_start(first_run_id: &str) -> DossierStart {
    let mut s = demo_start();
    s.framing.evidence.push(super::framing::Evidence {
        id: "e6".into(),
        summary: "Full-size rehearsal (4.1 TB): 31 hours to sync, 11 minutes of write freeze at cutover; the audit trigger rewrite passed.".into(),
        source: "rehearsal report, October".into(),
    });
    s.framing
        .omissions
        .retain(|o| !o.contains("full data size"));
    s.retry_of = Some(RetryOf {
        run_id: first_run_id.into(),
        changed: vec![RetryChange::Evidence],
        reason: "the named unknown (a full-size rehearsal) was settled by a separate evidence run"
            .into(),
    });
    s
}

fn empty_start(problem: &str) -> DossierStart {
    DossierStart {
        framing: Box::new(super::framing::Framing {
            question: format!("demo fixture failed to decode: {problem}"),
            owner: None,
            base: None,
            acceptance_criteria: Vec::new(),
            evidence: Vec::new(),
            omissions: Vec::new(),
            biases: Vec::new(),
            limits: super::framing::Limits {
                max_claims: 1,
                max_nominated: 1,
                max_claim_chars: 1,
                max_projection_chars: 1,
                deadlock_retries: 0,
            },
            arbiters: Vec::new(),
            requested: super::framing::RequestedResult::Dossier,
            effects: Vec::new(),
        }),
        advocates: Vec::new(),
        retry_of: None,
        simulation: None,
    }
}
