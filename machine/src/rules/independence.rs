//! Independence that is measured, not declared: the parts of the acceptance rule and of
//! the draw that stop one organisation, one lineage or one replica from deciding a motion
//! (docs/ARCHITECTURE.md invariants 1 and 3; docs/coordinator/acceptance.md "The acceptance rule",
//! rules 4 and 5; docs/SECURITY.md "The draw cannot be steered").
//!
//! Every rule here is switched on by a field of the debate's [`crate::rules::acceptance::Policy`]
//! that policies written before it lack, so records and snapshots from before replay to
//! the same state: a missing [`Independence`] is all off.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::rules::acceptance::Independence;
pub(crate) use crate::rules::acceptance::lineage_key;
use crate::rules::acceptance::{Outcome, Policy, RevealedRuling, Seat, Stance};

/// The lineage a drawn seat records: the arbiter's model family when the motion's policy
/// applies any independence rule, else nothing, so seats of motions under older policies
/// serialise exactly as before and replay to the same replies.
pub fn seated_lineage(policy: Option<&Policy>, model_family: String) -> String {
    if policy.is_some_and(|p| !p.independence.is_off()) {
        model_family
    } else {
        String::new()
    }
}

/// Pairs with fewer motions in common than this are judged by their declared lineage, not
/// by their measured error correlation (docs/coordinator/acceptance.md "Measured independence").
pub const MIN_SHARED_MOTIONS: u64 = 10;

/// The effective number of independent supporters an outcome needs, in thousandths.
pub const MIN_N_EFF_MILLI: u32 = 2000;

/// Measured independence (docs/coordinator/acceptance.md "Measured independence"): for every pair of
/// arbiters, how often each and both ruled against an accepted yes/no outcome on the
/// motions both ruled on. An accepted outcome is the best truth the record holds; motions
/// that deadlocked or answer a value are not counted. Apply keeps one in the state
/// (`State::error_history`), counted from rule set `MEASURED_ERRORS` on; a reader of the
/// record can build the same from the decided motions ([`ErrorHistory::from_motions`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorHistory {
    /// Questions counted: decided yes/no motions, and the binary exam items of sealed
    /// sittings that two or more arbiters answered.
    pub motions: u64,
    /// Keyed by the two arbiter ids, in order.
    #[serde(with = "pair_table")]
    pub pairs: BTreeMap<(String, String), calibration::independence::ErrorCoincidence>,
}

impl ErrorHistory {
    pub fn is_empty(&self) -> bool {
        self.motions == 0
    }

    /// Counts one accepted outcome: each ruling is wrong when it differs from it.
    pub fn record(&mut self, outcome: &Outcome, rulings: &[RevealedRuling]) {
        let Outcome::Decided(accepted) = outcome else {
            return;
        };
        let wrong: BTreeMap<&str, bool> = rulings
            .iter()
            .map(|r| (r.arbiter_id.as_str(), r.decision != *accepted))
            .collect();
        self.count(wrong);
    }

    /// Counts one binary exam item of a sealed sitting against its revealed gold: the
    /// arbiters asked it are wrong when their answer, thresholded at 0.5, differs. The
    /// gold is a fact fixed before the exam, a firmer truth than an accepted outcome.
    pub fn record_exam_item(&mut self, gold: bool, answers: &[(&str, f64)]) {
        let wrong: BTreeMap<&str, bool> = answers
            .iter()
            .map(|(arbiter, p)| (*arbiter, (*p >= 0.5) != gold))
            .collect();
        self.count(wrong);
    }

    pub(crate) fn count<K: AsRef<str>>(&mut self, wrong: BTreeMap<K, bool>) {
        if wrong.len() < 2 {
            return;
        }
        self.motions += 1;
        let wrong: Vec<(&str, bool)> = wrong.iter().map(|(k, w)| (k.as_ref(), *w)).collect();
        for (i, (a, wa)) in wrong.iter().enumerate() {
            for (b, wb) in wrong.iter().skip(i + 1) {
                self.pairs
                    .entry(((*a).to_owned(), (*b).to_owned()))
                    .or_default()
                    .add(*wa, *wb);
            }
        }
    }

