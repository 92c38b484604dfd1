//! Performance-weighted pooling (docs/coordinator/acceptance.md "The weighted pool"): under
//! a policy with [`Aggregation::WeightedPool`](crate::rules::acceptance::Aggregation) the outcome
//! of a yes/no motion and its probability come from a weighted log-odds pool of the
//! counted rulings' stated probabilities, not from head counts per stance group. The
//! cross-prior guarantees stay in the acceptance rule around it (`acceptance.rs`):
//! supporters of both stances, no organisation tipping the pool, at least two independent
//! votes.
//!
//! Log-odds, not a linear mean: independent, calibrated forecasters who each say 0.75
//! together make the answer likelier than 0.75, and the pool says so (the pooled log-odds
//! is the sum of theirs, Bayes' rule under independence from an even prior). A mean would
//! stay at 0.75 and understate every panel.
//!
//! Independence is not assumed where it is known to fail: the rulings of one lineage err
//! together (docs/SIMULATION.md "The model"), so each lineage adds the **mean** of its
//! rulings' log-odds, one lineage's worth, and copies add nothing.
//!
//! Confidence is earned, not stated: a ruling adds at most the log-odds its arbiter's
//! record has shown it can forecast, its **weight**. The weight comes from the arbiter's
//! Brier skill over its track record of **resolved** items only (exam items scored against
//! their revealed gold, and earlier motions a later outcome resolved; `recalibration.rs`),
//! never agreement with the panel it sat on, shrunk toward the skill of an average admitted
//! arbiter. A calibrated forecaster who always says q has skill (2q − 1)², so skill s
//! earns the log-odds of q = (1 + √s)/2: without a record, s = 0.25 and a ruling adds at
//! most the log-odds of 0.75 (about 1.1), however sure it says it is; a record of sharp,
//! right forecasts raises that up to the log-odds of 0.95 ([`P_FLOOR_MILLI`]); skill at or
//! below chance earns nothing. So a camp that states certainty moves the pool no more than
//! an honest arbiter of the same record, and a worse-than-chance arbiter is ignored, never
//! inverted (inverting would pay an arbiter for being wrong on purpose).
//!
//! Pure and the same on every replica: integer skills, and `ln`, `exp` and `sqrt` from
//! `libm` (the same code and bits on every platform) over sums in a fixed order.

use std::collections::BTreeMap;

use calibration::recalibration::ResolvedItem;

/// The skill an admitted arbiter without a track record is given, in thousandths of the
/// Brier skill score (1 − Brier/0.25): that of a calibrated judge that says 0.75 (Brier
/// 0.1875, skill 0.25).
pub const PRIOR_SKILL_MILLI: i64 = 250;

/// How many resolved items the prior is worth: an arbiter's own record outweighs it after
/// about this many items.
pub const PRIOR_ITEMS: i64 = 10;

/// How close to certainty any ruling is taken, in thousandths: 0.05 to 0.95, so one ruling
/// adds at most about 2.9 to the pooled log-odds, whatever its record.
pub const P_FLOOR_MILLI: u16 = 50;

/// The weight of an arbiter without a record: the log-odds of 0.75, in thousandths.
pub const PRIOR_WEIGHT_MILLI: u32 = 1099;

/// Per-arbiter weights, by arbiter id: the most log-odds (in thousandths) one ruling of
/// the arbiter adds to the pool. An arbiter missing from the map (no record read) weighs
/// [`PRIOR_WEIGHT_MILLI`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Weights {
    by_arbiter: BTreeMap<String, u32>,
}

impl Weights {
    /// Every arbiter weighs as one without a record: the lineage-normalised pool with no
    /// performance weighting, what `OutcomeConfidence::equal_weights_milli` and the
    /// simulator compare the weighted pool against.
    pub fn equal() -> Self {
        Self::default()
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
        }
    }

    /// The weight of `arbiter_id`: the most log-odds, in thousandths, its ruling adds.
    pub fn of(&self, arbiter_id: &str) -> u32 {
        self.by_arbiter
            .get(arbiter_id)
            .copied()
            .unwrap_or(PRIOR_WEIGHT_MILLI)
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

/// An arbiter's weight: its mean Brier skill s over `items`, shrunk toward
/// [`PRIOR_SKILL_MILLI`] by [`PRIOR_ITEMS`] items, as the log-odds of (1 + √s)/2 in
/// thousandths, at most that of the floor's 0.95; zero at or below chance.
pub fn weight_milli(items: &[ResolvedItem]) -> u32 {
    let n = items.len() as i64;
    let sum: i64 = items.iter().map(item_skill_milli).sum();
    let shrunk = (PRIOR_ITEMS * PRIOR_SKILL_MILLI + sum) / (PRIOR_ITEMS + n);
    if shrunk <= 0 {
        return 0;
    }
    let q = (1.0 + libm::sqrt(shrunk.min(1000) as f64 / 1000.0)) / 2.0;
    let q_milli = ((q * 1000.0).round() as u16).min(1000 - P_FLOOR_MILLI);
    (logit(q_milli) * 1000.0).round().max(0.0) as u32
}

/// One counted ruling as the pool sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolInput<'a> {
    pub lineage: &'a str,
    pub weight_milli: u32,
    /// The ruling's stated probability of yes, in thousandths.
    pub p_yes_milli: u16,
}

