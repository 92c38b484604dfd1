//! Panel draw: which admitted arbiters sit on a motion's panel.
//!
//! Pure and deterministic from a logged seed, so any reader of the log can re-derive every
//! panel. The generator is SplitMix64 (Steele, Lea, Flood 2014, "Fast splittable
//! pseudorandom number generators"): `state += 0x9E3779B97F4A7C15; z = state;
//! z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
//! return z ^ (z >> 31)`.
//!
//! Algorithm:
//! 1. Eligible = admitted, not a contributor to the debate, and of a model family different
//!    from the author's when the author declared one. Sort by arbiter id, so the input order
//!    does not matter.
//! 2. Shuffle the eligible list with Fisher-Yates driven by SplitMix64(seed); for `i` from
//!    the last index down to 1, swap `i` with `next() % (i + 1)`.
//! 3. Walking the shuffled order, take the first `min_per_stance` arbiters of stance A, then
//!    of stance B, then fill the remaining seats in shuffled order with anyone left.
//! 4. If the seats span fewer than `min_organisations` organisations, walk the unchosen
//!    arbiters in shuffled order and swap one in for the latest-chosen seat whose removal
//!    keeps the stance minimums and adds a new organisation; repeat until satisfied.
//! 5. Any constraint the pool cannot meet is a `DrawError` naming the shortfall.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::rules::acceptance::Stance;

/// The SplitMix64 generator (see the module docs for the exact recurrence).
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// An arbiter in the pool the panel is drawn from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    pub id: String,
    pub stance: Stance,
    pub organisation: String,
    pub model_family: String,
    pub admitted: bool,
}

/// What the panel must look like.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrawSpec {
    pub seats: usize,
    /// Seats reserved for each of stance A and stance B.
    pub min_per_stance: usize,
    pub min_organisations: usize,
    /// Arbiters who contributed to the debate; never seated.
    pub contributors: BTreeSet<String>,
    /// The author's declared model family; arbiters of that family are not seated.
    pub author_model_family: Option<String>,
}

impl DrawSpec {
    /// The project default: `seats` seats, at least one per side, two organisations.
    pub fn new(seats: usize) -> Self {
        Self {
            seats,
            min_per_stance: 1,
            min_organisations: 2,
            contributors: BTreeSet::new(),
            author_model_family: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error, Serialize, Deserialize)]
pub enum DrawError {
    #[error(
        "a panel of {seats} seats cannot reserve {min_per_stance} seats for each of stances A and B; ask for at least {} seats (`panel debate new --seats N --min-per-stance M`)",
        2 * min_per_stance
    )]
    SeatsBelowStanceMinimum { seats: usize, min_per_stance: usize },
    #[error(
        "only {available} eligible arbiters of stance {stance:?} (admitted, not contributors, not of the author's model family); {needed} needed: admit more arbiters of that stance (`panel arbiter register`; `panel arbiter list` shows who is admitted) or lower the minimum (`panel debate new --min-per-stance`)"
    )]
    NotEnoughOfStance {
        stance: Stance,
        needed: usize,
        available: usize,
    },
    #[error(
        "only {available} eligible arbiters for {needed} seats: admit more arbiters (`panel arbiter register`; `panel arbiter list` shows who is admitted) or draw a smaller panel (`panel debate new --seats`)"
    )]
    PoolTooSmall { needed: usize, available: usize },
    #[error(
        "the eligible pool cannot seat {needed} organisations under the stance minimums (best: {reached}); admit arbiters from other organisations (`panel arbiter register --organisation ORG`; a new organisation joins with `panel org admit`)"
    )]
    NotEnoughOrganisations { needed: usize, reached: usize },
}

/// The candidates `spec` may seat: admitted, not contributors, not of the author's model
/// family; sorted by id, each once.
fn eligible<'a>(pool: &'a [Candidate], spec: &DrawSpec) -> Vec<&'a Candidate> {
    let mut eligible: Vec<&Candidate> = pool
        .iter()
        .filter(|c| c.admitted && !spec.contributors.contains(&c.id))
        .filter(|c| spec.author_model_family.as_deref() != Some(c.model_family.as_str()))
        .collect();
    eligible.sort_by(|a, b| a.id.cmp(&b.id));
    eligible.dedup_by(|a, b| a.id == b.id);
    eligible
}