    fn pair(&self, a: &str, b: &str) -> Option<&calibration::independence::ErrorCoincidence> {
        let key = if a <= b {
            (a.to_owned(), b.to_owned())
        } else {
            (b.to_owned(), a.to_owned())
        };
        self.pairs.get(&key)
    }

    /// The measured error correlation of two arbiters, when they share at least
    /// `min_shared` motions and it is defined (each erred at least once and not always).
    pub fn measured(&self, a: &str, b: &str, min_shared: u64) -> Option<f64> {
        self.pair(a, b)
            .filter(|c| c.motions >= min_shared)
            .and_then(|c| c.correlation())
    }

    /// The correlation the measured-independence rule counts for two arbiters of the
    /// given lineages: measured where the pair shares at least [`MIN_SHARED_MOTIONS`]
    /// motions and it is defined, else 1 for one lineage and 0 otherwise. The flag says
    /// whether it was measured.
    pub fn rule_correlation(
        &self,
        (a, a_lineage): (&str, &str),
        (b, b_lineage): (&str, &str),
    ) -> (f64, bool) {
        match self.measured(a, b, MIN_SHARED_MOTIONS) {
            Some(r) => (r, true),
            None => (f64::from(u8::from(a_lineage == b_lineage)), false),
        }
    }

    /// The error correlation of two arbiters; 0 where it is undefined, so the figure
    /// never invents dependence.
    pub fn correlation(&self, a: &str, b: &str) -> f64 {
        self.measured(a, b, 1).unwrap_or(0.0)
    }

    /// Kish's effective number of independent members of `panel`
    /// (`calibration::independence::kish_n_eff`), undefined correlations counted as 0.
    pub fn n_eff(&self, panel: &[&str]) -> f64 {
        calibration::independence::kish_n_eff(panel.len(), |i, j| {
            self.correlation(panel[i], panel[j])
        })
    }
}

/// The pair table as a list, since JSON object keys cannot be tuples.
mod pair_table {
    use std::collections::BTreeMap;

    use calibration::independence::ErrorCoincidence;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    type Table = BTreeMap<(String, String), ErrorCoincidence>;

    #[derive(Serialize, Deserialize)]
    struct Row {
        a: String,
        b: String,
        #[serde(flatten)]
        counts: ErrorCoincidence,
    }

    pub fn serialize<S: Serializer>(t: &Table, s: S) -> Result<S::Ok, S::Error> {
        let rows: Vec<Row> = t
            .iter()
            .map(|((a, b), c)| Row {
                a: a.clone(),
                b: b.clone(),
                counts: *c,
            })
            .collect();
        rows.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Table, D::Error> {
        let rows = Vec::<Row>::deserialize(d)?;
        Ok(rows.into_iter().map(|r| ((r.a, r.b), r.counts)).collect())
    }
}

/// The measured independence of an accepted outcome's supporters, as the record keeps
/// it beside the verdict (`Decided::independence`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SupportIndependence {
    /// The seated supporters of stance A or B, in id order.
    pub supporters: Vec<String>,
    /// Kish's effective number of them, in thousandths (floored).
    pub n_eff_milli: u32,
    /// Supporter pairs judged by measured error correlation; the rest by lineage.
    pub pairs_measured: usize,
    pub pairs: usize,
}

