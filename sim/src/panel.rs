//! One motion through the machine's own code: the panel draw (`panel_machine::rules::draw::draw`)
//! from the draw seed of either rule (`panel_machine::features::draw_seed`), and the acceptance rule
//! (`panel_machine::rules::acceptance::decide`) under the old policy and `Policy::independent()`
//! (docs/coordinator/acceptance.md "The panel draw" and "The acceptance rule").

use panel_machine::rules::acceptance::RevealedRuling;

use panel_machine::rules::draw::{DrawSpec, draw};
use panel_machine::rules::independence::seated_lineage;
use panel_machine::{Acceptance, Decision, MotionKind, Outcome, Policy, Seat};

use crate::judge::Ruling;
use crate::population::Population;
use crate::world::Motion;

/// What the acceptance rule made of a motion, reduced to what the figures need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// No panel could be drawn (the pool cannot meet the draw's constraints).
    NoPanel,
    Deadlocked,
    Decided(bool),
    Relevance(u8),
}

impl Verdict {
    /// The accepted binary answer.
    pub fn decided(self) -> Option<bool> {
        match self {
            Verdict::Decided(d) => Some(d),
            _ => None,
        }
    }
}

/// The draw's constraints for one motion: the scenario's panel, and the author's family
/// kept off when the author declared it.
pub fn draw_spec(pop: &Population, seats: usize, base: &DrawSpec, m: &Motion) -> DrawSpec {
    let mut spec = base.clone();
    spec.seats = seats;
    spec.author_model_family = m
        .author_family
        .filter(|_| m.author_declared)
        .map(|f| pop.families[f].0.clone());
    spec
}

/// Draw a panel as pool indices, in seating order; `None` when the pool cannot seat one.
pub fn seat_panel(pop: &Population, spec: &DrawSpec, seed: u64) -> Option<Vec<usize>> {
    let panel = draw(&pop.candidates, spec, seed).ok()?;
    panel.iter().map(|c| pop.index_of(&c.id)).collect()
}

/// Run the acceptance rule over the seated arbiters' rulings under `policy`.
pub fn accept(
    pop: &Population,
    seated: &[usize],
    rulings: &[Ruling],
    relevance: bool,
    policy: &Policy,
) -> Verdict {
    let seats: Vec<Seat> = seated
        .iter()
        .map(|&i| {
            let a = &pop.arbiters[i];
            Seat {
                arbiter_id: a.id.clone(),
                stance: a.declared,
                organisation: a.organisation.clone(),
                lineage: seated_lineage(Some(policy), a.declared_family.clone()),
            }
        })
        .collect();
    let revealed: Vec<RevealedRuling> = seated
        .iter()
        .map(|&i| {
            let r = &rulings[i];
            RevealedRuling {
                arbiter_id: pop.arbiters[i].id.clone(),
                decision: if r.yes { Decision::Yes } else { Decision::No },
                probability_milli: (f64::from(r.p_yes) * 1000.0).round() as u16,
                relevance: r.relevance,
            }
        })
        .collect();
    let kind = if relevance {
        MotionKind::Relevance
    } else {
        MotionKind::Merge
    };
    match panel_machine::rules::acceptance::decide(kind, &seats, &revealed, &[], policy) {
        Acceptance::Accepted { outcome, .. } => match outcome {
            Outcome::Decided(d) => Verdict::Decided(d == Decision::Yes),
            Outcome::Relevance(v) => Verdict::Relevance(v),
            Outcome::TierVerified { decision, .. } => Verdict::Decided(decision == Decision::Yes),
        },
        Acceptance::Deadlocked(_) => Verdict::Deadlocked,
    }
}
