//! Role input: each advocate's Clash I report, Temper nomination and Clash II rebuttal,
//! and the terminal status of a branch that failed (`seeds/spellweaver-crucible.txt`,
//! "The bounded casting").

use serde::{Deserialize, Serialize};

/// One claim of a Clash I report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportClaim {
    pub id: String,
    pub text: String,
    /// Evidence-floor ids the claim rests on.
    #[serde(default)]
    pub citations: Vec<String>,
    /// What would show the claim wrong.
    pub defeat_condition: String,
    #[serde(default)]
    pub unknowns: Vec<String>,
}

/// An attributed claim: whose, and which.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimRef {
    pub advocate: String,
    pub claim: String,
}

/// One rebuttal of one projected opposing claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rebuttal {
    pub target: ClaimRef,
    pub text: String,
    #[serde(default)]
    pub citations: Vec<String>,
}

/// How a branch ended without completing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailStatus {
    Timeout,
    Error,
    Withdrawn,
    BudgetExhausted,
}

/// One role input to a dossier run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "input", rename_all = "snake_case", deny_unknown_fields)]
pub enum DossierInput {
    /// Clash I: an independent report from the shared evidence floor.
    Report {
        advocate: String,
        claims: Vec<ReportClaim>,
        /// Evidence the advocate needed and the floor lacks.
        #[serde(default)]
        missing_evidence: Vec<String>,
    },
    /// Temper: the advocate's own strongest claims and one concession.
    Nominate {
        advocate: String,
        strongest: Vec<String>,
        concession: String,
    },
    /// Clash II: rebuttals of claims in the advocate's projection only.
    Rebut {
        advocate: String,
        rebuttals: Vec<Rebuttal>,
    },
    /// The branch failed; the client reports its terminal status.
    Fail {
        advocate: String,
        status: FailStatus,
        note: String,
    },
}

impl DossierInput {
    pub fn advocate(&self) -> &str {
        match self {
            DossierInput::Report { advocate, .. }
            | DossierInput::Nominate { advocate, .. }
            | DossierInput::Rebut { advocate, .. }
            | DossierInput::Fail { advocate, .. } => advocate,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            DossierInput::Report { .. } => "report",
            DossierInput::Nominate { .. } => "nominate",
            DossierInput::Rebut { .. } => "rebut",
            DossierInput::Fail { .. } => "fail",
        }
    }
}
