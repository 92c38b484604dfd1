//! Spec mode (`Conformance::Spec`, the service default): every SPEC rule the reference
//! v1.1.1 leaves to its host, the SPEC section 13 conformance list item by item
//! (`spec13_<n>_...`), attack tests, and the paper's worked example.

mod engine_common;

use crucible::appeal::AppealInput;
use crucible::document::{BySide, phase};
use crucible::example;
use crucible::gate::{self, GateContext, GateField, Kind};
use crucible::migrate::load;
use crucible::scoring::{compute_ledger, evidence_base, summarize, version_merit};
use crucible::verdict::js_to_fixed;
use crucible::{Debate, FixedEnv, Protocol, Side};
use engine_common::*;

type Pair = (String, String);

/// Spec mode, in construction, one merged claim per side.
fn spec_construction() -> (P, Debate, Pair, Pair) {
    let mut p = spec_proto();
    let mut d = debate(&mut p);
    p.advance_phase(&mut d, Some("arbiter")).unwrap();
    let a = seed_side(&mut p, &mut d, "A");
    let b = seed(&mut p, &mut d, claim_with("B", vec![cite("T5")]), None);
    (p, d, a, b)
}

fn spec_challenge() -> (P, Debate, Pair, Pair) {
    let (mut p, mut d, a, b) = spec_construction();
    p.advance_phase(&mut d, Some("arbiter")).unwrap();
    (p, d, a, b)
}

/// Spec mode, walked through every checked phase to closed with one verdict.
fn spec_closed() -> (P, Debate, Pair, Pair) {
    let (mut p, mut d, a, b) = spec_challenge();
    let arb = Some("arbiter");
    p.advance_phase(&mut d, arb).unwrap();
    p.submit_steelman(
        &mut d,
        Side::A,
        Some("Restatement of A."),
        Some("bo"),
        Some("B"),
    )
    .unwrap();
    p.certify_steelman(&mut d, Side::A, Some("ada"), Some("A"))
        .unwrap();
    p.submit_steelman(
        &mut d,
        Side::B,
        Some("Restatement of B."),
        Some("ada"),
        Some("A"),
    )
    .unwrap();
    p.certify_steelman(&mut d, Side::B, Some("bo"), Some("B"))
        .unwrap();
    p.advance_phase(&mut d, arb).unwrap();
    p.set_relevance(&mut d, &a.0, &a.1, Some(1.0)).unwrap();
    p.set_relevance(&mut d, &b.0, &b.1, Some(0.75)).unwrap();
    p.advance_phase(&mut d, arb).unwrap();
    p.issue_verdict(&mut d, None, None, arb);
    p.advance_phase(&mut d, arb).unwrap();
    assert_eq!(d.phase, phase::CLOSED);
    (p, d, a, b)
}

fn appeal(side: &str, targets: &[&str]) -> AppealInput {
    AppealInput {
        side: Some(side.into()),
        author: Some("appellant".into()),
        ground: Some("A2".into()),
        justification: Some("Scoring error on the named thread.".into()),
        evidence: Vec::new(),
        target_thread_ids: targets.iter().map(|s| s.to_string()).collect(),
    }
}

// ---- Spec-mode rules the reference leaves to its host ---------------------------

#[test]
fn spec_merge_and_reject_require_written_rationale() {
    let (mut p, mut d, a, _) = spec_construction();
    let v = p
        .add_version(&mut d, &a.0, claim_with("A", vec![cite_ok("T1")]))
        .unwrap();
    for r in [None, Some(""), Some("   ")] {
        assert_eq!(
            codes(p.merge_version(&mut d, &a.0, &v, r, Some("arbiter"))),
            Some("RATIONALE_REQUIRED")
        );
        assert_eq!(
            codes(p.reject_version(&mut d, &a.0, &v, r, Some("arbiter"))),
            Some("RATIONALE_REQUIRED")
        );
    }
    assert_eq!(
        version(&d, &a.0, &v).status,
        "candidate",
        "a refused decision changes nothing"
    );
}

