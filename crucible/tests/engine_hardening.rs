//! The 1.1 hardening rules, written as attacks: ports of the reference suite's
//! test/hardening.test.js (15).

mod engine_common;

use crucible::document::BySide;
use crucible::model::VersionInput;
use crucible::scoring::{
    compute_ledger, effective_tier_weight, evidence_base, summarize, version_merit,
};
use crucible::{Citation, Side};
use engine_common::*;

fn claim_on(
    p: &mut P,
    d: &mut crucible::Debate,
    side: &str,
    title: &str,
    over: impl FnOnce(&mut VersionInput),
) -> (String, String) {
    let mut c = claim(side);
    c.assertion = Some("The measured quantity moved in the stated direction.".into());
    over(&mut c);
    let t = p
        .create_thread(d, Some(side), Some(title), Some("contributor"))
        .unwrap();
    let v = p.add_version(d, &t, c).unwrap();
    p.merge_version(d, &t, &v, Some("Only compliant version."), Some("arbiter"))
        .unwrap();
    (t, v)
}

fn tiered(tier: &str, verified: bool) -> Citation {
    let mut c = cite(tier);
    if verified {
        c.tier_verified = Some(true);
    }
    c
}

#[test]
fn logical_claim_scores_below_peer_reviewed_study() {
    let logical = evidence_base(&bare(Some("logical"), vec![], None));
    let sourced = evidence_base(&bare(Some("empirical"), vec![cite("T3")], None));
    assert!(logical < sourced);
    assert_eq!(logical, 2.0);
    assert_eq!(
        evidence_base(&bare(Some("definitional"), vec![], None)),
        1.0
    );
}

#[test]
fn tier_above_t3_scores_at_t3_until_verified() {
    assert_eq!(effective_tier_weight(&tiered("T1", false)), 3.0);
    assert_eq!(effective_tier_weight(&tiered("T1", true)), 5.0);
    assert_eq!(effective_tier_weight(&tiered("T4", false)), 2.0);
    assert_eq!(effective_tier_weight(&tiered("T4", true)), 2.0);
}

#[test]
fn claiming_t1_unverified_buys_nothing_over_t3() {
    let unverified = evidence_base(&bare(Some("empirical"), vec![cite("T1")], None));
    let honest = evidence_base(&bare(Some("empirical"), vec![cite("T3")], None));
    assert_eq!(unverified, honest);
}

#[test]
fn side_cannot_challenge_its_own_claim_and_nothing_is_recorded() {
    let mut p = proto();
    let mut d = debate(&mut p);
    let (t, v) = claim_on(&mut p, &mut d, "A", "A first claim", |_| {});
    p.advance_phase(&mut d, Some("arbiter")).unwrap();
    claim_on(&mut p, &mut d, "B", "B first claim", |_| {});
    p.advance_phase(&mut d, Some("arbiter")).unwrap();
    let log_len = d.log.len();
    let e = p
        .file_challenge(&mut d, challenge_input(&t, &v, "A"))
        .unwrap_err();
    assert_eq!(e.code.as_str(), "CHALLENGE_SAME_SIDE");
    assert!(d.challenges.is_empty());
    assert_eq!(
        d.log.len(),
        log_len,
        "a refusal takes no tick and writes no log"
    );
}

#[test]
fn same_side_dismissal_injected_into_document_does_not_raise_survival() {
    let mut p = proto();
    let mut d = debate(&mut p);
    let (t, v) = claim_on(&mut p, &mut d, "A", "A first claim", |_| {});
    d.challenges.push(raw_challenge(
        "chl_smuggled",
        &t,
        &v,
        Some("A"),
        Some("dismissed"),
    ));
    assert_eq!(version_merit(&d, version(&d, &t, &v)).s, 1.0);
}

#[test]
fn survival_is_capped_at_1_3_after_eight_dismissals() {
    let mut p = proto();
    let mut d = debate(&mut p);
    let (t, v) = claim_on(&mut p, &mut d, "A", "A first claim", |_| {});
    for i in 0..8 {
        d.challenges.push(raw_challenge(
            &format!("chl_{i}"),
            &t,
            &v,
            Some("B"),
            Some("dismissed"),
        ));
    }
    assert_eq!(version_merit(&d, version(&d, &t, &v)).s, 1.3);
}

#[test]
fn claim_budget_scores_best_n_and_keeps_the_rest_visible() {
    let mut p = proto();
    let mut d = debate_with(&mut p, None, Some(2.0));
    claim_on(&mut p, &mut d, "A", "A strong", |c| {
        c.evidence = vec![cite("T1"), cite("T2")]
    });
    claim_on(&mut p, &mut d, "A", "A middling", |_| {});
    claim_on(&mut p, &mut d, "A", "A padding one", |c| {
        c.qualifier = Some("plausible".into())
    });
    claim_on(&mut p, &mut d, "A", "A padding two", |c| {
        c.qualifier = Some("plausible".into())
    });
    claim_on(&mut p, &mut d, "B", "B only", |_| {});
    let l = compute_ledger(&d);
    let a_rows: Vec<_> = l.rows.iter().filter(|r| r.side == Some("A")).collect();
    let scoring: Vec<_> = a_rows.iter().filter(|r| r.scoring == Some(true)).collect();
    let parked: Vec<_> = a_rows.iter().filter(|r| r.scoring == Some(false)).collect();
    assert_eq!(scoring.len(), 2);
    assert_eq!(parked.len(), 2);
    assert!(parked.iter().all(|r| r.merit.0 > 0.0));
    assert_eq!(l.totals.a, scoring.iter().map(|r| r.merit.0).sum::<f64>());
    let mut best: Vec<_> = a_rows.clone();
    best.sort_by(|x, y| y.merit.0.total_cmp(&x.merit.0));
    let mut want: Vec<_> = best[..2].iter().map(|r| r.thread_title).collect();
    let mut got: Vec<_> = scoring.iter().map(|r| r.thread_title).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want);
}

