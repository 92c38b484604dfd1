//! Properties over randomly generated debates: random threads, versions, tiers,
//! verification, relevance, qualifiers, challenges, budgets and burdens.

use crucible::document::{
    BySide, Challenge, Citation, Debate, Num, Steelman, Thread, Version, phase,
};
use crucible::migrate::load;
use crucible::scoring::{compute_ledger, summarize, verdict_band};
use crucible::{FixedEnv, Protocol};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Cite(Option<&'static str>, bool);

#[derive(Debug, Clone)]
struct Ver {
    kind: Option<&'static str>,
    cites: Vec<Cite>,
    qualifier: Option<&'static str>,
    relevance: Option<f64>,
    status: &'static str,
}

#[derive(Debug, Clone)]
struct Thr {
    side: &'static str,
    versions: Vec<Ver>,
    canonical: Option<usize>,
}

#[derive(Debug, Clone)]
struct Chl {
    thread: usize,
    side: Option<&'static str>,
    resolution: Option<&'static str>,
}

fn cite() -> impl Strategy<Value = Cite> {
    (
        prop::sample::select(vec![
            Some("T1"),
            Some("T2"),
            Some("T3"),
            Some("T4"),
            Some("T5"),
            Some("T9"),
            None,
        ]),
        any::<bool>(),
    )
        .prop_map(|(t, v)| Cite(t, v))
}

fn ver() -> impl Strategy<Value = Ver> {
    (
        prop::sample::select(vec![
            Some("empirical"),
            Some("logical"),
            Some("definitional"),
            None,
        ]),
        prop::collection::vec(cite(), 0..5),
        prop::sample::select(vec![
            Some("certain"),
            Some("probable"),
            Some("plausible"),
            None,
            Some("odd"),
        ]),
        prop::sample::select(vec![None, Some(0.25), Some(0.5), Some(0.75), Some(1.0)]),
        prop::sample::select(vec![
            "merged",
            "candidate",
            "superseded",
            "demoted",
            "rejected",
        ]),
    )
        .prop_map(|(kind, cites, qualifier, relevance, status)| Ver {
            kind,
            cites,
            qualifier,
            relevance,
            status,
        })
}

fn thr() -> impl Strategy<Value = Thr> {
    (
        prop::sample::select(vec!["A", "B"]),
        prop::collection::vec(ver(), 1..4),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(side, versions, i, has)| {
            let canonical = has.then(|| i.index(versions.len()));
            Thr {
                side,
                versions,
                canonical,
            }
        })
}

fn chl() -> impl Strategy<Value = Chl> {
    (
        0usize..64,
        prop::sample::select(vec![Some("A"), Some("B"), None]),
        prop::sample::select(vec![Some("dismissed"), Some("upheld"), None]),
    )
        .prop_map(|(thread, side, resolution)| Chl {
            thread,
            side,
            resolution,
        })
}

#[derive(Debug, Clone)]
struct Spec {
    threads: Vec<Thr>,
    challenges: Vec<Chl>,
    budget: Option<f64>,
    burden: &'static str,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        prop::collection::vec(thr(), 0..24),
        prop::collection::vec(chl(), 0..30),
        prop::sample::select(vec![
            None,
            Some(1.0),
            Some(2.0),
            Some(3.0),
            Some(0.0),
            Some(2.5),
        ]),
        prop::sample::select(vec!["A", "B", "shared"]),
    )
        .prop_map(|(threads, challenges, budget, burden)| Spec {
            threads,
            challenges,
            budget,
            burden,
        })
}