/// How many independent votes `members` are worth: each pair counts its measured error
/// correlation where `history` has at least [`MIN_SHARED_MOTIONS`] of it, else its
/// declared lineage (1 for one lineage, 0 otherwise).
pub fn support_independence(members: &[&Seat], history: &ErrorHistory) -> SupportIndependence {
    let mut measured = 0;
    let mut pairs = 0;
    let mut rho = vec![vec![0.0; members.len()]; members.len()];
    for (i, a) in members.iter().enumerate() {
        for (j, b) in members.iter().enumerate().skip(i + 1) {
            pairs += 1;
            let (r, was_measured) = history.rule_correlation(
                (&a.arbiter_id, lineage_key(a)),
                (&b.arbiter_id, lineage_key(b)),
            );
            measured += usize::from(was_measured);
            rho[i][j] = r;
            rho[j][i] = r;
        }
    }
    let n_eff = calibration::independence::kish_n_eff(members.len(), |i, j| rho[i][j]);
    SupportIndependence {
        supporters: members.iter().map(|s| s.arbiter_id.clone()).collect(),
        n_eff_milli: (n_eff * 1000.0).floor() as u32,
        pairs_measured: measured,
        pairs,
    }
}

/// The measured-independence rule (`Independence::measured_n_eff`; docs/coordinator/acceptance.md
/// "Measured independence"): an accepted yes/no outcome stands only if its supporters
/// of stance A and B are worth at least two independent votes. Each pair counts its
/// measured error correlation when `history` has enough of it, else its declared
/// lineage (1 for one lineage, 0 otherwise), so supporters that simply share their
/// errors cannot pass as agreement across priors. Returns the verdict, deadlocked with
/// `CorrelatedSupport` when short, and the figures.
pub fn require_independent_support(
    verdict: crate::rules::acceptance::Acceptance,
    seats: &[Seat],
    rulings: &[RevealedRuling],
    history: &ErrorHistory,
    policy: &Policy,
) -> (
    crate::rules::acceptance::Acceptance,
    Option<SupportIndependence>,
) {
    use crate::rules::acceptance::{Acceptance, DeadlockReason, Dissent};
    if !policy.independence.measured_n_eff {
        return (verdict, None);
    }
    let Acceptance::Accepted {
        outcome: Outcome::Decided(decision),
        tallies,
    } = &verdict
    else {
        return (verdict, None);
    };
    let seat_of: BTreeMap<&str, &Seat> = seats.iter().map(|s| (s.arbiter_id.as_str(), s)).collect();
    let supporters: Vec<&Seat> = rulings
        .iter()
        .filter(|r| r.decision == *decision)
        .filter_map(|r| seat_of.get(r.arbiter_id.as_str()).copied())
        .filter(|s| s.stance != Stance::None)
        .map(|s| (s.arbiter_id.as_str(), s))
        .collect::<BTreeMap<&str, &Seat>>()
        .into_values()
        .collect();
    let figures = support_independence(&supporters, history);
    let n_eff_milli = figures.n_eff_milli;
    if n_eff_milli >= MIN_N_EFF_MILLI {
        return (verdict, Some(figures));
    }
    let deadlocked = Acceptance::Deadlocked(Dissent {
        reasons: vec![DeadlockReason::CorrelatedSupport {
            n_eff_milli,
            needed_milli: MIN_N_EFF_MILLI,
        }],
        tallies: tallies.clone(),
        ignored: Vec::new(),
    });
    (deadlocked, Some(figures))
}

#[cfg(test)]
mod tests {

    /// Two arbiters that err together count as one; an arbiter that never erred has no
    /// defined correlation and is counted as independent.
    #[test]
    fn shared_errors_lower_the_measured_n_eff() {
        let mut m = ErrorHistory::default();
        let mut together = calibration::independence::ErrorCoincidence::default();
        for k in 0..10 {
            together.add(k < 3, k < 3);
        }
        m.pairs.insert(("a".into(), "b".into()), together);
        assert!((m.correlation("b", "a") - 1.0).abs() < 1e-12);
        assert_eq!(m.correlation("a", "c"), 0.0);
        assert!((m.n_eff(&["a", "b"]) - 1.0).abs() < 1e-12);
        assert!((m.n_eff(&["a", "c"]) - 2.0).abs() < 1e-12);
        let three = m.n_eff(&["a", "b", "c"]);
        assert!((three - 9.0 / 5.0).abs() < 1e-12, "{three}");
    }
    use super::*;
    use crate::rules::acceptance::{outcome_survives, supporters_per_side};

