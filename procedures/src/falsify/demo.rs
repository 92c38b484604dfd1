//! The demo's falsification run (`panel up --procedure falsify`): three real-looking
//! claims whose scripted answers end BROKEN, UNFALSIFIABLE and, after one escalation,
//! CORROBORATED (docs/FALSIFY.md, "Demo").

use super::input::FalsifyInput;
use super::start::FalsifyStart;

const START: &str = include_str!("fixtures/start.json");
const INPUTS: &str = include_str!("fixtures/inputs.json");

/// The demo's start document, simulation section included. The fixture is compiled in
/// and tested; should it ever fail to decode, the empty start is refused by
/// `falsify.claims` instead of panicking.
pub fn demo_start() -> FalsifyStart {
    FalsifyStart::from_json(START.as_bytes()).unwrap_or_else(|_| FalsifyStart {
        claims: Vec::new(),
        escalation: Default::default(),
        simulation: None,
    })
}

/// The scripted role inputs, in submission order: submit each once the run lists its
/// role as awaited (a refusal as out of order means: wait for the panel).
pub fn demo_inputs() -> Vec<FalsifyInput> {
    crate::contract::decode("falsify demo inputs", INPUTS.as_bytes()).unwrap_or_default()
}