#[test]
fn spec_challenge_resolution_needs_upheld_or_dismissed_and_rationale() {
    let (mut p, mut d, a, _) = spec_challenge();
    let c = p
        .file_challenge(&mut d, challenge_input(&a.0, &a.1, "B"))
        .unwrap();
    assert_eq!(
        codes(p.resolve_challenge(&mut d, &c, "maybe", Some("why"), Some("arbiter"))),
        Some("CHALLENGE_BAD_RESOLUTION")
    );
    assert_eq!(
        codes(p.resolve_challenge(&mut d, &c, "upheld", None, Some("arbiter"))),
        Some("RATIONALE_REQUIRED")
    );
    assert_eq!(d.challenge(&c).unwrap().resolution, None);
    assert_eq!(
        codes(p.resolve_challenge(
            &mut d,
            &c,
            "dismissed",
            Some("The warrant holds."),
            Some("arbiter")
        )),
        None
    );
}

#[test]
fn spec_reference_mode_accepts_what_spec_mode_refuses() {
    let mut p = proto();
    let mut d = debate(&mut p);
    let (t, v) = seed_side(&mut p, &mut d, "A");
    let c = p
        .file_challenge(&mut d, challenge_input(&t, &v, "B"))
        .unwrap();
    assert_eq!(
        codes(p.resolve_challenge(&mut d, &c, "maybe", None, None)),
        None
    );
    assert_eq!(
        d.challenge(&c).unwrap().resolution.as_deref(),
        Some("maybe")
    );
}

#[test]
fn spec_threads_open_only_in_construction_on_a_declared_side() {
    let mut p = spec_proto();
    let mut d = debate(&mut p);
    let e = p
        .create_thread(&mut d, Some("A"), Some("t"), None)
        .unwrap_err();
    assert_eq!(e.code.as_str(), "PHASE_FORBIDS");
    p.advance_phase(&mut d, None).unwrap();
    assert_eq!(
        p.create_thread(&mut d, Some("C"), Some("t"), None)
            .unwrap_err()
            .code
            .as_str(),
        "SIDE_INVALID"
    );
    assert_eq!(
        p.create_thread(&mut d, None, Some("t"), None)
            .unwrap_err()
            .code
            .as_str(),
        "SIDE_INVALID"
    );
    assert!(p.create_thread(&mut d, Some("B"), Some("t"), None).is_ok());
}

#[test]
fn spec_versions_only_in_construction_repairs_or_reopened_threads() {
    let (mut p, mut d, a, b) = spec_challenge();
    let e = p.add_version(&mut d, &a.0, claim("A")).unwrap_err();
    assert_eq!(
        e.code.as_str(),
        "PHASE_FORBIDS",
        "a standing thread takes no proposal in challenge"
    );
    let c = p
        .file_challenge(&mut d, challenge_input(&b.0, &b.1, "A"))
        .unwrap();
    p.resolve_challenge(
        &mut d,
        &c,
        "upheld",
        Some("T5 blog cannot carry it."),
        Some("arbiter"),
    )
    .unwrap();
    assert!(
        p.add_version(&mut d, &b.0, claim("B")).is_ok(),
        "repair of an emptied thread"
    );
    assert_eq!(
        p.add_version(&mut d, "thr_missing", claim("B"))
            .unwrap_err()
            .code
            .as_str(),
        "THREAD_NOT_FOUND"
    );
}

#[test]
fn spec_challenges_only_in_challenge_phase() {
    let (mut p, mut d, a, _) = spec_construction();
    let e = p
        .file_challenge(&mut d, challenge_input(&a.0, &a.1, "B"))
        .unwrap_err();
    assert_eq!(e.code.as_str(), "PHASE_FORBIDS");
    assert!(d.challenges.is_empty());
}

#[test]
fn spec_challenges_target_only_canonical_versions() {
    let (mut p, mut d, a, _) = spec_construction();
    let v2 = p
        .add_version(&mut d, &a.0, claim_with("A", vec![cite_ok("T1")]))
        .unwrap();
    p.merge_version(
        &mut d,
        &a.0,
        &v2,
        Some("verified T1 beats T3"),
        Some("arbiter"),
    )
    .unwrap();
    p.advance_phase(&mut d, None).unwrap();
    let e = p
        .file_challenge(&mut d, challenge_input(&a.0, &a.1, "B"))
        .unwrap_err();
    assert_eq!(
        e.code.as_str(),
        "CHALLENGE_NOT_CANONICAL",
        "the superseded v1 is not on the main branch"
    );
    assert!(
        p.file_challenge(&mut d, challenge_input(&a.0, &v2, "B"))
            .is_ok()
    );
    assert_eq!(
        p.file_challenge(&mut d, challenge_input("thr_x", &v2, "B"))
            .unwrap_err()
            .code
            .as_str(),
        "THREAD_NOT_FOUND"
    );
}

