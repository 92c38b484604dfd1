//! Self-selected panels and the random sample that overrides them (docs/SIMULATION.md
//! "Self-selection"; docs/PANEL.md "Random-sample appeals").
//!
//! Where panels are drawn only from the arbiters who chose to take part (a debate's
//! declared arbiters), a coalition that always takes part while few others do holds most
//! seats. Here every coalition member volunteers for every motion and each honest arbiter
//! with probability [`HONEST_TURNOUT`]; the panel is drawn from the volunteers by the
//! machine's draw and decided by `Policy::independent()`. Every accepted outcome is then
//! appealed to a random sample: a panel two seats wider per appeal round, drawn from the
//! whole pool without any earlier panel's sitters, under the same rule; a sample that
//! decides nothing is appealed again, up to [`ROUNDS`] rounds (the appeal ladder). Where a
//! sample accepts the other answer, its outcome stands; where it accepts the same one, or
//! none decides, the first one does.

use serde::Serialize;

use panel_machine::Policy;
use panel_machine::rules::draw::{DrawSpec, draw};

use crate::coalition::forced;
use crate::gaussian::Rng;
use crate::panel::{Verdict, accept};
use crate::population::Population;
use crate::simulation::MotionRecord;

/// The share of honest arbiters who volunteer for a motion.
pub const HONEST_TURNOUT: f64 = 0.1;
/// Binary motions measured per coalition (the first ones of the run).
pub const MEASURED: usize = 5_000;
/// Seats each appeal round adds to the panel (docs/PANEL.md "Fresh panels").
pub const SAMPLE_WIDENING: usize = 2;
/// Appeal rounds at most, each a fresh, wider sample.
pub const ROUNDS: usize = 3;
/// Stream tag of the volunteers' and the draws' randomness.
const SELF_SELECTION: u64 = 9;

/// One coalition's self-selected panels, before and after the random sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelfSelectionFigures {
    pub coalition: String,
    /// Binary motions measured.
    pub motions: usize,
    /// Accepted outcomes of the self-selected panels, and how many were right.
    pub answered: usize,
    pub correct: usize,
    /// Outcomes a sample replaced, and outcomes no sample decided in [`ROUNDS`] rounds.
    pub overridden: usize,
    pub undecided_samples: usize,
    /// Accepted outcomes after the samples, and how many were right.
    pub final_answered: usize,
    pub final_correct: usize,
    /// Outcomes the coalition alone carried, before and after the samples.
    pub forced: usize,
    pub final_forced: usize,
    /// Right outcomes after the same samples decided by the head-count rule
    /// (`Policy::default()`) instead: what the override would be if the sample answered
    /// whenever a majority does.
    pub head_count_correct: usize,
}

/// What the figures need from a run.
pub struct Setting<'a> {
    pub population: &'a Population,
    pub records: &'a [MotionRecord],
    /// The scenario's draw constraints (seats, stance and organisation floors).
    pub base: DrawSpec,
    pub seed: u64,
}

impl Setting<'_> {
    /// The figures of every coalition of the pool.
    pub fn measure(&self) -> Vec<SelfSelectionFigures> {
        (0..self.population.coalitions.len())
            .map(|c| self.coalition(c))
            .collect()
    }

    fn coalition(&self, c: usize) -> SelfSelectionFigures {
        let pop = self.population;
        let policy = Policy::independent();
        let mut rng = Rng::stream(self.seed, SELF_SELECTION + 16 * c as u64);
        let mut f = SelfSelectionFigures {
            coalition: pop.coalitions[c].clone(),
            motions: 0,
            answered: 0,
            correct: 0,
            overridden: 0,
            undecided_samples: 0,
            final_answered: 0,
            final_correct: 0,
            forced: 0,
            final_forced: 0,
            head_count_correct: 0,
        };
        let binary = self.records.iter().filter(|r| r.gold.is_none());
        for r in binary.take(MEASURED) {
            f.motions += 1;
            let volunteers: Vec<bool> = pop
                .arbiters
                .iter()
                .map(|a| a.coalition == Some(c) || rng.uniform() < HONEST_TURNOUT)
                .collect();
            let first = self.panel(&volunteers, self.base.seats, rng.next_u64());
            let seeds: Vec<u64> = (0..ROUNDS).map(|_| rng.next_u64()).collect();
            let verdict = first.as_ref().map_or(Verdict::NoPanel, |p| {
                accept(pop, p, &r.rulings, false, &policy)
            });
            let (Some(answer), Some(first)) = (verdict.decided(), first) else {
                continue;
            };
            f.answered += 1;
            f.correct += usize::from(answer == r.truth);
            let first_forced = forced(pop, c, &r.rulings, &first, verdict);
            f.forced += usize::from(first_forced);
            let (final_answer, final_forced) = match self.ladder(r, &first, &seeds, &policy) {
                Some((v, sample)) if v.decided() != Some(answer) => {
                    f.overridden += 1;
                    let other = v.decided().unwrap_or(answer);
                    (other, forced(pop, c, &r.rulings, &sample, v))
                }
                Some(_) => (answer, first_forced),
                None => {
                    f.undecided_samples += 1;
                    (answer, first_forced)
                }
            };
            f.final_answered += 1;
            f.final_correct += usize::from(final_answer == r.truth);
            f.final_forced += usize::from(final_forced);
            // The same samples decided by the head-count rule, for comparison.
            let head_count = self
                .ladder(r, &first, &seeds, &Policy::default())
                .and_then(|(v, _)| v.decided())
                .unwrap_or(answer);
            f.head_count_correct += usize::from(head_count == r.truth);
        }
        f
    }

    /// The appeal ladder after the panel `first`: up to [`ROUNDS`] fresh samples, each
    /// [`SAMPLE_WIDENING`] seats wider and without every earlier sitter, drawn with
    /// `seeds`; the first that decides under `policy`, with its panel.
    fn ladder(
        &self,
        r: &MotionRecord,
        first: &[usize],
        seeds: &[u64],
        policy: &Policy,
    ) -> Option<(Verdict, Vec<usize>)> {
        let pop = self.population;
        let mut sat: Vec<bool> = (0..pop.arbiters.len())
            .map(|i| first.contains(&i))
            .collect();
        for (round, seed) in seeds.iter().enumerate() {
            let outside: Vec<bool> = sat.iter().map(|s| !s).collect();
            let seats = self.base.seats + SAMPLE_WIDENING * (round + 1);
            let sample = self.panel(&outside, seats, *seed)?;
            let v = accept(pop, &sample, &r.rulings, false, policy);
            if v.decided().is_some() {
                return Some((v, sample));
            }
            for &i in &sample {
                sat[i] = true;
            }
        }
        None
    }

    /// A panel of `seats` drawn from the arbiters `eligible` marks, as pool indices.
    fn panel(&self, eligible: &[bool], seats: usize, seed: u64) -> Option<Vec<usize>> {
        let pop = self.population;
        let pool: Vec<_> = pop
            .candidates
            .iter()
            .filter(|cand| pop.index_of(&cand.id).is_some_and(|i| eligible[i]))
            .cloned()
            .collect();
        let spec = DrawSpec {
            seats,
            ..self.base.clone()
        };
        let seated = draw(&pool, &spec, seed).ok()?;
        seated.iter().map(|cand| pop.index_of(&cand.id)).collect()
    }
}
