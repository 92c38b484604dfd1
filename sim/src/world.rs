//! Motions with known truth (docs/SIMULATION.md "The world"): the true answer, how the
//! options are presented, who wrote the contribution, which way each stance leans, and the
//! error components shared by everyone and by each family.

use crate::gaussian::Rng;
use crate::scenario::WorldSpec;

/// One motion as the simulator knows it (the arbiters see only its content).
#[derive(Debug, Clone, PartialEq)]
pub struct Motion {
    /// The true answer of a binary motion.
    pub truth: bool,
    /// The true step (1 to 4) of a relevance motion; `None` for a binary one.
    pub relevance: Option<u8>,
    /// The yes option is presented first (position bias pulls toward the first).
    pub yes_first: bool,
    /// The yes option is the more verbose one.
    pub yes_longer: bool,
    /// The family of the contribution's author, when a model of the pool wrote it.
    pub author_family: Option<usize>,
    /// The author declared that family, so the draw keeps its arbiters off the panel.
    pub author_declared: bool,
    /// On a contested motion, +1 when stance A leans to yes (and B to no), -1 the other way;
    /// 0 when uncontested.
    pub lean_a: f64,
    /// The error every arbiter shares on this motion.
    pub common: f64,
    /// The error each family's members share, by family index.
    pub family_error: Vec<f64>,
}

/// Draw one motion.
pub fn draw_motion(w: &WorldSpec, families: usize, rng: &mut Rng) -> Motion {
    let relevance = rng
        .chance(w.relevance_share)
        .then(|| 1 + rng.below(4) as u8);
    let author_family =
        (families > 0 && rng.chance(w.author_family_share)).then(|| rng.below(families));
    let lean_a = if rng.chance(w.contested_share) {
        if rng.chance(0.5) { 1.0 } else { -1.0 }
    } else {
        0.0
    };
    Motion {
        truth: rng.chance(w.base_rate),
        relevance,
        yes_first: rng.chance(0.5),
        yes_longer: rng.chance(0.5),
        author_family,
        author_declared: author_family.is_some() && rng.chance(w.author_declares_family),
        lean_a,
        common: rng.normal(),
        family_error: (0..families).map(|_| rng.normal()).collect(),
    }
}
