//! The decision dossier: Spellweaver's Crucible with the Lead's synthesis put to a
//! cross-prior panel (`seeds/spellweaver-crucible.txt`; docs/DOSSIER.md).
//!
//! Framing is checked and refused deterministically; Clash I, Temper and Clash II are
//! role input, one branch per advocate; Quench asks the panel NOW / PREPARE / REJECT.
//! The result is an attributed, inert dossier: it carries no effect authority, and a
//! retry is a new run that references the old one.

mod branch;
mod demo;
mod framing;
mod input;
mod projection;
mod quench;
mod refusal;
mod render;

/// The role name of an advocate's branch (`advocate:ID`), as `awaiting` asks for it and
/// as a run's start binds it to a key.
pub fn advocate_role(advocate_id: &str) -> String {
    format!("advocate:{advocate_id}")
}

use serde::{Deserialize, Serialize};

use crate::falsify::script::{Script, attempt_key};
use crate::panel::{
    AnswerShape, Awaited, Finding, PanelOutcome, PanelQuestion, Procedure, ProcedureError,
    Settlement, ShownItem, StartContext,
};

pub use branch::{Branch, Failure, Nomination, Phase, Report, TerminalStatus};
pub use demo::{demo_inputs, demo_retry_start, demo_start};
pub use framing::{
    Advocate, Bias, Budget, DossierStart, Evidence, Framing, Limits, MAX_START_BYTES,
    RequestedResult, RetryChange, RetryOf,
};
pub use input::{ClaimRef, DossierInput, FailStatus, Rebuttal, ReportClaim};
pub use projection::{ProjectedClaim, Projection};
pub use quench::{DissentRuling, OptionState, Recommendation, Synthesis};
pub use refusal::MIN_POSITION_WORDS;

/// Seats added per re-ask of a deadlocked Quench question.
pub const SEATS_PER_RETRY: u32 = 2;

/// Who argues, so the machine keeps them off the panel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdvocateIdentity {
    pub id: String,
    pub model: String,
    pub provider: String,
    pub family: String,
}

/// What an advocate's adapter may show it in the current phase: the shared evidence
/// and its own material, and at Clash II the bounded projection; never sibling reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdvocateBrief {
    pub phase: Phase,
    pub question: String,
    pub owner: String,
    pub acceptance_criteria: Vec<String>,
    pub evidence: Vec<Evidence>,
    pub omissions: Vec<String>,
    pub posture: String,
    pub position: String,
    pub own_report: Option<Report>,
    pub projection: Option<Projection>,
}

/// A dossier run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DossierRun {
    pub run_id: String,
    pub framing: Framing,
    pub retry_of: Option<RetryOf>,
    pub script: Option<Script>,
    pub branches: Vec<Branch>,
    pub phase: Phase,
    pub options: Vec<OptionState>,
    pub findings: Vec<Finding>,
    /// Set when the run ends; a non-decision is a valid outcome.
    pub synthesis: Option<Synthesis>,
}

impl DossierRun {
    /// Every advocate's id, model, provider and family: none may sit on the panel.
    pub fn advocate_identities(&self) -> Vec<AdvocateIdentity> {
        self.branches
            .iter()
            .map(|b| AdvocateIdentity {
                id: b.advocate.id.clone(),
                model: b.advocate.model.clone(),
                provider: b.advocate.provider.clone(),
                family: b.advocate.family.clone(),
            })
            .collect()
    }

    pub fn branch(&self, id: &str) -> Option<&Branch> {
        self.branches.iter().find(|b| b.id() == id)
    }

    /// The bounded projection `advocate` rebuts at Clash II.
    pub fn projection(&self, advocate: &str) -> Projection {
        projection::projection(&self.branches, advocate)
    }

    /// What the advocate's adapter may show it now.
    pub fn brief(&self, advocate: &str) -> Result<AdvocateBrief, ProcedureError> {
        let b = self
            .branch(advocate)
            .ok_or_else(|| unknown_advocate(advocate))?;
        Ok(AdvocateBrief {
            phase: self.phase,
            question: self.framing.question.clone(),
            owner: self.framing.owner.clone().unwrap_or_default(),
            acceptance_criteria: self.framing.acceptance_criteria.clone(),
            evidence: self.framing.evidence.clone(),
            omissions: self.framing.omissions.clone(),
            posture: b.advocate.posture.clone(),
            position: b.advocate.position.clone(),
            own_report: (self.phase != Phase::ClashI)
                .then(|| b.report.clone())
                .flatten(),
            projection: (self.phase == Phase::ClashII).then(|| self.projection(advocate)),
        })
    }

