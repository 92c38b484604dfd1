//! Scoring (SPEC section 9): ports of the reference suite's test/scoring.test.js (22).

mod engine_common;

use crucible::document::{BySide, Debate};
use crucible::scoring::{compute_ledger, evidence_base, summarize, verdict_band, version_merit};
use engine_common::*;

fn ev(tiers: &[&str]) -> Vec<crucible::Citation> {
    tiers.iter().map(|t| cite(t)).collect()
}

fn ev_ok(tiers: &[&str]) -> Vec<crucible::Citation> {
    tiers.iter().map(|t| cite_ok(t)).collect()
}

fn empty_doc() -> Debate {
    let mut p = proto();
    let mut d = debate(&mut p);
    d.threads.clear();
    d
}

#[test]
fn evidence_base_logical_two_definitional_one() {
    assert_eq!(evidence_base(&bare(Some("logical"), vec![], None)), 2.0);
    assert_eq!(
        evidence_base(&bare(Some("definitional"), vec![], None)),
        1.0
    );
}

#[test]
fn evidence_base_empirical_without_citation_is_zero() {
    assert_eq!(evidence_base(&bare(Some("empirical"), vec![], None)), 0.0);
}

#[test]
fn evidence_base_tolerates_missing_evidence_field() {
    let d = crucible::migrate::load(
        r#"{"id":"d","threads":[{"id":"t","side":"A","canonicalId":"v",
            "versions":[{"id":"v","threadId":"t","num":1,"parentId":null,"type":"empirical"}]}]}"#,
    )
    .expect("a version without evidence loads");
    assert_eq!(evidence_base(&d.threads[0].versions[0]), 0.0);
}

#[test]
fn evidence_base_single_citation_uses_tier_weight_capped_until_verified() {
    assert_eq!(
        evidence_base(&bare(Some("empirical"), ev(&["T3"]), None)),
        3.0
    );
    assert_eq!(
        evidence_base(&bare(Some("empirical"), ev(&["T1"]), None)),
        3.0
    );
    assert_eq!(
        evidence_base(&bare(Some("empirical"), ev_ok(&["T1"]), None)),
        5.0
    );
}

#[test]
fn evidence_base_corroboration_adds_half_per_extra_citation() {
    assert_eq!(
        evidence_base(&bare(Some("empirical"), ev_ok(&["T1", "T2"]), None)),
        5.5
    );
    assert_eq!(
        evidence_base(&bare(Some("empirical"), ev(&["T1", "T2"]), None)),
        3.5
    );
}

#[test]
fn evidence_base_corroboration_bonus_capped_at_one() {
    assert_eq!(
        evidence_base(&bare(Some("empirical"), ev(&["T3", "T4", "T5"]), None)),
        4.0
    );
    assert_eq!(
        evidence_base(&bare(
            Some("empirical"),
            ev(&["T3", "T4", "T5", "T5", "T5"]),
            None
        )),
        4.0
    );
}

#[test]
fn version_merit_unassigned_relevance_counts_as_one() {
    let d = empty_doc();
    let v = bare(Some("empirical"), ev(&["T3"]), Some("probable"));
    let m = version_merit(&d, &v);
    assert_eq!(m.r, 1.0);
    assert_eq!(approx(m.merit, 4), 2.7);
}

#[test]
fn version_merit_unknown_qualifier_takes_lowest_weight() {
    let d = empty_doc();
    let m = version_merit(&d, &bare(Some("logical"), vec![], Some("wildly-confident")));
    assert_eq!(m.q, 0.75);
}

#[test]
fn version_merit_survival_counts_only_dismissed_challenges_on_this_version() {
    let mut d = empty_doc();
    d.challenges = vec![
        raw_challenge("c1", "t1", "v1", None, Some("dismissed")),
        raw_challenge("c2", "t1", "v1", None, Some("dismissed")),
        raw_challenge("c3", "t1", "v1", None, Some("upheld")),
        raw_challenge("c4", "t1", "v1", None, None),
        raw_challenge("c5", "t1", "other", None, Some("dismissed")),
    ];
    let m = version_merit(&d, &bare(Some("logical"), vec![], Some("certain")));
    assert_eq!(m.dismissed, 2);
    assert_eq!(approx(m.s, 4), 1.2);
}

#[test]
fn ledger_threads_without_canonical_version_contribute_nothing() {
    let mut p = proto();
    let mut d = debate(&mut p);
    seed_side(&mut p, &mut d, "A");
    let (tb, _) = seed_side(&mut p, &mut d, "B");
    d.thread_mut(&tb).unwrap().canonical_id = None;
    let l = compute_ledger(&d);
    assert_eq!(l.rows.len(), 1);
    assert_eq!(l.totals.b, 0.0);
}

#[test]
fn ledger_skips_dangling_canonical_id() {
    let mut p = proto();
    let mut d = debate(&mut p);
    let (ta, _) = seed_side(&mut p, &mut d, "A");
    d.thread_mut(&ta).unwrap().canonical_id = Some("ver_missing".into());
    let l = compute_ledger(&d);
    assert!(l.rows.is_empty());
    assert_eq!(l.totals.a, 0.0);
}

