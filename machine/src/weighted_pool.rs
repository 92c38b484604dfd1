//! Performance-weighted pooling (docs/coordinator/acceptance.md "The weighted pool"): under
//! a policy with [`Aggregation::WeightedPool`](crate::acceptance::Aggregation) the outcome
//! of a yes/no motion and its probability come from a weighted linear pool of the counted
//! rulings' stated probabilities (Cooke's decision maker is such a pool), not from head
//! counts per stance group. The cross-prior guarantees stay in the acceptance rule around
//! it (`acceptance.rs`): supporters of both stances, no organisation pivotal, at least two
//! independent votes.
//!
//! An arbiter's weight is its Brier skill over its track record of **resolved** items only
//! (exam items scored against their revealed gold, and earlier motions a later outcome
//! resolved; `recalibration.rs`), never agreement with the panel it sat on, shrunk toward
//! a modest prior so an arbiter with little record weighs like an average admitted one.
//! Skill at or below chance gives weight zero: a worse-than-chance arbiter is ignored,
//! never inverted (inverting would pay an arbiter for being wrong on purpose).
//!
//! Each lineage's rulings share one lineage's worth of weight (rulings of one model family
//! err together, docs/SIMULATION.md "The model"), so copies add no weight.
//!
//! Pure and exact: integer skills, and f64 sums in a fixed order with only `+ - * /`, so
//! every replica computes the same thousandths.

use std::collections::BTreeMap;

use calibration::recalibration::ResolvedItem;

/// The skill an admitted arbiter without a track record is given, in thousandths of the
/// Brier skill score (1 − Brier/0.25): about that of a judge right three times in four
/// that says 0.75 (Brier 0.1875, skill 0.25).
pub const PRIOR_SKILL_MILLI: i64 = 250;

/// How many resolved items the prior is worth: an arbiter's own record outweighs it after
/// about this many items.
pub const PRIOR_ITEMS: i64 = 10;

/// Per-arbiter weights in thousandths, by arbiter id. An arbiter missing from the map
/// weighs [`Weights::default_milli`]: the prior's weight, or one for equal weights.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Weights {
    by_arbiter: BTreeMap<String, u32>,
    equal: bool,
}

impl Weights {
    /// Every arbiter weighs the same: the lineage-normalised pool with no performance
    /// weighting, what the simulator and `OutcomeConfidence::equal_weights_milli` compare
    /// the weighted pool against.
    pub fn equal() -> Self {
        Self {
            by_arbiter: BTreeMap::new(),
            equal: true,
        }
    }

    /// Weights of the named arbiters from their resolved track records.
    pub fn from_records<'a>(
        records: impl IntoIterator<Item = (&'a str, &'a [ResolvedItem])>,
    ) -> Self {
        Self {
            by_arbiter: records
                .into_iter()
                .map(|(id, items)| (id.to_owned(), weight_milli(items)))
                .collect(),
            equal: false,
        }
    }

    fn default_milli(&self) -> u32 {
        if self.equal {
            1000
        } else {
            PRIOR_SKILL_MILLI as u32
        }
    }

    /// The weight of `arbiter_id` in thousandths.
    pub fn of(&self, arbiter_id: &str) -> u32 {
        if self.equal {
            return 1000;
        }
        self.by_arbiter
            .get(arbiter_id)
            .copied()
            .unwrap_or_else(|| self.default_milli())
    }
}

/// One item's Brier skill in thousandths (1000 for a certain right answer, 0 for 0.5),
/// floored at −1000: a confident wrong answer costs what a confident right one earns, so
/// a handful of items cannot wipe out a record (unfloored, it would cost −3000).
fn item_skill_milli(item: &ResolvedItem) -> i64 {
    let p = (item.probability.clamp(0.0, 1.0) * 1000.0).round() as i64;
    let o = if item.outcome { 1000 } else { 0 };
    let d = p - o;
    (1000 - 4 * d * d / 1000).max(-1000)
}