    /// Each branch's terminal status, in casting order.
    pub fn statuses(&self) -> Vec<(String, TerminalStatus)> {
        self.branches
            .iter()
            .map(|b| {
                (
                    b.id().to_string(),
                    b.status(&self.projection(b.id()).targets()),
                )
            })
            .collect()
    }

    /// Every minority ruling of the Quench, kept whole.
    pub fn dissent(&self) -> Vec<DissentRuling> {
        quench::dissent(&self.options)
    }

    pub fn strongest_dissent(&self) -> Option<DissentRuling> {
        quench::strongest(&self.dissent(), self.synthesis.as_ref())
    }

    pub fn change_conditions(&self) -> Vec<String> {
        quench::conditions(&self.dissent())
    }

    /// Moves to the next phase once every live branch has delivered for this one.
    fn advance(&mut self) {
        while matches!(self.phase, Phase::ClashI | Phase::Temper | Phase::ClashII)
            && self.branches.iter().all(|b| b.done_with(self.phase))
        {
            self.phase = match self.phase {
                Phase::ClashI => Phase::Temper,
                Phase::Temper => Phase::ClashII,
                _ => Phase::Quench,
            };
        }
        if self.phase == Phase::Quench && self.branches.iter().all(|b| b.report.is_none()) {
            self.phase = Phase::Done;
            self.synthesis = Some(Synthesis::NonDecision {
                reason: "no branch delivered a Clash I report; there is nothing to synthesise"
                    .into(),
            });
        }
    }

    fn question(&self, o: &OptionState) -> PanelQuestion {
        let base = o.option.key();
        let key = attempt_key(base, o.attempt);
        PanelQuestion {
            prompt: o.option.prompt(),
            items: render::quench_items(self),
            shape: AnswerShape::YesNo,
            extra_seats: SEATS_PER_RETRY * (o.attempt - 1),
            exclude: self
                .branches
                .iter()
                .map(|b| b.advocate.id.clone())
                .collect(),
            shuffle_items: true,
            expected: self.script.as_ref().map(|s| s.expected(&key, base)),
            key,
        }
    }

    fn settle_option(&mut self, i: usize, s: &Settlement) {
        let retries = self.framing.limits.deadlock_retries;
        let o = &mut self.options[i];
        o.answers.push(quench::QuenchAnswer {
            key: s.key.clone(),
            motion_id: s.motion_id.clone(),
            attempt: o.attempt,
            outcome: s.outcome,
            rulings: s.rulings.clone(),
        });
        if s.outcome == PanelOutcome::Deadlocked && o.attempt <= retries {
            self.findings.push(refusal::f(
                "dossier.deadlock",
                &s.key,
                &format!("attempt {} deadlocked; the rulings are kept as dissent and {} is re-asked with two more seats", o.attempt, o.option.name()),
            ));
            o.attempt += 1;
            return;
        }
        o.settled = Some(s.outcome);
        if let Some(syn) = quench::synthesis(&self.options) {
            self.synthesis = Some(syn);
            self.phase = Phase::Done;
        }
    }
}

fn unknown_advocate(id: &str) -> ProcedureError {
    ProcedureError::refused(
        "dossier.unknown_advocate",
        format!("advocate {id}"),
        "no advocate with this id in the casting; use an id from the start document",
    )
}

impl Procedure for DossierRun {
    type Start = DossierStart;
    type Input = DossierInput;

    fn start(start: DossierStart, ctx: &StartContext) -> Result<Self, ProcedureError> {
        let found = refusal::check(&start, ctx);
        if !found.is_empty() {
            return Err(ProcedureError::Refused(found));
        }
        Ok(DossierRun {
            run_id: ctx.run_id.clone(),
            framing: *start.framing,
            retry_of: start.retry_of,
            script: if ctx.simulation {
                start.simulation
            } else {
                None
            },
            branches: start.advocates.into_iter().map(Branch::new).collect(),
            phase: Phase::ClashI,
            options: quench::OPTIONS.into_iter().map(OptionState::new).collect(),
            findings: Vec::new(),
            synthesis: None,
        })
    }