fn logit(p_milli: u16) -> f64 {
    let p = f64::from(p_milli.clamp(P_FLOOR_MILLI, 1000 - P_FLOOR_MILLI)) / 1000.0;
    libm::log(p / (1.0 - p))
}

/// The pooled probability of yes in thousandths; `None` when no ruling carries weight.
/// Each ruling adds its log-odds held within its weight; each lineage adds the mean of its
/// rulings'.
pub fn pooled_yes_milli(inputs: &[PoolInput<'_>]) -> Option<u16> {
    let mut per_lineage: BTreeMap<&str, (f64, u32)> = BTreeMap::new();
    let mut weighed = false;
    for i in inputs {
        let cap = f64::from(i.weight_milli) / 1000.0;
        weighed |= i.weight_milli > 0;
        let e = per_lineage.entry(i.lineage).or_default();
        e.0 += logit(i.p_yes_milli).clamp(-cap, cap);
        e.1 += 1;
    }
    if !weighed {
        return None;
    }
    let log_odds: f64 = per_lineage
        .values()
        .map(|(sum, n)| sum / f64::from(*n))
        .sum();
    let p = 1.0 / (1.0 + libm::exp(-log_odds));
    Some((p * 1000.0).round().clamp(0.0, 1000.0) as u16)
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
        // No record: the log-odds of 0.75.
        assert_eq!(weight_milli(&[]), PRIOR_WEIGHT_MILLI);
        let sharp: Vec<_> = (0..40).map(|_| item(0.9, true)).collect();
        let wrong: Vec<_> = (0..40).map(|_| item(0.9, false)).collect();
        let coin: Vec<_> = (0..40).map(|_| item(0.5, true)).collect();
        // A sharp record earns up to the floor's 0.95, never more.
        assert_eq!(weight_milli(&sharp), 2944);
        assert_eq!(weight_milli(&sharp[..5]), 1727);
        // Worse than chance weighs nothing, never a negative (inverted) vote.
        assert_eq!(weight_milli(&wrong), 0);
        // At chance the prior fades with the record.
        assert_eq!(weight_milli(&coin), 456);
        // Two items cannot undo the prior.
        assert_eq!(weight_milli(&wrong[..2]), 410);
    }

    #[test]
    fn a_lineage_of_copies_weighs_as_one_ruling() {
        let one = |l, p| PoolInput {
            lineage: l,
            weight_milli: 500,
            p_yes_milli: p,
        };
        // Three copies say 0.9, one other lineage says 0.1: an even split, not 0.9.
        let pooled =
            pooled_yes_milli(&[one("x", 900), one("x", 900), one("x", 900), one("y", 100)]);
        assert_eq!(pooled, Some(500));
        // Two independent lineages agreeing are surer than either, each adding no more
        // than its weight (0.5 of log-odds here).
        assert_eq!(pooled_yes_milli(&[one("x", 900), one("y", 700)]), Some(731));
        let weightless = PoolInput {
            weight_milli: 0,
            ..one("x", 900)
        };
        assert_eq!(pooled_yes_milli(&[weightless]), None);
    }

    #[test]
    fn a_ruling_adds_no_more_than_its_weight() {
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
        // 0.8 is worth 1.39 of log-odds, but a adds its 0.9; b adds −0.1, not −2.2.
        assert_eq!(pooled_yes_milli(&[a, b]), Some(690));
        assert_eq!(Weights::equal().of("anyone"), PRIOR_WEIGHT_MILLI);
        assert_eq!(Weights::default().of("anyone"), PRIOR_WEIGHT_MILLI);
    }
}

/// The weighted pool inside the acceptance rule (`acceptance::decide_weighted`): what it
/// answers that head counts do not, and the guarantees it keeps.
#[cfg(test)]
mod rule_tests {
    use super::Weights;
    use crate::rules::acceptance::*;

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
        let c =
            crate::rules::confidence::of_pool(&Outcome::Decided(Decision::Yes), &panel(), &rs, &w)
                .expect("confidence");
        assert_eq!(c.probability_milli, 801);
        assert_eq!(c.equal_weights_milli, Some(168));
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
    fn each_named_rule_describes_itself() {
        assert!(Policy::weighted().describe().starts_with("weighted ("));
        assert!(
            Policy::independent()
                .describe()
                .starts_with("independent (")
        );
        assert_eq!(Policy::default().describe(), "head count");
        let partial = Policy {
            independence: Independence {
                unsteerable_draw: true,
                ..Independence::default()
            },
            ..Policy::default()
        };
        assert_eq!(
            partial.describe(),
            "head count, with some independence rules"
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
