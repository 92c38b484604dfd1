//! Invariant 1 (docs/ARCHITECTURE.md): no coalition confined to one stance, one
//! organisation or one lineage forces an outcome, whatever its size, under the policy new
//! debates get (`Policy::independent`, docs/coordinator/acceptance.md "The acceptance rule"); and the
//! rule is not vacuous: honest support across stances, organisations and lineages is
//! accepted.

use panel_machine::rules::acceptance::{RetrievalReceipt, RevealedRuling, decide};

use panel_machine::{
    Acceptance, DeadlockReason, Decision, MotionKind, Outcome, Policy, Seat, Stance,
};
use proptest::prelude::*;

/// What the coalition has in common, whatever else varies among its members.
#[derive(Debug, Clone, Copy)]
enum Confined {
    Stance,
    Organisation,
    Lineage,
}

/// One arbiter: its declared attributes, as indices into small name spaces.
#[derive(Debug, Clone)]
struct Member {
    stance: Stance,
    org: u8,
    lineage: u8,
}

fn stance() -> impl Strategy<Value = Stance> {
    prop_oneof![Just(Stance::A), Just(Stance::B), Just(Stance::None)]
}

fn member() -> impl Strategy<Value = Member> {
    (stance(), 0u8..5, 0u8..5).prop_map(|(stance, org, lineage)| Member {
        stance,
        org,
        lineage,
    })
}

fn binary_kind() -> impl Strategy<Value = MotionKind> {
    prop_oneof![
        Just(MotionKind::Merge),
        Just(MotionKind::Challenge),
        Just(MotionKind::Steelman),
        Just(MotionKind::TierVerification),
    ]
}

fn seat(id: &str, m: &Member) -> Seat {
    Seat {
        arbiter_id: id.into(),
        stance: m.stance,
        organisation: format!("org-{}", m.org),
        lineage: format!("lineage-{}", m.lineage),
    }
}

fn ruling(id: &str, decision: Decision, relevance: u8) -> RevealedRuling {
    RevealedRuling {
        arbiter_id: id.into(),
        decision,
        probability_milli: 900,
        relevance: Some(relevance),
    }
}

fn receipt(id: &str, hash: &str) -> RetrievalReceipt {
    RetrievalReceipt {
        arbiter_id: id.into(),
        content_hash: hash.into(),
    }
}

/// Puts every coalition member into the confinement: the shared attribute is the first
/// member's; the others vary freely.
fn confine(coalition: &mut [Member], by: Confined) {
    let Some(first) = coalition.first().cloned() else {
        return;
    };
    for m in coalition.iter_mut() {
        match by {
            Confined::Stance => m.stance = first.stance,
            Confined::Organisation => m.org = first.org,
            Confined::Lineage => m.lineage = first.lineage,
        }
    }
}

/// The panel: the coalition ruling `wanted` unanimously (and, for tier verification,
/// agreeing on one receipt), the honest arbiters ruling against it (with another receipt)
/// or abstaining.
struct Panel {
    seats: Vec<Seat>,
    rulings: Vec<RevealedRuling>,
    receipts: Vec<RetrievalReceipt>,
}

fn panel(coalition: &[Member], honest: &[(Member, bool)], wanted: Decision) -> Panel {
    let against = match wanted {
        Decision::Yes => Decision::No,
        Decision::No => Decision::Yes,
    };
    let mut p = Panel {
        seats: vec![],
        rulings: vec![],
        receipts: vec![],
    };
    for (i, m) in coalition.iter().enumerate() {
        let id = format!("x{i}");
        p.seats.push(seat(&id, m));
        p.rulings.push(ruling(&id, wanted, 0));
        p.receipts.push(receipt(&id, "forged"));
    }
    for (i, (m, rules)) in honest.iter().enumerate() {
        let id = format!("h{i}");
        p.seats.push(seat(&id, m));
        if *rules {
            p.rulings.push(ruling(&id, against, 3));
            p.receipts.push(receipt(&id, "fetched"));
        }
    }
    p
}