#[test]
fn spec_steelman_restated_by_other_side_and_certified_only_by_restated_side() {
    let mut p = spec_proto();
    let mut d = debate(&mut p);
    assert_eq!(
        codes(p.submit_steelman(&mut d, Side::A, Some("self"), Some("ada"), Some("A"))),
        Some("STEELMAN_NOT_OWN_SIDE")
    );
    assert_eq!(
        codes(p.certify_steelman(&mut d, Side::A, Some("ada"), Some("A"))),
        Some("STEELMAN_NOT_SUBMITTED"),
        "nothing submitted yet"
    );
    p.submit_steelman(&mut d, Side::A, Some("Restatement."), Some("bo"), Some("B"))
        .unwrap();
    assert_eq!(
        codes(p.certify_steelman(&mut d, Side::A, Some("bo"), Some("B"))),
        Some("STEELMAN_NOT_OWN_SIDE")
    );
    assert_eq!(
        codes(p.return_steelman(&mut d, Side::A, Some("no"), Some("bo"), Some("B"))),
        Some("STEELMAN_NOT_OWN_SIDE")
    );
    assert_eq!(d.steelmans.a.status, "submitted");
    assert_eq!(
        codes(p.certify_steelman(&mut d, Side::A, Some("ada"), Some("A"))),
        None
    );
    assert_eq!(d.steelmans.a.status, "certified");
}

#[test]
fn spec_arbiter_certifies_only_after_a_revision_cycle_with_reason() {
    let mut p = spec_proto();
    let mut d = debate(&mut p);
    p.submit_steelman(
        &mut d,
        Side::B,
        Some("Restatement."),
        Some("ada"),
        Some("A"),
    )
    .unwrap();
    assert_eq!(
        codes(p.arbiter_certify_steelman(&mut d, Side::B, Some("fair"), Some("arbiter"))),
        Some("STEELMAN_NO_REVISION")
    );
    p.return_steelman(
        &mut d,
        Side::B,
        Some("Omits the cost argument."),
        Some("bo"),
        Some("B"),
    )
    .unwrap();
    p.submit_steelman(
        &mut d,
        Side::B,
        Some("Restatement with cost."),
        Some("ada"),
        Some("A"),
    )
    .unwrap();
    assert_eq!(
        codes(p.arbiter_certify_steelman(&mut d, Side::B, None, Some("arbiter"))),
        Some("RATIONALE_REQUIRED")
    );
    assert_eq!(
        codes(p.arbiter_certify_steelman(
            &mut d,
            Side::B,
            Some("The revision states the cost argument."),
            Some("arbiter")
        )),
        None
    );
    assert_eq!(d.steelmans.b.certified_by.as_deref(), Some("arbiter"));
    assert!(
        d.log.iter().any(|e| e.action == "steelman-returned"),
        "the objection stays on the record"
    );
}

#[test]
fn spec_appeal_filing_checks_closed_phase_and_allowance() {
    let (mut p, mut d, _, b) = spec_construction();
    assert_eq!(
        p.file_appeal(&mut d, appeal("B", &[&b.0]))
            .unwrap_err()
            .code
            .as_str(),
        "APPEAL_NOT_CLOSED"
    );
    let (mut p, mut d, _, b) = spec_closed();
    assert_eq!(
        p.file_appeal(&mut d, appeal("C", &[&b.0]))
            .unwrap_err()
            .code
            .as_str(),
        "SIDE_INVALID"
    );
    let first = p.file_appeal(&mut d, appeal("B", &[&b.0])).unwrap();
    assert_eq!(
        p.file_appeal(&mut d, appeal("B", &[&b.0]))
            .unwrap_err()
            .code
            .as_str(),
        "APPEAL_LIMIT_REACHED"
    );
    p.decide_appeal(
        &mut d,
        &first,
        false,
        Some("No ground stated."),
        Some("arbiter"),
    )
    .unwrap();
    assert!(
        p.file_appeal(&mut d, appeal("B", &[&b.0])).is_ok(),
        "a denial does not consume the allowance"
    );
}