#[test]
fn padding_with_thin_claims_cannot_change_verdict_under_budget() {
    let mut p = proto();
    let mut d = debate_with(&mut p, None, Some(3.0));
    let strong = || vec![tiered("T1", true), tiered("T2", true)];
    claim_on(&mut p, &mut d, "A", "A1", |c| c.evidence = strong());
    claim_on(&mut p, &mut d, "A", "A2", |c| c.evidence = strong());
    let logical = |c: &mut VersionInput| {
        c.kind = Some("logical".into());
        c.evidence.clear();
    };
    claim_on(&mut p, &mut d, "B", "B1", logical);
    let before = compute_ledger(&d).totals.b;
    for i in 0..15 {
        claim_on(&mut p, &mut d, "B", &format!("B pad {i}"), logical);
    }
    let l = compute_ledger(&d);
    assert!(l.totals.b <= before * 3.0);
    assert_eq!(
        l.rows
            .iter()
            .filter(|r| r.side == Some("B") && r.scoring == Some(true))
            .count(),
        3
    );
}

#[test]
fn unresolved_margin_resolves_against_side_carrying_burden() {
    let totals = BySide { a: 10.0, b: 9.5 };
    assert_eq!(summarize(&totals, "shared").winner, None);
    let a = summarize(&totals, "A");
    assert_eq!(a.winner, Some(Side::B));
    assert!(a.by_burden);
    assert_eq!(a.band.key, "unresolved");
    let b = summarize(&totals, "B");
    assert_eq!(b.winner, Some(Side::A));
    assert!(b.by_burden);
}

#[test]
fn decided_margin_ignores_burden() {
    let totals = BySide { a: 10.0, b: 4.0 };
    for burden in ["A", "B", "shared"] {
        let s = summarize(&totals, burden);
        assert_eq!(s.winner, Some(Side::A));
        assert!(!s.by_burden);
    }
}

#[test]
fn verdict_records_that_burden_decided_it() {
    let mut p = proto();
    let mut d = debate_with(&mut p, Some("A"), None);
    claim_on(&mut p, &mut d, "A", "A claim", |_| {});
    claim_on(&mut p, &mut d, "B", "B claim", |_| {});
    p.issue_verdict(&mut d, None, None, Some("arbiter"));
    let v = &d.verdicts[0];
    assert_eq!(v.band.key, "unresolved");
    assert_eq!(v.winner, Some(Side::B));
    assert!(v.by_burden);
}

#[test]
fn arbiter_certifies_restatement_a_side_refuses_to_certify() {
    let mut p = proto();
    let mut d = debate(&mut p);
    p.submit_steelman(
        &mut d,
        Side::A,
        Some("A fair restatement of the A case."),
        Some("contributor-b"),
        Some("B"),
    )
    .unwrap();
    assert_eq!(
        codes(p.arbiter_certify_steelman(
            &mut d,
            Side::A,
            Some("Side A declined twice without stating a defect."),
            Some("arbiter")
        )),
        None
    );
    assert_eq!(d.steelmans.a.status, "certified");
    assert_eq!(d.steelmans.a.certified_by.as_deref(), Some("arbiter"));
    assert!(
        d.log
            .iter()
            .any(|e| e.action == "steelman-arbiter-certified")
    );
}

#[test]
fn arbiter_cannot_certify_restatement_nobody_wrote() {
    let mut p = proto();
    let mut d = debate(&mut p);
    assert_eq!(
        codes(p.arbiter_certify_steelman(&mut d, Side::A, Some("reason"), Some("arbiter"))),
        Some("STEELMAN_NOT_SUBMITTED")
    );
}

#[test]
fn no_claim_budget_scores_every_canonical_claim() {
    let mut p = proto();
    let mut d = debate(&mut p);
    assert_eq!(d.claim_budget, None);
    for title in ["one", "two", "three"] {
        claim_on(&mut p, &mut d, "A", title, |_| {});
    }
    let l = compute_ledger(&d);
    assert!(l.rows.iter().all(|r| r.scoring == Some(true)));
    assert_eq!(l.totals.a, l.rows.iter().map(|r| r.merit.0).sum::<f64>());
}

#[test]
fn nonsense_claim_budget_is_no_budget() {
    for bad in [0.0, -3.0, 2.5, f64::NAN, f64::INFINITY] {
        let mut p = proto();
        assert_eq!(
            debate_with(&mut p, None, Some(bad)).claim_budget,
            None,
            "budget {bad}"
        );
    }
    let mut p = proto();
    assert_eq!(
        debate_with(&mut p, None, Some(3.0))
            .claim_budget
            .map(|b| b.0),
        Some(3.0)
    );
    assert_eq!(debate_with(&mut p, None, None).claim_budget, None);
}
