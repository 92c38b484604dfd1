//! The judge model (docs/SIMULATION.md "The judge model"): how one arbiter rules on one
//! motion, with its faults.
//!
//! A binary ruling is the sign of a latent judgement
//! `z = skill·(±1 for the truth) + biases + error`, where the error has unit variance split
//! into a share every arbiter has in common (`world.shared_error`), a share its family has
//! in common (`family.error_correlation`) and its own. Without faults `P(correct) =
//! Φ(skill) = accuracy`, and the calibrated probability of yes given `z` is
//! `σ(2·skill·z)`; `confidence` scales that log-odds. Biases shift `z`: toward the option
//! presented first, the more verbose one, yes when the author is of its own family, and
//! the own stance's side on contested motions. A colluder rules for its coalition's
//! target; a sybil copies its original.
//!
//! The probability of yes and the relevance step are `calibration::judge_model`'s, which
//! the node's `simulated` judge (`node/src/judge/simulated.rs`) uses too, with the same
//! error mix (`judge_model::error`, written out here term by term): a simulated arbiter on
//! a live panel judges by the same model as a simulated pool here.

use calibration::judge_model;
use panel_machine::Stance;

use crate::population::{Arbiter, Population};
use crate::scenario::Target;
use crate::world::Motion;

/// What one arbiter answered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ruling {
    pub yes: bool,
    /// Probability of yes, in (0, 1).
    pub p_yes: f32,
    /// The relevance step, on relevance motions.
    pub relevance: Option<u8>,
}

fn sign(b: bool) -> f64 {
    if b { 1.0 } else { -1.0 }
}

/// Everything but the arbiter's own error: truth, biases, shared errors.
fn latent_mean(a: &Arbiter, pop: &Population, m: &Motion, shared: f64, truth: f64) -> f64 {
    let rho = pop.families[a.family].1;
    let own_camp = match a.leaning {
        Stance::A => 1.0,
        Stance::B => -1.0,
        Stance::None => 0.0,
    };
    a.skill * truth
        + a.position_bias * sign(m.yes_first)
        + a.verbosity_bias * sign(m.yes_longer)
        + a.self_family_preference * f64::from(u8::from(m.author_family == Some(a.family)))
        + a.partisanship * m.lean_a * own_camp
        + shared.sqrt() * m.common
        + rho.sqrt() * m.family_error[a.family]
}

/// The ruling of a non-copying arbiter, given its own standard normal error `own`.
pub fn rule(a: &Arbiter, pop: &Population, m: &Motion, shared: f64, own: f64) -> Ruling {
    let rho = pop.families[a.family].1;
    let own_share = (1.0 - shared - rho).max(0.0).sqrt();
    if let Some(target) = a.target {
        return collude(target, m);
    }
    if let Some(gold) = m.relevance {
        let z = latent_mean(a, pop, m, shared, 0.0) + own_share * own;
        let step = if a.inert {
            4
        } else {
            judge_model::noisy_step(f64::from(gold), z, a.skill, 1, 4)
        };
        return Ruling {
            yes: true,
            p_yes: 0.5,
            relevance: Some(step),
        };
    }
    let z = latent_mean(a, pop, m, shared, sign(m.truth)) + own_share * own;
    let p_yes = judge_model::p_yes(a.skill, a.confidence, z) as f32;
    Ruling {
        yes: z > 0.0,
        p_yes,
        relevance: None,
    }
}

/// A colluder's ruling: its target with confidence, or, on a relevance motion, the step
/// farthest from the truth.
fn collude(target: Target, m: &Motion) -> Ruling {
    if let Some(gold) = m.relevance {
        return Ruling {
            yes: true,
            p_yes: 0.5,
            relevance: Some(if gold >= 3 { 1 } else { 4 }),
        };
    }
    let yes = match target {
        Target::Yes => true,
        Target::No => false,
        Target::Wrong => !m.truth,
    };
    Ruling {
        yes,
        p_yes: if yes { 0.95 } else { 0.05 },
        relevance: None,
    }
}
