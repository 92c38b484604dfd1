//! Role input: the defender's form, the critic's commitment and attack, and each role's
//! answers to cross-examination (`seeds/truth-seeking-debate.txt`, "Roles").

use serde::{Deserialize, Serialize};

/// The three refuters the seed allows; the critic names one before arguing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefuterKind {
    /// A case the form forbids that occurs or could occur.
    Counterexample,
    /// The form does not follow from its stated premises.
    DerivationError,
    /// The form forbids nothing; a valid one makes the claim UNFALSIFIABLE.
    EmptyForbiddenSet,
}

impl RefuterKind {
    pub fn label(self) -> &'static str {
        match self {
            RefuterKind::Counterexample => "counterexample",
            RefuterKind::DerivationError => "derivation error",
            RefuterKind::EmptyForbiddenSet => "empty forbidden set",
        }
    }
}

/// What the defender reports: the most forbidding faithful form, or, honestly, none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FormReport {
    Forbidding {
        /// The restated claim, verbatim on the record.
        statement: String,
        /// What the form rules out: each item an observation or computation that would
        /// contradict it.
        forbids: Vec<String>,
    },
    /// The defender finds no forbidding form; by the seed this is the verdict.
    None { reason: String },
}

/// Whose cross-examination answers these are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Defender,
    Critic,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Defender => "defender",
            Role::Critic => "critic",
        }
    }
}

/// One role input to a falsification run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "input", rename_all = "snake_case", deny_unknown_fields)]
pub enum FalsifyInput {
    /// The defender's form for a claim (once per claim; later rounds reuse it).
    Form { claim: String, form: FormReport },
    /// The critic's refuter type, before any argument.
    Commit {
        claim: String,
        critic: String,
        refuter: RefuterKind,
    },
    /// The attack itself; `refuter` must repeat the committed type.
    Attack {
        claim: String,
        critic: String,
        refuter: RefuterKind,
        /// The concrete case, computation or demonstration: all the panel sees.
        case: String,
        /// Anything else the critic wants said; recorded, never shown to the panel.
        #[serde(default)]
        commentary: Option<String>,
    },
    /// One role's answers to its cross-examination probes, in probe order.
    CrossExam {
        claim: String,
        role: Role,
        answers: Vec<String>,
        /// The defender's restatement, when its answer amounts to a different claim.
        #[serde(default)]
        restated_claim: Option<String>,
        #[serde(default)]
        commentary: Option<String>,
    },
}

impl FalsifyInput {
    /// The claim the input is about.
    pub fn claim(&self) -> &str {
        match self {
            FalsifyInput::Form { claim, .. }
            | FalsifyInput::Commit { claim, .. }
            | FalsifyInput::Attack { claim, .. }
            | FalsifyInput::CrossExam { claim, .. } => claim,
        }
    }

    /// Whose input this is: the defender's form and cross-examination answers, or the
    /// critic's commitment, attack and answers.
    pub fn role(&self) -> Role {
        match self {
            FalsifyInput::Form { .. } => Role::Defender,
            FalsifyInput::Commit { .. } | FalsifyInput::Attack { .. } => Role::Critic,
            FalsifyInput::CrossExam { role, .. } => *role,
        }
    }

    /// The input kind, for out-of-order messages.
    pub fn kind(&self) -> &'static str {
        match self {
            FalsifyInput::Form { .. } => "form",
            FalsifyInput::Commit { .. } => "commit",
            FalsifyInput::Attack { .. } => "attack",
            FalsifyInput::CrossExam {
                role: Role::Defender,
                ..
            } => "defender cross-examination",
            FalsifyInput::CrossExam {
                role: Role::Critic, ..
            } => "critic cross-examination",
        }
    }
}