#[test]
fn spec_admission_only_on_a_closed_debate_with_rationale() {
    let (mut p, mut d, a, b) = spec_closed();
    let ap_a = p.file_appeal(&mut d, appeal("A", &[&a.0])).unwrap();
    let ap_b = p.file_appeal(&mut d, appeal("B", &[&b.0])).unwrap();
    assert_eq!(
        codes(p.decide_appeal(&mut d, &ap_a, true, None, Some("arbiter"))),
        Some("RATIONALE_REQUIRED")
    );
    p.decide_appeal(
        &mut d,
        &ap_a,
        true,
        Some("Ground made out."),
        Some("arbiter"),
    )
    .unwrap();
    assert_eq!(d.phase, phase::APPEAL_REVIEW);
    assert_eq!(
        codes(p.decide_appeal(&mut d, &ap_b, true, Some("Also made out."), Some("arbiter"))),
        Some("APPEAL_NOT_CLOSED")
    );
    assert_eq!(
        d.active_appeal_id.as_deref(),
        Some(ap_a.as_str()),
        "the live review keeps its scope"
    );
    assert_eq!(
        codes(p.decide_appeal(&mut d, "app_missing", false, Some("x"), None)),
        Some("APPEAL_NOT_FOUND")
    );
}

#[test]
fn spec_relevance_takes_only_rubric_steps() {
    let (mut p, mut d, a, _) = spec_construction();
    for bad in [0.0, 0.3, 0.6, 1.3, -1.0] {
        assert_eq!(
            codes(p.set_relevance(&mut d, &a.0, &a.1, Some(bad))),
            Some("RELEVANCE_INVALID"),
            "{bad}"
        );
    }
    for ok in [0.25, 0.5, 0.75, 1.0] {
        assert_eq!(codes(p.set_relevance(&mut d, &a.0, &a.1, Some(ok))), None);
    }
    let mut c = claim("A");
    c.relevance = Some(0.6);
    assert_eq!(
        p.add_version(&mut d, &a.0, c).unwrap_err().code.as_str(),
        "RELEVANCE_INVALID"
    );
}

#[test]
fn spec_forced_transition_is_logged_distinctly() {
    let mut p = spec_proto();
    let mut d = debate(&mut p);
    p.force_phase(&mut d, phase::ADJUDICATION, Some("host"))
        .unwrap();
    let e = d.log.last().unwrap();
    assert_eq!(e.action, "phase-forced");
    assert_eq!(e.detail.as_deref(), Some("framing -> adjudication"));
    assert_eq!(
        codes(p.force_phase(&mut d, "limbo", None)),
        Some("PHASE_NOT_ADVANCEABLE")
    );
    p.close_debate(&mut d, None).unwrap();
    assert_eq!(d.log.last().unwrap().action, "debate-closed");
    assert!(!d.log.iter().any(|e| e.action == "phase-advanced"));
}

#[test]
fn spec_unknown_ids_answer_our_not_found_codes() {
    let (mut p, mut d, a, _) = spec_challenge();
    assert_eq!(
        codes(p.respond_challenge(&mut d, "chl_x", Some("t"), None, None)),
        Some("CHALLENGE_NOT_FOUND")
    );
    assert_eq!(
        codes(p.resolve_challenge(&mut d, "chl_x", "upheld", Some("r"), None)),
        Some("CHALLENGE_NOT_FOUND")
    );
    assert_eq!(
        codes(p.merge_version(&mut d, "thr_x", &a.1, Some("r"), None)),
        Some("THREAD_NOT_FOUND")
    );
    assert_eq!(
        codes(p.verify_tier(&mut d, "thr_x", &a.1, 0, None, None)),
        Some("THREAD_NOT_FOUND")
    );
    assert_eq!(
        codes(p.verify_tier(&mut d, &a.0, "ver_x", 0, None, None)),
        Some("VERSION_NOT_FOUND")
    );
    assert_eq!(
        codes(p.verify_tier(&mut d, &a.0, &a.1, 5, None, None)),
        Some("CITATION_NOT_FOUND")
    );
    assert_eq!(
        codes(p.verify_tier(&mut d, &a.0, &a.1, -1, None, None)),
        Some("CITATION_NOT_FOUND")
    );
}

// ---- SPEC section 13, item by item ---------------------------------------------

#[test]
fn spec13_1_gate_rejects_violations_with_the_rule_identified() {
    let fields = [GateField::new(
        "assertion",
        "Assertion",
        "You are a LIAR and everyone knows it!",
    )];
    let ctx = GateContext {
        kind: Kind::Claim,
        ..GateContext::default()
    };
    let refusal = gate::admit(&fields, &ctx).expect_err("the Gate refuses");
    let ids: Vec<&str> = refusal.rule_ids().into_iter().map(|r| r.as_str()).collect();
    for rule in ["G1", "G4", "G7", "G9"] {
        assert!(ids.contains(&rule), "{rule} identified in {ids:?}");
    }
    assert!(refusal.violations.iter().all(|v| !v.fix.is_empty()));
}

