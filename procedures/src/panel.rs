//! What a procedure and the panel exchange: binary questions out, settled answers back.
//!
//! A procedure never sees seats, commitments or signatures. The machine draws the panel,
//! runs commit-reveal and the cross-prior acceptance rule, then hands back a
//! [`Settlement`]: the accepted answer (or a deadlock) and every counted ruling with the
//! arbiter's declared priors, so the procedure can keep dissent and per-stance tallies.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::contract::ContractError;

/// An arbiter's declared stance on the run's question: A argues for (the optimist, the
/// defender, the proposal), B against; `None` counts for quorum, never for a side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Prior {
    A,
    B,
    None,
}

/// What a seated arbiter returns besides yes/no and its probability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AnswerShape {
    /// Yes or no; the rationale is free text.
    YesNo,
    /// A crux report (`crux::CruxReport` as JSON) in the rationale; yes means "a verdict
    /// is warranted now". A report failing the crux gate does not count.
    CruxReport,
}

/// One piece of content shown with a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownItem {
    /// A role, never an author ("position", "claim", "attack", "evidence pack").
    pub label: String,
    pub text: String,
}

/// What scripted judges answer in a simulation run (the demo, tests, the eval). Ignored
/// by every other judge kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expected {
    pub yes: bool,
    /// The rationale a scripted judge returns (a crux report's JSON for
    /// [`AnswerShape::CruxReport`]).
    pub rationale: String,
}

/// A binary question a procedure needs the panel to answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PanelQuestion {
    /// Stable within the run: the machine opens at most one motion per key at a time
    /// and hands the key back in the [`Settlement`].
    pub key: String,
    /// The question, phrased so that yes and no are the two answers.
    pub prompt: String,
    pub items: Vec<ShownItem>,
    pub shape: AnswerShape,
    /// Seats beyond the run's base panel (escalation rounds widen the panel).
    #[serde(default)]
    pub extra_seats: u32,
    /// Arbiters who may not sit on this question (a fresh panel after escalation).
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Items are shown to each arbiter in its own order ([`presentation_order`]); the
    /// order each arbiter saw is on the record.
    #[serde(default)]
    pub shuffle_items: bool,
    #[serde(default)]
    pub expected: Option<Expected>,
}

/// One counted ruling, with the priors the arbiter declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PanelRuling {
    pub arbiter_id: String,
    pub prior: Prior,
    pub organisation: String,
    #[serde(default)]
    pub model_family: Option<String>,
    /// `None`: the arbiter abstained.
    pub yes: Option<bool>,
    /// Credence in yes, thousandths.
    pub probability_milli: u16,
    pub rationale: String,
    /// Labels of the items in the order this arbiter was shown them.
    #[serde(default)]
    pub presented: Vec<String>,
}

/// What the panel decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PanelOutcome {
    Yes,
    No,
    /// No answer reached the cross-prior agreement; nothing is decided, the rulings
    /// are dissent.
    Deadlocked,
}

/// A question's settled answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settlement {
    pub key: String,
    pub motion_id: String,
    pub outcome: PanelOutcome,
    pub rulings: Vec<PanelRuling>,
}

/// Yes / no / abstain counts per declared prior, for reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub yes: u32,
    pub no: u32,
    pub abstain: u32,
}

/// Per-prior tallies of a settlement's rulings, A then B then None.
pub fn tallies(rulings: &[PanelRuling]) -> Vec<(Prior, Tally)> {
    let mut out: Vec<(Prior, Tally)> = [Prior::A, Prior::B, Prior::None]
        .into_iter()
        .map(|p| (p, Tally::default()))
        .collect();
    for r in rulings {
        if let Some((_, t)) = out.iter_mut().find(|(p, _)| *p == r.prior) {
            match r.yes {
                Some(true) => t.yes += 1,
                Some(false) => t.no += 1,
                None => t.abstain += 1,
            }
        }
    }
    out
}

/// One thing a deterministic check or a rule found wrong with an input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The rule's stable name (docs/PROCEDURES.md lists them), e.g. `crux.length_ratio`.
    pub rule: String,
    /// Where: a JSON path or an id (`positions[1].claims[2]`, `claim c1`).
    pub at: String,
    /// Why, and how to fix it.
    pub reason: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at {}: {}", self.rule, self.at, self.reason)
    }
}

