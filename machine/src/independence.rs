//! Independence that is measured, not declared: the parts of the acceptance rule and of
//! the draw that stop one organisation, one lineage or one replica from deciding a motion
//! (docs/ARCHITECTURE.md invariants 1 and 3; docs/COORDINATOR.md "The acceptance rule",
//! rules 4 and 5; docs/SECURITY.md "The draw cannot be steered").
//!
//! Every rule here is switched on by a field of the debate's [`crate::acceptance::Policy`]
//! that policies written before it lack, so records and snapshots from before replay to
//! the same state: a missing [`Independence`] is all off.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::acceptance::{Outcome, Policy, RetrievalReceipt, RevealedRuling, Seat, Stance};

/// Which independence rules a policy applies. `Default` (and a policy without the field,
/// i.e. every policy written before these rules) is all off; [`Independence::ALL`] is what
/// new debates get (`Policy::independent`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Independence {
    /// Rule 5: an outcome stands only if the panel without any one organisation's seats
    /// and rulings still reaches it ([`outcome_survives`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub without_any_organisation: bool,
    /// Rule 4, lineage fallback: supporters sharing a lineage count once toward the
    /// net support of the sides, whatever stances they declared ([`supporters_per_side`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_per_lineage: bool,
    /// The panel is drawn from a seed fixed by the record before the motion opened, not
    /// from the leader's batch seed (`crate::draw_seed`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsteerable_draw: bool,
    /// Declared priors are per debate (docs/COORDINATOR.md "Declared priors"): a debate's
    /// panels seat an arbiter under a stance only by its signed declaration for that
    /// debate ([`crate::command::StanceDeclaration`]), and keep off every motion an
    /// arbiter related by lineage to any author the motion is about.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub declared_stances: bool,
}

impl Independence {
    /// Every rule on: the default for debates created from now on.
    pub const ALL: Independence = Independence {
        without_any_organisation: true,
        one_per_lineage: true,
        unsteerable_draw: true,
        declared_stances: true,
    };

    /// True when no rule is on (the behaviour of policies written before these rules).
    pub fn is_off(&self) -> bool {
        *self == Independence::default()
    }
}

/// The lineage a seat counts under. Seats without a declared lineage share one, so leaving
/// the lineage out never buys a second count (docs/COORDINATOR.md "The acceptance rule").
fn lineage_key(seat: &Seat) -> &str {
    seat.lineage.as_str()
}

/// How many supporters count for stance A and for stance B when each lineage counts at
/// most once overall (docs/COORDINATOR.md "The acceptance rule", rule 4).
///
/// `supporters` are the seats that ruled for the outcome (or took part, for relevance);
/// `needed` is how many each side must reach. A lineage with supporters of one side counts
/// for that side; a lineage with supporters of both sides counts for one of them, given
/// first to A while A is short, then to B. That is a maximum matching of lineages to sides,
/// so whenever some once-per-lineage assignment meets both needs, this one does.
/// Supporters of no stance never count for a side, as in the rule without lineages.
pub(crate) fn supporters_per_side<'a>(
    supporters: impl IntoIterator<Item = &'a Seat>,
    needed: [usize; 2],
) -> [usize; 2] {
    let mut sides: BTreeMap<&str, BTreeSet<Stance>> = BTreeMap::new();
    for seat in supporters {
        if matches!(seat.stance, Stance::A | Stance::B) {
            sides
                .entry(lineage_key(seat))
                .or_default()
                .insert(seat.stance);
        }
    }
    let (mut only_a, mut only_b, mut both) = (0usize, 0usize, 0usize);
    for s in sides.values() {
        match (s.contains(&Stance::A), s.contains(&Stance::B)) {
            (true, true) => both += 1,
            (true, false) => only_a += 1,
            (false, true) => only_b += 1,
            (false, false) => {}
        }
    }
    let to_a = both.min(needed[0].saturating_sub(only_a));
    [only_a + to_a, only_b + (both - to_a)]
}

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

/// The organisations seated on a panel, each once, in order.
pub(crate) fn organisations(seats: &[Seat]) -> BTreeSet<&str> {
    seats.iter().map(|s| s.organisation.as_str()).collect()
}