/// Prefers low-correlation panels among equally eligible arbiters (docs/coordinator/acceptance.md
/// "Measured independence"): while some seat can go to an unseated eligible arbiter of
/// the same stance without losing an organisation, and that lowers the panel's summed
/// pairwise correlation `rho`, the best such swap is made (ties: the earliest seat, then
/// the lowest id). Deterministic from the drawn panel and `rho`, which the record fixes,
/// so it steers nothing; it only moves the draw away from arbiters that share errors.
pub fn prefer_independent(
    mut panel: Vec<Candidate>,
    pool: &[Candidate],
    spec: &DrawSpec,
    rho: impl Fn(&Candidate, &Candidate) -> f64,
) -> Vec<Candidate> {
    let eligible = eligible(pool, spec);
    let orgs = |p: &[Candidate]| {
        p.iter()
            .map(|c| c.organisation.as_str())
            .collect::<BTreeSet<_>>()
            .len()
    };
    // Each seat can change at most once per pass and every swap strictly lowers the sum,
    // so this ends; the bound only guards against float surprises.
    for _ in 0..panel.len() * eligible.len().max(1) {
        let floor = orgs(&panel).min(spec.min_organisations);
        let mut best: Option<(f64, usize, &Candidate)> = None;
        for (i, seated) in panel.iter().enumerate() {
            let others = || {
                panel
                    .iter()
                    .enumerate()
                    .filter(move |(j, _)| *j != i)
                    .map(|(_, c)| c)
            };
            let now: f64 = others().map(|o| rho(seated, o)).sum();
            for c in eligible
                .iter()
                .filter(|c| c.stance == seated.stance && !panel.iter().any(|p| p.id == c.id))
            {
                let delta = others().map(|o| rho(c, o)).sum::<f64>() - now;
                if delta < -1e-9 && best.as_ref().is_none_or(|(d, _, _)| delta < *d) {
                    let mut trial = panel.clone();
                    trial[i] = (*c).clone();
                    if orgs(&trial) >= floor {
                        best = Some((delta, i, c));
                    }
                }
            }
        }
        match best {
            Some((_, i, c)) => panel[i] = c.clone(),
            None => break,
        }
    }
    panel
}

