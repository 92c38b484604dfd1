//! Falsify: stub, filled in by its own change (docs/PROCEDURES.md).

use serde::{Deserialize, Serialize};

use crate::panel::{Awaited, PanelQuestion, Procedure, ProcedureError, Settlement, StartContext};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FalsifyStart {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FalsifyInput {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FalsifyRun {}

impl Procedure for FalsifyRun {
    type Start = FalsifyStart;
    type Input = FalsifyInput;

    fn start(_start: FalsifyStart, _ctx: &StartContext) -> Result<Self, ProcedureError> {
        Ok(FalsifyRun {})
    }
    fn awaiting(&self) -> Vec<Awaited> {
        Vec::new()
    }
    fn submit(&mut self, _input: FalsifyInput) -> Result<(), ProcedureError> {
        Ok(())
    }
    fn pending(&self) -> Vec<PanelQuestion> {
        Vec::new()
    }
    fn settle(&mut self, s: &Settlement) -> Result<(), ProcedureError> {
        Err(ProcedureError::UnknownQuestion(s.key.clone()))
    }
    fn finished(&self) -> bool {
        true
    }
    fn summary(&self) -> String {
        String::new()
    }
    fn render_markdown(&self) -> String {
        String::new()
    }
}