#[test]
fn spec13_2_merit_totals_margin_band_as_section_9_defines() {
    let mut p = spec_proto();
    let mut d = debate_with(&mut p, None, Some(1.0));
    p.advance_phase(&mut d, None).unwrap();
    let ev = vec![cite_ok("T1"), cite("T2"), cite("T4"), cite("T5")];
    assert_eq!(
        evidence_base(&bare(Some("empirical"), ev.clone(), None)),
        6.0,
        "5 + capped +1"
    );
    let (ta, va) = seed(&mut p, &mut d, claim_with("A", ev), None);
    seed(&mut p, &mut d, claim_with("A", vec![cite("T5")]), None);
    let (tb, vb) = seed(&mut p, &mut d, claim_with("B", vec![cite("T1")]), None);
    for i in 0..5 {
        d.challenges.push(raw_challenge(
            &format!("x{i}"),
            &ta,
            &va,
            Some("B"),
            Some("dismissed"),
        ));
    }
    let m = version_merit(&d, version(&d, &ta, &va));
    assert_eq!((m.e, m.r, m.s, m.q), (6.0, 1.0, 1.3, 0.9));
    p.set_relevance(&mut d, &tb, &vb, Some(0.5)).unwrap();
    let l = compute_ledger(&d);
    assert_eq!(
        l.totals.a,
        6.0 * 1.3 * 0.9,
        "budget 1: only the best A row scores"
    );
    assert_eq!(l.totals.b, 3.0 * 0.5 * 0.9);
    assert_eq!(
        l.rows.iter().filter(|r| r.scoring == Some(false)).count(),
        1
    );
    let s = summarize(&l.totals, &d.burden);
    assert_eq!(s.margin, (l.totals.a - l.totals.b) / l.totals.a);
    assert_eq!(s.band.key, "decisive");
    assert_eq!(
        summarize(&BySide { a: 2.7, b: 3.6 }, "shared").band.key,
        "clear"
    );
}

#[test]
fn spec13_2a_same_side_challenge_refused_and_same_side_dismissals_ignored() {
    let (mut p, mut d, a, _) = spec_challenge();
    assert_eq!(
        p.file_challenge(&mut d, challenge_input(&a.0, &a.1, "A"))
            .unwrap_err()
            .code
            .as_str(),
        "CHALLENGE_SAME_SIDE"
    );
    d.challenges.push(raw_challenge(
        "smuggled",
        &a.0,
        &a.1,
        Some("A"),
        Some("dismissed"),
    ));
    assert_eq!(version_merit(&d, version(&d, &a.0, &a.1)).s, 1.0);
}

#[test]
fn spec13_2b_unresolved_ledger_resolved_by_burden_and_recorded() {
    let mut p = spec_proto();
    let mut d = debate_with(&mut p, Some("B"), None);
    p.advance_phase(&mut d, None).unwrap();
    seed_side(&mut p, &mut d, "A");
    seed_side(&mut p, &mut d, "B");
    p.issue_verdict(&mut d, None, None, None);
    let v = &d.verdicts[0];
    assert_eq!(
        (v.band.key.as_str(), v.winner, v.by_burden),
        ("unresolved", Some(Side::A), true)
    );
    assert!(d.log.last().unwrap().detail.as_deref() == Some("v1: side-A:unresolved"));
    let empty = summarize(&BySide { a: 0.0, b: 0.0 }, "A");
    assert_eq!(
        (empty.winner, empty.by_burden),
        (Some(Side::B), true),
        "an empty ledger too"
    );
}

#[test]
fn spec13_3_merge_refused_unless_merit_strictly_exceeds() {
    let (mut p, mut d, a, _) = spec_construction();
    let same = p.add_version(&mut d, &a.0, claim("A")).unwrap();
    assert_eq!(
        codes(p.merge_version(&mut d, &a.0, &same, Some("copy"), None)),
        Some("MERGE_NOT_ON_MERIT")
    );
    let better = p
        .add_version(&mut d, &a.0, claim_with("A", vec![cite("T3"), cite("T4")]))
        .unwrap();
    assert_eq!(
        codes(p.merge_version(&mut d, &a.0, &better, Some("corroborated"), None)),
        None
    );
}

