//! Falsification buckets: the truth-seeking debate variant, with the judge's three
//! ordered questions put to a cross-prior panel (`seeds/truth-seeking-debate.txt`;
//! docs/FALSIFY.md).
//!
//! The run classifies each claim UNFALSIFIABLE, BROKEN or CORROBORATED, never by who
//! argued better. A claim that survived only weak attacks stays UNTESTED; a question the
//! panel cannot agree on, after bounded wider re-asks, leaves the claim DEADLOCKED with
//! the dissent on the record.

mod bucket;
mod claim;
mod demo;
mod input;
mod questions;
mod render;
pub mod script;
mod start;

use serde::{Deserialize, Serialize};

use crate::panel::{Awaited, PanelQuestion, Procedure, ProcedureError, Settlement, StartContext};

pub use bucket::{Bucket, Committed, DebateBucketing, Dissent, Outcome, QuestionTally, Severity};
pub use claim::{Answer, Attack, AttackRound, ClaimRun, Stage, Step};
pub use demo::{demo_inputs, demo_start};
pub use input::{FalsifyInput, FormReport, RefuterKind, Role};
pub use questions::SEATS_PER_STEP;
pub use start::{
    ClaimSpec, FalsifyStart, Ladder, MAX_CLAIMS, MAX_RUN_CLAIMS, MAX_START_BYTES, MAX_TEXT, Probes,
};

use claim::Effect;
use script::Script;

/// A falsification run: its claims, each on its own way to a bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FalsifyRun {
    pub run_id: String,
    pub ladder: Ladder,
    /// Present in simulation runs only: the answers scripted judges give.
    pub script: Option<Script>,
    pub claims: Vec<ClaimRun>,
}

impl FalsifyRun {
    /// The seed's output: one DebateBucketing record per claim, in run order.
    pub fn bucketing(&self) -> Vec<DebateBucketing> {
        self.claims.iter().map(DebateBucketing::of).collect()
    }

    pub fn claim(&self, id: &str) -> Option<&ClaimRun> {
        self.claims.iter().find(|c| c.id == id)
    }

    /// The cross-examination probes `role` must answer on `claim`, in order: what a
    /// role adapter shows before the role submits its `cross_exam` input.
    pub fn probes(&self, claim: &str, role: Role) -> Option<Vec<String>> {
        self.claim(claim).map(|c| c.probes_for(role))
    }

    /// The first claim of a split chain: redefined claims are numbered after it.
    fn root_of(&self, i: usize) -> String {
        let mut id = self.claims[i].id.clone();
        let mut hops = 0;
        while let Some(p) = self.claim(&id).and_then(|c| c.split_from.clone()) {
            id = p;
            hops += 1;
            if hops > MAX_RUN_CLAIMS {
                break;
            }
        }
        id
    }

    /// A definitional retreat splits the redefined claim off as a new claim.
    fn split(&mut self, from: usize, text: String) {
        let root = self.root_of(from);
        let n = (0..self.claims.len())
            .filter(|&j| self.root_of(j) == root)
            .count()
            + 1;
        let id = format!("{root}.v{n}");
        if self.claims.len() >= MAX_RUN_CLAIMS {
            let at = format!("claim {}", self.claims[from].id);
            self.claims[from].findings.push(start::finding(
                "falsify.claim_limit",
                &at,
                &format!("the run already holds {MAX_RUN_CLAIMS} claims; debate the redefined claim in a new run"),
            ));
            return;
        }
        let parent_id = self.claims[from].id.clone();
        if let Some(o) = self.claims[from].outcome.as_mut() {
            o.successor = Some(id.clone());
        }
        let spec = ClaimSpec {
            id,
            text,
            probes: self.claims[from].probes.clone(),
        };
        self.claims.push(ClaimRun::new(spec, Some(parent_id)));
    }
}

impl Procedure for FalsifyRun {
    type Start = FalsifyStart;
    type Input = FalsifyInput;

    fn start(start: FalsifyStart, ctx: &StartContext) -> Result<Self, ProcedureError> {
        start.check(ctx)?;
        Ok(FalsifyRun {
            run_id: ctx.run_id.clone(),
            ladder: start.escalation,
            script: if ctx.simulation {
                start.simulation
            } else {
                None
            },
            claims: start
                .claims
                .into_iter()
                .map(|c| ClaimRun::new(c, None))
                .collect(),
        })
    }

    fn awaiting(&self) -> Vec<Awaited> {
        self.claims.iter().filter_map(awaited).collect()
    }

    fn submit(&mut self, input: FalsifyInput) -> Result<(), ProcedureError> {
        let id = input.claim().to_string();
        let Some(c) = self.claims.iter_mut().find(|c| c.id == id) else {
            return Err(ProcedureError::refused(
                "falsify.unknown_claim",
                format!("claim {id}"),
                "no claim with this id in the run; use an id from the start document or a split-off claim",
            ));
        };
        c.submit(input)
    }

    fn pending(&self) -> Vec<PanelQuestion> {
        self.claims
            .iter()
            .filter_map(|c| questions::question(c, self.script.as_ref()))
            .collect()
    }

    fn settle(&mut self, s: &Settlement) -> Result<(), ProcedureError> {
        let at = self
            .claims
            .iter()
            .position(|c| questions::question(c, None).is_some_and(|q| q.key == s.key));
        let Some(i) = at else {
            return Err(ProcedureError::UnknownQuestion(s.key.clone()));
        };
        let ladder = self.ladder;
        if let Effect::Split(text) = self.claims[i].settle(s, &ladder) {
            self.split(i, text);
        }
        Ok(())
    }

    fn finished(&self) -> bool {
        self.claims.iter().all(|c| c.stage == Stage::Done)
    }

    fn summary(&self) -> String {
        let parts: Vec<String> = self
            .claims
            .iter()
            .map(|c| match &c.outcome {
                Some(o) => format!("{} {}", c.id, o.bucket.name()),
                None => format!("{} in play", c.id),
            })
            .collect();
        format!("falsify: {}", parts.join(", "))
    }

    fn render_markdown_with(&self, causes: &crate::deadlock::DeadlockCauses) -> String {
        render::markdown(self, causes)
    }
}

fn awaited(c: &ClaimRun) -> Option<Awaited> {
    let (role, input) = match c.stage {
        Stage::AwaitForm => ("defender", "form"),
        Stage::AwaitCommit => ("critic", "commit"),
        Stage::AwaitAttack => ("critic", "attack"),
        Stage::AwaitCriticCross => ("critic", "cross_exam (role critic)"),
        Stage::AwaitDefenderCross => ("defender", "cross_exam (role defender)"),
        Stage::Asking { .. } | Stage::Done => return None,
    };
    Some(Awaited {
        role: role.into(),
        what: format!("{}; submit input {input}", c.awaiting_words()),
    })
}
