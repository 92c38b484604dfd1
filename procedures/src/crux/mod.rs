//! Crux: stub, filled in by its own change (docs/PROCEDURES.md).

use serde::{Deserialize, Serialize};

use crate::panel::{Awaited, PanelQuestion, Procedure, ProcedureError, Settlement, StartContext};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CruxStart {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CruxInput {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CruxRun {}

impl Procedure for CruxRun {
    type Start = CruxStart;
    type Input = CruxInput;

    fn start(_start: CruxStart, _ctx: &StartContext) -> Result<Self, ProcedureError> {
        Ok(CruxRun {})
    }
    fn awaiting(&self) -> Vec<Awaited> {
        Vec::new()
    }
    fn submit(&mut self, _input: CruxInput) -> Result<(), ProcedureError> {
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
