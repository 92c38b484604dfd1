//! Cross-prior acceptance: when a panel's revealed rulings turn a motion into an outcome.
//!
//! Pure: no I/O, no clock. Every replica evaluates this on the same inputs from the log, so
//! the decision is the same everywhere (docs/ARCHITECTURE.md, "Acceptance" and invariant 1).
//!
//! Default rule (all must hold, otherwise the motion is deadlocked and the dissent recorded):
//! 1. a quorum of signed, revealed rulings from seated arbiters;
//! 2. at least two stance groups represented (A, B, none);
//! 3. inside every represented group, a strict majority for the same decision;
//! 4. net support (for the outcome minus against it) of at least `k` from each side of the
//!    resolution, stance A **and** stance B. A coalition of one stance, however large, and
//!    however many neutral arbiters join it, cannot reach an outcome without the other side.
//!
//! Relevance motions accept the median value when the stance-group medians lie within one
//! step of each other. Tier verification additionally needs retrieval receipts (hash of the
//! fetched bytes) from arbiters of both sides, and all receipts must agree.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// A declared stance on the debate's resolution (SPEC: the arbiter's declared prior).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Stance {
    A,
    B,
    /// No stance declared; counts for quorum and groups, never for a side's support.
    None,
}

/// What kind of question a motion puts to the panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MotionKind {
    /// Merge or reject a candidate contribution.
    Merge,
    /// Resolve a challenge (uphold or dismiss).
    Challenge,
    /// Verify a citation's source tier; needs retrieval receipts.
    TierVerification,
    /// Assign a relevance value on the protocol's step scale.
    Relevance,
    /// Certify a steelman over the author's objection.
    Steelman,
    /// Advance the debate phase.
    Phase,
    /// Admit an appeal.
    Appeal,
    /// A binary question from another seed procedure (docs/PROCEDURES.md).
    Procedure,
}

/// A binary ruling on a motion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Decision {
    Yes,
    No,
}

/// One seat of a drawn panel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seat {
    pub arbiter_id: String,
    pub stance: Stance,
    pub organisation: String,
}

/// A ruling whose signature and commitment were already verified by the caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevealedRuling {
    pub arbiter_id: String,
    pub decision: Decision,
    /// The arbiter's probability for `Yes`, in thousandths (integers keep replicas equal).
    pub probability_milli: u16,
    /// The relevance step for relevance motions.
    pub relevance: Option<u8>,
}

/// Hash of the bytes an arbiter fetched when checking a citation's tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetrievalReceipt {
    pub arbiter_id: String,
    /// Lower-case hex SHA-256 of the fetched bytes.
    pub content_hash: String,
}

/// Parameters of the rule. `Policy::default()` is the project default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Minimum counted rulings; `None` means a majority of the seats.
    pub quorum: Option<usize>,
    /// Minimum net support from each side (A and B).
    pub min_net_support_per_side: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            quorum: None,
            min_net_support_per_side: 1,
        }
    }
}

/// Tally of one stance group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupTally {
    pub yes: usize,
    pub no: usize,
}

/// What the panel decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    Decided(Decision),
    Relevance(u8),
    TierVerified {
        decision: Decision,
        content_hash: String,
    },
}

/// Why a motion did not reach an outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeadlockReason {
    NoQuorum {
        counted: usize,
        quorum: usize,
    },
    SingleStanceGroup,
    SplitGroup {
        stance: Stance,
    },
    GroupsDisagree,
    InsufficientSupport {
        stance: Stance,
        net: i64,
        needed: usize,
    },
    RelevanceSpread {
        min_median: u8,
        max_median: u8,
    },
    MissingRelevance {
        arbiter_id: String,
    },
    MissingReceipts {
        stance: Stance,
    },
    ReceiptsDisagree,
}

/// The recorded disagreement of a deadlocked motion (invariant 3: nothing is deleted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dissent {
    pub reasons: Vec<DeadlockReason>,
    pub tallies: BTreeMap<Stance, GroupTally>,
    /// Rulings that were not counted (unseated arbiter, duplicate), by arbiter id.
    pub ignored: Vec<String>,
}