    fn awaiting(&self) -> Vec<Awaited> {
        let (input, what) = match self.phase {
            Phase::ClashI => ("report", "an independent report from the evidence floor"),
            Phase::Temper => ("nominate", "your strongest claims and one concession"),
            Phase::ClashII => ("rebut", "rebuttals of the projected opposing claims"),
            Phase::Quench | Phase::Done => return Vec::new(),
        };
        self.branches
            .iter()
            .filter(|b| !b.done_with(self.phase))
            .map(|b| Awaited {
                role: advocate_role(b.id()),
                what: format!(
                    "{}: {what} (input {input}; see the advocate's brief)",
                    self.phase.name()
                ),
            })
            .collect()
    }

    fn submit(&mut self, input: DossierInput) -> Result<(), ProcedureError> {
        let id = input.advocate().to_string();
        let i = self
            .branches
            .iter()
            .position(|b| b.id() == id)
            .ok_or_else(|| unknown_advocate(&id))?;
        let phase = self.phase;
        let out_of_order = |input: &DossierInput| ProcedureError::OutOfOrder {
            input: format!("{} from advocate {id}", input.kind()),
            awaiting: format!("{} input", phase.name()),
        };
        if self.branches[i].failed.is_some() {
            return Err(ProcedureError::refused(
                "dossier.branch_failed",
                format!("advocate {id}"),
                "the branch has a terminal failure; it is not revived in this run. Retry in a new run that references this one",
            ));
        }
        let projection = self.projection(&id).targets();
        let fr = &self.framing;
        let b = &mut self.branches[i];
        match (&input, phase) {
            (DossierInput::Fail { .. }, Phase::Quench | Phase::Done) => {
                return Err(out_of_order(&input));
            }
            (DossierInput::Fail { .. }, _) => {}
            (_, p) if b.done_with(p) => return Err(out_of_order(&input)),
            _ => {}
        }
        match (input, phase) {
            (
                DossierInput::Report {
                    claims,
                    missing_evidence,
                    ..
                },
                Phase::ClashI,
            ) => b.take_report(claims, missing_evidence, fr)?,
            (
                DossierInput::Nominate {
                    strongest,
                    concession,
                    ..
                },
                Phase::Temper,
            ) => b.take_nomination(strongest, concession, fr)?,
            (DossierInput::Rebut { rebuttals, .. }, Phase::ClashII) => {
                b.take_rebuttals(rebuttals, &projection, fr)?
            }
            (DossierInput::Fail { status, note, .. }, p) => b.fail(status, note, p)?,
            (other, _) => return Err(out_of_order(&other)),
        }
        self.advance();
        Ok(())
    }

    fn pending(&self) -> Vec<PanelQuestion> {
        if self.phase != Phase::Quench {
            return Vec::new();
        }
        self.options
            .iter()
            .filter(|o| o.settled.is_none())
            .map(|o| self.question(o))
            .collect()
    }

    fn settle(&mut self, s: &Settlement) -> Result<(), ProcedureError> {
        let at = (self.phase == Phase::Quench)
            .then(|| {
                self.options.iter().position(|o| {
                    o.settled.is_none() && attempt_key(o.option.key(), o.attempt) == s.key
                })
            })
            .flatten();
        let Some(i) = at else {
            return Err(ProcedureError::UnknownQuestion(s.key.clone()));
        };
        self.settle_option(i, s);
        Ok(())
    }

    fn finished(&self) -> bool {
        self.phase == Phase::Done
    }

    fn summary(&self) -> String {
        match &self.synthesis {
            Some(Synthesis::Recommend { option }) => format!("dossier: {}", option.name()),
            Some(Synthesis::NonDecision { .. }) => "dossier: non-decision".into(),
            None => format!("dossier: {}", self.phase.name()),
        }
    }

    fn render_markdown_with(&self, causes: &crate::deadlock::DeadlockCauses) -> String {
        render::markdown(self, causes)
    }
}

/// A shown item, for the render module's quench items.
fn item(label: &str, text: String) -> ShownItem {
    ShownItem {
        label: label.into(),
        text,
    }
}