/// Draw a panel. Returns the chosen candidates in seating order.
pub fn draw(pool: &[Candidate], spec: &DrawSpec, seed: u64) -> Result<Vec<Candidate>, DrawError> {
    if spec.seats < 2 * spec.min_per_stance {
        return Err(DrawError::SeatsBelowStanceMinimum {
            seats: spec.seats,
            min_per_stance: spec.min_per_stance,
        });
    }
    let mut eligible = eligible(pool, spec);

    for stance in [Stance::A, Stance::B] {
        let available = eligible.iter().filter(|c| c.stance == stance).count();
        if available < spec.min_per_stance {
            return Err(DrawError::NotEnoughOfStance {
                stance,
                needed: spec.min_per_stance,
                available,
            });
        }
    }
    if eligible.len() < spec.seats {
        return Err(DrawError::PoolTooSmall {
            needed: spec.seats,
            available: eligible.len(),
        });
    }

    let mut rng = SplitMix64::new(seed);
    for i in (1..eligible.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        eligible.swap(i, j);
    }

    // Indices into `eligible` (shuffled order), in seating order.
    let mut chosen: Vec<usize> = Vec::with_capacity(spec.seats);
    for stance in [Stance::A, Stance::B] {
        let picks: Vec<usize> = (0..eligible.len())
            .filter(|&i| eligible[i].stance == stance)
            .take(spec.min_per_stance)
            .collect();
        chosen.extend(picks);
    }
    for i in 0..eligible.len() {
        if chosen.len() >= spec.seats {
            break;
        }
        if !chosen.contains(&i) {
            chosen.push(i);
        }
    }

    let orgs = |chosen: &[usize]| -> usize {
        chosen
            .iter()
            .map(|&i| eligible[i].organisation.as_str())
            .collect::<BTreeSet<_>>()
            .len()
    };
    let stance_count = |chosen: &[usize], s: Stance| -> usize {
        chosen.iter().filter(|&&i| eligible[i].stance == s).count()
    };
    while orgs(&chosen) < spec.min_organisations {
        let present: BTreeSet<&str> = chosen
            .iter()
            .map(|&i| eligible[i].organisation.as_str())
            .collect();
        let mut swapped = false;
        'outer: for (cand, c) in eligible.iter().enumerate() {
            if chosen.contains(&cand) || present.contains(c.organisation.as_str()) {
                continue;
            }
            for pos in (0..chosen.len()).rev() {
                let mut trial = chosen.clone();
                trial[pos] = cand;
                let keeps_stances = [Stance::A, Stance::B]
                    .iter()
                    .all(|s| stance_count(&trial, *s) >= spec.min_per_stance);
                // The removed seat must not be the only holder of an organisation we keep
                // counting on; requiring a strict increase guarantees progress.
                if keeps_stances && orgs(&trial) > orgs(&chosen) {
                    chosen = trial;
                    swapped = true;
                    break 'outer;
                }
            }
        }
        if !swapped {
            return Err(DrawError::NotEnoughOrganisations {
                needed: spec.min_organisations,
                reached: orgs(&chosen),
            });
        }
    }
    Ok(chosen.into_iter().map(|i| eligible[i].clone()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cand(id: &str, stance: Stance, org: &str, family: &str) -> Candidate {
        Candidate {
            id: id.into(),
            stance,
            organisation: org.into(),
            model_family: family.into(),
            admitted: true,
        }
    }

    /// Among equally eligible arbiters the panel moves off shared lineages: plain draws
    /// sometimes seat two arbiters of one family, the preferred ones never, and every
    /// preferred panel keeps its stance seats and its organisations.
    #[test]
    fn the_draw_prefers_arbiters_that_do_not_share_errors() {
        let pool = [
            cand("a1", Stance::A, "o1", "x"),
            cand("a2", Stance::A, "o2", "y"),
            cand("b1", Stance::B, "o3", "x"),
            cand("b2", Stance::B, "o4", "z"),
        ];
        let spec = DrawSpec::new(2);
        let rho =
            |a: &Candidate, b: &Candidate| f64::from(u8::from(a.model_family == b.model_family));
        let shared = |p: &[Candidate]| p[0].model_family == p[1].model_family;
        let mut plain_shared = 0;
        for seed in 0..64 {
            let plain = draw(&pool, &spec, seed).unwrap();
            plain_shared += usize::from(shared(&plain));
            let preferred = prefer_independent(plain.clone(), &pool, &spec, rho);
            assert!(!shared(&preferred), "seed {seed}: {preferred:?}");
            let stances: BTreeSet<Stance> = preferred.iter().map(|c| c.stance).collect();
            assert_eq!(stances.len(), 2);
            if !shared(&plain) {
                assert_eq!(preferred, plain, "an independent panel is left as drawn");
            }
        }
        assert!(plain_shared > 0, "the plain draw never paired one family");
    }

    fn pool() -> Vec<Candidate> {
        vec![
            cand("a1", Stance::A, "o1", "f1"),
            cand("a2", Stance::A, "o2", "f2"),
            cand("a3", Stance::A, "o1", "f3"),
            cand("b1", Stance::B, "o3", "f1"),
            cand("b2", Stance::B, "o1", "f2"),
            cand("b3", Stance::B, "o2", "f3"),
            cand("n1", Stance::None, "o4", "f4"),
        ]
    }

    #[test]
    fn splitmix_reference_values() {
        // First outputs for seed 0, as published with the algorithm's reference code.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn same_seed_same_panel_any_input_order() {
        let spec = DrawSpec::new(5);
        let p1 = draw(&pool(), &spec, 42).unwrap();
        let mut reversed = pool();
        reversed.reverse();
        assert_eq!(p1, draw(&reversed, &spec, 42).unwrap());
        let differs = (0..20u64).any(|s| draw(&pool(), &spec, s).unwrap() != p1);
        assert!(differs, "the seed must matter");
    }

    #[test]
    fn contributors_and_author_family_are_never_seated() {
        let mut spec = DrawSpec::new(3);
        spec.contributors.insert("a1".into());
        spec.author_model_family = Some("f2".into());
        for seed in 0..50 {
            let p = draw(&pool(), &spec, seed).unwrap();
            assert!(
                p.iter().all(|c| c.id != "a1" && c.model_family != "f2"),
                "{p:?}"
            );
        }
    }

    #[test]
    fn unadmitted_never_seated_and_clear_errors() {
        let mut pool = pool();
        for c in pool.iter_mut().filter(|c| c.stance == Stance::B) {
            c.admitted = false;
        }
        let err = draw(&pool, &DrawSpec::new(3), 1).unwrap_err();
        assert_eq!(
            err,
            DrawError::NotEnoughOfStance {
                stance: Stance::B,
                needed: 1,
                available: 0
            }
        );
        assert!(
            err.to_string()
                .contains("admit more arbiters of that stance")
        );
        assert!(matches!(
            draw(&self::pool(), &DrawSpec::new(8), 1),
            Err(DrawError::PoolTooSmall {
                needed: 8,
                available: 7
            })
        ));
        assert!(matches!(
            draw(&self::pool(), &DrawSpec::new(1), 1),
            Err(DrawError::SeatsBelowStanceMinimum { .. })
        ));
    }

    #[test]
    fn one_organisation_pool_is_refused() {
        let pool = vec![
            cand("a1", Stance::A, "same", "f1"),
            cand("b1", Stance::B, "same", "f2"),
            cand("b2", Stance::B, "same", "f3"),
        ];
        assert!(matches!(
            draw(&pool, &DrawSpec::new(2), 9),
            Err(DrawError::NotEnoughOrganisations {
                needed: 2,
                reached: 1
            })
        ));
    }

    #[test]
    fn organisation_repair_swaps_in_a_new_organisation() {
        // Most of the pool is one organisation; the draw must still seat two.
        let mut pool: Vec<Candidate> = (0..10)
            .map(|i| cand(&format!("a{i}"), Stance::A, "big", "f"))
            .collect();
        pool.extend((0..10).map(|i| cand(&format!("b{i}"), Stance::B, "big", "f")));
        pool.push(cand("lone", Stance::None, "small", "g"));
        for seed in 0..100 {
            let p = draw(&pool, &DrawSpec::new(4), seed).unwrap();
            assert!(p.iter().any(|c| c.id == "lone"));
        }
    }

    fn candidate_strategy() -> impl Strategy<Value = Candidate> {
        (
            prop_oneof![Just(Stance::A), Just(Stance::B), Just(Stance::None)],
            0u8..4,
            0u8..3,
            any::<bool>(),
        )
            .prop_map(|(stance, org, fam, admitted)| Candidate {
                id: String::new(),
                stance,
                organisation: format!("o{org}"),
                model_family: format!("f{fam}"),
                admitted,
            })
    }

    proptest! {
        /// Every successful draw satisfies every constraint; every failure is a named error.
        #[test]
        fn draws_satisfy_constraints(
            mut pool in proptest::collection::vec(candidate_strategy(), 0..30),
            seats in 1usize..8,
            min_per_stance in 0usize..3,
            seed in any::<u64>(),
            contributor in 0usize..30,
            author_family in proptest::option::of(0u8..3),
        ) {
            for (i, c) in pool.iter_mut().enumerate() { c.id = format!("c{i:02}"); }
            let mut spec = DrawSpec::new(seats);
            spec.min_per_stance = min_per_stance;
            spec.contributors.insert(format!("c{contributor:02}"));
            spec.author_model_family = author_family.map(|f| format!("f{f}"));
            match draw(&pool, &spec, seed) {
                Ok(panel) => {
                    prop_assert_eq!(panel.len(), seats);
                    let ids: BTreeSet<_> = panel.iter().map(|c| &c.id).collect();
                    prop_assert_eq!(ids.len(), seats);
                    for s in [Stance::A, Stance::B] {
                        prop_assert!(panel.iter().filter(|c| c.stance == s).count() >= min_per_stance);
                    }
                    let orgs: BTreeSet<_> = panel.iter().map(|c| &c.organisation).collect();
                    prop_assert!(orgs.len() >= 2);
                    for c in &panel {
                        prop_assert!(c.admitted);
                        prop_assert!(!spec.contributors.contains(&c.id));
                        prop_assert!(spec.author_model_family.as_ref() != Some(&c.model_family));
                    }
                    prop_assert_eq!(&panel, &draw(&pool, &spec, seed).unwrap());
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
    }
}