/// What the acceptance rule decided for a motion: accepted with its outcome, or deadlocked
/// with the dissent. Named apart from the SPEC's verdict (a debate's score), which this
/// is not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Acceptance {
    Accepted {
        outcome: Outcome,
        tallies: BTreeMap<Stance, GroupTally>,
    },
    Deadlocked(Dissent),
}

impl Acceptance {
    pub fn is_accepted(&self) -> bool {
        matches!(self, Acceptance::Accepted { .. })
    }
}

/// Apply the acceptance rule. Only rulings from seated arbiters count, each arbiter once
/// (the first ruling in input order; later duplicates are listed as ignored).
pub fn decide(
    kind: MotionKind,
    seats: &[Seat],
    rulings: &[RevealedRuling],
    receipts: &[RetrievalReceipt],
    policy: &Policy,
) -> Acceptance {
    let seat_of: BTreeMap<&str, &Seat> = seats.iter().map(|s| (s.arbiter_id.as_str(), s)).collect();
    let mut seen = BTreeSet::new();
    let mut ignored = Vec::new();
    let mut counted: Vec<(&Seat, &RevealedRuling)> = Vec::new();
    for r in rulings {
        match seat_of.get(r.arbiter_id.as_str()) {
            Some(seat) if seen.insert(r.arbiter_id.as_str()) => counted.push((seat, r)),
            _ => ignored.push(r.arbiter_id.clone()),
        }
    }

    let mut tallies: BTreeMap<Stance, GroupTally> = BTreeMap::new();
    for (seat, r) in &counted {
        let t = tallies.entry(seat.stance).or_default();
        match r.decision {
            Decision::Yes => t.yes += 1,
            Decision::No => t.no += 1,
        }
    }

    let mut reasons = Vec::new();
    let quorum = policy.quorum.unwrap_or(seats.len() / 2 + 1).max(1);
    if counted.len() < quorum {
        reasons.push(DeadlockReason::NoQuorum {
            counted: counted.len(),
            quorum,
        });
    }
    if tallies.len() < 2 {
        reasons.push(DeadlockReason::SingleStanceGroup);
    }

    let outcome = match kind {
        MotionKind::Relevance => relevance_outcome(&counted, policy, &mut reasons),
        _ => {
            let decision = binary_outcome(&tallies, policy, &mut reasons);
            match (kind, decision) {
                (MotionKind::TierVerification, Some(d)) => {
                    receipt_hash(&seat_of, receipts, &mut reasons).map(|content_hash| {
                        Outcome::TierVerified {
                            decision: d,
                            content_hash,
                        }
                    })
                }
                (_, d) => d.map(Outcome::Decided),
            }
        }
    };

    match outcome {
        Some(outcome) if reasons.is_empty() => Acceptance::Accepted { outcome, tallies },
        _ => Acceptance::Deadlocked(Dissent {
            reasons,
            tallies,
            ignored,
        }),
    }
}

/// Majority inside every group, all groups on the same side, net support from A and B.
fn binary_outcome(
    tallies: &BTreeMap<Stance, GroupTally>,
    policy: &Policy,
    reasons: &mut Vec<DeadlockReason>,
) -> Option<Decision> {
    let mut group_decisions = BTreeSet::new();
    for (stance, t) in tallies {
        if t.yes > t.no {
            group_decisions.insert(Decision::Yes);
        } else if t.no > t.yes {
            group_decisions.insert(Decision::No);
        } else {
            reasons.push(DeadlockReason::SplitGroup { stance: *stance });
        }
    }
    if group_decisions.len() > 1 {
        reasons.push(DeadlockReason::GroupsDisagree);
        return None;
    }
    let decision = group_decisions.into_iter().next()?;
    side_support(policy, reasons, |stance| {
        let t = tallies.get(&stance).cloned().unwrap_or_default();
        let (for_, against) = match decision {
            Decision::Yes => (t.yes, t.no),
            Decision::No => (t.no, t.yes),
        };
        for_ as i64 - against as i64
    });
    Some(decision)
}