/// An arbiter's weight in thousandths: its mean Brier skill over `items`, shrunk toward
/// [`PRIOR_SKILL_MILLI`] by [`PRIOR_ITEMS`] items, at least zero.
pub fn weight_milli(items: &[ResolvedItem]) -> u32 {
    let n = items.len() as i64;
    let sum: i64 = items.iter().map(item_skill_milli).sum();
    let shrunk = (PRIOR_ITEMS * PRIOR_SKILL_MILLI + sum) / (PRIOR_ITEMS + n);
    shrunk.clamp(0, 1000) as u32
}

/// One counted ruling as the pool sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolInput<'a> {
    pub lineage: &'a str,
    pub weight_milli: u32,
    /// The ruling's stated probability of yes, in thousandths.
    pub p_yes_milli: u16,
}

/// The pooled probability of yes in thousandths; `None` when no ruling carries weight.
/// Each lineage's weight is the mean of its rulings' weights, split evenly among them.
pub fn pooled_yes_milli(inputs: &[PoolInput<'_>]) -> Option<u16> {
    let mut per_lineage: BTreeMap<&str, u32> = BTreeMap::new();
    for i in inputs {
        *per_lineage.entry(i.lineage).or_default() += 1;
    }
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for i in inputs {
        let share = f64::from(i.weight_milli) / f64::from(per_lineage[i.lineage]);
        num += share * f64::from(i.p_yes_milli.min(1000));
        den += share;
    }
    (den > 0.0).then(|| (num / den).round().clamp(0.0, 1000.0) as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use calibration::recalibration::{Resolution, ResolutionKind};

    fn item(p: f64, outcome: bool) -> ResolvedItem {
        ResolvedItem {
            motion_id: "m".into(),
            probability: p,
            outcome,
            resolved_by: Resolution {
                motion_id: "r".into(),
                kind: ResolutionKind::ExamHeldBack,
            },
        }
    }

    #[test]
    fn weights_follow_resolved_skill_shrunk_toward_the_prior() {
        assert_eq!(weight_milli(&[]), PRIOR_SKILL_MILLI as u32);
        let sharp: Vec<_> = (0..40).map(|_| item(0.9, true)).collect();
        let wrong: Vec<_> = (0..40).map(|_| item(0.9, false)).collect();
        let coin: Vec<_> = (0..40).map(|_| item(0.5, true)).collect();
        assert!(weight_milli(&sharp) > 700, "{}", weight_milli(&sharp));
        // Worse than chance weighs nothing, never a negative (inverted) vote.
        assert_eq!(weight_milli(&wrong), 0);
        // At chance the prior fades with the record.
        assert_eq!(weight_milli(&coin), 50);
        // Two items cannot undo the prior.
        assert!(weight_milli(&wrong[..2]) < 250 && weight_milli(&wrong[..2]) > 0);
    }

    #[test]
    fn a_lineage_of_copies_weighs_as_one_ruling() {
        let one = |l, p| PoolInput {
            lineage: l,
            weight_milli: 500,
            p_yes_milli: p,
        };
        // Three copies say 0.9, one other lineage says 0.1: an even split, not 0.7.
        let pooled =
            pooled_yes_milli(&[one("x", 900), one("x", 900), one("x", 900), one("y", 100)]);
        assert_eq!(pooled, Some(500));
        assert_eq!(pooled_yes_milli(&[one("x", 900), one("y", 700)]), Some(800));
        let weightless = PoolInput {
            weight_milli: 0,
            ..one("x", 900)
        };
        assert_eq!(pooled_yes_milli(&[weightless]), None);
    }

    #[test]
    fn a_heavier_arbiter_moves_the_pool_further() {
        let a = PoolInput {
            lineage: "x",
            weight_milli: 900,
            p_yes_milli: 800,
        };
        let b = PoolInput {
            lineage: "y",
            weight_milli: 100,
            p_yes_milli: 100,
        };
        assert_eq!(pooled_yes_milli(&[a, b]), Some(730));
        assert_eq!(Weights::equal().of("anyone"), 1000);
        assert_eq!(Weights::default().of("anyone"), 250);
    }
}

/// The weighted pool inside the acceptance rule (`acceptance::decide_weighted`): what it
/// answers that head counts do not, and the guarantees it keeps.
#[cfg(test)]
mod rule_tests {
    use super::Weights;
    use crate::acceptance::*;

    fn seat(id: &str, stance: Stance, org: &str, lineage: &str) -> Seat {
        Seat {
            arbiter_id: id.into(),
            stance,
            organisation: org.into(),
            lineage: lineage.into(),
        }
    }

    fn ruling(id: &str, p: u16) -> RevealedRuling {
        RevealedRuling {
            arbiter_id: id.into(),
            decision: if p > 500 { Decision::Yes } else { Decision::No },
            probability_milli: p,
            relevance: None,
        }
    }

    fn panel() -> Vec<Seat> {
        vec![
            seat("a1", Stance::A, "o1", "x"),
            seat("a2", Stance::A, "o2", "y"),
            seat("b1", Stance::B, "o3", "z"),
            seat("b2", Stance::B, "o4", "w"),
            seat("n1", Stance::None, "o5", "v"),
        ]
    }

    fn weights(pairs: &[(&str, u32)]) -> Weights {
        Weights {
            by_arbiter: pairs.iter().map(|(a, w)| ((*a).to_owned(), *w)).collect(),
            equal: false,
        }
    }

    fn decide(rulings: &[RevealedRuling], w: &Weights) -> Acceptance {
        decide_weighted(
            MotionKind::Merge,
            &panel(),
            rulings,
            &[],
            &Policy::weighted(),
            w,
        )
    }

    fn reasons(a: &Acceptance) -> Vec<DeadlockReason> {
        match a {
            Acceptance::Deadlocked(d) => d.reasons.clone(),
            Acceptance::Accepted { .. } => Vec::new(),
        }
    }

    #[test]
    fn split_stance_groups_are_answered_by_the_pool() {
        // A and B both split 1-1: head counts deadlock, the pool leans yes.
        let rs = [
            ruling("a1", 800),
            ruling("a2", 400),
            ruling("b1", 800),
            ruling("b2", 400),
            ruling("n1", 700),
        ];
        let head = decide_weighted(
            MotionKind::Merge,
            &panel(),
            &rs,
            &[],
            &Policy::independent(),
            &Weights::equal(),
        );
        assert!(!head.is_accepted(), "{head:?}");
        let pooled = decide(&rs, &Weights::equal());
        assert!(
            matches!(
                &pooled,
                Acceptance::Accepted {
                    outcome: Outcome::Decided(Decision::Yes),
                    ..
                }
            ),
            "{pooled:?}"
        );
    }

    #[test]
    fn the_weights_change_the_answer() {
        // Two skilled arbiters say yes; three weak ones say no.
        let rs = [
            ruling("a1", 700),
            ruling("b1", 700),
            ruling("a2", 200),
            ruling("b2", 200),
            ruling("n1", 100),
        ];
        let by_count = decide(&rs, &Weights::equal());
        assert!(
            matches!(
                &by_count,
                Acceptance::Accepted {
                    outcome: Outcome::Decided(Decision::No),
                    ..
                }
            ),
            "{by_count:?}"
        );
        let w = weights(&[
            ("a1", 900),
            ("b1", 900),
            ("a2", 100),
            ("b2", 100),
            ("n1", 100),
        ]);
        let by_skill = decide(&rs, &w);
        assert!(
            matches!(
                &by_skill,
                Acceptance::Accepted {
                    outcome: Outcome::Decided(Decision::Yes),
                    ..
                }
            ),
            "{by_skill:?}"
        );
        let c = crate::confidence::of_pool(&Outcome::Decided(Decision::Yes), &panel(), &rs, &w)
            .expect("confidence");
        assert_eq!(c.probability_milli, 624);
        assert_eq!(c.equal_weights_milli, Some(380));
        assert!(
            c.sentence().contains("the weights changed the answer"),
            "{}",
            c.sentence()
        );
    }

    #[test]
    fn however_heavy_one_stance_cannot_answer_alone() {
        // Stance A says yes with all the weight; B and the neutral say no.
        let rs = [
            ruling("a1", 990),
            ruling("a2", 990),
            ruling("b1", 450),
            ruling("b2", 450),
            ruling("n1", 450),
        ];
        let w = weights(&[
            ("a1", 1000),
            ("a2", 1000),
            ("b1", 10),
            ("b2", 10),
            ("n1", 10),
        ]);
        let v = decide(&rs, &w);
        assert!(
            reasons(&v).contains(&DeadlockReason::SideWithoutSupport {
                stance: Stance::B,
                supporters: 0,
                needed: 1
            }),
            "{v:?}"
        );
    }

    #[test]
    fn a_weightless_supporter_is_not_the_other_side() {
        // B's only yes comes from an arbiter whose record weighs nothing.
        let rs = [
            ruling("a1", 900),
            ruling("a2", 900),
            ruling("b1", 600),
            ruling("b2", 400),
            ruling("n1", 600),
        ];
        let w = weights(&[("b1", 0)]);
        let v = decide(&rs, &w);
        assert!(
            reasons(&v).iter().any(|r| matches!(
                r,
                DeadlockReason::SideWithoutSupport {
                    stance: Stance::B,
                    ..
                }
            )),
            "{v:?}"
        );
        assert!(decide(&rs, &Weights::default()).is_accepted());
    }

    #[test]
    fn one_organisation_on_both_stances_is_not_agreement_across_priors() {
        let seats = vec![
            seat("a1", Stance::A, "same", "x"),
            seat("b1", Stance::B, "same", "z"),
            seat("n1", Stance::None, "o5", "v"),
        ];
        let rs = [ruling("a1", 900), ruling("b1", 900), ruling("n1", 600)];
        let v = decide_weighted(
            MotionKind::Merge,
            &seats,
            &rs,
            &[],
            &Policy::weighted(),
            &Weights::equal(),
        );
        assert!(
            reasons(&v).contains(&DeadlockReason::NarrowSupport),
            "{v:?}"
        );
        // One lineage across both stances is not either.
        let seats = vec![
            seat("a1", Stance::A, "o1", "x"),
            seat("b1", Stance::B, "o2", "x"),
            seat("n1", Stance::None, "o5", "v"),
        ];
        let v = decide_weighted(
            MotionKind::Merge,
            &seats,
            &rs,
            &[],
            &Policy {
                independence: Independence {
                    one_per_lineage: false,
                    ..Independence::ALL
                },
                ..Policy::weighted()
            },
            &Weights::equal(),
        );
        assert!(
            reasons(&v).contains(&DeadlockReason::NarrowSupport),
            "{v:?}"
        );
    }

    #[test]
    fn no_organisation_may_tip_the_pool() {
        // o5's neutral arbiter is heavy enough that without it the pool leans the other way.
        let rs = [
            ruling("a1", 700),
            ruling("a2", 300),
            ruling("b1", 700),
            ruling("b2", 300),
            ruling("n1", 950),
        ];
        let w = weights(&[
            ("a1", 200),
            ("a2", 300),
            ("b1", 200),
            ("b2", 300),
            ("n1", 1000),
        ]);
        let v = decide(&rs, &w);
        assert!(
            reasons(&v).contains(&DeadlockReason::DependsOnOrganisation {
                organisation: "o5".into()
            }),
            "{v:?}"
        );
    }

    #[test]
    fn an_even_pool_is_no_answer() {
        let rs = [
            ruling("a1", 700),
            ruling("a2", 300),
            ruling("b1", 700),
            ruling("b2", 300),
            ruling("n1", 500),
        ];
        assert_eq!(
            reasons(&decide(&rs, &Weights::equal())),
            [DeadlockReason::PoolUndecided]
        );
    }
}
