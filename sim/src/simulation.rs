//! The simulation loop: draw a motion, let every arbiter of the pool rule, draw the panel
//! under both draw rules, and run the acceptance rule under both policies
//! (docs/SIMULATION.md "What one motion goes through").
//!
//! A leader that steers (docs/SECURITY.md "The draw cannot be steered") re-stamps the
//! batch seed of the old draw `rerolls` times and keeps the panel with the most seats of
//! its coalition; the unsteerable draw's seed is `panel_machine::features::draw_seed::derive` over a
//! record the leader does not control in this model. Without a steering leader both
//! policies judge the same panel, so their figures are paired.

use panel_machine::Policy;
use panel_machine::features::draw_seed;
use panel_machine::rules::draw::DrawSpec;

use crate::gaussian::Rng;
use crate::judge::{Ruling, rule};
use crate::panel::{Verdict, accept, draw_spec, seat_panel};
use crate::population::Population;
use crate::scenario::Scenario;
use crate::world::{Motion, draw_motion};

/// Stream tags: one generator per purpose (see `Rng::stream`).
pub(crate) const WORLD: u64 = 1;
pub(crate) const ERRORS: u64 = 2;
const DRAW: u64 = 3;

/// One simulated motion, as the figures need it.
#[derive(Debug, Clone, PartialEq)]
pub struct MotionRecord {
    pub truth: bool,
    /// The true relevance step of a relevance motion.
    pub gold: Option<u8>,
    /// Every pool member's ruling, in pool order (the best single member is chosen in
    /// hindsight from these).
    pub rulings: Vec<Ruling>,
    /// The panel under the old batch-seed draw (steered when a leader steers).
    pub seated_old: Vec<usize>,
    /// The panel under the unsteerable draw.
    pub seated_new: Vec<usize>,
    /// `Policy::default()` on `seated_old`.
    pub old: Verdict,
    /// `Policy::independent()` on `seated_new`.
    pub new: Verdict,
    /// `Policy::independent()` on the steered panel (only with a steering leader).
    pub new_on_steered: Option<Verdict>,
}

/// What to run: the scenario's world and pool with the panel size and motion count of
/// this run, and a stream offset so sweep points do not share draws.
#[derive(Debug, Clone)]
pub struct Run<'a> {
    pub scenario: &'a Scenario,
    pub population: &'a Population,
    pub motions: usize,
    pub seats: usize,
    pub stream: u64,
}

impl Run<'_> {
    /// Simulate every motion.
    pub fn simulate(&self) -> Vec<MotionRecord> {
        let s = self.scenario;
        let seed = s.seed;
        let mut world = Rng::stream(seed, WORLD + 16 * self.stream);
        let mut errors = Rng::stream(seed, ERRORS + 16 * self.stream);
        let mut seeds = Rng::stream(seed, DRAW + 16 * self.stream);
        let base = DrawSpec {
            seats: self.seats,
            min_per_stance: s.panel.min_per_stance,
            min_organisations: s.panel.min_organisations,
            contributors: Default::default(),
            author_model_family: None,
        };
        let (old_policy, new_policy) = (Policy::default(), Policy::independent());
        let leader = s.leader.as_ref().and_then(|l| {
            let c = self
                .population
                .coalitions
                .iter()
                .position(|x| *x == l.favours)?;
            Some((l.rerolls, c))
        });
        let families = self.population.families.len();
        (0..self.motions)
            .map(|index| {
                let m = draw_motion(&s.world, families, &mut world);
                let rulings = self.rule_all(&m, &mut errors);
                let spec = draw_spec(self.population, self.seats, &base, &m);
                let seated_new = self.unsteerable_panel(&spec, index, &mut seeds);
                let relevance = m.relevance.is_some();
                let judge = |seated: &Option<Vec<usize>>, policy: &Policy| match seated {
                    Some(p) => accept(self.population, p, &rulings, relevance, policy),
                    None => Verdict::NoPanel,
                };
                let (seated_old, new_on_steered) = match leader {
                    Some((rerolls, c)) => {
                        let steered = self.steered_panel(&spec, rerolls, c, &mut seeds);
                        let v = judge(&steered, &new_policy);
                        (steered, Some(v))
                    }
                    None => (seated_new.clone(), None),
                };
                MotionRecord {
                    truth: m.truth,
                    gold: m.relevance,
                    old: judge(&seated_old, &old_policy),
                    new: judge(&seated_new, &new_policy),
                    new_on_steered,
                    seated_old: seated_old.unwrap_or_default(),
                    seated_new: seated_new.unwrap_or_default(),
                    rulings,
                }
            })
            .collect()
    }

    /// Every pool member's ruling; sybils copy their originals.
    pub(crate) fn rule_all(&self, m: &Motion, errors: &mut Rng) -> Vec<Ruling> {
        let pop = self.population;
        let shared = self.scenario.world.shared_error;
        let mut out: Vec<Ruling> = pop
            .arbiters
            .iter()
            .map(|a| rule(a, pop, m, shared, errors.normal()))
            .collect();
        for (i, a) in pop.arbiters.iter().enumerate() {
            if let Some(o) = a.copies {
                out[i] = out[o];
            }
        }
        out
    }

    /// The panel from the unsteerable seed: a hash of the record before the motion
    /// (here a fresh root per motion) and the motion id.
    fn unsteerable_panel(
        &self,
        spec: &DrawSpec,
        index: usize,
        seeds: &mut Rng,
    ) -> Option<Vec<usize>> {
        let mut root = [0u8; 32];
        for chunk in root.chunks_mut(8) {
            chunk.copy_from_slice(&seeds.next_u64().to_le_bytes());
        }
        let seed = draw_seed::derive(index as u64, &root, &format!("m{index}"));
        seat_panel(self.population, spec, seed)
    }

    /// The old draw under a leader that tries `rerolls` batch seeds and keeps the panel
    /// with the most seats of coalition `c` (the first such).
    fn steered_panel(
        &self,
        spec: &DrawSpec,
        rerolls: usize,
        c: usize,
        seeds: &mut Rng,
    ) -> Option<Vec<usize>> {
        let pop = self.population;
        let mut best: Option<(usize, Vec<usize>)> = None;
        for _ in 0..rerolls {
            let Some(p) = seat_panel(pop, spec, seeds.next_u64()) else {
                continue;
            };
            let held = p
                .iter()
                .filter(|&&i| pop.arbiters[i].coalition == Some(c))
                .count();
            if best.as_ref().is_none_or(|(h, _)| held > *h) {
                best = Some((held, p));
            }
        }
        best.map(|(_, p)| p)
    }
}
