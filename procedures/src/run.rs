//! One procedure run of any kind, as the machine stores it: the kinds behind one enum so
//! the machine opens motions and settles answers without knowing which procedure it is.

use serde::{Deserialize, Serialize};

use crate::panel::{Awaited, PanelQuestion, Procedure, ProcedureError, Settlement, StartContext};
use crate::{crux, dossier, falsify};

/// Which procedure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RunKind {
    Crux,
    Falsify,
    Dossier,
}

/// A start document of any kind, as a client submits it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RunStart {
    Crux(crux::CruxStart),
    Falsify(falsify::FalsifyStart),
    Dossier(dossier::DossierStart),
}

/// A role input of any kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RunInput {
    Crux(crux::CruxInput),
    Falsify(falsify::FalsifyInput),
    Dossier(dossier::DossierInput),
}

/// A run of any kind.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Run {
    Crux(crux::CruxRun),
    Falsify(falsify::FalsifyRun),
    Dossier(dossier::DossierRun),
}

macro_rules! each {
    ($self:expr, $r:ident => $e:expr) => {
        match $self {
            Run::Crux($r) => $e,
            Run::Falsify($r) => $e,
            Run::Dossier($r) => $e,
        }
    };
}

impl Run {
    pub fn start(start: RunStart, ctx: &StartContext) -> Result<Run, ProcedureError> {
        Ok(match start {
            RunStart::Crux(s) => Run::Crux(crux::CruxRun::start(s, ctx)?),
            RunStart::Falsify(s) => Run::Falsify(falsify::FalsifyRun::start(s, ctx)?),
            RunStart::Dossier(s) => Run::Dossier(dossier::DossierRun::start(s, ctx)?),
        })
    }

    pub fn kind(&self) -> RunKind {
        match self {
            Run::Crux(_) => RunKind::Crux,
            Run::Falsify(_) => RunKind::Falsify,
            Run::Dossier(_) => RunKind::Dossier,
        }
    }

    pub fn submit(&mut self, input: RunInput) -> Result<(), ProcedureError> {
        match (self, input) {
            (Run::Crux(r), RunInput::Crux(i)) => r.submit(i),
            (Run::Falsify(r), RunInput::Falsify(i)) => r.submit(i),
            (Run::Dossier(r), RunInput::Dossier(i)) => r.submit(i),
            (r, i) => Err(ProcedureError::OutOfOrder {
                input: format!("{} input", input_kind(&i)),
                awaiting: format!("{:?} input", r.kind()),
            }),
        }
    }

    pub fn awaiting(&self) -> Vec<Awaited> {
        each!(self, r => r.awaiting())
    }

    pub fn pending(&self) -> Vec<PanelQuestion> {
        each!(self, r => r.pending())
    }

    pub fn settle(&mut self, s: &Settlement) -> Result<(), ProcedureError> {
        each!(self, r => r.settle(s))
    }

    pub fn finished(&self) -> bool {
        each!(self, r => r.finished())
    }

    pub fn summary(&self) -> String {
        each!(self, r => r.summary())
    }

    pub fn render_markdown(&self) -> String {
        each!(self, r => r.render_markdown())
    }

    /// The report with each deadlocked question's causes (collected by a shell from the
    /// motions' records) printed beside its outcome.
    pub fn render_markdown_with(&self, causes: &crate::deadlock::DeadlockCauses) -> String {
        each!(self, r => r.render_markdown_with(causes))
    }

    /// Every role whose input the run will await (`Awaited::role`), fixed at start: a
    /// run's start binds each to a key, and only that key's signature makes an input
    /// count (docs/PROCEDURES.md, "Who may submit").
    pub fn roles(&self) -> Vec<String> {
        match self {
            Run::Crux(_) => Vec::new(),
            Run::Falsify(_) => falsify_roles(),
            Run::Dossier(r) => r
                .advocate_identities()
                .into_iter()
                .map(|a| crate::dossier::advocate_role(&a.id))
                .collect(),
        }
    }

    /// Model families kept off the run's panels: the advocates' (crux.txt: the mediator
    /// is "on a different model family than the debaters").
    pub fn excluded_families(&self) -> Vec<String> {
        match self {
            Run::Crux(r) => r.advocate_families(),
            Run::Dossier(r) => r
                .advocate_identities()
                .into_iter()
                .map(|a| a.family)
                .filter(|f| !f.trim().is_empty())
                .collect(),
            Run::Falsify(_) => Vec::new(),
        }
    }
}

fn falsify_roles() -> Vec<String> {
    [falsify::Role::Defender, falsify::Role::Critic]
        .map(|r| r.name().to_string())
        .to_vec()
}

impl RunStart {
    /// The roles a run of this start will await, as [`Run::roles`] names them, so a client
    /// can bind each to a key before the start is checked.
    pub fn roles(&self) -> Vec<String> {
        match self {
            RunStart::Crux(_) => Vec::new(),
            RunStart::Falsify(_) => falsify_roles(),
            RunStart::Dossier(s) => s
                .advocates
                .iter()
                .map(|a| crate::dossier::advocate_role(&a.id))
                .collect(),
        }
    }
}

impl RunInput {
    /// The role this input speaks for, as [`Run::roles`] names it; `None` for a crux
    /// input, which no run accepts.
    pub fn role(&self) -> Option<String> {
        match self {
            RunInput::Crux(_) => None,
            RunInput::Falsify(i) => Some(i.role().name().to_string()),
            RunInput::Dossier(i) => Some(crate::dossier::advocate_role(i.advocate())),
        }
    }
}

fn input_kind(i: &RunInput) -> &'static str {
    match i {
        RunInput::Crux(_) => "Crux",
        RunInput::Falsify(_) => "Falsify",
        RunInput::Dossier(_) => "Dossier",
    }
}