fn build(s: &Spec) -> Debate {
    let mut d = Protocol::new(FixedEnv::new(0, 1)).new_debate(crucible::model::NewDebate {
        resolution: "Resolved: p.".into(),
        pos_a: "A".into(),
        pos_b: "B".into(),
        burden: Some(s.burden.into()),
        claim_budget: None,
    });
    d.claim_budget = s.budget.map(Num);
    for (ti, t) in s.threads.iter().enumerate() {
        let tid = format!("thr_{ti}");
        let versions: Vec<Version> = t
            .versions
            .iter()
            .enumerate()
            .map(|(vi, v)| Version {
                id: format!("ver_{ti}_{vi}"),
                thread_id: tid.clone(),
                num: vi as u32 + 1,
                parent_id: None,
                author: Some("x".into()),
                side: Some(t.side.into()),
                kind: v.kind.map(str::to_string),
                assertion: Some(format!("claim {ti}.{vi}")),
                grounds: None,
                warrant: None,
                evidence: v
                    .cites
                    .iter()
                    .map(|c| Citation {
                        tier: c.0.map(str::to_string),
                        tier_verified: c.1.then_some(true),
                        ..Citation::default()
                    })
                    .collect(),
                qualifier: v.qualifier.map(str::to_string),
                status: v.status.into(),
                relevance: v.relevance.map(Num),
                merge_rationale: String::new(),
                created_at: None,
            })
            .collect();
        let canonical_id = t.canonical.map(|i| versions[i].id.clone());
        d.threads.push(Thread {
            id: tid,
            side: Some(t.side.into()),
            title: Some(format!("t{ti}")),
            versions,
            canonical_id,
            created_at: None,
        });
    }
    for (ci, c) in s.challenges.iter().enumerate() {
        let Some(t) = (!d.threads.is_empty()).then(|| &d.threads[c.thread % d.threads.len()])
        else {
            break;
        };
        let vid = t
            .canonical_id
            .clone()
            .unwrap_or_else(|| t.versions[0].id.clone());
        d.challenges.push(Challenge {
            id: format!("chl_{ci}"),
            thread_id: t.id.clone(),
            version_id: vid,
            ground: Some("relevance".into()),
            text: None,
            evidence: Vec::new(),
            author: None,
            side: c.side.map(str::to_string),
            response: None,
            resolution: c.resolution.map(str::to_string),
            rationale: None,
            appeal_id: None,
            created_at: None,
        });
    }
    d.steelmans = BySide {
        a: Steelman::default(),
        b: Steelman::default(),
    };
    d.phase = phase::VERDICT.into();
    d
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn margin_lies_in_unit_interval(s in spec()) {
        let d = build(&s);
        let l = compute_ledger(&d);
        let m = summarize(&l.totals, s.burden).margin;
        prop_assert!((0.0..=1.0).contains(&m), "margin {m}");
    }

    #[test]
    fn a_budget_never_raises_a_total(s in spec()) {
        let mut d = build(&s);
        d.claim_budget = None;
        let free = compute_ledger(&d).totals;
        for b in [1.0, 2.0, 3.0, 7.0] {
            d.claim_budget = Some(Num(b));
            let t = compute_ledger(&d).totals;
            prop_assert!(t.a <= free.a && t.b <= free.b, "budget {b}: {t:?} > {free:?}");
        }
    }

    #[test]
    fn totals_equal_the_sum_of_scoring_rows(s in spec()) {
        let d = build(&s);
        let l = compute_ledger(&d);
        for side in ["A", "B"] {
            let sum = l.rows.iter()
                .filter(|r| r.side == Some(side) && r.scoring == Some(true))
                .fold(0.0, |acc, r| acc + r.merit.0);
            let total = if side == "A" { l.totals.a } else { l.totals.b };
            prop_assert_eq!(sum, total);
        }
        // Rows: side A first, merit descending within a side.
        for w in l.rows.windows(2) {
            prop_assert!(w[0].side <= w[1].side);
            if w[0].side == w[1].side { prop_assert!(w[0].merit.0 >= w[1].merit.0); }
        }
    }

    #[test]
    fn band_is_monotone_in_margin(x in 0.0f64..=1.0, y in 0.0f64..=1.0) {
        let rank = |m: f64| ["unresolved", "balance", "clear", "decisive"]
            .iter().position(|k| *k == verdict_band(m).key).unwrap();
        let (lo, hi) = if x <= y { (x, y) } else { (y, x) };
        prop_assert!(rank(lo) <= rank(hi));
    }

    #[test]
    fn verdicts_are_append_only(s in spec(), extra in prop::collection::vec(any::<bool>(), 1..5)) {
        let mut d = build(&s);
        let mut p = Protocol::with_mode(FixedEnv::new(0, 1), crucible::Conformance::Reference);
        let mut frozen = Vec::new();
        for change in extra {
            p.issue_verdict(&mut d, None, None, None);
            frozen.push(d.verdicts.last().unwrap().clone());
            if change && !d.threads.is_empty() {
                // Any later mutation of the debate leaves earlier verdicts alone.
                d.threads[0].canonical_id = None;
                d.claim_budget = Some(Num(1.0));
            }
            prop_assert_eq!(&d.verdicts[..frozen.len()], &frozen[..]);
            prop_assert_eq!(d.verdicts.last().unwrap().n as usize, frozen.len());
        }
    }

    #[test]
    fn ledger_is_invariant_under_json_round_trip(s in spec()) {
        let d = build(&s);
        let back = load(&d.to_json().to_string()).unwrap();
        prop_assert_eq!(compute_ledger(&back), compute_ledger(&d));
        prop_assert_eq!(back.to_json(), d.to_json());
    }
}