/// Record an `InsufficientSupport` reason for each side below the policy's net support.
fn side_support(policy: &Policy, reasons: &mut Vec<DeadlockReason>, net: impl Fn(Stance) -> i64) {
    for stance in [Stance::A, Stance::B] {
        let n = net(stance);
        if n < policy.min_net_support_per_side as i64 {
            reasons.push(DeadlockReason::InsufficientSupport {
                stance,
                net: n,
                needed: policy.min_net_support_per_side,
            });
        }
    }
}

/// Lower median of a non-empty sorted slice (deterministic for even counts).
fn lower_median(sorted: &[u8]) -> u8 {
    sorted[(sorted.len() - 1) / 2]
}

fn relevance_outcome(
    counted: &[(&Seat, &RevealedRuling)],
    policy: &Policy,
    reasons: &mut Vec<DeadlockReason>,
) -> Option<Outcome> {
    let mut by_group: BTreeMap<Stance, Vec<u8>> = BTreeMap::new();
    let mut all = Vec::new();
    for (seat, r) in counted {
        match r.relevance {
            Some(v) => {
                by_group.entry(seat.stance).or_default().push(v);
                all.push(v);
            }
            None => reasons.push(DeadlockReason::MissingRelevance {
                arbiter_id: r.arbiter_id.clone(),
            }),
        }
    }
    // Each side must take part: a relevance value is accepted across priors only.
    side_support(policy, reasons, |stance| {
        by_group.get(&stance).map_or(0, |v| v.len() as i64)
    });
    if all.is_empty() {
        return None;
    }
    let medians: Vec<u8> = by_group
        .values_mut()
        .map(|v| {
            v.sort_unstable();
            lower_median(v)
        })
        .collect();
    let (lo, hi) = (
        medians.iter().copied().min().unwrap_or(0),
        medians.iter().copied().max().unwrap_or(0),
    );
    if hi - lo > 1 {
        reasons.push(DeadlockReason::RelevanceSpread {
            min_median: lo,
            max_median: hi,
        });
        return None;
    }
    all.sort_unstable();
    Some(Outcome::Relevance(lower_median(&all)))
}