#[test]
fn spec13_4_upheld_challenge_demotes_only_the_canonical_version_and_empties_thread() {
    let (mut p, mut d, a, b) = spec_challenge();
    let c = p
        .file_challenge(&mut d, challenge_input(&b.0, &b.1, "A"))
        .unwrap();
    p.resolve_challenge(
        &mut d,
        &c,
        "upheld",
        Some("The source cannot carry it."),
        None,
    )
    .unwrap();
    assert_eq!(version(&d, &b.0, &b.1).status, "demoted");
    assert_eq!(d.thread(&b.0).unwrap().canonical_id, None);
    // An upheld challenge on a version that is no longer canonical changes nothing.
    d.challenges
        .push(raw_challenge("late", &b.0, &b.1, Some("A"), None));
    p.resolve_challenge(&mut d, "late", "upheld", Some("again"), None)
        .unwrap();
    assert_eq!(
        d.log
            .iter()
            .filter(|e| e.action == "version-demoted")
            .count(),
        1
    );
    assert_eq!(version(&d, &a.0, &a.1).status, "merged");
}

#[test]
fn spec13_5_unmet_prerequisites_and_appeal_review_advance_refused() {
    let (mut p, mut d, a, _) = spec_challenge();
    let c = p
        .file_challenge(&mut d, challenge_input(&a.0, &a.1, "B"))
        .unwrap();
    assert_eq!(
        codes(p.advance_phase(&mut d, None)),
        Some("PHASE_PREREQ_UNMET")
    );
    assert_eq!(d.phase, phase::CHALLENGE);
    p.resolve_challenge(&mut d, &c, "dismissed", Some("holds"), None)
        .unwrap();
    assert_eq!(codes(p.advance_phase(&mut d, None)), None);
    let (mut p, mut d, _, b) = spec_closed();
    let ap = p.file_appeal(&mut d, appeal("B", &[&b.0])).unwrap();
    p.decide_appeal(&mut d, &ap, true, Some("made out"), None)
        .unwrap();
    assert_eq!(
        codes(p.advance_phase(&mut d, None)),
        Some("PHASE_NOT_ADVANCEABLE")
    );
    assert_eq!(d.phase, phase::APPEAL_REVIEW);
}

#[test]
fn spec13_6_one_appeal_per_side_and_reopening_scoped_to_named_threads() {
    let (mut p, mut d, a, b) = spec_closed();
    let ap = p.file_appeal(&mut d, appeal("B", &[&b.0])).unwrap();
    assert_eq!(
        p.file_appeal(&mut d, appeal("B", &[&a.0]))
            .unwrap_err()
            .code
            .as_str(),
        "APPEAL_LIMIT_REACHED"
    );
    p.decide_appeal(&mut d, &ap, true, Some("made out"), None)
        .unwrap();
    assert_eq!(
        p.add_version(&mut d, &a.0, claim("A"))
            .unwrap_err()
            .code
            .as_str(),
        "PHASE_FORBIDS"
    );
    assert_eq!(
        p.file_challenge(&mut d, challenge_input(&a.0, &a.1, "B"))
            .unwrap_err()
            .code
            .as_str(),
        "PHASE_FORBIDS"
    );
    let v = p
        .add_version(&mut d, &b.0, claim_with("B", vec![cite("T3")]))
        .unwrap();
    p.merge_version(&mut d, &b.0, &v, Some("T3 beats T5"), None)
        .unwrap();
    assert_eq!(p.conclude_appeal_review(&mut d, None, None), Ok(2));
}

#[test]
fn spec13_7_verdicts_append_only_and_every_arbiter_decision_has_rationale() {
    let (mut p, mut d, _, b) = spec_closed();
    let first = d.verdicts[0].clone();
    let ap = p.file_appeal(&mut d, appeal("B", &[&b.0])).unwrap();
    p.decide_appeal(&mut d, &ap, true, Some("made out"), None)
        .unwrap();
    p.conclude_appeal_review(&mut d, None, None).unwrap();
    assert_eq!(d.verdicts[0], first);
    assert_eq!(d.verdicts.len(), 2);
    for t in &d.threads {
        for v in t.versions.iter().filter(|v| v.status != "candidate") {
            assert!(
                !v.merge_rationale.trim().is_empty(),
                "merge/reject rationale on {}",
                v.id
            );
        }
    }
    for a in &d.appeals {
        assert!(
            a.decision_rationale
                .as_deref()
                .is_some_and(|r| !r.is_empty())
        );
    }
    assert!(d.verdicts.iter().all(|v| !v.rationale.is_empty()));
}