/// The panel as if `organisation` had never been seated: its seats, and every ruling and
/// receipt of its arbiters, removed. Rulings of unseated arbiters are kept (the rule
/// ignores them either way, and lists them as ignored).
pub(crate) fn without_organisation(
    organisation: &str,
    seats: &[Seat],
    rulings: &[RevealedRuling],
    receipts: &[RetrievalReceipt],
) -> (Vec<Seat>, Vec<RevealedRuling>, Vec<RetrievalReceipt>) {
    let removed: BTreeSet<&str> = seats
        .iter()
        .filter(|s| s.organisation == organisation)
        .map(|s| s.arbiter_id.as_str())
        .collect();
    (
        seats
            .iter()
            .filter(|s| s.organisation != organisation)
            .cloned()
            .collect(),
        rulings
            .iter()
            .filter(|r| !removed.contains(r.arbiter_id.as_str()))
            .cloned()
            .collect(),
        receipts
            .iter()
            .filter(|r| !removed.contains(r.arbiter_id.as_str()))
            .cloned()
            .collect(),
    )
}

/// Whether the panel without one organisation reached the same outcome as the whole panel
/// (`reduced` is `None` when it deadlocked). A relevance value may move by one step, the
/// protocol's tolerance between stance-group medians; every other outcome must be equal.
pub(crate) fn outcome_survives(full: &Outcome, reduced: Option<&Outcome>) -> bool {
    match (full, reduced) {
        (Outcome::Relevance(a), Some(Outcome::Relevance(b))) => a.abs_diff(*b) <= 1,
        (a, Some(b)) => a == b,
        (_, None) => false,
    }
}

/// Measured independence over decided motions (docs/CALIBRATION.md, measured
/// independence): for every pair of arbiters, how often both ruled against an accepted
/// yes/no outcome on the motions both ruled on. An accepted outcome is the best truth the
/// record holds; motions that deadlocked or answer a value are skipped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MeasuredErrors {
    /// Decided yes/no motions counted.
    pub motions: usize,
    /// Keyed by the two arbiter ids, in order.
    pub pairs: BTreeMap<(String, String), calibration::independence::ErrorCoincidence>,
}

impl MeasuredErrors {
    /// Counts `motions`; `arbiter_of` names the arbiter holding a ruling's key (hex).
    pub fn from_motions<'a>(
        motions: impl IntoIterator<Item = &'a crate::model::Motion>,
        arbiter_of: impl Fn(&str) -> Option<String>,
    ) -> Self {
        use crate::acceptance::{Acceptance, Decision};
        let mut out = MeasuredErrors::default();
        for m in motions {
            let crate::model::MotionStatus::Decided(Acceptance::Accepted {
                outcome: Outcome::Decided(accepted),
                ..
            }) = &m.status
            else {
                continue;
            };
            let wrong: BTreeMap<String, bool> = m
                .rulings
                .iter()
                .filter_map(|w| w.decode().ok()?.ruling)
                .filter_map(|r| {
                    let id = arbiter_of(&hex::encode(&r.arbiter_key))?;
                    let d = panel_proto::pb::Decision::try_from(r.decision).ok()?;
                    let yes = panel_proto::ruling_check::is_affirmative(d);
                    Some((id, yes != (*accepted == Decision::Yes)))
                })
                .collect();
            if wrong.len() < 2 {
                continue;
            }
            out.motions += 1;
            for (i, (a, wa)) in wrong.iter().enumerate() {
                for (b, wb) in wrong.iter().skip(i + 1) {
                    out.pairs
                        .entry((a.clone(), b.clone()))
                        .or_default()
                        .add(*wa, *wb);
                }
            }
        }
        out
    }

    /// The error correlation of two arbiters; 0 where it is undefined (no motion in
    /// common, or one of them never erred), so the figure never invents dependence.
    pub fn correlation(&self, a: &str, b: &str) -> f64 {
        let key = if a <= b {
            (a.to_owned(), b.to_owned())
        } else {
            (b.to_owned(), a.to_owned())
        };
        self.pairs
            .get(&key)
            .and_then(|c| c.correlation())
            .unwrap_or(0.0)
    }

    /// Kish's effective number of independent members of `panel`
    /// (`calibration::independence::kish_n_eff`).
    pub fn n_eff(&self, panel: &[&str]) -> f64 {
        calibration::independence::kish_n_eff(panel.len(), |i, j| {
            self.correlation(panel[i], panel[j])
        })
    }
}

#[cfg(test)]
mod tests {

    /// Two arbiters that err together count as one; an arbiter that never erred has no
    /// defined correlation and is counted as independent.
    #[test]
    fn shared_errors_lower_the_measured_n_eff() {
        let mut m = MeasuredErrors::default();
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

    fn seat(id: &str, stance: Stance, lineage: &str) -> Seat {
        Seat {
            arbiter_id: id.into(),
            stance,
            organisation: format!("org-{id}"),
            lineage: lineage.into(),
        }
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
