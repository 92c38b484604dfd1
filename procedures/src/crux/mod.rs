//! Crux (seed `crux.txt`; docs/CRUX.md): two advocates argue a decision from one
//! evidence pack without seeing each other; a deterministic layer refuses what code can
//! catch; the panel, as mediator, names the crux, converges on one, and says whether a
//! verdict is warranted now. The product is a decision aid, never a gate on the
//! decision itself.

mod checks;
mod contract;
mod convergence;
pub mod eval;
mod gate;
mod materials;
mod mutations;
mod questions;
mod report;
mod words;

pub use checks::{CheckRecord, Checked, check};
pub use contract::{
    Advocate, Claim, CruxInput, CruxReport, CruxStart, EvidenceItem, EvidencePack, EvidenceRef,
    InferenceType, MAX_START_BYTES, Position, Side, Simulation, decode_report, decode_start,
};
pub use convergence::{
    Ask, Candidate, CandidateStatus, MAX_CANDIDATES, MAX_REASKS, Mediation, OrderAudit,
    ReportRecord, RoundOutcome, SEATS_PER_REASK, Stage, Verdict, VerdictAnswer,
};
pub use gate::{gate, vague_phrase};
pub use materials::{Materials, PACK_LABEL};
pub use questions::render_position;
pub use words::{content_stems, numbers, tokens, word_count};

use serde::{Deserialize, Serialize};

use crate::panel::{Awaited, PanelQuestion, Procedure, ProcedureError, Settlement, StartContext};

/// Rulings one settlement may carry; beyond it the settlement is refused.
pub const MAX_RULINGS: usize = 500;

/// One crux run: what it started from and the mediation so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CruxRun {
    pub materials: Materials,
    pub mediation: Mediation,
}

impl CruxRun {
    /// Model families that wrote a position: the machine keeps arbiters of these
    /// families off this run's panels (seed: the mediator is "on a different model
    /// family than the debaters").
    pub fn advocate_families(&self) -> Vec<String> {
        self.materials.advocate_families()
    }

    /// The accepted crux, once the panel has accepted one.
    pub fn accepted(&self) -> Option<&Candidate> {
        self.mediation
            .accepted
            .and_then(|i| self.mediation.candidates.get(i))
    }
}

impl Procedure for CruxRun {
    type Start = CruxStart;
    type Input = CruxInput;

    fn start(start: CruxStart, ctx: &StartContext) -> Result<Self, ProcedureError> {
        let checked = check(&start);
        if !checked.findings.is_empty() {
            return Err(ProcedureError::Refused(checked.findings));
        }
        if ctx.simulation && start.simulation.is_none() {
            return Err(ProcedureError::refused(
                "crux.simulation",
                "simulation",
                "a simulation run needs the start's simulation section (the scripted report \
                 and answers its judges return)",
            ));
        }
        let mut positions = start.positions;
        positions.sort_by_key(|p| p.side);
        Ok(CruxRun {
            materials: Materials {
                run_id: ctx.run_id.clone(),
                seed: ctx.seed,
                simulation_run: ctx.simulation,
                decision: start.decision,
                pack_hash: start.pack.content_hash(),
                pack: start.pack,
                positions,
                word_budget: start.word_budget,
                advocates: start.advocates,
                simulation: start.simulation,
                checks: checked.records,
            },
            mediation: Mediation::default(),
        })
    }

    fn awaiting(&self) -> Vec<Awaited> {
        Vec::new()
    }

    fn submit(&mut self, _input: CruxInput) -> Result<(), ProcedureError> {
        Err(ProcedureError::OutOfOrder {
            input: "crux input".into(),
            awaiting: "panel answers only (positions come with the start document)".into(),
        })
    }

    fn pending(&self) -> Vec<PanelQuestion> {
        self.mediation
            .asking()
            .iter()
            .map(|a| questions::question(a, &self.mediation, &self.materials))
            .collect()
    }

    fn settle(&mut self, s: &Settlement) -> Result<(), ProcedureError> {
        let Some(asking) = self.mediation.find(&s.key) else {
            return Err(ProcedureError::UnknownQuestion(s.key.clone()));
        };
        if s.rulings.len() > MAX_RULINGS {
            return Err(ProcedureError::refused(
                "crux.size",
                format!("settlement {}", s.key),
                format!("{} rulings, more than {MAX_RULINGS}", s.rulings.len()),
            ));
        }
        self.mediation.settle(asking, s, &self.materials);
        Ok(())
    }

    fn finished(&self) -> bool {
        self.mediation.stage == Stage::Done
    }

    fn summary(&self) -> String {
        report::summary(self)
    }

    fn render_markdown_with(&self, causes: &crate::deadlock::DeadlockCauses) -> String {
        report::markdown(self, causes)
    }
}