#[test]
fn spec13_8_full_record_retains_rejected_and_demoted_material() {
    let (mut p, mut d, a, b) = spec_construction();
    let rej = p.add_version(&mut d, &a.0, claim("A")).unwrap();
    p.reject_version(&mut d, &a.0, &rej, Some("adds nothing"), None)
        .unwrap();
    p.advance_phase(&mut d, None).unwrap();
    let c = p
        .file_challenge(&mut d, challenge_input(&b.0, &b.1, "A"))
        .unwrap();
    p.resolve_challenge(&mut d, &c, "upheld", Some("source fails"), None)
        .unwrap();
    let back = load(&d.to_json().to_string()).unwrap();
    assert_eq!(version(&back, &a.0, &rej).status, "rejected");
    assert_eq!(version(&back, &a.0, &rej).merge_rationale, "adds nothing");
    assert_eq!(version(&back, &b.0, &b.1).status, "demoted");
    assert_eq!(back.challenges.len(), 1);
    assert_eq!(back.log.len(), d.log.len());
}

// ---- Attacks --------------------------------------------------------------------

#[test]
fn attack_self_challenge_farming_pays_nothing_in_either_mode() {
    for mode in [
        crucible::Conformance::Spec,
        crucible::Conformance::Reference,
    ] {
        let mut p = Protocol::with_mode(FixedEnv::new(T0, 1000), mode);
        let mut d = debate(&mut p);
        p.force_phase(&mut d, phase::CONSTRUCTION, None).unwrap();
        let (t, v) = seed_side(&mut p, &mut d, "A");
        p.force_phase(&mut d, phase::CHALLENGE, None).unwrap();
        let before = version_merit(&d, version(&d, &t, &v)).merit;
        for _ in 0..5 {
            assert_eq!(
                p.file_challenge(&mut d, challenge_input(&t, &v, "A"))
                    .unwrap_err()
                    .code
                    .as_str(),
                "CHALLENGE_SAME_SIDE"
            );
        }
        assert!(d.challenges.is_empty());
        assert_eq!(version_merit(&d, version(&d, &t, &v)).merit, before);
    }
}

#[test]
fn attack_same_side_dismissal_injected_into_a_document_is_ignored_by_the_ledger() {
    let (_p, d, a, _) = spec_challenge();
    let mut j = d.to_json();
    j["challenges"] = serde_json::json!([{"id": "forged", "threadId": a.0, "versionId": a.1, "side": "A",
        "resolution": "dismissed", "rationale": "planted", "evidence": [], "appealId": null}]);
    let forged = load(&j.to_string()).unwrap();
    assert_eq!(compute_ledger(&forged).totals, compute_ledger(&d).totals);
    let row = compute_ledger(&forged)
        .rows
        .into_iter()
        .find(|r| r.thread_id == a.0)
        .unwrap();
    assert_eq!((row.dismissed, row.s.0), (0, 1.0));
}

#[test]
fn attack_equal_merit_copy_cannot_take_over_a_thread() {
    let (mut p, mut d, a, _) = spec_construction();
    let mut copy = claim("A");
    copy.author = Some("claim-jumper".into());
    let v = p.add_version(&mut d, &a.0, copy).unwrap();
    assert_eq!(
        codes(p.merge_version(&mut d, &a.0, &v, Some("same content"), None)),
        Some("MERGE_NOT_ON_MERIT")
    );
    assert_eq!(
        d.thread(&a.0).unwrap().canonical_id.as_deref(),
        Some(a.1.as_str())
    );
}

#[test]
fn attack_budget_padding_cannot_raise_a_total() {
    let mut p = spec_proto();
    let mut d = debate_with(&mut p, None, Some(2.0));
    p.advance_phase(&mut d, None).unwrap();
    seed(&mut p, &mut d, claim_with("A", vec![cite_ok("T1")]), None);
    seed(&mut p, &mut d, claim_with("A", vec![cite_ok("T2")]), None);
    seed_side(&mut p, &mut d, "B");
    let before = compute_ledger(&d).totals;
    for _ in 0..20 {
        seed(&mut p, &mut d, claim_with("A", vec![cite("T5")]), None);
    }
    let after = compute_ledger(&d);
    assert_eq!(after.totals, before);
    assert_eq!(
        after
            .rows
            .iter()
            .filter(|r| r.scoring == Some(false))
            .count(),
        20
    );
}