    fn seat(id: &str, stance: Stance, lineage: &str) -> Seat {
        Seat {
            arbiter_id: id.into(),
            stance,
            organisation: format!("org-{id}"),
            lineage: lineage.into(),
        }
    }

    fn yes(id: &str) -> RevealedRuling {
        RevealedRuling {
            arbiter_id: id.into(),
            decision: crate::rules::acceptance::Decision::Yes,
            probability_milli: 900,
            relevance: None,
        }
    }

    fn accepted() -> crate::rules::acceptance::Acceptance {
        crate::rules::acceptance::Acceptance::Accepted {
            outcome: Outcome::Decided(crate::rules::acceptance::Decision::Yes),
            tallies: BTreeMap::new(),
        }
    }

    fn deadlock_reason(
        v: &crate::rules::acceptance::Acceptance,
    ) -> Option<&crate::rules::acceptance::DeadlockReason> {
        match v {
            crate::rules::acceptance::Acceptance::Deadlocked(d) => d.reasons.first(),
            _ => None,
        }
    }

    /// A history of `motions` motions over arbiters `a` to `d`: each errs on some motions
    /// of its own, and every pair in `shared` errs together on every fifth motion.
    fn history(shared: &[(&str, &str)], motions: u64) -> ErrorHistory {
        let mut h = ErrorHistory::default();
        for k in 0..motions {
            let mut wrong: BTreeMap<String, bool> = ["a", "b", "c", "d"]
                .iter()
                .map(|id| (id.to_string(), false))
                .collect();
            // Every arbiter errs on some motions, so correlations are defined.
            let own = ["a", "b", "c", "d"][(k % 4) as usize];
            wrong.insert(own.to_string(), k % 3 == 0);
            for (x, y) in shared {
                if k % 5 == 0 {
                    wrong.insert(x.to_string(), true);
                    wrong.insert(y.to_string(), true);
                }
            }
            h.count(wrong);
        }
        h
    }

    /// Four supporters of four lineages pass; the same four pass or deadlock by their
    /// measured errors once there is enough history: two pairs that always err together
    /// are worth two votes, and four that all err together are worth one.
    #[test]
    fn supporters_that_share_their_errors_do_not_count_as_independent() {
        let policy = Policy::independent();
        let seats = [
            seat("a", Stance::A, "f1"),
            seat("b", Stance::B, "f2"),
            seat("c", Stance::A, "f3"),
            seat("d", Stance::B, "f4"),
        ];
        let rulings: Vec<RevealedRuling> = ["a", "b", "c", "d"].into_iter().map(yes).collect();
        let (v, fig) = require_independent_support(
            accepted(),
            &seats,
            &rulings,
            &ErrorHistory::default(),
            &policy,
        );
        assert!(v.is_accepted());
        let fig = fig.expect("figures");
        assert_eq!(
            (fig.n_eff_milli, fig.pairs_measured, fig.pairs),
            (4000, 0, 6)
        );

        // Too little history: judged by lineage still.
        let every_pair = [
            ("a", "b"),
            ("a", "c"),
            ("a", "d"),
            ("b", "c"),
            ("b", "d"),
            ("c", "d"),
        ];
        let short = history(&every_pair, 5);
        let (v, fig) = require_independent_support(accepted(), &seats, &rulings, &short, &policy);
        assert!(v.is_accepted());
        assert_eq!(fig.expect("figures").pairs_measured, 0);

        // All four err together: one vote's worth, deadlocked by name.
        let all = history(&every_pair, 60);
        let (v, fig) = require_independent_support(accepted(), &seats, &rulings, &all, &policy);
        let fig = fig.expect("figures");
        assert_eq!(fig.pairs_measured, 6);
        assert!(
            matches!(deadlock_reason(&v), Some(crate::rules::acceptance::DeadlockReason::CorrelatedSupport { n_eff_milli, needed_milli: 2000 }) if *n_eff_milli < 2000),
            "{v:?}"
        );
        // Only two of them share errors: the rest keep the panel above two votes.
        let some = history(&[("a", "b")], 60);
        let (v, _) = require_independent_support(accepted(), &seats, &rulings, &some, &policy);
        assert!(v.is_accepted(), "{v:?}");
    }

