//! How sure an accepted outcome is (docs/PANEL.md "How sure"): the panel's probability
//! for the outcome it accepted and a 90% interval around it, kept on the record beside
//! the verdict from rule set [`OUTCOME_CONFIDENCE`](crate::rules::OUTCOME_CONFIDENCE).
//!
//! The probability is the mean of the counted rulings' stated P(yes) (turned to P(no) for
//! a "no"), each ruling once. The interval is Wilson's score interval for that mean taken
//! as a proportion over the **effective** number of votes, and the effective number is the
//! count of distinct declared lineages among the counted rulings: rulings of one lineage
//! err together (docs/SIMULATION.md, the judge error model), so four rulings of two
//! lineages are worth about two votes, and the interval says so by being wide
//! (`calibration::wilson::wilson_bounds`, exact IEEE arithmetic, so every replica computes
//! the same thousandths).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::rules::acceptance::{
    Decision, Outcome, RevealedRuling, Seat, counted, pooled_yes_milli,
};
use crate::rules::weighted_pool::Weights;

/// The standard normal quantile of a two-sided 90% interval.
const Z_90: f64 = 1.644_853_626_951_472_2;

/// An accepted outcome's probability and its 90% interval, in thousandths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeConfidence {
    /// Mean probability the counted rulings gave the accepted outcome.
    pub probability_milli: u16,
    /// Lower and upper end of the 90% Wilson interval.
    pub low_milli: u16,
    pub high_milli: u16,
    /// Counted rulings, and the distinct lineages among them (the interval's votes).
    pub rulings: u32,
    pub effective_votes: u32,
    /// Under the weighted pool: the probability the same rulings give the accepted
    /// outcome with equal weights. Below 500 the weights changed the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equal_weights_milli: Option<u16>,
}

impl OutcomeConfidence {
    /// "0.83 (90% interval 0.55-0.95; 4 rulings, 2 effective votes)".
    pub fn sentence(&self) -> String {
        let p = |m: u16| format!("{:.2}", f64::from(m) / 1000.0);
        let pooled = match self.equal_weights_milli {
            None => String::new(),
            Some(e) if e < 500 => format!(
                "; weighted pool: the weights changed the answer, equal weights give it {}",
                p(e)
            ),
            Some(e) => format!("; weighted pool, equal weights give {}", p(e)),
        };
        format!(
            "{} (90% interval {}-{}; {} ruling(s), {} effective vote(s) by distinct lineage{pooled})",
            p(self.probability_milli),
            p(self.low_milli),
            p(self.high_milli),
            self.rulings,
            self.effective_votes
        )
    }
}

/// The confidence of `outcome` from the rulings the rule counted (the first ruling of each
/// seated arbiter); `None` for a relevance outcome, which states no probability, or when
/// no seated ruling was counted.
pub fn of(
    outcome: &Outcome,
    seats: &[Seat],
    revealed: &[RevealedRuling],
) -> Option<OutcomeConfidence> {
    let yes = yes_of(outcome)?;
    let (counted, _) = counted(seats, revealed);
    let n = counted.len() as u64;
    if n == 0 {
        return None;
    }
    let sum_milli: u64 = counted
        .iter()
        .map(|(_, r)| toward(yes, r.probability_milli))
        .sum();
    let mean_milli = ((sum_milli + n / 2) / n) as u16;
    let lineages: BTreeSet<&str> = counted.iter().map(|(s, _)| s.lineage.as_str()).collect();
    Some(with_interval(
        mean_milli,
        n as u32,
        lineages.len() as u32,
        None,
    ))
}

/// The confidence of an outcome the weighted pool accepted (`weighted_pool.rs`): the
/// pooled probability of the outcome, its interval over the distinct lineages of the
/// counted rulings that carry weight, and what equal weights would have given.
pub fn of_pool(
    outcome: &Outcome,
    seats: &[Seat],
    revealed: &[RevealedRuling],
    weights: &Weights,
) -> Option<OutcomeConfidence> {
    let yes = yes_of(outcome)?;
    let (counted, _) = counted(seats, revealed);
    let pool = |w: &Weights| pooled_yes_milli(&counted, w).map(|p| toward(yes, p) as u16);
    let weighted = pool(weights)?;
    let lineages: BTreeSet<&str> = counted
        .iter()
        .filter(|(s, _)| weights.of(&s.arbiter_id) > 0)
        .map(|(s, _)| s.lineage.as_str())
        .collect();
    Some(with_interval(
        weighted,
        counted.len() as u32,
        lineages.len() as u32,
        pool(&Weights::equal()),
    ))
}