#[test]
fn attack_claiming_t1_unverified_scores_as_t3_and_cannot_displace() {
    let (mut p, mut d, a, _) = spec_construction();
    let puffed = p
        .add_version(
            &mut d,
            &a.0,
            claim_with(
                "A",
                vec![Citation::new("My blog", "http://127.0.0.1/", "T1")],
            ),
        )
        .unwrap();
    assert_eq!(version_merit(&d, version(&d, &a.0, &puffed)).e, 3.0);
    assert_eq!(
        codes(p.merge_version(&mut d, &a.0, &puffed, Some("claims T1"), None)),
        Some("MERGE_NOT_ON_MERIT")
    );
}

#[test]
fn attack_appealing_twice_is_refused_on_filing() {
    let (mut p, mut d, _, b) = spec_closed();
    let ap = p.file_appeal(&mut d, appeal("B", &[&b.0])).unwrap();
    p.decide_appeal(&mut d, &ap, true, Some("made out"), None)
        .unwrap();
    p.conclude_appeal_review(&mut d, None, None).unwrap();
    assert_eq!(
        p.file_appeal(&mut d, appeal("B", &[&b.0]))
            .unwrap_err()
            .code
            .as_str(),
        "APPEAL_LIMIT_REACHED"
    );
    assert_eq!(d.appeals.len(), 1);
}

#[test]
fn attack_reopening_beyond_named_threads_is_refused() {
    let (mut p, mut d, a, b) = spec_closed();
    let ap = p.file_appeal(&mut d, appeal("B", &[&b.0])).unwrap();
    p.decide_appeal(&mut d, &ap, true, Some("made out"), None)
        .unwrap();
    d.appeals[0].target_thread_ids.push(a.0.clone());
    assert_eq!(
        p.add_version(&mut d, &a.0, claim("A"))
            .unwrap_err()
            .code
            .as_str(),
        "PHASE_FORBIDS"
    );
    assert_eq!(
        p.create_thread(&mut d, Some("B"), Some("new"), None)
            .unwrap_err()
            .code
            .as_str(),
        "PHASE_FORBIDS"
    );
    assert_eq!(d.threads.len(), 2);
}

use crucible::Citation;

// ---- The paper's worked example (section 4) -------------------------------------

#[test]
fn worked_example_first_verdict_a_636_b_420_clear_for_a() {
    let mut p = Protocol::new(FixedEnv::new(1_767_225_600_000, 1000));
    let ex = example::build(&mut p).expect("the worked example runs in spec mode");
    let v = &ex.debate.verdicts[0];
    assert_eq!(js_to_fixed(v.totals.a.0, 2), "6.36");
    assert_eq!(js_to_fixed(v.totals.b.0, 2), "4.20");
    assert_eq!(js_to_fixed(v.margin.0, 3), "0.340");
    assert_eq!(v.band.key, "clear");
    assert_eq!(v.winner, Some(Side::A));
    assert!(!v.by_burden);
}

#[test]
fn worked_example_after_b1_verified_640_against_636_unresolved() {
    let mut p = Protocol::new(FixedEnv::new(1_767_225_600_000, 1000));
    let mut ex = example::build(&mut p).unwrap();
    let first = ex.debate.verdicts[0].clone();
    example::verify_b1_and_revise(&mut p, &mut ex).expect("revision runs");
    let v = &ex.debate.verdicts[1];
    assert_eq!(js_to_fixed(v.totals.b.0, 2), "6.40");
    assert_eq!(js_to_fixed(v.totals.a.0, 2), "6.36");
    assert_eq!(js_to_fixed(v.margin.0, 3), "0.006");
    assert_eq!(v.band.key, "unresolved");
    assert_eq!(v.winner, None);
    assert_eq!(
        ex.debate.verdicts[0], first,
        "the first verdict stays on the record"
    );
    assert_eq!(ex.debate.phase, phase::CLOSED);
    let b1 = v
        .ledger
        .iter()
        .find(|r| r.thread_id == ex.b1_thread)
        .unwrap();
    assert_eq!((b1.e.0, b1.r.0, b1.s.0, b1.q.0), (5.0, 1.0, 1.1, 1.0));
}

#[test]
fn worked_example_replays_identically() {
    let run = || {
        let mut p = Protocol::new(FixedEnv::new(1_767_225_600_000, 1000));
        let mut ex = example::build(&mut p).unwrap();
        example::verify_b1_and_revise(&mut p, &mut ex).unwrap();
        ex.debate.to_json().to_string()
    };
    assert_eq!(run(), run());
}
