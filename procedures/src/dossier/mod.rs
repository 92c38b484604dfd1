//! Dossier: stub, filled in by its own change (docs/PROCEDURES.md).

use serde::{Deserialize, Serialize};

use crate::panel::{Awaited, PanelQuestion, Procedure, ProcedureError, Settlement, StartContext};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DossierStart {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DossierInput {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DossierRun {}

impl Procedure for DossierRun {
    type Start = DossierStart;
    type Input = DossierInput;

    fn start(_start: DossierStart, _ctx: &StartContext) -> Result<Self, ProcedureError> {
        Ok(DossierRun {})
    }
    fn awaiting(&self) -> Vec<Awaited> {
        Vec::new()
    }
    fn submit(&mut self, _input: DossierInput) -> Result<(), ProcedureError> {
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