fn yes_of(outcome: &Outcome) -> Option<bool> {
    match outcome {
        Outcome::Decided(d) | Outcome::TierVerified { decision: d, .. } => {
            Some(*d == Decision::Yes)
        }
        Outcome::Relevance(_) => None,
    }
}

/// A probability of yes in thousandths, turned toward the outcome.
fn toward(yes: bool, p_yes_milli: u16) -> u64 {
    let p = u64::from(p_yes_milli.min(1000));
    if yes { p } else { 1000 - p }
}

fn with_interval(
    probability_milli: u16,
    rulings: u32,
    votes: u32,
    equal_weights_milli: Option<u16>,
) -> OutcomeConfidence {
    let bounds = calibration::wilson::wilson_bounds(
        f64::from(probability_milli) / 1000.0,
        f64::from(votes),
        Z_90,
    );
    OutcomeConfidence {
        probability_milli,
        low_milli: to_milli(bounds.lower),
        high_milli: to_milli(bounds.upper),
        rulings,
        effective_votes: votes,
        equal_weights_milli,
    }
}

fn to_milli(x: f64) -> u16 {
    (x * 1000.0).round().clamp(0.0, 1000.0) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::acceptance::Stance;

    fn seat(id: &str, lineage: &str) -> Seat {
        Seat {
            arbiter_id: id.into(),
            stance: Stance::A,
            organisation: "o".into(),
            lineage: lineage.into(),
        }
    }

    fn ruling(id: &str, p: u16) -> RevealedRuling {
        RevealedRuling {
            arbiter_id: id.into(),
            decision: if p >= 500 {
                Decision::Yes
            } else {
                Decision::No
            },
            probability_milli: p,
            relevance: None,
        }
    }

    #[test]
    fn the_interval_narrows_with_independent_votes_and_not_with_copies() {
        let yes = Outcome::Decided(Decision::Yes);
        let two_lineages = [
            seat("a", "x"),
            seat("b", "x"),
            seat("c", "y"),
            seat("d", "y"),
        ];
        let four_lineages = [
            seat("a", "w"),
            seat("b", "x"),
            seat("c", "y"),
            seat("d", "z"),
        ];
        let rs = [
            ruling("a", 900),
            ruling("b", 800),
            ruling("c", 900),
            ruling("d", 800),
        ];
        let copies = of(&yes, &two_lineages, &rs).expect("confidence");
        let independent = of(&yes, &four_lineages, &rs).expect("confidence");
        assert_eq!(copies.probability_milli, 850);
        assert_eq!(independent.probability_milli, 850);
        assert_eq!((copies.rulings, copies.effective_votes), (4, 2));
        assert_eq!(independent.effective_votes, 4);
        for c in [copies, independent] {
            assert!(c.low_milli < 850 && 850 < c.high_milli, "{c:?}");
        }
        let width = |c: OutcomeConfidence| c.high_milli - c.low_milli;
        assert!(
            width(copies) > width(independent),
            "{copies:?} {independent:?}"
        );
    }

    #[test]
    fn a_no_is_as_sure_as_the_rulings_say_no_and_strangers_do_not_count() {
        let no = Outcome::Decided(Decision::No);
        let seats = [seat("a", "x"), seat("b", "y")];
        // "z" holds no seat; "a" ruled twice, the first counts.
        let rs = [
            ruling("a", 100),
            ruling("b", 300),
            ruling("z", 1000),
            ruling("a", 1000),
        ];
        let c = of(&no, &seats, &rs).expect("confidence");
        assert_eq!(c.probability_milli, 800);
        assert_eq!(c.rulings, 2);
        assert!(of(&Outcome::Relevance(2), &seats, &rs).is_none());
        assert!(of(&no, &seats, &[]).is_none());
    }

    #[test]
    fn the_bounds_stay_in_range_at_certainty() {
        let yes = Outcome::Decided(Decision::Yes);
        let seats = [seat("a", "x")];
        let c = of(&yes, &seats, &[ruling("a", 1000)]).expect("confidence");
        assert_eq!(c.probability_milli, 1000);
        assert_eq!(c.high_milli, 1000);
        assert!(c.low_milli < 1000, "one vote cannot make it certain: {c:?}");
        assert!(
            c.sentence().starts_with("1.00 (90% interval"),
            "{}",
            c.sentence()
        );
    }
}