/// The agreed content hash: receipts from seated arbiters of both sides, all equal.
fn receipt_hash(
    seat_of: &BTreeMap<&str, &Seat>,
    receipts: &[RetrievalReceipt],
    reasons: &mut Vec<DeadlockReason>,
) -> Option<String> {
    let seated: Vec<(&Seat, &RetrievalReceipt)> = receipts
        .iter()
        .filter_map(|r| seat_of.get(r.arbiter_id.as_str()).map(|s| (*s, r)))
        .collect();
    let mut ok = true;
    for stance in [Stance::A, Stance::B] {
        if !seated.iter().any(|(s, _)| s.stance == stance) {
            reasons.push(DeadlockReason::MissingReceipts { stance });
            ok = false;
        }
    }
    let hashes: BTreeSet<&str> = seated
        .iter()
        .map(|(_, r)| r.content_hash.as_str())
        .collect();
    if hashes.len() > 1 {
        reasons.push(DeadlockReason::ReceiptsDisagree);
        ok = false;
    }
    if ok {
        hashes.into_iter().next().map(str::to_owned)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn seat(id: &str, stance: Stance) -> Seat {
        Seat {
            arbiter_id: id.into(),
            stance,
            organisation: format!("org-{id}"),
        }
    }

    fn ruling(id: &str, decision: Decision) -> RevealedRuling {
        RevealedRuling {
            arbiter_id: id.into(),
            decision,
            probability_milli: 800,
            relevance: None,
        }
    }

    fn five() -> Vec<Seat> {
        vec![
            seat("a1", Stance::A),
            seat("a2", Stance::A),
            seat("b1", Stance::B),
            seat("b2", Stance::B),
            seat("n1", Stance::None),
        ]
    }

    #[test]
    fn agreement_across_stances_is_accepted() {
        let rulings: Vec<_> = ["a1", "a2", "b1", "b2", "n1"]
            .iter()
            .map(|id| ruling(id, Decision::Yes))
            .collect();
        let v = decide(
            MotionKind::Merge,
            &five(),
            &rulings,
            &[],
            &Policy::default(),
        );
        assert!(matches!(
            v,
            Acceptance::Accepted {
                outcome: Outcome::Decided(Decision::Yes),
                ..
            }
        ));
    }

    #[test]
    fn one_side_against_deadlocks_with_dissent() {
        let rulings = vec![
            ruling("a1", Decision::Yes),
            ruling("a2", Decision::Yes),
            ruling("b1", Decision::No),
            ruling("b2", Decision::No),
        ];
        let v = decide(
            MotionKind::Merge,
            &five(),
            &rulings,
            &[],
            &Policy::default(),
        );
        let Acceptance::Deadlocked(d) = v else {
            panic!("must deadlock")
        };
        assert!(d.reasons.contains(&DeadlockReason::GroupsDisagree));
        assert_eq!(d.tallies[&Stance::B], GroupTally { yes: 0, no: 2 });
    }

    #[test]
    fn split_group_deadlocks() {
        let rulings = vec![
            ruling("a1", Decision::Yes),
            ruling("a2", Decision::No),
            ruling("b1", Decision::Yes),
            ruling("b2", Decision::Yes),
        ];
        let v = decide(
            MotionKind::Merge,
            &five(),
            &rulings,
            &[],
            &Policy::default(),
        );
        let Acceptance::Deadlocked(d) = v else {
            panic!("must deadlock")
        };
        assert!(
            d.reasons
                .contains(&DeadlockReason::SplitGroup { stance: Stance::A })
        );
    }

    #[test]
    fn unseated_and_duplicate_rulings_do_not_count() {
        let seats = five();
        // Only a1 and b1 are real; the rest is a replay of a1 and an outsider.
        let rulings = vec![
            ruling("a1", Decision::Yes),
            ruling("a1", Decision::Yes),
            ruling("a1", Decision::Yes),
            ruling("mallory", Decision::Yes),
            ruling("b1", Decision::Yes),
        ];
        let v = decide(MotionKind::Merge, &seats, &rulings, &[], &Policy::default());
        let Acceptance::Deadlocked(d) = v else {
            panic!("replays must not make a quorum")
        };
        assert!(matches!(
            d.reasons[0],
            DeadlockReason::NoQuorum {
                counted: 2,
                quorum: 3
            }
        ));
        assert_eq!(d.ignored, vec!["a1", "a1", "mallory"]);
    }

    #[test]
    fn relevance_median_when_group_medians_within_one_step() {
        let mut rulings: Vec<_> = ["a1", "a2", "b1", "b2", "n1"]
            .iter()
            .map(|id| ruling(id, Decision::Yes))
            .collect();
        for (r, v) in rulings.iter_mut().zip([3, 3, 2, 3, 3]) {
            r.relevance = Some(v);
        }
        let v = decide(
            MotionKind::Relevance,
            &five(),
            &rulings,
            &[],
            &Policy::default(),
        );
        assert!(matches!(
            v,
            Acceptance::Accepted {
                outcome: Outcome::Relevance(3),
                ..
            }
        ));
        // Side B far away: deadlock with the spread recorded.
        rulings[2].relevance = Some(0);
        rulings[3].relevance = Some(0);
        let v = decide(
            MotionKind::Relevance,
            &five(),
            &rulings,
            &[],
            &Policy::default(),
        );
        let Acceptance::Deadlocked(d) = v else {
            panic!("spread must deadlock")
        };
        assert!(
            d.reasons
                .iter()
                .any(|r| matches!(r, DeadlockReason::RelevanceSpread { .. }))
        );
    }

    #[test]
    fn tier_verification_needs_agreeing_receipts_from_both_sides() {
        let rulings: Vec<_> = ["a1", "a2", "b1", "b2"]
            .iter()
            .map(|id| ruling(id, Decision::Yes))
            .collect();
        let rc = |id: &str, h: &str| RetrievalReceipt {
            arbiter_id: id.into(),
            content_hash: h.into(),
        };
        let p = Policy::default();
        let only_a = [rc("a1", "aa"), rc("a2", "aa")];
        let v = decide(MotionKind::TierVerification, &five(), &rulings, &only_a, &p);
        assert!(!v.is_accepted());
        let disagree = [rc("a1", "aa"), rc("b1", "bb")];
        let v = decide(
            MotionKind::TierVerification,
            &five(),
            &rulings,
            &disagree,
            &p,
        );
        let Acceptance::Deadlocked(d) = v else {
            panic!()
        };
        assert!(d.reasons.contains(&DeadlockReason::ReceiptsDisagree));
        // A forged receipt from an unseated arbiter is ignored, not a second side.
        let forged = [rc("a1", "aa"), rc("mallory", "aa")];
        assert!(
            !decide(MotionKind::TierVerification, &five(), &rulings, &forged, &p).is_accepted()
        );
        let good = [rc("a1", "aa"), rc("b2", "aa")];
        let v = decide(MotionKind::TierVerification, &five(), &rulings, &good, &p);
        assert_eq!(
            v,
            Acceptance::Accepted {
                outcome: Outcome::TierVerified {
                    decision: Decision::Yes,
                    content_hash: "aa".into()
                },
                tallies: BTreeMap::from([
                    (Stance::A, GroupTally { yes: 2, no: 0 }),
                    (Stance::B, GroupTally { yes: 2, no: 0 })
                ]),
            }
        );
    }

    fn stance_strategy() -> impl Strategy<Value = Stance> {
        prop_oneof![Just(Stance::A), Just(Stance::B), Just(Stance::None)]
    }

    proptest! {
        /// The attack: one stance (plus any number of neutral arbiters) packs the panel and
        /// rules unanimously; it never reaches an outcome.
        #[test]
        fn single_stance_coalition_cannot_force_acceptance(
            side in prop_oneof![Just(Stance::A), Just(Stance::B)],
            coalition in 1usize..40,
            neutrals in 0usize..10,
            decision in prop_oneof![Just(Decision::Yes), Just(Decision::No)],
            kind in prop_oneof![Just(MotionKind::Merge), Just(MotionKind::Challenge), Just(MotionKind::Relevance), Just(MotionKind::TierVerification)],
        ) {
            let mut seats = Vec::new();
            let mut rulings = Vec::new();
            let mut receipts = Vec::new();
            for i in 0..coalition + neutrals {
                let id = format!("x{i}");
                let stance = if i < coalition { side } else { Stance::None };
                seats.push(seat(&id, stance));
                let mut r = ruling(&id, decision);
                r.relevance = Some(2);
                rulings.push(r);
                receipts.push(RetrievalReceipt { arbiter_id: id, content_hash: "h".into() });
            }
            let v = decide(kind, &seats, &rulings, &receipts, &Policy::default());
            prop_assert!(!v.is_accepted(), "{v:?}");
        }

        /// Accepted outcomes always carry a strict majority in each represented group and
        /// support from both sides; removing every ruling of side B always deadlocks.
        #[test]
        fn accepted_implies_cross_side_majorities(
            stances in proptest::collection::vec(stance_strategy(), 1..15),
            votes in proptest::collection::vec(any::<bool>(), 15),
        ) {
            let seats: Vec<_> = stances.iter().enumerate().map(|(i, s)| seat(&format!("s{i}"), *s)).collect();
            let rulings: Vec<_> = seats.iter().zip(&votes).map(|(s, y)| ruling(&s.arbiter_id, if *y { Decision::Yes } else { Decision::No })).collect();
            let v = decide(MotionKind::Merge, &seats, &rulings, &[], &Policy::default());
            if let Acceptance::Accepted { outcome: Outcome::Decided(d), tallies } = &v {
                for side in [Stance::A, Stance::B] {
                    let t = &tallies[&side];
                    let (f, a) = if *d == Decision::Yes { (t.yes, t.no) } else { (t.no, t.yes) };
                    prop_assert!(f > a);
                }
                let without_b: Vec<_> = rulings.iter().zip(&seats).filter(|(_, s)| s.stance != Stance::B).map(|(r, _)| r.clone()).collect();
                prop_assert!(!decide(MotionKind::Merge, &seats, &without_b, &[], &Policy::default()).is_accepted());
            }
        }
    }
}
