//! `compute_ledger` against a direct reading of SPEC section 9 (one `version_merit` per
//! canonical version, a stable sort, the budget walk) on debates built to stress the
//! indexes behind the fast ledger: duplicated thread and version ids, versions whose
//! `threadId` names another thread or none, sides other than A and B, dismissals of
//! versions that are not canonical.

use crucible::document::{BySide, Challenge, Citation, Debate, LedgerRow, Num, Thread, Version};
use crucible::model::NewDebate;
use crucible::scoring::{compute_ledger, version_merit};
use crucible::{FixedEnv, Protocol, Side};
use proptest::prelude::*;

const SIDES: [Option<&str>; 5] = [Some("A"), Some("B"), None, Some("C"), Some("")];

#[derive(Debug, Clone)]
struct Ver {
    id: u8,
    /// `None`: the version names its own thread; else an id from the pool (may not exist).
    thread: Option<u8>,
    tier: u8,
    cites: u8,
    qualifier: u8,
    relevance: u8,
}

#[derive(Debug, Clone)]
struct Thr {
    id: u8,
    side: usize,
    versions: Vec<Ver>,
    /// Index into `versions`, out of range for a dangling canonical id, or none.
    canonical: Option<u8>,
}

#[derive(Debug, Clone)]
struct Chl {
    version: u8,
    side: usize,
    resolution: u8,
}

fn ver() -> impl Strategy<Value = Ver> {
    (
        0u8..12,
        prop::option::weighted(0.2, 0u8..10),
        0u8..6,
        0u8..4,
        0u8..4,
        0u8..5,
    )
        .prop_map(|(id, thread, tier, cites, qualifier, relevance)| Ver {
            id,
            thread,
            tier,
            cites,
            qualifier,
            relevance,
        })
}

fn thr() -> impl Strategy<Value = Thr> {
    (
        0u8..8,
        0..SIDES.len(),
        prop::collection::vec(ver(), 1..4),
        prop::option::weighted(0.85, 0u8..4),
    )
        .prop_map(|(id, side, versions, canonical)| Thr {
            id,
            side,
            versions,
            canonical,
        })
}

fn chl() -> impl Strategy<Value = Chl> {
    (0u8..12, 0..SIDES.len(), 0u8..4).prop_map(|(version, side, resolution)| Chl {
        version,
        side,
        resolution,
    })
}

fn build(threads: &[Thr], challenges: &[Chl], budget: Option<f64>) -> Debate {
    const TIERS: [&str; 6] = ["T1", "T2", "T3", "T4", "T5", "T7"];
    const QUALS: [Option<&str>; 4] = [Some("certain"), Some("probable"), Some("odd"), None];
    const REL: [Option<f64>; 5] = [None, Some(0.25), Some(0.5), Some(1.0), Some(0.0)];
    let mut d = Protocol::new(FixedEnv::new(0, 1)).new_debate(NewDebate {
        resolution: "Resolved: p.".into(),
        pos_a: "A".into(),
        pos_b: "B".into(),
        burden: Some("shared".into()),
        claim_budget: budget,
    });
    for t in threads {
        let tid = format!("thr_{}", t.id);
        let versions: Vec<Version> = t
            .versions
            .iter()
            .enumerate()
            .map(|(i, v)| Version {
                id: format!("ver_{}", v.id),
                thread_id: v.thread.map_or_else(|| tid.clone(), |o| format!("thr_{o}")),
                num: i as u32 + 1,
                parent_id: None,
                author: None,
                side: None,
                kind: Some(if v.cites == 3 { "logical" } else { "empirical" }.into()),
                assertion: Some(format!("claim {}", v.id)),
                grounds: None,
                warrant: None,
                evidence: (0..v.cites)
                    .map(|k| Citation {
                        tier_verified: (k % 2 == 0).then_some(true),
                        ..Citation::new("s", "http://127.0.0.1/", TIERS[v.tier as usize])
                    })
                    .collect(),
                qualifier: QUALS[v.qualifier as usize].map(str::to_string),
                status: "merged".into(),
                relevance: REL[v.relevance as usize].map(Num),
                merge_rationale: String::new(),
                created_at: None,
            })
            .collect();
        let canonical_id = t.canonical.map(|c| {
            versions
                .get(c as usize)
                .map_or_else(|| "ver_dangling".to_string(), |v| v.id.clone())
        });
        d.threads.push(Thread {
            id: tid,
            side: SIDES[t.side].map(str::to_string),
            title: Some(format!("title {}", t.id)),
            versions,
            canonical_id,
            created_at: None,
        });
    }
    for (i, c) in challenges.iter().enumerate() {
        d.challenges.push(Challenge {
            id: format!("chl_{i}"),
            thread_id: String::new(),
            version_id: format!("ver_{}", c.version),
            ground: None,
            text: None,
            evidence: Vec::new(),
            author: None,
            side: SIDES[c.side].map(str::to_string),
            response: None,
            resolution: [Some("dismissed"), Some("dismissed"), Some("upheld"), None]
                [c.resolution as usize]
                .map(str::to_string),
            rationale: None,
            appeal_id: None,
            created_at: None,
        });
    }
    d
}