#[test]
fn ledger_rows_sort_side_a_first_then_merit_descending() {
    let mut p = proto();
    let mut d = debate(&mut p);
    seed(
        &mut p,
        &mut d,
        claim_with("A", vec![cite("T5")]),
        Some("weak A"),
    );
    seed(
        &mut p,
        &mut d,
        claim_with("A", vec![cite("T1")]),
        Some("strong A"),
    );
    seed(&mut p, &mut d, claim("B"), Some("B claim"));
    let titles: Vec<_> = compute_ledger(&d)
        .rows
        .into_iter()
        .map(|r| r.thread_title.unwrap_or_default())
        .collect();
    assert_eq!(titles, ["strong A", "weak A", "B claim"]);
}

#[test]
fn verdict_band_thresholds_are_strict_less_than() {
    for (m, key) in [
        (0.0, "unresolved"),
        (0.0999, "unresolved"),
        (0.10, "balance"),
        (0.2499, "balance"),
        (0.25, "clear"),
        (0.4999, "clear"),
        (0.50, "decisive"),
        (1.0, "decisive"),
    ] {
        assert_eq!(verdict_band(m).key, key, "margin {m}");
    }
}

#[test]
fn verdict_band_mathematical_boundary_lands_in_upper_band() {
    let raw = (3.6 - 2.7) / 3.6;
    assert!(
        raw < 0.25,
        "the unrounded value really is below the threshold"
    );
    assert_eq!(verdict_band(raw).key, "clear");
    assert_eq!(
        summarize(&BySide { a: 2.7, b: 3.6 }, "shared").band.key,
        "clear"
    );
    assert_eq!(verdict_band((1.0 - 0.9) / 1.0).key, "balance");
}

#[test]
fn verdict_band_rounding_keeps_genuine_near_boundary_differences() {
    assert_eq!(verdict_band(0.2499).key, "balance");
    assert_eq!(verdict_band(0.0999).key, "unresolved");
    assert_eq!(verdict_band(0.4999).key, "clear");
    // Digest 6.4: nine decimals, JS Math.round.
    assert_eq!(verdict_band(0.0999999995).key, "balance");
    assert_eq!(verdict_band(0.0999999994).key, "unresolved");
}

#[test]
fn summarize_exact_tie_is_unresolved_without_winner() {
    let s = summarize(&BySide { a: 4.0, b: 4.0 }, "shared");
    assert_eq!(s.winner, None);
    assert_eq!(s.band.key, "unresolved");
    assert_eq!(s.margin, 0.0);
}

#[test]
fn summarize_empty_ledger_does_not_divide_by_zero() {
    let s = summarize(&BySide { a: 0.0, b: 0.0 }, "shared");
    assert_eq!(s.margin, 0.0);
    assert_eq!(s.winner, None);
}

#[test]
fn summarize_leader_inside_unresolved_band_wins_nothing_under_shared_burden() {
    let s = summarize(&BySide { a: 10.0, b: 9.5 }, "shared");
    assert_eq!(s.leader, Some(crucible::Side::A));
    assert_eq!(s.winner, None);
    assert_eq!(s.band.key, "unresolved");
}

#[test]
fn issue_verdict_freezes_ledger_against_later_mutation() {
    let mut p = proto();
    let mut d = debate(&mut p);
    seed_side(&mut p, &mut d, "A");
    seed_side(&mut p, &mut d, "B");
    p.issue_verdict(&mut d, None, None, None);
    let at_issue = d.verdicts[0].ledger.len();
    seed(&mut p, &mut d, claim("A"), Some("added later"));
    assert_eq!(d.verdicts[0].ledger.len(), at_issue);
    assert_eq!(compute_ledger(&d).rows.len(), at_issue + 1);
}

#[test]
fn issue_verdict_numbers_increment() {
    let mut p = proto();
    let mut d = debate(&mut p);
    seed_side(&mut p, &mut d, "A");
    assert_eq!(p.issue_verdict(&mut d, None, None, None), 1);
    assert_eq!(p.issue_verdict(&mut d, None, None, None), 2);
}

#[test]
fn issue_verdict_honours_rationale_override() {
    let mut p = proto();
    let mut d = debate(&mut p);
    seed_side(&mut p, &mut d, "A");
    p.issue_verdict(&mut d, None, Some("custom text"), None);
    assert_eq!(d.verdicts[0].rationale, "custom text");
}

#[test]
fn default_rationale_reports_totals_and_one_decimal_margin_without_em_dash() {
    let mut p = proto();
    let mut d = debate(&mut p);
    seed(&mut p, &mut d, claim_with("A", vec![cite("T1")]), None);
    seed(&mut p, &mut d, claim_with("B", vec![cite("T5")]), None);
    p.issue_verdict(&mut d, None, None, None);
    let v = &d.verdicts[0];
    let pct = crucible::verdict::js_to_fixed(v.margin.0 * 100.0, 1);
    assert!(
        v.rationale.contains("Verdict for Side A"),
        "{}",
        v.rationale
    );
    assert!(v.rationale.contains(&format!("{pct}%")), "{}", v.rationale);
    assert!(
        v.rationale
            .contains(&crucible::verdict::js_to_fixed(v.totals.a.0, 2))
    );
    assert!(!v.rationale.contains('\u{2014}'));
}