/// Whether the verdict is the coalition's outcome.
fn forced(v: &Acceptance, wanted: Decision) -> bool {
    match v {
        Acceptance::Accepted {
            outcome: Outcome::Decided(d) | Outcome::TierVerified { decision: d, .. },
            ..
        } => *d == wanted,
        Acceptance::Accepted {
            outcome: Outcome::Relevance(r),
            ..
        } => *r <= 1,
        Acceptance::Deadlocked(_) => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The attack: a coalition of any size confined to one stance, one organisation or one
    /// lineage packs the panel and rules as one; honest arbiters who do not support its
    /// outcome sit beside it (any number, any attributes, ruling against or abstaining).
    /// The coalition's outcome is never accepted.
    #[test]
    fn a_confined_coalition_never_forces_its_outcome(
        by in prop_oneof![Just(Confined::Stance), Just(Confined::Organisation), Just(Confined::Lineage)],
        mut coalition in proptest::collection::vec(member(), 1..40),
        honest in proptest::collection::vec((member(), any::<bool>()), 0..12),
        wanted in prop_oneof![Just(Decision::Yes), Just(Decision::No)],
        kind in binary_kind(),
    ) {
        confine(&mut coalition, by);
        let p = panel(&coalition, &honest, wanted);
        let v = decide(kind, &p.seats, &p.rulings, &p.receipts, &Policy::independent());
        prop_assert!(!forced(&v, wanted), "{by:?} coalition forced {v:?}");
    }

    /// The same for relevance values, for coalitions of one stance or one organisation
    /// (a coalition of one lineage still can: docs/coordinator/acceptance.md "The acceptance rule").
    #[test]
    fn a_confined_coalition_never_forces_a_relevance_value(
        by in prop_oneof![Just(Confined::Stance), Just(Confined::Organisation)],
        mut coalition in proptest::collection::vec(member(), 1..40),
        honest in proptest::collection::vec((member(), any::<bool>()), 0..12),
    ) {
        confine(&mut coalition, by);
        let p = panel(&coalition, &honest, Decision::Yes);
        let v = decide(MotionKind::Relevance, &p.seats, &p.rulings, &p.receipts, &Policy::independent());
        prop_assert!(!forced(&v, Decision::Yes), "{by:?} coalition forced {v:?}");
    }

    /// Not vacuous: support from both stances in each of at least two organisations, every
    /// supporter of its own lineage, is accepted, also when some seats stay silent.
    #[test]
    fn honest_support_across_stances_organisations_and_lineages_is_accepted(
        per_org in proptest::collection::vec((1usize..4, 1usize..4, 0usize..3), 2..6),
        decision in prop_oneof![Just(Decision::Yes), Just(Decision::No)],
        kind in binary_kind(),
    ) {
        let mut seats = vec![];
        let mut rulings = vec![];
        let mut receipts = vec![];
        let mut lineage = 0u8;
        for (org, (a, b, n)) in per_org.iter().enumerate() {
            let stances = std::iter::repeat_n(Stance::A, *a)
                .chain(std::iter::repeat_n(Stance::B, *b))
                .chain(std::iter::repeat_n(Stance::None, *n));
            for stance in stances {
                let id = format!("s{}", seats.len());
                lineage = lineage.wrapping_add(1);
                seats.push(Seat {
                    arbiter_id: id.clone(),
                    stance,
                    organisation: format!("org-{org}"),
                    lineage: format!("lineage-{lineage}"),
                });
                rulings.push(ruling(&id, decision, 2));
                receipts.push(receipt(&id, "fetched"));
            }
        }
        let v = decide(kind, &seats, &rulings, &receipts, &Policy::independent());
        prop_assert!(v.is_accepted(), "{v:?}");
    }
}

/// Two organisations, both stances in each, but one organisation's arbiters all rule the
/// other way: the outcome depends on the other organisation, and the reason names it.
#[test]
fn the_deadlock_names_the_organisation_the_outcome_depends_on() {
    let m = |stance, org, lineage| Member {
        stance,
        org,
        lineage,
    };
    let seats: Vec<Seat> = [
        m(Stance::A, 0, 0),
        m(Stance::A, 0, 1),
        m(Stance::B, 0, 2),
        m(Stance::B, 0, 3),
        m(Stance::A, 1, 4),
        m(Stance::B, 1, 5),
    ]
    .iter()
    .enumerate()
    .map(|(i, m)| seat(&format!("s{i}"), m))
    .collect();
    let rulings: Vec<_> = (0..6)
        .map(|i| {
            let d = if i < 4 { Decision::Yes } else { Decision::No };
            ruling(&format!("s{i}"), d, 0)
        })
        .collect();
    // The legacy rule accepts: majorities of both groups and net support on both sides.
    assert!(decide(MotionKind::Merge, &seats, &rulings, &[], &Policy::default()).is_accepted());
    let Acceptance::Deadlocked(d) = decide(
        MotionKind::Merge,
        &seats,
        &rulings,
        &[],
        &Policy::independent(),
    ) else {
        panic!("org-0 alone carries it")
    };
    assert_eq!(
        d.reasons,
        vec![DeadlockReason::DependsOnOrganisation {
            organisation: "org-0".into()
        }]
    );
}

/// Arbiters of one lineage declaring opposite stances count once: the side left without
/// another lineage's support is named.
#[test]
fn one_lineage_on_both_sides_counts_for_one_side() {
    let seats = vec![
        seat(
            "a",
            &Member {
                stance: Stance::A,
                org: 0,
                lineage: 7,
            },
        ),
        seat(
            "b",
            &Member {
                stance: Stance::B,
                org: 1,
                lineage: 7,
            },
        ),
    ];
    let rulings = vec![ruling("a", Decision::Yes, 0), ruling("b", Decision::Yes, 0)];
    let legacy = Policy::default();
    assert!(decide(MotionKind::Merge, &seats, &rulings, &[], &legacy).is_accepted());
    let lineage_only = Policy {
        independence: panel_machine::rules::independence::Independence {
            one_per_lineage: true,
            ..Default::default()
        },
        ..Policy::default()
    };
    let Acceptance::Deadlocked(d) = decide(MotionKind::Merge, &seats, &rulings, &[], &lineage_only)
    else {
        panic!("one lineage must not supply both sides")
    };
    assert_eq!(
        d.reasons,
        vec![DeadlockReason::InsufficientLineages {
            stance: Stance::B,
            net: 0,
            needed: 1
        }]
    );
}