/// The ledger as SPEC section 9 states it, with no index: rows in thread order, a stable
/// sort by side (a missing side last) then merit descending, then the budget walk.
fn model(d: &Debate) -> (Vec<LedgerRow>, BySide<f64>) {
    let mut rows: Vec<LedgerRow> = d
        .threads
        .iter()
        .filter_map(|t| {
            let v = t.canonical()?;
            let m = version_merit(d, v);
            Some(LedgerRow {
                side: t.side.clone(),
                thread_id: t.id.clone(),
                thread_title: t.title.clone(),
                version_id: v.id.clone(),
                version_num: v.num,
                assertion: v.assertion.clone(),
                kind: v.kind.clone(),
                qualifier: v.qualifier.clone(),
                scoring: None,
                e: Num(m.e),
                r: Num(m.r),
                s: Num(m.s),
                q: Num(m.q),
                dismissed: m.dismissed,
                merit: Num(m.merit),
            })
        })
        .collect();
    rows.sort_by(|a, b| {
        (a.side.is_none(), &a.side)
            .cmp(&(b.side.is_none(), &b.side))
            .then_with(|| {
                b.merit
                    .0
                    .partial_cmp(&a.merit.0)
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
    });
    let budget = d.claim_budget.map(|b| b.0.floor().max(0.0));
    let mut totals = BySide { a: 0.0, b: 0.0 };
    let mut counted = BySide { a: 0.0, b: 0.0 };
    for r in &mut rows {
        let mut scoring = true;
        if let Some(side) = r.side.as_deref().and_then(Side::parse) {
            if budget.is_some_and(|n| *counted.get(side) >= n) {
                scoring = false;
            } else {
                *counted.get_mut(side) += 1.0;
                *totals.get_mut(side) += r.merit.0;
            }
        }
        r.scoring = Some(scoring);
    }
    (rows, totals)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn ledger_matches_the_direct_reading(
        threads in prop::collection::vec(thr(), 0..24),
        challenges in prop::collection::vec(chl(), 0..30),
        budget in prop::sample::select(vec![None, Some(1.0), Some(2.5), Some(0.0)]),
    ) {
        let d = build(&threads, &challenges, budget);
        let (rows, totals) = model(&d);
        let l = compute_ledger(&d);
        let got: Vec<LedgerRow> = l.rows.iter().map(LedgerRow::to_owned_row).collect();
        prop_assert_eq!(got, rows);
        prop_assert_eq!(l.totals, totals);
    }
}

#[test]
fn borrowed_and_owned_rows_serialise_identically() {
    let threads: Vec<Thr> = (0..6)
        .map(|i| Thr {
            id: i,
            side: usize::from(i % 3),
            versions: vec![Ver {
                id: i,
                thread: None,
                tier: i % 6,
                cites: i % 4,
                qualifier: i % 4,
                relevance: i % 5,
            }],
            canonical: Some(0),
        })
        .collect();
    let challenges = [Chl {
        version: 1,
        side: 0,
        resolution: 0,
    }];
    let d = build(&threads, &challenges, Some(1.0));
    let l = compute_ledger(&d);
    let owned: Vec<LedgerRow> = l.rows.iter().map(LedgerRow::to_owned_row).collect();
    assert_eq!(
        serde_json::to_string(&l.rows).expect("rows serialise"),
        serde_json::to_string(&owned).expect("rows serialise")
    );
    let back: Vec<LedgerRow> =
        serde_json::from_value(serde_json::to_value(&l.rows).expect("rows serialise"))
            .expect("rows load back owned");
    assert_eq!(back, owned);
}