    /// Without history, two supporters of one lineage across the stances are one vote;
    /// a policy without the rule, and a deadlock, are left as they are.
    #[test]
    fn the_lineage_fallback_and_the_switch() {
        let seats = [seat("a", Stance::A, "f"), seat("b", Stance::B, "f")];
        let rulings = [yes("a"), yes("b")];
        let h = ErrorHistory::default();
        let (v, _) =
            require_independent_support(accepted(), &seats, &rulings, &h, &Policy::independent());
        assert!(matches!(
            deadlock_reason(&v),
            Some(
                crate::rules::acceptance::DeadlockReason::CorrelatedSupport {
                    n_eff_milli: 1000,
                    ..
                }
            )
        ));
        let (v, fig) =
            require_independent_support(accepted(), &seats, &rulings, &h, &Policy::default());
        assert!(v.is_accepted() && fig.is_none());
        let dead =
            crate::rules::acceptance::Acceptance::Deadlocked(crate::rules::acceptance::Dissent {
                reasons: vec![],
                tallies: BTreeMap::new(),
                ignored: vec![],
            });
        let (v, fig) =
            require_independent_support(dead.clone(), &seats, &rulings, &h, &Policy::independent());
        assert!(v == dead && fig.is_none());
    }

    /// The history survives a snapshot round trip (its pair table is a list in JSON).
    #[test]
    fn the_error_history_round_trips() {
        let h = history(&[("a", "b")], 12);
        let json = serde_json::to_string(&h).expect("encode");
        let back: ErrorHistory = serde_json::from_str(&json).expect("decode");
        assert_eq!(back, h);
    }

    #[test]
    fn a_lineage_on_both_sides_counts_once() {
        let s = [seat("a", Stance::A, "f"), seat("b", Stance::B, "f")];
        assert_eq!(supporters_per_side(&s, [1, 1]), [1, 0]);
        let s = [
            seat("a", Stance::A, "f"),
            seat("b", Stance::B, "f"),
            seat("c", Stance::B, "g"),
        ];
        assert_eq!(supporters_per_side(&s, [1, 1]), [1, 1]);
    }

    #[test]
    fn undeclared_lineages_share_one_count() {
        let s = [seat("a", Stance::A, ""), seat("b", Stance::A, "")];
        assert_eq!(supporters_per_side(&s, [2, 0]), [1, 0]);
    }

    #[test]
    fn the_matching_prefers_the_side_still_short() {
        // Lineage f supports on both sides; A already has g, so f goes to B.
        let s = [
            seat("a1", Stance::A, "g"),
            seat("a2", Stance::A, "f"),
            seat("b1", Stance::B, "f"),
        ];
        assert_eq!(supporters_per_side(&s, [1, 1]), [1, 1]);
    }

    #[test]
    fn relevance_may_move_one_step_without_an_organisation() {
        assert!(outcome_survives(
            &Outcome::Relevance(3),
            Some(&Outcome::Relevance(2))
        ));
        assert!(!outcome_survives(
            &Outcome::Relevance(3),
            Some(&Outcome::Relevance(1))
        ));
        assert!(!outcome_survives(&Outcome::Relevance(3), None));
    }
}

/// A deadlock that rule 4 caused because one stance's supporters are all of one lineage:
/// the stance and the lineage (docs/coordinator/acceptance.md "The acceptance rule", rule 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OneLineageSupport {
    pub stance: Stance,
    pub lineage: String,
    pub supporters: Vec<String>,
}

impl std::fmt::Display for OneLineageSupport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lineage = if self.lineage.is_empty() {
            "one undeclared lineage"
        } else {
            self.lineage.as_str()
        };
        write!(
            f,
            "every supporter of stance {} ({}) is of lineage {lineage}, which counts once: \
             seat arbiters of another lineage on this debate",
            self.stance,
            self.supporters.join(", ")
        )
    }
}