/// Why a procedure refused an input or an answer; the run is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcedureError {
    #[error(transparent)]
    Contract(#[from] ContractError),
    /// Deterministic checks refused the input before any panel was drawn.
    #[error("refused: {}", join(.0))]
    Refused(Vec<Finding>),
    /// The input is valid but not what the run waits for now.
    #[error("the run is not waiting for {input}; it waits for {awaiting}")]
    OutOfOrder { input: String, awaiting: String },
    #[error("the run has no open question {0}")]
    UnknownQuestion(String),
}

fn join(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(Finding::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl ProcedureError {
    /// One finding as a refusal.
    pub fn refused(rule: &str, at: impl Into<String>, reason: impl Into<String>) -> Self {
        ProcedureError::Refused(vec![Finding {
            rule: rule.into(),
            at: at.into(),
            reason: reason.into(),
        }])
    }
}

/// Input a role (an advocate, a defender, a critic) must still supply before the run
/// can go on; the client fetches it from the role's adapter and submits it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Awaited {
    /// The role, e.g. `critic`, `advocate:optimist`.
    pub role: String,
    /// What is asked, in words, and the input kind to submit.
    pub what: String,
}

/// Fixed when a run starts: its id and the seed every per-arbiter order derives from
/// (the machine derives it from the logged entry, so no one chooses it later).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartContext {
    pub run_id: String,
    pub seed: u64,
    /// Simulation runs carry [`Expected`] answers for scripted judges.
    pub simulation: bool,
}

/// A procedure as a state machine the panel drives.
pub trait Procedure: Sized {
    type Start;
    type Input;

    /// Checks the start document (deterministic layer) and creates the run.
    fn start(start: Self::Start, ctx: &StartContext) -> Result<Self, ProcedureError>;
    /// Role input the run waits for, in order; empty when only the panel is awaited.
    fn awaiting(&self) -> Vec<Awaited>;
    /// Takes one role input; refused inputs leave the run unchanged.
    fn submit(&mut self, input: Self::Input) -> Result<(), ProcedureError>;
    /// Every question the run needs answered now (the machine skips keys already open).
    fn pending(&self) -> Vec<PanelQuestion>;
    /// Takes the panel's answer to a pending question.
    fn settle(&mut self, s: &Settlement) -> Result<(), ProcedureError>;
    /// Nothing awaited, nothing pending: the run has its outcome.
    fn finished(&self) -> bool;
    /// One line for listings ("crux accepted: …", "BROKEN", "NOW").
    fn summary(&self) -> String;
    /// The run's report as Markdown (`panel crux show`, `panel dossier show`), each
    /// deadlocked question with its causes where `causes` has them.
    fn render_markdown_with(&self, causes: &crate::deadlock::DeadlockCauses) -> String;
    /// The report without the motions' causes: deadlocks print bare.
    fn render_markdown(&self) -> String {
        self.render_markdown_with(&crate::deadlock::DeadlockCauses::default())
    }
}

/// The order in which an arbiter is shown `n` items: a Fisher-Yates shuffle driven by
/// SHA-256 of the run seed, the question key and the arbiter id, so anyone can recompute
/// what each arbiter saw from the record (crux.txt, "Order randomization").
pub fn presentation_order(seed: u64, key: &str, arbiter_id: &str, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut block = 0u64;
    let mut draw = || {
        let mut h = Sha256::new();
        h.update(b"crucible-panel/presentation/v1\0");
        h.update(seed.to_be_bytes());
        h.update(key.as_bytes());
        h.update([0]);
        h.update(arbiter_id.as_bytes());
        h.update(block.to_be_bytes());
        block += 1;
        let d = h.finalize();
        u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
    };
    for i in (1..n).rev() {
        let j = (draw() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presentation_order_is_a_permutation_that_differs_between_arbiters() {
        let a = presentation_order(7, "crux/report", "arb-1", 2);
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..32 {
            let o = presentation_order(7, "crux/report", &format!("arb-{i}"), 2);
            let mut s = o.clone();
            s.sort();
            assert_eq!(s, vec![0, 1]);
            seen.insert(o);
        }
        assert_eq!(seen.len(), 2, "both orders occur across 32 arbiters");
        assert_eq!(a, presentation_order(7, "crux/report", "arb-1", 2));
    }
}
